// Lowerings of data movement and factories: cat, constant_pad_nd, slice/select_scatter,
// gather, index, index_select, embedding (indirect loads), arange, full/zeros/ones/empty, fill.
// Assumes static sizes for concatenation offsets and pads; advanced indexing with integer tensors.
#include <algorithm>
#include <tuple>
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

using ir::ScalarOp;

DType meta_dtype(const FxNode& node, DType fallback) {
  if (node.meta.size() == 1 && node.meta[0]) return node.meta[0]->dtype;
  return fallback;
}

Scalar lt(const Expr& a, const Expr& b) { return ir::binary(ScalarOp::Lt, index_scalar(a), index_scalar(b), DType::Bool); }
Scalar ge(const Expr& a, const Expr& b) { return ir::binary(ScalarOp::Ge, index_scalar(a), index_scalar(b), DType::Bool); }
Scalar all_of(Scalar a, Scalar b) {
  if (!a) return b;
  return ir::binary(ScalarOp::LogicalAnd, a, b, DType::Bool);
}

// A constant of `dtype` (compute domain) from a fill value argument.
Scalar fill_constant(const FxArg& value, DType dtype) {
  // A symbolic size (scalar_tensor(n) of a graph over every n): its value on each call.
  if (value.kind == FxArg::Kind::SymInt && !value.expr.is_const()) return ir::cast(index_scalar(value.expr), dtype);
  if (dtype == DType::Bool) return ir::constant_int(value.as_double() != 0.0, DType::Bool);
  if (ir::is_integral(dtype)) {
    int64_t v = value.kind == FxArg::Kind::Float ? static_cast<int64_t>(value.f) : value.as_int();
    return constant_of_int(v, dtype);
  }
  return constant_of(value.as_double(), dtype);
}

Value filled(LoweringContext& ctx, DType dtype, std::vector<Expr> sizes, Scalar value) {
  return ctx.lazy(dtype, std::move(sizes), [value](const Index&) { return value; });
}

std::vector<Expr> exprs(const std::vector<int64_t>& v) { return std::vector<Expr>(v.begin(), v.end()); }

// ---- cat and pad: loads guarded by masks ----

Lowered lower_cat(LoweringContext& ctx, const FxNode& node) {
  std::vector<Value> inputs;
  for (const FxArg& item : node.param(0).items) {
    Value v = ctx.tensor(item);
    if (v.rank() == 1 && v.sizes[0].is_const(0)) continue;  // legacy: empty 1-D inputs are skipped
    inputs.push_back(v);
  }
  if (inputs.empty()) return Lowered::one(filled(ctx, meta_dtype(node, DType::Float32), {0}, constant_of(0, DType::Float32)));
  int64_t dim = normalize_dim(node.param(1).as_int(), inputs[0].rank());
  DType out = meta_dtype(node, inputs[0].dtype);
  std::vector<Expr> offsets{0};
  for (const Value& v : inputs) offsets.push_back(offsets.back() + v.sizes[dim]);
  std::vector<Expr> sizes = inputs[0].sizes;
  sizes[dim] = offsets.back();
  if (inputs.size() == 1) return Lowered::one(inputs[0]);
  DType compute = compute_dtype(out);
  return Lowered::one(ctx.lazy(out, sizes, [inputs, offsets, dim, compute](const Index& index) {
    Scalar result;
    for (size_t k = inputs.size(); k-- > 0;) {
      Index inner = index;
      inner[dim] = index[dim] - offsets[k];
      Scalar mask;
      if (k > 0) mask = ge(index[dim], offsets[k]);
      if (k + 1 < inputs.size()) mask = all_of(mask, lt(index[dim], offsets[k + 1]));
      Scalar value = ir::cast(inputs[k].load(inner), compute);
      if (!result) {
        result = mask_loads(value, mask);
      } else {
        result = ir::where(mask, mask_loads(value, mask), result);
      }
    }
    return result;
  }));
}

