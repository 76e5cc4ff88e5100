// The lowering machinery: storages and views, realization into buffers, reductions,
// broadcasting, type promotion and scalar-body utilities shared by every lowering file.
// Assumes torch semantics for promotion (c10's result_type) and a Float32 default dtype.
#include "backend/ir/recursion_guard.h"
#include "backend/lower/lowering.h"
#include <algorithm>
#include "common/error.h"

namespace cdynamo::lower {

using ir::Buffer;
using ir::ScalarOp;

// ---- dtypes --------------------------------------------------------------------------------

DType compute_dtype(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

Scalar convert(const Scalar& value, DType target) {
  DType compute = compute_dtype(target);
  if (compute != target) return ir::cast(ir::cast(value, target), compute);
  return ir::cast(value, target);
}

Scalar constant_of(double value, DType dtype) { return ir::constant(value, compute_dtype(dtype)); }
Scalar constant_of_int(int64_t value, DType dtype) { return ir::constant_int(value, compute_dtype(dtype)); }

namespace {
enum class Category { Bool = 0, Integral = 1, Floating = 2 };
Category category_of(DType d) {
  if (d == DType::Bool) return Category::Bool;
  return ir::is_floating(d) ? Category::Floating : Category::Integral;
}
bool is_signed_int(DType d) { return d == DType::Int8 || d == DType::Int16 || d == DType::Int32 || d == DType::Int64; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  Category ca = category_of(a), cb = category_of(b);
  if (ca != cb) return ca == Category::Floating ? a : b;
  if (ca == Category::Floating) {
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16)) return DType::Float32;
    return ir::dtype_size(a) >= ir::dtype_size(b) ? a : b;
  }
  // Integral: uint8 with a signed type needs a wider signed one.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  (void)is_signed_int;
  return ir::dtype_size(a) >= ir::dtype_size(b) ? a : b;
}

DType result_type(const std::vector<Operand>& operands) {
  // c10's ResultTypeState: dimensioned tensors, zero-dim tensors and Python numbers promote
  // within their tier; a lower tier only matters when it has a higher category.
  std::optional<DType> dim, zero, wrapped;
  auto update = [](std::optional<DType>& slot, DType d) { slot = slot ? promote_types(*slot, d) : d; };
  for (const Operand& op : operands) {
    if (op.tensor) {
      update(op.tensor->rank() == 0 ? zero : dim, op.tensor->dtype);
    } else if (op.number.kind == FxArg::Kind::Bool) {
      update(wrapped, DType::Bool);
    } else if (op.number.kind == FxArg::Kind::Int || op.number.kind == FxArg::Kind::SymInt) {
      update(wrapped, DType::Int64);
    } else if (op.number.kind == FxArg::Kind::Float) {
      update(wrapped, DType::Float32);  // the default dtype
    }
  }
  auto combine = [](std::optional<DType> higher, std::optional<DType> lower) -> std::optional<DType> {
    if (!higher) return lower;
    if (!lower) return higher;
    if (category_of(*higher) == Category::Floating) return higher;
    if (*higher == DType::Bool || category_of(*lower) == Category::Floating) return promote_types(*higher, *lower);
    return higher;
  };
  auto result = combine(dim, combine(zero, wrapped));
  if (!result) throw InternalError("result_type of no operands");
  return *result;
}

// ---- storages and values ---------------------------------------------------------------------

Scalar Storage::load(const Index& index) {
  ir::RecursionGuard recursion("a chain of lazy values");
  std::string key;
  for (const Expr& e : index) key += e.py_str() + ",";
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Scalar result;
  if (realized()) {
    result = ir::cast(ir::load(buffer, dtype, ir::linear_index(index, strides, offset)), compute_dtype(dtype));
  } else {
    result = compute(index);
  }
  cache_.emplace(key, result);
  return result;
}

Value Value::view(std::vector<Expr> new_sizes, Reindex to_this) const {
  Value out = *this;
  out.sizes = std::move(new_sizes);
  if (reindex) {
    Reindex outer = reindex;
    out.reindex = [outer, to_this](const Index& index) {
      ir::RecursionGuard recursion("a chain of views");
      return outer(to_this(index));
    };
  } else {
    out.reindex = std::move(to_this);
  }
  return out;
}

Index make_vars(char prefix, size_t n, size_t start) {
  Index vars;
  for (size_t k = 0; k < n; ++k) vars.push_back(Expr::var(prefix + std::to_string(start + k)));
  return vars;
}

Scalar index_scalar(const Expr& e, DType dtype) {
  if (e.is_const()) return ir::constant_int(e.const_value(), dtype);
  return ir::index_value(e, dtype);
}

ir::VarRanges ranges_of(const Index& vars, const std::vector<Expr>& sizes) {
  ir::VarRanges ranges;
  for (size_t k = 0; k < vars.size() && k < sizes.size(); ++k)
    if (vars[k].kind() == ir::ExprKind::Var) ranges[vars[k].var_name()] = sizes[k];
  return ranges;
}

// ---- scalar-body utilities -------------------------------------------------------------------

namespace {
// Rebuilds a DAG bottom-up through `rewrite(node, new_args, new_indirect)`, sharing results.
template <typename Rewrite>
Scalar rewrite_dag(const Scalar& root, Rewrite rewrite) {
  std::map<const ir::ScalarNode*, Scalar> done;
  std::function<Scalar(const Scalar&)> visit = [&](const Scalar& s) -> Scalar {
    auto it = done.find(s.get());
    if (it != done.end()) return it->second;
    ir::RecursionGuard recursion("a scalar graph");
    std::vector<Scalar> args, indirect;
    for (const Scalar& a : s->args) args.push_back(visit(a));
    for (const Scalar& a : s->indirect) indirect.push_back(visit(a));
    Scalar out = rewrite(s, std::move(args), std::move(indirect));
    done.emplace(s.get(), out);
    return out;
  };
  return visit(root);
}

template <typename Fn>
void for_each_node(const Scalar& root, Fn fn) {
  std::set<const ir::ScalarNode*> seen;
  std::vector<const ir::ScalarNode*> stack{root.get()};
  while (!stack.empty()) {
    const ir::ScalarNode* s = stack.back();
    stack.pop_back();
    if (!seen.insert(s).second) continue;
    fn(*s);
    for (const Scalar& a : s->args) stack.push_back(a.get());
    for (const Scalar& a : s->indirect) stack.push_back(a.get());
  }
}
}  // namespace

Scalar simplify_body(const Scalar& body, const ir::VarRanges& ranges) {
  return rewrite_dag(body, [&](const Scalar& s, std::vector<Scalar> args, std::vector<Scalar> indirect) -> Scalar {
    auto node = std::make_shared<ir::ScalarNode>(*s);
    node->args = std::move(args);
    node->indirect = std::move(indirect);
    if (s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad || s->op == ScalarOp::Index)
      node->index = ir::simplify(s->index, ranges);
    return node;
  });
}

Scalar mask_loads(const Scalar& body, const Scalar& mask) {
  return rewrite_dag(body, [&](const Scalar& s, std::vector<Scalar> args, std::vector<Scalar> indirect) -> Scalar {
    auto node = std::make_shared<ir::ScalarNode>(*s);
    node->args = std::move(args);
    node->indirect = std::move(indirect);
    if (s->op == ScalarOp::Load) {
      // The fallback 1 (not 0) keeps integer divisions in the discarded branch defined.
      node->op = ScalarOp::MaskedLoad;
      node->args = {mask, ir::constant_int(1, s->dtype)};
    } else if (s->op == ScalarOp::MaskedLoad) {
      node->args[0] = ir::binary(ScalarOp::LogicalAnd, mask, node->args[0], DType::Bool);
    }
    return node;
  });
}

Expr fresh_indirect_placeholder() {
  static int counter = 0;
  return Expr::var("indirect_" + std::to_string(counter++));
}

namespace {

// The value of an index expression as Int64 scalar arithmetic, `name` standing for `value`
// (a gathered position): the parts free of `name` stay index values.
Scalar expr_with(const Expr& e, const std::string& name, const Scalar& value) {
  ir::RecursionGuard recursion("an index expression");
  auto free = e.free_vars();
  if (std::find(free.begin(), free.end(), name) == free.end()) return index_scalar(e);
  const std::vector<Expr>& ops = e.operands();
  auto fold = [&](ScalarOp op) {
    Scalar acc = expr_with(ops.at(0), name, value);
    for (size_t k = 1; k < ops.size(); ++k) acc = ir::binary(op, acc, expr_with(ops[k], name, value), DType::Int64);
    return acc;
  };
  switch (e.kind()) {
    case ir::ExprKind::Var: return value;
    case ir::ExprKind::Add: return fold(ScalarOp::Add);
    case ir::ExprKind::Mul: return fold(ScalarOp::Mul);
    case ir::ExprKind::FloorDiv: return fold(ScalarOp::FloorDiv);
    case ir::ExprKind::Mod: return fold(ScalarOp::Remainder);
    case ir::ExprKind::Min: return fold(ScalarOp::Minimum);
    case ir::ExprKind::Max: return fold(ScalarOp::Maximum);
    default: throw InternalError("index expression " + e.str() + " has no scalar form");
  }
}

}  // namespace

Scalar bind_indirect(const Scalar& body, const Expr& placeholder, const Scalar& position, const Expr& size) {
  const std::string& name = placeholder.var_name();
  Scalar position64 = ir::cast(position, DType::Int64);
  return rewrite_dag(body, [&](const Scalar& s, std::vector<Scalar> args, std::vector<Scalar> indirect) -> Scalar {
    auto node = std::make_shared<ir::ScalarNode>(*s);
    node->args = std::move(args);
    node->indirect = std::move(indirect);
    bool is_load = s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad;
    if (s->op == ScalarOp::Index) {
      // The gathered tensor's own value depends on the position (a gathered arange): arithmetic
      // on the position itself.
      auto free = s->index.free_vars();
      if (std::find(free.begin(), free.end(), name) != free.end())
        return ir::cast(expr_with(s->index, name, position64), s->dtype);
    }
    if (is_load) {
      auto free = s->index.free_vars();
      if (std::find(free.begin(), free.end(), name) != free.end()) {
        Expr bound = Expr::var(ir::indirect_var(node->indirect.size()));
        node->index = s->index.substitute({{name, bound}});
        node->indirect.push_back(position64);
        node->indirect_sizes.push_back(size);
      }
    }
    return node;
  });
}

std::set<std::string> buffers_read(const Scalar& body) {
  std::set<std::string> out;
  for_each_node(body, [&](const ir::ScalarNode& s) {
    if (s.op == ScalarOp::Load || s.op == ScalarOp::MaskedLoad) out.insert(s.buffer);
  });
  return out;
}

int body_cost(const Scalar& body) {
  int cost = 0;
  for_each_node(body, [&](const ir::ScalarNode& s) {
    if (s.op != ScalarOp::Load && s.op != ScalarOp::Constant && s.op != ScalarOp::Index) ++cost;
  });
  return cost;
}

// ---- shapes -----------------------------------------------------------------------------------

int64_t normalize_dim(int64_t dim, size_t rank) {
  // torch lets dim 0 and -1 name the "dimension" of a 0-d tensor; no lowering has a dimension
  // to index there, so such a node becomes an extern call (the caller's catch).
  if (rank == 0) throw NotLowered("a dimension of a 0-d tensor");
  int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) throw UserError("dimension out of range: " + std::to_string(dim));
  return dim < 0 ? dim + r : dim;
}

