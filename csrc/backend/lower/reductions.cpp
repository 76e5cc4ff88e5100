// Lowerings of reductions (sum, mean, amax/amin, max/min, argmax/argmin, prod, any/all,
// var/std and their _mean variants) into Reduction nodes plus lazy pointwise epilogues.
// Assumes reductions accumulate in compute_dtype (Float32 for half types), like eager.
#include <algorithm>
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

using ir::ReductionType;
using ir::ScalarOp;

// The reduced dims, normalised and sorted; None or [] means every dim.
std::vector<int64_t> reduced_dims(const FxArg* dims, size_t rank) {
  std::vector<int64_t> out;
  if (dims && !dims->is_none()) {
    for (int64_t d : dims->as_int_list()) out.push_back(normalize_dim(d, rank));
  }
  if (out.empty())
    for (size_t k = 0; k < rank; ++k) out.push_back(static_cast<int64_t>(k));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// With keepdim, the reduced dims come back as size-1 dims of a view.
Value keep_dims(const Value& reduced, const std::vector<Expr>& input_sizes, const std::vector<int64_t>& dims, bool keepdim) {
  if (!keepdim) return reduced;
  std::vector<Expr> sizes = input_sizes;
  std::vector<bool> is_reduced(input_sizes.size(), false);
  for (int64_t d : dims) {
    sizes[d] = 1;
    is_reduced[d] = true;
  }
  return reduced.view(sizes, [is_reduced](const Index& index) {
    Index inner;
    for (size_t k = 0; k < is_reduced.size(); ++k)
      if (!is_reduced[k]) inner.push_back(index[k]);
    return inner;
  });
}

Expr numel_of(const std::vector<Expr>& sizes, const std::vector<int64_t>& dims) {
  Expr n = 1;
  for (int64_t d : dims) n = n * sizes[d];
  return n;
}

DType out_dtype(const FxNode& node, size_t k, DType fallback) {
  if (k < node.meta.size() && node.meta[k]) return node.meta[k]->dtype;
  return fallback;
}

bool keepdim_of(const FxNode& node) {
  const FxArg* keepdim = node.param_named("keepdim");
  return keepdim && keepdim->kind == FxArg::Kind::Bool && keepdim->b;
}

// A reduction whose value has the input's dtype family (sum, prod, max, min).
Value simple_reduction(LoweringContext& ctx, ReductionType type, const Value& x, const std::vector<int64_t>& dims,
                       bool keepdim, DType out) {
  DType body = compute_dtype(out);
  std::string name = ctx.reduce(type, x, dims, body, out);
  return keep_dims(ctx.from_buffer(name), x.sizes, dims, keepdim);
}

Lowered lower_sum_like(LoweringContext& ctx, const FxNode& node, ReductionType type) {
  Value x = ctx.tensor_param(node, 0);
  const FxArg* dims = node.param_named("dim");
  std::vector<int64_t> reduced = reduced_dims(dims, x.rank());
  DType fallback = ir::is_integral(x.dtype) ? DType::Int64 : x.dtype;
  return Lowered::one(simple_reduction(ctx, type, x, reduced, keepdim_of(node), out_dtype(node, 0, fallback)));
}

// mean = sum / n, the sum kept in the compute dtype so half types round once.
Value mean_of(LoweringContext& ctx, const Value& x, const std::vector<int64_t>& dims, bool keepdim, DType out) {
  DType compute = compute_dtype(out);
  std::string sum = ctx.reduce(ReductionType::Sum, x, dims, compute, compute);
  Value total = keep_dims(ctx.from_buffer(sum), x.sizes, dims, keepdim);
  Expr n = numel_of(x.sizes, dims);
  return ctx.lazy(out, total.sizes, [total, n, compute](const Index& index) {
    Scalar count = index_scalar(n, compute);
    return ir::binary(ScalarOp::Div, total.load(index), count, compute);
  });
}

Lowered lower_mean(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<int64_t> dims = reduced_dims(node.param_named("dim"), x.rank());
  return Lowered::one(mean_of(ctx, x, dims, keepdim_of(node), out_dtype(node, 0, x.dtype)));
}

Lowered lower_extreme(LoweringContext& ctx, const FxNode& node, ReductionType type) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<int64_t> dims = reduced_dims(node.param_named("dim"), x.rank());
  return Lowered::one(simple_reduction(ctx, type, x, dims, keepdim_of(node), x.dtype));
}

