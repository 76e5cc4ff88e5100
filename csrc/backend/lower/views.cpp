// Lowerings of view ops into index remappings of the viewed storage: view/reshape, permute,
// transpose, expand, slice, select, (un)squeeze, split, unbind, unfold, diagonal, flip, as_strided.
// Symbolic sizes: view, expand, slice and select take expressions; where a fixed size is needed
// (split, unfold, narrow, ...) the op falls back to an extern call.
#include <algorithm>
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

int64_t static_size(const Expr& e) {
  if (!e.is_const()) throw NotLowered("symbolic size in a view");
  return e.const_value();
}

// Sizes with one -1 resolved against the element count (exact: the view is valid).
std::vector<Expr> resolve_sizes(const std::vector<Expr>& requested, const std::vector<Expr>& old_sizes) {
  Expr total = ir::product(old_sizes);
  std::vector<Expr> out;
  int inferred = -1;
  Expr known = 1;
  for (size_t k = 0; k < requested.size(); ++k) {
    if (requested[k].is_const(-1)) {
      inferred = static_cast<int>(k);
      out.push_back(0);
    } else {
      out.push_back(requested[k]);
      known = known * requested[k];
    }
  }
  if (inferred >= 0) out[inferred] = ir::floordiv(total, known);
  return out;
}

// Symbolic sizes: from the front, dims of equal size map one to one, and otherwise the fewest
// dims on one side whose product equals one dim on the other form a group; the rest is one group.
struct DimGroup {
  size_t old_begin, old_end, new_begin, new_end;
};
std::vector<DimGroup> symbolic_groups(const std::vector<Expr>& old_sizes, const std::vector<Expr>& new_sizes) {
  std::vector<DimGroup> groups;
  size_t o = 0, n = 0;
  auto grows_to = [](const std::vector<Expr>& sizes, size_t from, const Expr& target) -> size_t {
    Expr p = 1;
    for (size_t k = from; k < sizes.size(); ++k) {
      p = p * sizes[k];
      if (p == target) return k + 1;
    }
    return 0;
  };
  while (o < old_sizes.size() && n < new_sizes.size()) {
    if (size_t end = grows_to(old_sizes, o, new_sizes[n])) {
      groups.push_back({o, end, n, n + 1});
      o = end, n = n + 1;
    } else if (size_t end = grows_to(new_sizes, n, old_sizes[o])) {
      groups.push_back({o, o + 1, n, end});
      o = o + 1, n = end;
    } else {
      break;
    }
  }
  if (o < old_sizes.size() || n < new_sizes.size()) groups.push_back({o, old_sizes.size(), n, new_sizes.size()});
  return groups;
}

// For each group of dims whose sizes multiply to the same count, the flat position in the
// new dims is unflattened over the old dims: small // and % that the simplifier can undo.
Reindex reshape_reindex(const std::vector<Expr>& old_sizes, const std::vector<Expr>& new_sizes) {
  using Group = DimGroup;
  std::vector<Group> groups;
  bool all_static = std::all_of(old_sizes.begin(), old_sizes.end(), [](auto& e) { return e.is_const(); }) &&
                    std::all_of(new_sizes.begin(), new_sizes.end(), [](auto& e) { return e.is_const(); });
  if (all_static) {
    size_t o = 0, n = 0;
    while (o < old_sizes.size() || n < new_sizes.size()) {
      Group g{o, o, n, n};
      int64_t po = 1, pn = 1;
      // Take at least one dim from a side that has dims left, then grow the smaller product.
      if (o < old_sizes.size()) po *= old_sizes[o++].const_value();
      if (n < new_sizes.size()) pn *= new_sizes[n++].const_value();
      while (po != pn) {
        if (po < pn && o < old_sizes.size()) po *= old_sizes[o++].const_value();
        else if (pn < po && n < new_sizes.size()) pn *= new_sizes[n++].const_value();
        else break;
      }
      g.old_end = o;
      g.new_end = n;
      groups.push_back(g);
    }
  } else {
    groups = symbolic_groups(old_sizes, new_sizes);
  }
  return [groups, old_sizes, new_sizes](const Index& index) {
    Index old(old_sizes.size(), Expr(0));
    for (const Group& g : groups) {
      Expr flat = 0;
      for (size_t k = g.new_begin; k < g.new_end; ++k) flat = flat * new_sizes[k] + index[k];
      Expr stride = 1;
      for (size_t k = g.old_end; k-- > g.old_begin;) {
        old[k] = k == g.old_begin ? ir::floordiv(flat, stride) : ir::mod(ir::floordiv(flat, stride), old_sizes[k]);
        stride = stride * old_sizes[k];
      }
    }
    return old;
  };
}