std::vector<Expr> broadcast_shapes(const std::vector<std::vector<Expr>>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<Expr> out(rank, Expr(1));
  for (auto& s : shapes) {
    size_t lead = rank - s.size();
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k].is_const(1)) continue;
      if (out[lead + k].is_const(1)) out[lead + k] = s[k];
      else if (out[lead + k] != s[k]) throw UserError("shapes do not broadcast");
    }
  }
  return out;
}

Value broadcast_to(const Value& v, const std::vector<Expr>& sizes) {
  if (v.sizes == sizes) return v;
  size_t lead = sizes.size() - v.rank();
  std::vector<bool> stretched(v.rank());
  for (size_t k = 0; k < v.rank(); ++k) stretched[k] = v.sizes[k].is_const(1) && !sizes[lead + k].is_const(1);
  return v.view(sizes, [lead, stretched](const Index& index) {
    Index inner;
    for (size_t k = 0; k < stretched.size(); ++k) inner.push_back(stretched[k] ? Expr(0) : index[lead + k]);
    return inner;
  });
}

Scalar operand_scalar(const Operand& op, const Index& index, size_t out_rank, DType compute) {
  (void)out_rank;
  if (op.tensor) return ir::cast(op.tensor->load(index), compute);
  if (op.number.kind == FxArg::Kind::Float) return ir::constant(op.number.f, compute);
  if (op.number.kind == FxArg::Kind::SymInt) return ir::cast(index_scalar(op.number.expr), compute);
  return ir::constant_int(op.number.as_int(), compute);
}