// argmax/argmin(x, dim=None, keepdim): dim None flattens every dim.
Value arg_reduction(LoweringContext& ctx, ReductionType type, const Value& x, const FxArg* dim, bool keepdim) {
  std::vector<int64_t> dims;
  if (dim && !dim->is_none()) dims = {normalize_dim(dim->as_int(), x.rank())};
  else dims = reduced_dims(nullptr, x.rank());
  std::string name = ctx.reduce(type, x, dims, compute_dtype(x.dtype), DType::Int64);
  Value out = ctx.from_buffer(name);
  if (!keepdim) return out;
  if (dim && !dim->is_none()) return keep_dims(out, x.sizes, dims, true);
  // argmax(dim=None, keepdim=True): every dim becomes 1.
  std::vector<Expr> ones(x.rank(), Expr(1));
  return out.view(ones, [](const Index&) { return Index{}; });
}

Lowered lower_arg(LoweringContext& ctx, const FxNode& node, ReductionType type) {
  Value x = ctx.tensor_param(node, 0);
  return Lowered::one(arg_reduction(ctx, type, x, node.param_named("dim"), keepdim_of(node)));
}

// max.dim / min.dim: (values, indices).
Lowered lower_extreme_dim(LoweringContext& ctx, const FxNode& node, ReductionType value_type, ReductionType index_type) {
  Value x = ctx.tensor_param(node, 0);
  bool keepdim = keepdim_of(node);
  std::vector<int64_t> dims = {normalize_dim(node.param(1).as_int(), x.rank())};
  Value values = simple_reduction(ctx, value_type, x, dims, keepdim, x.dtype);
  Value indices = arg_reduction(ctx, index_type, x, &node.param(1), keepdim);
  return Lowered::many({values, indices});
}

Lowered lower_logical(LoweringContext& ctx, const FxNode& node, ReductionType type) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<int64_t> dims = reduced_dims(node.param_named("dim"), x.rank());
  std::string name = ctx.reduce(type, x, dims, DType::Bool, DType::Bool);
  Value out = keep_dims(ctx.from_buffer(name), x.sizes, dims, keepdim_of(node));
  DType want = out_dtype(node, 0, DType::Bool);  // any/all on uint8 return uint8
  if (want != DType::Bool) out = ctx.lazy(want, out.sizes, [out, want](const Index& i) { return ir::cast(out.load(i), want); });
  return Lowered::one(out);
}

// The correction of var/std overloads: var.correction(correction=None -> 1), var.dim/default(unbiased).
double correction_of(const FxNode& node) {
  if (const FxArg* c = node.param_named("correction")) return c->is_none() ? 1.0 : c->as_double();
  if (const FxArg* u = node.param_named("unbiased")) return u->is_none() || u->b ? 1.0 : 0.0;
  return 1.0;
}

struct Moments {
  Value var, mean;
};

// Two-pass variance: mean = sum(x)/n, var = sum((x - mean)^2) / max(n - correction, 0).
Moments moments(LoweringContext& ctx, const Value& x, const std::vector<int64_t>& dims, bool keepdim, double correction,
                DType out) {
  DType compute = compute_dtype(out);
  // The mean keeps the output dtype (var_mean returns it); its loads stay unrounded.
  Value mean_kept = mean_of(ctx, x, dims, true, out);
  Value mean_b = broadcast_to(mean_kept, x.sizes);
  Value centered_sq = ctx.lazy(compute, x.sizes, [x, mean_b, compute](const Index& index) {
    Scalar d = ir::binary(ScalarOp::Sub, ir::cast(x.load(index), compute), mean_b.load(index), compute);
    return ir::binary(ScalarOp::Mul, d, d, compute);
  });
  std::string sq = ctx.reduce(ReductionType::Sum, centered_sq, dims, compute, compute);
  Value total = keep_dims(ctx.from_buffer(sq), x.sizes, dims, keepdim);
  Expr n = numel_of(x.sizes, dims);
  Value var = ctx.lazy(out, total.sizes, [total, n, correction, compute](const Index& index) {
    Scalar count = index_scalar(n, compute);
    Scalar denominator = ir::binary(ScalarOp::Maximum, ir::binary(ScalarOp::Sub, count, ir::constant(correction, compute), compute),
                                    ir::constant(0.0, compute), compute);
    return ir::binary(ScalarOp::Div, total.load(index), denominator, compute);
  });
  Value mean = mean_kept;
  if (!keepdim) {
    // Reuse the kept-dims mean through a view rather than reducing twice.
    std::vector<bool> is_reduced(x.rank(), false);
    for (int64_t d : dims) is_reduced[d] = true;
    mean = mean_kept.view(total.sizes, [is_reduced](const Index& index) {
      Index full;
      size_t k = 0;
      for (bool r : is_reduced) full.push_back(r ? Expr(0) : index[k++]);
      return full;
    });
  }
  return {var, mean};
}