Lowered lower_constant_pad(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<int64_t> pad = node.param(1).as_int_list();
  if (pad.size() % 2 || pad.size() / 2 > x.rank()) throw UserError("constant_pad_nd: bad padding");
  std::vector<Expr> sizes = x.sizes;
  std::vector<int64_t> before(x.rank(), 0), after(x.rank(), 0);
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    size_t d = x.rank() - 1 - p;
    before[d] = pad[2 * p];
    after[d] = pad[2 * p + 1];
    sizes[d] = sizes[d] + Expr(pad[2 * p] + pad[2 * p + 1]);
  }
  DType compute = compute_dtype(x.dtype);
  Scalar fill = fill_constant(node.param(2), x.dtype);
  std::vector<Expr> in_sizes = x.sizes;
  return Lowered::one(ctx.lazy(x.dtype, sizes, [x, before, after, in_sizes, fill, compute](const Index& index) {
    Index inner = index;
    Scalar mask;  // only positive pads can reach outside the input
    for (size_t d = 0; d < before.size(); ++d) {
      inner[d] = index[d] - Expr(before[d]);
      if (before[d] > 0) mask = all_of(mask, ge(inner[d], 0));
      if (after[d] > 0) mask = all_of(mask, lt(inner[d], in_sizes[d]));
    }
    Scalar value = ir::cast(x.load(inner), compute);
    if (!mask) return value;
    return ir::where(mask, mask_loads(value, mask), fill);
  }));
}

Lowered lower_slice_scatter(LoweringContext& ctx, const FxNode& node) {
  Value self = ctx.tensor_param(node, 0), src = ctx.tensor_param(node, 1);
  int64_t dim = normalize_dim(node.param(2).as_int(), self.rank());
  if (!self.sizes[dim].is_const()) throw NotLowered("symbolic slice_scatter");
  int64_t size = self.sizes[dim].const_value();
  int64_t start = node.param(3).is_none() ? 0 : node.param(3).as_int();
  int64_t end = node.param(4).is_none() ? size : node.param(4).as_int();
  int64_t step = node.param(5).as_int();
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  DType compute = compute_dtype(self.dtype);
  return Lowered::one(ctx.lazy(self.dtype, self.sizes, [=](const Index& index) {
    Expr pos = index[dim];
    Scalar mask = all_of(ge(pos, start), lt(pos, end));
    if (step != 1)
      mask = all_of(mask, ir::binary(ScalarOp::Eq, index_scalar(ir::mod(pos - Expr(start), Expr(step))),
                                     ir::constant_int(0, DType::Int64), DType::Bool));
    Index inner = index;
    inner[dim] = ir::floordiv(pos - Expr(start), Expr(step));
    Scalar from_src = mask_loads(ir::cast(src.load(inner), compute), mask);
    return ir::where(mask, from_src, ir::cast(self.load(index), compute));
  }));
}

Lowered lower_select_scatter(LoweringContext& ctx, const FxNode& node) {
  Value self = ctx.tensor_param(node, 0), src = ctx.tensor_param(node, 1);
  int64_t dim = normalize_dim(node.param(2).as_int(), self.rank());
  int64_t position = node.param(3).as_int();
  if (position < 0) {
    if (!self.sizes[dim].is_const()) throw NotLowered("symbolic select_scatter");
    position += self.sizes[dim].const_value();
  }
  DType compute = compute_dtype(self.dtype);
  return Lowered::one(ctx.lazy(self.dtype, self.sizes, [=](const Index& index) {
    Scalar mask = ir::binary(ScalarOp::Eq, index_scalar(index[dim]), ir::constant_int(position, DType::Int64), DType::Bool);
    Index inner = index;
    inner.erase(inner.begin() + dim);
    Scalar from_src = mask_loads(ir::cast(src.load(inner), compute), mask);
    return ir::where(mask, from_src, ir::cast(self.load(index), compute));
  }));
}

// ---- indirect indexing ----

// Negative positions count from the end, as in index/embedding.
Scalar wrapped_position(const Scalar& position, const Expr& size) {
  Scalar p = ir::cast(position, DType::Int64);
  Scalar negative = ir::binary(ScalarOp::Lt, p, ir::constant_int(0, DType::Int64), DType::Bool);
  return ir::where(negative, ir::binary(ScalarOp::Add, p, index_scalar(size), DType::Int64), p);
}

void require_indirect(const LoweringContext& ctx) {
  if (!ctx.options().indirect_loads) throw NotLowered("indirect loads are switched off");
}

// self loaded with some dims replaced by loaded positions.
Scalar gather_load(const Value& self, Index index, const std::vector<std::pair<size_t, Scalar>>& positions) {
  std::vector<std::tuple<Expr, Scalar, Expr>> bindings;
  for (auto& [dim, position] : positions) {
    Expr placeholder = fresh_indirect_placeholder();
    index[dim] = placeholder;
    bindings.emplace_back(placeholder, position, self.sizes[dim]);
  }
  Scalar body = self.load(index);
  for (auto& [placeholder, position, size] : bindings) body = bind_indirect(body, placeholder, position, size);
  return body;
}