Value reshape(const Value& x, const std::vector<Expr>& sizes) {
  if (sizes == x.sizes) return x;
  return x.view(sizes, reshape_reindex(x.sizes, sizes));
}

Value permute(const Value& x, const std::vector<int64_t>& dims) {
  std::vector<Expr> sizes;
  for (int64_t d : dims) sizes.push_back(x.sizes[d]);
  return x.view(sizes, [dims](const Index& index) {
    Index old(dims.size());
    for (size_t k = 0; k < dims.size(); ++k) old[dims[k]] = index[k];
    return old;
  });
}

// A fixed slice bound as eager clamps it into [0, size] (min/max expressions of a symbolic size;
// they fold to constants for a fixed one).
Expr clamped_bound(int64_t v, const Expr& size) {
  if (v >= (int64_t{1} << 62)) return size;  // "to the end"
  if (v == 0) return Expr(0);
  return v > 0 ? ir::min(Expr(v), size) : ir::max(size + Expr(v), Expr(0));  // sizes are >= 0
}

// x[start:end:step] along dim (bounds already in range), of `length` elements.
Value slice_view(const Value& x, int64_t dim, const Expr& start, const Expr& end, int64_t step, const Expr& length) {
  if (start.is_const(0) && step == 1 && end == x.sizes[dim]) return x;
  std::vector<Expr> sizes = x.sizes;
  sizes[dim] = length;
  return x.view(sizes, [dim, start, step](const Index& index) {
    Index old = index;
    old[dim] = start + index[dim] * Expr(step);
    return old;
  });
}

// Fixed bounds (split, narrow).
Value slice(const Value& x, int64_t dim, int64_t start_arg, int64_t end_arg, int64_t step) {
  if (step <= 0) throw UserError("slice step must be positive");
  const Expr start = clamped_bound(start_arg, x.sizes[dim]);
  const Expr end = ir::max(clamped_bound(end_arg, x.sizes[dim]), start);
  return slice_view(x, dim, start, end, step, ir::floordiv(end - start + Expr(step - 1), Expr(step)));
}

// aten.slice: fixed bounds as above; symbolic bounds (size arithmetic) only where the node's own
// size (torch's, under the frame's guards) shows them in range.
Value slice(const Value& x, int64_t dim, const FxArg& start_arg, const FxArg& end_arg, int64_t step,
            const std::optional<Expr>& result_size) {
  if (step <= 0) throw UserError("slice step must be positive");
  const Expr& size = x.sizes[dim];
  auto bound = [&](const FxArg& arg, const Expr& otherwise) -> Expr {
    if (arg.is_none()) return otherwise;
    Expr e = arg.as_expr();
    return e.is_const() ? clamped_bound(e.const_value(), size) : e;
  };
  Expr start = bound(start_arg, 0), end = bound(end_arg, size);
  const bool fixed_bounds = (start_arg.is_none() || start_arg.is_fixed_number()) && (end_arg.is_none() || end_arg.is_fixed_number());
  if (fixed_bounds) end = ir::max(end, start);
  Expr length = ir::floordiv(end - start + Expr(step - 1), Expr(step));
  if (!fixed_bounds && (!result_size || !(*result_size == length))) symbolic_unsupported("a slice with symbolic bounds");
  return slice_view(x, dim, start, end, step, result_size ? *result_size : length);
}