Value sqrt_of(LoweringContext& ctx, const Value& v) {
  DType compute = compute_dtype(v.dtype);
  return ctx.lazy(v.dtype, v.sizes, [v, compute](const Index& i) { return ir::unary(ScalarOp::Sqrt, v.load(i), compute); });
}

Lowered lower_var(LoweringContext& ctx, const FxNode& node, bool is_std, bool with_mean) {
  Value x = ctx.tensor_param(node, 0);
  std::vector<int64_t> dims = reduced_dims(node.param_named("dim"), x.rank());
  DType out = out_dtype(node, 0, x.dtype);
  Moments m = moments(ctx, x, dims, keepdim_of(node), correction_of(node), out);
  Value first = is_std ? sqrt_of(ctx, m.var) : m.var;
  if (!with_mean) return Lowered::one(first);
  return Lowered::many({first, m.mean});
}

}  // namespace

void register_reduction_lowerings(Registry& r) {
  r["aten::sum.dim_IntList"] = [](LoweringContext& c, const FxNode& n) { return lower_sum_like(c, n, ReductionType::Sum); };
  r["aten::sum.default"] = r["aten::sum.dim_IntList"];
  r["aten::prod.default"] = [](LoweringContext& c, const FxNode& n) { return lower_sum_like(c, n, ReductionType::Prod); };
  r["aten::prod.dim_int"] = r["aten::prod.default"];
  r["aten::mean.dim"] = lower_mean;
  r["aten::mean.default"] = lower_mean;
  r["aten::amax.default"] = [](LoweringContext& c, const FxNode& n) { return lower_extreme(c, n, ReductionType::Max); };
  r["aten::amin.default"] = [](LoweringContext& c, const FxNode& n) { return lower_extreme(c, n, ReductionType::Min); };
  r["aten::max.default"] = r["aten::amax.default"];
  r["aten::min.default"] = r["aten::amin.default"];
  r["aten::max.dim"] = [](LoweringContext& c, const FxNode& n) {
    return lower_extreme_dim(c, n, ReductionType::Max, ReductionType::ArgMax);
  };
  r["aten::min.dim"] = [](LoweringContext& c, const FxNode& n) {
    return lower_extreme_dim(c, n, ReductionType::Min, ReductionType::ArgMin);
  };
  r["aten::argmax.default"] = [](LoweringContext& c, const FxNode& n) { return lower_arg(c, n, ReductionType::ArgMax); };
  r["aten::argmin.default"] = [](LoweringContext& c, const FxNode& n) { return lower_arg(c, n, ReductionType::ArgMin); };
  for (const char* overload : {".default", ".dim", ".dims"}) {
    r[std::string("aten::any") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_logical(c, n, ReductionType::Any); };
    r[std::string("aten::all") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_logical(c, n, ReductionType::All); };
  }
  for (const char* overload : {".correction", ".dim", ".default"}) {
    r[std::string("aten::var") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_var(c, n, false, false); };
    r[std::string("aten::std") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_var(c, n, true, false); };
    r[std::string("aten::var_mean") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_var(c, n, false, true); };
    r[std::string("aten::std_mean") + overload] = [](LoweringContext& c, const FxNode& n) { return lower_var(c, n, true, true); };
  }
}

}  // namespace cdynamo::lower