Lowered lower_gather(LoweringContext& ctx, const FxNode& node) {
  require_indirect(ctx);
  Value self = ctx.tensor_param(node, 0), idx = ctx.tensor_param(node, 2);
  int64_t dim = normalize_dim(node.param(1).as_int(), self.rank());
  if (self.rank() == 0) throw NotLowered("gather of a 0-dim tensor");
  Expr size = self.sizes[dim];
  return Lowered::one(ctx.lazy(self.dtype, idx.sizes, [=](const Index& index) {
    return gather_load(self, index, {{static_cast<size_t>(dim), wrapped_position(idx.load(index), size)}});
  }));
}

Lowered lower_index_select(LoweringContext& ctx, const FxNode& node) {
  require_indirect(ctx);
  Value self = ctx.tensor_param(node, 0), idx = ctx.tensor_param(node, 2);
  if (self.rank() == 0) throw NotLowered("index_select of a 0-dim tensor");
  int64_t dim = normalize_dim(node.param(1).as_int(), self.rank());
  std::vector<Expr> sizes = self.sizes;
  sizes[dim] = idx.rank() == 0 ? Expr(1) : idx.sizes[0];
  Expr size = self.sizes[dim];
  return Lowered::one(ctx.lazy(self.dtype, sizes, [=](const Index& index) {
    Index position_index = idx.rank() == 0 ? Index{} : Index{index[dim]};
    return gather_load(self, index, {{static_cast<size_t>(dim), wrapped_position(idx.load(position_index), size)}});
  }));
}

Lowered lower_embedding(LoweringContext& ctx, const FxNode& node) {
  require_indirect(ctx);
  Value weight = ctx.tensor_param(node, 0), idx = ctx.tensor_param(node, 1);
  if (weight.rank() != 2) throw NotLowered("embedding with a non-2-D weight");
  std::vector<Expr> sizes = idx.sizes;
  sizes.push_back(weight.sizes[1]);
  Expr rows = weight.sizes[0];
  return Lowered::one(ctx.lazy(weight.dtype, sizes, [=](const Index& index) {
    Index position_index(index.begin(), index.end() - 1);
    return gather_load(weight, {Expr(0), index.back()}, {{0, wrapped_position(idx.load(position_index), rows)}});
  }));
}

// index.Tensor(self, [t0, None, t2, ...]): advanced indexing with integer tensors.
Lowered lower_index(LoweringContext& ctx, const FxNode& node) {
  require_indirect(ctx);
  Value self = ctx.tensor_param(node, 0);
  const std::vector<FxArg>& list = node.param(1).items;
  std::vector<std::optional<Value>> indices;
  for (const FxArg& item : list) {
    if (item.is_none()) {
      indices.push_back(std::nullopt);
      continue;
    }
    Value v = ctx.tensor(item);
    if (v.dtype == DType::Bool || v.dtype == DType::UInt8) throw NotLowered("boolean mask indexing");
    indices.push_back(v);
  }
  std::vector<size_t> indexed;
  std::vector<std::vector<Expr>> shapes;
  for (size_t d = 0; d < indices.size(); ++d)
    if (indices[d]) {
      indexed.push_back(d);
      shapes.push_back(indices[d]->sizes);
    }
  if (indexed.empty()) return Lowered::one(self);
  std::vector<Expr> bshape = broadcast_shapes(shapes);
  for (size_t d : indexed) indices[d] = broadcast_to(*indices[d], bshape);
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  // Result layout: [before..., B..., after...] when adjacent, else [B..., non-indexed...].
  std::vector<size_t> plain;  // non-indexed self dims in order
  for (size_t d = 0; d < self.rank(); ++d)
    if (d >= indices.size() || !indices[d]) plain.push_back(d);
  size_t b_at = adjacent ? indexed.front() : 0;
  std::vector<Expr> sizes;
  size_t plain_before = adjacent ? static_cast<size_t>(std::count_if(plain.begin(), plain.end(), [&](size_t d) { return d < b_at; })) : 0;
  for (size_t k = 0; k < plain_before; ++k) sizes.push_back(self.sizes[plain[k]]);
  sizes.insert(sizes.end(), bshape.begin(), bshape.end());
  for (size_t k = plain_before; k < plain.size(); ++k) sizes.push_back(self.sizes[plain[k]]);
  size_t b_rank = bshape.size();
  return Lowered::one(ctx.lazy(self.dtype, sizes, [=](const Index& index) {
    Index b_index(index.begin() + plain_before, index.begin() + plain_before + b_rank);
    Index self_index(self.rank(), Expr(0));
    for (size_t k = 0; k < plain.size(); ++k) {
      size_t out_pos = k < plain_before ? k : k + b_rank;
      self_index[plain[k]] = index[out_pos];
    }
    std::vector<std::pair<size_t, Scalar>> positions;
    for (size_t d : indexed) positions.emplace_back(d, wrapped_position(indices[d]->load(b_index), self.sizes[d]));
    return gather_load(self, self_index, positions);
  }));
}