bool is_dense_layout(const std::vector<Expr>& sizes, const std::vector<Expr>& strides,
                     const std::map<std::string, Expr>& hints) {
  if (sizes.size() != strides.size()) return false;
  // Sizes and strides at the hints (symbolic ones: eager's strides of symbolic sizes, computed
  // by the same rule at every size, are dense wherever they are dense at the hints). Constant
  // size-1 dimensions lay nothing out.
  auto at_hints = [&](const Expr& e) -> std::optional<int64_t> {
    Expr value = e.is_const() || hints.empty() ? e : ir::simplify(e.substitute(hints));
    return value.is_const() ? std::optional<int64_t>(value.const_value()) : std::nullopt;
  };
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::optional<int64_t> size = at_hints(sizes[k]), stride = at_hints(strides[k]);
    if (!size || !stride || *size == 0) return false;
    if (!sizes[k].is_const(1)) dims.emplace_back(*stride, *size);
  }
  std::stable_sort(dims.begin(), dims.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

std::optional<std::pair<std::vector<Expr>, Expr>> strided_layout(const Value& v) {
  const Storage& st = *v.storage;
  if (!st.realized()) return std::nullopt;
  Index vars = make_vars('i', v.rank());
  ir::VarRanges ranges = ranges_of(vars, v.sizes);
  Index inner = v.reindex ? v.reindex(vars) : vars;
  Expr flat = ir::simplify(ir::linear_index(inner, st.strides, st.offset), ranges);
  std::map<std::string, Expr> coefficient;
  Expr offset = 0;
  auto is_loop_var = [&](const Expr& e) { return e.kind() == ir::ExprKind::Var && ranges.count(e.var_name()); };
  std::vector<Expr> terms = flat.kind() == ir::ExprKind::Add ? flat.operands() : std::vector<Expr>{flat};
  for (const Expr& term : terms) {
    std::vector<std::string> free = term.free_vars();
    bool uses_loop = std::any_of(free.begin(), free.end(), [&](auto& n) { return ranges.count(n) > 0; });
    if (!uses_loop) {
      offset = offset + term;
      continue;
    }
    if (is_loop_var(term)) {
      coefficient[term.var_name()] = coefficient[term.var_name()] + Expr(1);
      continue;
    }
    if (term.kind() != ir::ExprKind::Mul) return std::nullopt;
    std::optional<std::string> var;
    Expr rest = 1;
    for (const Expr& factor : term.operands()) {
      if (is_loop_var(factor) && !var) {
        var = factor.var_name();
      } else {
        for (auto& n : factor.free_vars())
          if (ranges.count(n)) return std::nullopt;
        rest = rest * factor;
      }
    }
    if (!var) return std::nullopt;
    coefficient[*var] = coefficient[*var] + rest;
  }
  std::vector<Expr> strides;
  for (size_t k = 0; k < v.rank(); ++k) {
    auto it = coefficient.find(vars[k].var_name());
    // An index that ignores a dim is a broadcast (stride 0); size-1 dims may take any stride.
    Expr stride = it != coefficient.end() ? it->second : v.sizes[k].is_const(1) ? Expr(1) : Expr(0);
    if (stride.is_const() && stride.const_value() < 0) return std::nullopt;  // as_strided needs >= 0
    strides.push_back(stride);
  }
  if (offset.is_const() && offset.const_value() < 0) return std::nullopt;
  return std::make_pair(strides, offset);
}

// ---- the context -------------------------------------------------------------------------------

LoweringContext::LoweringContext(FxGraph graph, LowerOptions options) : graph_(std::move(graph)), options_(options) {}

std::string LoweringContext::fresh_name() {
  for (;;) {
    std::string name = "buf" + std::to_string(next_name_++);
    if (!buffer_index_.count(name)) return name;
  }
}

ir::Buffer& LoweringContext::add_buffer(ir::Buffer buffer) {
  if (buffer_index_.count(buffer.name)) throw InternalError("duplicate buffer " + buffer.name);
  // Computed buffers live where the graph runs; inputs, constants and extern outputs say so.
  if (buffer.kind != Buffer::Kind::Input && buffer.kind != Buffer::Kind::Constant && buffer.device == "cpu")
    buffer.device = device_;
  buffer_index_[buffer.name] = out_.buffers.size();
  out_.buffers.push_back(std::move(buffer));
  return out_.buffers.back();
}

ir::Buffer& LoweringContext::buffer(const std::string& name) {
  auto it = buffer_index_.find(name);
  if (it == buffer_index_.end()) throw InternalError("no buffer named " + name);
  return out_.buffers[it->second];
}

void LoweringContext::add_node(ir::Node node) { out_.nodes.push_back(std::move(node)); }

Value LoweringContext::lazy(DType dtype, std::vector<Expr> sizes, Loader compute) {
  auto storage = std::make_shared<Storage>();
  storage->dtype = dtype;
  storage->sizes = sizes;
  storage->compute = std::move(compute);
  Scalar probe = storage->load(make_vars('i', sizes.size()));
  storage->cost = body_cost(probe);
  storage->reads = buffers_read(probe);
  Value v{storage, dtype, std::move(sizes), {}};
  if (storage->cost > kMaxInlineCost) realize(*storage, !hint_strides_.empty() && hint_sizes_ == v.sizes ? hint_strides_ : std::vector<Expr>{});
  return v;
}

Value LoweringContext::from_buffer(const std::string& name) {
  const Buffer& b = buffer(name);
  auto storage = std::make_shared<Storage>();
  storage->dtype = b.dtype;
  storage->sizes = b.sizes;
  storage->buffer = name;
  storage->strides = b.strides;
  storage->offset = b.offset;
  storage->reads = {name};
  return Value{storage, b.dtype, b.sizes, {}};
}

void LoweringContext::realize(Storage& storage, std::vector<Expr> strides, ir::Buffer::Kind kind) {
  if (storage.realized()) return;
  std::string name = fresh_name();
  Buffer b;
  b.name = name;
  b.kind = kind;
  b.dtype = storage.dtype;
  b.sizes = storage.sizes;
  if (strides.empty() && !storage.sizes.empty())
    strides = storage.layout.empty() ? ir::contiguous_strides(storage.sizes) : storage.layout;
  b.strides = std::move(strides);
  add_buffer(b);
  Index vars = make_vars('i', storage.sizes.size());
  Scalar body = ir::cast(storage.compute(vars), storage.dtype);
  add_node(ir::Pointwise{name, storage.sizes, simplify_body(body, ranges_of(vars, storage.sizes))});
  storage.buffer = name;
  storage.strides = b.strides;
  storage.offset = 0;
  storage.compute = nullptr;
  storage.reads = {name};
  storage.forget_cache();
}

std::string LoweringContext::store(const Value& v, std::vector<Expr> strides, ir::Buffer::Kind kind) {
  Buffer b;
  b.name = fresh_name();
  b.kind = kind;
  b.dtype = v.dtype;
  b.sizes = v.sizes;
  b.strides = std::move(strides);
  add_buffer(b);
  store_into(v, b.name);
  return b.name;
}

void LoweringContext::store_into(const Value& v, const std::string& name) {
  const Buffer& b = buffer(name);
  Index vars = make_vars('i', v.rank());
  Scalar body = ir::cast(v.load(vars), b.dtype);
  add_node(ir::Pointwise{name, v.sizes, simplify_body(body, ranges_of(vars, v.sizes))});
}

std::string LoweringContext::buffer_for(const Value& v, bool allow_alias, ir::Buffer::Kind kind) {
  realize(*v.storage);
  const Storage& st = *v.storage;
  // The storage's own buffer serves only at v's sizes (an extern reads them).
  const bool same_sizes = buffer(st.buffer).sizes == v.sizes;
  if (!v.is_view() && same_sizes && kind == ir::Buffer::Kind::Intermediate) return st.buffer;
  if (allow_alias) {
    if (auto layout = strided_layout(v)) {
      if (!v.is_view() && same_sizes && layout->first == st.strides && layout->second == st.offset && kind == buffer(st.buffer).kind)
        return st.buffer;
      Buffer alias;
      alias.name = fresh_name();
      alias.kind = kind;
      alias.dtype = v.dtype;
      alias.sizes = v.sizes;
      alias.strides = layout->first;
      alias.offset = layout->second;
      const Buffer& base = buffer(st.buffer);
      alias.reuses = base.reuses.empty() ? base.name : base.reuses;
      alias.device = base.device;
      add_buffer(alias);
      return alias.name;
    }
  }
  return store(v, ir::contiguous_strides(v.sizes), kind);
}

std::string LoweringContext::reduce(ir::ReductionType type, const Value& v, const std::vector<int64_t>& reduced_dims,
                                    DType body_dtype, DType out_dtype) {
  std::vector<bool> reduced(v.rank(), false);
  for (int64_t d : reduced_dims) reduced[normalize_dim(d, v.rank())] = true;
  std::vector<Expr> kept_sizes, reduced_sizes;
  for (size_t k = 0; k < v.rank(); ++k) (reduced[k] ? reduced_sizes : kept_sizes).push_back(v.sizes[k]);
  Index ivars = make_vars('i', kept_sizes.size()), rvars = make_vars('r', reduced_sizes.size());
  Index index;
  size_t ki = 0, kr = 0;
  for (size_t k = 0; k < v.rank(); ++k) index.push_back(reduced[k] ? rvars[kr++] : ivars[ki++]);
  ir::VarRanges ranges = ranges_of(ivars, kept_sizes);
  for (auto& [name, size] : ranges_of(rvars, reduced_sizes)) ranges[name] = size;
  Scalar body = simplify_body(ir::cast(v.load(index), body_dtype), ranges);
  Buffer b;
  b.name = fresh_name();
  b.dtype = out_dtype;
  b.sizes = kept_sizes;
  b.strides = ir::contiguous_strides(kept_sizes);
  add_buffer(b);
  add_node(ir::Reduction{b.name, kept_sizes, reduced_sizes, type, body});
  return b.name;
}

const Lowered& LoweringContext::lowered(int node_index) const {
  auto it = lowered_.find(node_index);
  if (it == lowered_.end()) throw InternalError("argument node " + graph_.nodes.at(node_index).name + " not lowered yet");
  return it->second;
}

void LoweringContext::set_lowered(int node_index, Lowered lowered) { lowered_[node_index] = std::move(lowered); }

Value LoweringContext::tensor(const FxArg& arg) const {
  if (!arg.is_node()) throw NotLowered("expected a tensor argument");
  const Lowered& l = lowered(arg.node);
  if (l.is_sequence || l.values.size() != 1 || !l.values[0])
    throw NotLowered("argument " + graph_.nodes.at(arg.node).name + " is not a single tensor");
  return *l.values[0];
}

Operand LoweringContext::operand(const FxArg& arg) const {
  Operand op;
  if (arg.is_node()) op.tensor = tensor(arg);
  else if (arg.is_number()) op.number = arg;
  else throw NotLowered("expected a tensor or a number");
  return op;
}

const Registry& registry() {
  static const Registry* table = [] {
    auto* r = new Registry();
    register_pointwise_lowerings(*r);
    register_reduction_lowerings(*r);
    register_view_lowerings(*r);
    register_misc_lowerings(*r);
    register_pooling_lowerings(*r);
    return r;
  }();
  return *table;
}

}  // namespace cdynamo::lower