Value select(const Value& x, int64_t dim, int64_t fixed_position) {
  Expr position = fixed_position < 0 ? x.sizes[dim] + Expr(fixed_position) : Expr(fixed_position);
  std::vector<Expr> sizes = x.sizes;
  sizes.erase(sizes.begin() + dim);
  return x.view(sizes, [dim, position](const Index& index) {
    Index old = index;
    old.insert(old.begin() + dim, Expr(position));
    return old;
  });
}

Value unsqueeze(const Value& x, int64_t dim) {
  std::vector<Expr> sizes = x.sizes;
  sizes.insert(sizes.begin() + dim, Expr(1));
  return x.view(sizes, [dim](const Index& index) {
    Index old = index;
    old.erase(old.begin() + dim);
    return old;
  });
}

Value squeeze(const Value& x, std::vector<int64_t> dims) {
  std::vector<bool> drop(x.rank(), false);
  for (int64_t d : dims)
    if (x.sizes[d].is_const(1)) drop[d] = true;
  std::vector<Expr> sizes;
  for (size_t k = 0; k < x.rank(); ++k)
    if (!drop[k]) sizes.push_back(x.sizes[k]);
  if (sizes.size() == x.rank()) return x;
  return x.view(sizes, [drop](const Index& index) {
    Index old;
    size_t k = 0;
    for (bool d : drop) old.push_back(d ? Expr(0) : index[k++]);
    return old;
  });
}

Value expand(const Value& x, const std::vector<Expr>& requested) {
  std::vector<Expr> sizes;
  size_t lead = requested.size() - x.rank();
  for (size_t k = 0; k < requested.size(); ++k)
    sizes.push_back(requested[k].is_const(-1) ? x.sizes[k - lead] : requested[k]);
  return broadcast_to(x, sizes);
}

std::vector<int64_t> all_dims(size_t rank) {
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) out[k] = static_cast<int64_t>(k);
  return out;
}

Lowered lower_view(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  return Lowered::one(reshape(x, resolve_sizes(node.param(1).as_expr_list(), x.sizes)));
}

Lowered lower_split(LoweringContext& ctx, const FxNode& node, bool with_sizes) {
  Value x = ctx.tensor_param(node, 0);
  int64_t dim = normalize_dim(node.param(2).as_int(), x.rank());
  int64_t size = static_size(x.sizes[dim]);
  std::vector<int64_t> sizes;
  if (with_sizes) {
    sizes = node.param(1).as_int_list();
  } else {
    int64_t chunk = node.param(1).as_int();
    for (int64_t start = 0; start < size || (size == 0 && sizes.empty()); start += std::max<int64_t>(chunk, 1))
      sizes.push_back(std::min(chunk, size - start));
  }
  std::vector<std::optional<Value>> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(slice(x, dim, start, start + s, 1));
    start += s;
  }
  return Lowered::many(parts);
}

// as_strided addresses the underlying storage directly: a storage with its own layout over
// the same buffer.
Lowered lower_as_strided(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  ctx.realize(*x.storage);
  const Storage& base = *x.storage;
  if (!base.offset.is_const(0)) throw NotLowered("as_strided of an offset buffer");
  auto st = std::make_shared<Storage>();
  st->dtype = base.dtype;
  for (int64_t s : node.param(1).as_int_list()) st->sizes.push_back(s);
  for (int64_t s : node.param(2).as_int_list()) st->strides.push_back(s);
  Expr storage_offset = node.param(3).is_none() ? Expr(0) : Expr(node.param(3).as_int());
  st->offset = ir::simplify(storage_offset - base.origin);
  st->buffer = base.buffer;
  st->origin = base.origin;
  st->reads = {base.buffer};
  return Lowered::one(Value{st, st->dtype, st->sizes, {}});
}