// ---- factories ----

std::vector<Expr> size_param(const FxNode& node, size_t k) { return exprs(node.param(k).as_int_list()); }

Lowered lower_arange(LoweringContext& ctx, const FxNode& node, int form) {
  const TensorMeta& meta = node.tensor_meta();
  // form 0: arange(end); 1: arange(start, end); 2: arange(start, end, step)
  FxArg zero, one;
  zero.kind = one.kind = FxArg::Kind::Int;
  zero.i = 0;
  one.i = 1;
  FxArg start = form == 0 ? zero : node.param(0);
  FxArg step = form == 2 ? node.param(2) : one;
  DType out = meta.dtype;
  bool integral = ir::is_integral(out) && start.kind != FxArg::Kind::Float && step.kind != FxArg::Kind::Float;
  return Lowered::one(ctx.lazy(out, meta.sizes, [=](const Index& index) {
    if (integral) return ir::cast(index_scalar(start.as_expr() + index[0] * step.as_expr()), compute_dtype(out));
    // start + i*step in double, then to the output type, like eager's accumulate type.
    Scalar i = ir::cast(index_scalar(index[0]), DType::Float64);
    Scalar value = ir::binary(ScalarOp::Add, ir::constant(start.as_double(), DType::Float64),
                              ir::binary(ScalarOp::Mul, i, ir::constant(step.as_double(), DType::Float64), DType::Float64),
                              DType::Float64);
    return convert(value, out);
  }));
}

Lowered lower_full(LoweringContext& ctx, const FxNode& node, std::optional<double> fixed, bool like) {
  DType dtype = node.tensor_meta().dtype;
  std::vector<Expr> sizes = like ? ctx.tensor_param(node, 0).sizes : node.tensor_meta().sizes;
  Scalar value;
  if (fixed) {
    FxArg v;
    v.kind = FxArg::Kind::Float;
    v.f = *fixed;
    value = fill_constant(v, dtype);
  } else {
    value = fill_constant(node.param(1), dtype);
  }
  return Lowered::one(filled(ctx, dtype, sizes, value));
}

}  // namespace

void register_misc_lowerings(Registry& r) {
  r["aten::cat.default"] = lower_cat;
  r["aten::constant_pad_nd.default"] = lower_constant_pad;
  r["aten::slice_scatter.default"] = lower_slice_scatter;
  r["aten::select_scatter.default"] = lower_select_scatter;
  r["aten::gather.default"] = lower_gather;
  r["aten::index_select.default"] = lower_index_select;
  r["aten::embedding.default"] = lower_embedding;
  r["aten::index.Tensor"] = lower_index;
  r["aten::arange.default"] = [](LoweringContext& c, const FxNode& n) { return lower_arange(c, n, 0); };
  r["aten::arange.start"] = [](LoweringContext& c, const FxNode& n) { return lower_arange(c, n, 1); };
  r["aten::arange.start_step"] = [](LoweringContext& c, const FxNode& n) { return lower_arange(c, n, 2); };
  r["aten::full.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, std::nullopt, false); };
  r["aten::full_like.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, std::nullopt, true); };
  r["aten::fill.Scalar"] = r["aten::full_like.default"];
  r["aten::zeros.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 0.0, false); };
  r["aten::ones.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 1.0, false); };
  r["aten::zeros_like.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 0.0, true); };
  r["aten::ones_like.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 1.0, true); };
  // Uninitialised memory may hold anything; zeros are a valid choice and fuse away.
  r["aten::empty.memory_format"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 0.0, false); };
  r["aten::empty_like.default"] = [](LoweringContext& c, const FxNode& n) { return lower_full(c, n, 0.0, true); };
  r["aten::scalar_tensor.default"] = [](LoweringContext& ctx, const FxNode& node) {
    DType dtype = node.tensor_meta().dtype;
    return Lowered::one(filled(ctx, dtype, {}, fill_constant(node.param(0), dtype)));
  };
}

}  // namespace cdynamo::lower
