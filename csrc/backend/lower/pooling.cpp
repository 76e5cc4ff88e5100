// Lowering of max pooling (values only) as a pointwise maximum over each window, so the ops
// producing its input (batch norm, ReLU) fuse into it instead of being stored first.
// Assumes static sizes; the indices output, when something reads it, leaves the op to aten.
#include <limits>
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

using ir::ScalarOp;

// Windows larger than this cost more inlined than a stored input saves.
constexpr int64_t kMaxWindow = 16;

std::vector<int64_t> per_dim(const FxArg& arg, std::vector<int64_t> fallback) {
  if (arg.is_none()) return fallback;
  std::vector<int64_t> v = arg.as_int_list();
  if (v.empty()) return fallback;
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

bool indices_are_read(const FxGraph& graph, const FxNode& node) {
  for (int user : node.users) {
    const FxNode& u = graph.nodes.at(user);
    if (u.target != "getitem") return true;
    if (u.param(1).as_int() != 0 && !u.users.empty()) return true;  // make_fx keeps unread getitems
  }
  return false;
}

Lowered lower_max_pool2d(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  if (indices_are_read(ctx.graph(), node)) throw NotLowered("max_pool2d indices are used");
  if (!ir::is_floating(x.dtype) || (x.rank() != 3 && x.rank() != 4)) throw NotLowered("max_pool2d input");
  if (node.meta.empty() || !node.meta[0]) throw NotLowered("max_pool2d without metadata");
  std::vector<int64_t> kernel = per_dim(node.param(1), {});
  if (kernel.size() != 2) throw NotLowered("max_pool2d kernel size");
  std::vector<int64_t> stride = per_dim(node.param(2), kernel), padding = per_dim(node.param(3), {0, 0}),
                       dilation = per_dim(node.param(4), {1, 1});
  if (kernel[0] * kernel[1] > kMaxWindow) throw NotLowered("large pooling window");
  // Output sizes (ceil_mode included) as eager computes them.
  std::vector<Expr> out_sizes = node.meta[0]->sizes;
  const size_t h = x.rank() - 2, w = x.rank() - 1;
  for (size_t d : {h, w})
    if (!x.sizes[d].is_const() || !out_sizes[d].is_const()) throw NotLowered("symbolic max_pool2d");
  const int64_t in_h = x.sizes[h].const_value(), in_w = x.sizes[w].const_value();
  const int64_t out_h = out_sizes[h].const_value(), out_w = out_sizes[w].const_value();
  DType compute = compute_dtype(x.dtype);
  Scalar lowest = constant_of(-std::numeric_limits<double>::infinity(), x.dtype);
  Value values = ctx.lazy(x.dtype, out_sizes, [=](const Index& index) {
    Scalar best;
    for (int64_t kh = 0; kh < kernel[0]; ++kh) {
      for (int64_t kw = 0; kw < kernel[1]; ++kw) {
        const int64_t dh = kh * dilation[0] - padding[0], dw = kw * dilation[1] - padding[1];
        Index at = index;
        at[h] = index[h] * Expr(stride[0]) + Expr(dh);
        at[w] = index[w] * Expr(stride[1]) + Expr(dw);
        // Only window positions that can fall outside the input for some output need a mask.
        Scalar mask;
        auto require = [&](ScalarOp op, const Expr& a, int64_t bound) {
          Scalar test = ir::binary(op, index_scalar(a), index_scalar(Expr(bound)), DType::Bool);
          mask = mask ? ir::binary(ScalarOp::LogicalAnd, mask, test, DType::Bool) : test;
        };
        if (dh < 0) require(ScalarOp::Ge, at[h], 0);
        if ((out_h - 1) * stride[0] + dh >= in_h) require(ScalarOp::Lt, at[h], in_h);
        if (dw < 0) require(ScalarOp::Ge, at[w], 0);
        if ((out_w - 1) * stride[1] + dw >= in_w) require(ScalarOp::Lt, at[w], in_w);
        Scalar value = ir::cast(x.load(at), compute);
        if (mask) value = ir::where(mask, mask_loads(value, mask), lowest);
        best = best ? ir::binary(ScalarOp::Maximum, best, value, compute) : value;
      }
    }
    return best;
  });
  return Lowered::many({values, std::nullopt});
}

}  // namespace

void register_pooling_lowerings(Registry& r) { r["aten::max_pool2d_with_indices.default"] = lower_max_pool2d; }

}  // namespace cdynamo::lower