Lowered lower_unfold(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  int64_t dim = normalize_dim(node.param(1).as_int(), x.rank());
  int64_t window = node.param(2).as_int(), step = node.param(3).as_int();
  int64_t size = x.rank() == 0 ? 1 : static_size(x.sizes[dim]);
  if (x.rank() == 0) throw NotLowered("unfold of a 0-dim tensor");
  std::vector<Expr> sizes = x.sizes;
  sizes[dim] = (size - window) / step + 1;
  sizes.push_back(window);
  return Lowered::one(x.view(sizes, [dim, step](const Index& index) {
    Index old(index.begin(), index.end() - 1);
    old[dim] = index[dim] * Expr(step) + index.back();
    return old;
  }));
}

Lowered lower_diagonal(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  int64_t offset = node.param(1).as_int();
  int64_t d1 = normalize_dim(node.param(2).as_int(), x.rank()), d2 = normalize_dim(node.param(3).as_int(), x.rank());
  int64_t n1 = static_size(x.sizes[d1]), n2 = static_size(x.sizes[d2]);
  int64_t length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  std::vector<Expr> sizes;
  std::vector<int64_t> others;
  for (size_t k = 0; k < x.rank(); ++k)
    if (static_cast<int64_t>(k) != d1 && static_cast<int64_t>(k) != d2) {
      sizes.push_back(x.sizes[k]);
      others.push_back(static_cast<int64_t>(k));
    }
  sizes.push_back(length);
  size_t rank = x.rank();
  return Lowered::one(x.view(sizes, [=](const Index& index) {
    Index old(rank, Expr(0));
    for (size_t k = 0; k < others.size(); ++k) old[others[k]] = index[k];
    old[d1] = index.back() + Expr(std::max<int64_t>(-offset, 0));
    old[d2] = index.back() + Expr(std::max<int64_t>(offset, 0));
    return old;
  }));
}

Lowered lower_flip(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<bool> flipped(x.rank(), false);
  for (int64_t d : node.param(1).as_int_list()) flipped[normalize_dim(d, x.rank())] = true;
  std::vector<Expr> sizes = x.sizes;
  return Lowered::one(x.view(sizes, [flipped, sizes](const Index& index) {
    Index old = index;
    for (size_t k = 0; k < flipped.size(); ++k)
      if (flipped[k]) old[k] = sizes[k] - Expr(1) - index[k];
    return old;
  }));
}

const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {
      "aten::view.default",    "aten::_unsafe_view.default", "aten::reshape.default",  "aten::permute.default",
      "aten::transpose.int",   "aten::t.default",            "aten::expand.default",   "aten::slice.Tensor",
      "aten::select.int",      "aten::unsqueeze.default",    "aten::squeeze.default",  "aten::squeeze.dim",
      "aten::squeeze.dims",    "aten::as_strided.default",   "aten::alias.default",    "aten::split_with_sizes.default",
      "aten::split.Tensor",    "aten::unbind.int",           "aten::narrow.default",   "aten::unfold.default",
      "aten::diagonal.default", "prims::broadcast_in_dim.default", "aten::flip.default", "prims::rev.default",
      "aten::clone.default",   "aten::lift_fresh_copy.default", "aten::contiguous.default",
  };
  return ops;
}

}  // namespace

bool is_view_op(const std::string& target) { return view_ops().count(target) > 0; }

void register_view_lowerings(Registry& r) {
  r["aten::view.default"] = lower_view;
  r["aten::_unsafe_view.default"] = lower_view;
  r["aten::reshape.default"] = lower_view;
  r["aten::permute.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    std::vector<int64_t> dims;
    for (int64_t d : node.param(1).as_int_list()) dims.push_back(normalize_dim(d, x.rank()));
    return Lowered::one(permute(x, dims));
  };
  r["aten::transpose.int"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    std::vector<int64_t> dims = all_dims(x.rank());
    if (x.rank() == 0) return Lowered::one(x);
    std::swap(dims[normalize_dim(node.param(1).as_int(), x.rank())], dims[normalize_dim(node.param(2).as_int(), x.rank())]);
    return Lowered::one(permute(x, dims));
  };
  r["aten::t.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    if (x.rank() < 2) return Lowered::one(x);
    return Lowered::one(permute(x, {1, 0}));
  };
  r["aten::expand.default"] = [](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(expand(ctx.tensor_param(node, 0), node.param(1).as_expr_list()));
  };
  r["aten::slice.Tensor"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    int64_t dim = normalize_dim(node.param(1).as_int(), x.rank());
    std::optional<Expr> result_size;
    if (!node.meta.empty() && node.meta[0] && node.meta[0]->sizes.size() == x.rank()) result_size = node.meta[0]->sizes[dim];
    return Lowered::one(slice(x, dim, node.param(2), node.param(3), node.param(4).as_int(), result_size));
  };
  r["aten::narrow.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    int64_t dim = normalize_dim(node.param(1).as_int(), x.rank());
    int64_t start = node.param(2).as_int();
    if (start < 0) start += static_size(x.sizes[dim]);
    return Lowered::one(slice(x, dim, start, start + node.param(3).as_int(), 1));
  };
  r["aten::select.int"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    return Lowered::one(select(x, normalize_dim(node.param(1).as_int(), x.rank()), node.param(2).as_int()));
  };
  r["aten::unsqueeze.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    return Lowered::one(unsqueeze(x, normalize_dim(node.param(1).as_int(), x.rank() + 1)));
  };
  r["aten::squeeze.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    return Lowered::one(squeeze(x, all_dims(x.rank())));
  };
  auto squeeze_dims = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    std::vector<int64_t> dims;
    if (x.rank() == 0) return Lowered::one(x);
    for (int64_t d : node.param(1).as_int_list()) dims.push_back(normalize_dim(d, x.rank()));
    return Lowered::one(squeeze(x, dims));
  };
  r["aten::squeeze.dim"] = squeeze_dims;
  r["aten::squeeze.dims"] = squeeze_dims;
  r["aten::as_strided.default"] = lower_as_strided;
  r["aten::alias.default"] = [](LoweringContext& ctx, const FxNode& node) { return Lowered::one(ctx.tensor_param(node, 0)); };
  r["aten::split_with_sizes.default"] = [](LoweringContext& c, const FxNode& n) { return lower_split(c, n, true); };
  r["aten::split.Tensor"] = [](LoweringContext& c, const FxNode& n) { return lower_split(c, n, false); };
  r["aten::unbind.int"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    int64_t dim = normalize_dim(node.param(1).as_int(), x.rank());
    std::vector<std::optional<Value>> parts;
    for (int64_t k = 0; k < static_size(x.sizes[dim]); ++k) parts.push_back(select(x, dim, k));
    return Lowered::many(parts);
  };
  r["aten::unfold.default"] = lower_unfold;
  r["aten::diagonal.default"] = lower_diagonal;
  r["aten::flip.default"] = lower_flip;
  r["prims::rev.default"] = lower_flip;
  r["prims::broadcast_in_dim.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    std::vector<Expr> sizes;
    for (int64_t s : node.param(1).as_int_list()) sizes.push_back(s);
    std::vector<int64_t> dims = node.param(2).as_int_list();
    std::vector<Expr> x_sizes = x.sizes;
    return Lowered::one(x.view(sizes, [dims, x_sizes, sizes](const Index& index) {
      Index old;
      for (size_t k = 0; k < dims.size(); ++k)
        old.push_back(x_sizes[k].is_const(1) && !sizes[dims[k]].is_const(1) ? Expr(0) : index[dims[k]]);
      return old;
    }));
  };
}

}  // namespace cdynamo::lower
