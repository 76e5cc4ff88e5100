// Lowering of max pooling as a pointwise maximum (and its position) over each window, so the ops
// producing its input (batch norm, ReLU) fuse into it, and of its backward as a gather over the
// windows each input element belongs to. Assumes static sizes.
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

struct PoolWindow {
  std::vector<int64_t> kernel, stride, padding, dilation;
  size_t h = 0, w = 0;                    // the pooled dimensions of the input
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

// The window of a max_pool2d (params from `first`: kernel, stride, padding, dilation) over input
// sizes `in` with output sizes `out`; static sizes, windows up to kMaxWindow.
PoolWindow pool_window(const FxNode& node, size_t first, const std::vector<Expr>& in, const std::vector<Expr>& out) {
  PoolWindow win;
  win.kernel = per_dim(node.param(first), {});
  if (win.kernel.size() != 2) throw NotLowered("max_pool2d kernel size");
  win.stride = per_dim(node.param(first + 1), win.kernel);
  win.padding = per_dim(node.param(first + 2), {0, 0});
  win.dilation = per_dim(node.param(first + 3), {1, 1});
  if (win.kernel[0] * win.kernel[1] > kMaxWindow) throw NotLowered("large pooling window");
  if (in.size() != 3 && in.size() != 4) throw NotLowered("max_pool2d input");
  win.h = in.size() - 2;
  win.w = in.size() - 1;
  for (size_t d : {win.h, win.w})
    if (!in[d].is_const() || !out[d].is_const()) throw NotLowered("symbolic max_pool2d");
  win.in_h = in[win.h].const_value(), win.in_w = in[win.w].const_value();
  win.out_h = out[win.h].const_value(), win.out_w = out[win.w].const_value();
  return win;
}

// A test that index expression `a` compares with `bound` by op, and-ed into `mask`.
void require(Scalar& mask, ScalarOp op, const Expr& a, int64_t bound) {
  Scalar test = ir::binary(op, index_scalar(a), index_scalar(Expr(bound)), DType::Bool);
  mask = mask ? ir::binary(ScalarOp::LogicalAnd, mask, test, DType::Bool) : test;
}

// Visits each window position of the output element at `index`: the input index it reads and the
// mask of it being inside the input (null where it always is), in eager's scan order.
template <typename Visit>
void for_each_window_position(const PoolWindow& win, const Index& index, Visit visit) {
  for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
    for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
      const int64_t dh = kh * win.dilation[0] - win.padding[0], dw = kw * win.dilation[1] - win.padding[1];
      Index at = index;
      at[win.h] = index[win.h] * Expr(win.stride[0]) + Expr(dh);
      at[win.w] = index[win.w] * Expr(win.stride[1]) + Expr(dw);
      // Only window positions that can fall outside the input for some output need a mask.
      Scalar mask;
      if (dh < 0) require(mask, ScalarOp::Ge, at[win.h], 0);
      if ((win.out_h - 1) * win.stride[0] + dh >= win.in_h) require(mask, ScalarOp::Lt, at[win.h], win.in_h);
      if (dw < 0) require(mask, ScalarOp::Ge, at[win.w], 0);
      if ((win.out_w - 1) * win.stride[1] + dw >= win.in_w) require(mask, ScalarOp::Lt, at[win.w], win.in_w);
      visit(at, mask);
    }
  }
}

Scalar either(ScalarOp op, const Scalar& a, const Scalar& b) { return ir::binary(op, a, b, DType::Bool); }

Lowered lower_max_pool2d(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  if (!ir::is_floating(x.dtype)) throw NotLowered("max_pool2d input");
  if (node.meta.empty() || !node.meta[0]) throw NotLowered("max_pool2d without metadata");
  // Output sizes (ceil_mode included) as eager computes them.
  std::vector<Expr> out_sizes = node.meta[0]->sizes;
  const PoolWindow win = pool_window(node, 1, x.sizes, out_sizes);
  DType compute = compute_dtype(x.dtype);
  Scalar lowest = constant_of(-std::numeric_limits<double>::infinity(), x.dtype);
  if (!indices_are_read(ctx.graph(), node)) {
    Value values = ctx.lazy(x.dtype, out_sizes, [=](const Index& index) {
      Scalar best;
      for_each_window_position(win, index, [&](const Index& at, const Scalar& mask) {
        Scalar value = ir::cast(x.load(at), compute);
        if (mask) value = ir::where(mask, mask_loads(value, mask), lowest);
        best = best ? ir::binary(ScalarOp::Maximum, best, value, compute) : value;
      });
      return best;
    });
    return Lowered::many({values, std::nullopt});
  }
  // With the positions (a training graph saves them for the backward): eager's scan, where a
  // larger value or a NaN takes over, and the first position inside the input starts it.
  auto scan = [=](const Index& index) {
    Scalar best = lowest, position = constant_of_int(-1, DType::Int64);
    for_each_window_position(win, index, [&](const Index& at, const Scalar& mask) {
      Scalar value = ir::cast(x.load(at), compute);
      if (mask) value = mask_loads(value, mask);
      Scalar takes = either(ScalarOp::LogicalOr, ir::binary(ScalarOp::Gt, value, best, DType::Bool),
                            ir::unary(ScalarOp::IsNan, value, DType::Bool));
      takes = either(ScalarOp::LogicalOr, takes,
                     ir::binary(ScalarOp::Lt, position, constant_of_int(0, DType::Int64), DType::Bool));
      if (mask) takes = either(ScalarOp::LogicalAnd, mask, takes);
      best = ir::where(takes, value, best);
      position = ir::where(takes, index_scalar(at[win.h] * Expr(win.in_w) + at[win.w]), position);
    });
    return std::pair{best, position};
  };
  Value scanned = ctx.lazy(x.dtype, out_sizes, [=](const Index& index) { return scan(index).first; });
  Value positions = ctx.lazy(DType::Int64, out_sizes, [=](const Index& index) { return scan(index).second; });
  return Lowered::many({scanned, positions});
}

// The gradient of max_pool2d: each input element gathers the gradients of the (at most
// ceil(k/s) per dimension) windows whose maximum it was, in eager's order of windows.
Lowered lower_max_pool2d_backward(LoweringContext& ctx, const FxNode& node) {
  Value grad = ctx.tensor_param(node, 0), x = ctx.tensor_param(node, 1), indices = ctx.tensor_param(node, 7);
  if (!ir::is_floating(grad.dtype)) throw NotLowered("max_pool2d_backward gradient");
  const PoolWindow win = pool_window(node, 2, x.sizes, grad.sizes);
  if (win.dilation[0] != 1 || win.dilation[1] != 1) throw NotLowered("dilated max_pool2d_backward");
  DType compute = compute_dtype(grad.dtype);
  const int64_t windows_h = (win.kernel[0] + win.stride[0] - 1) / win.stride[0];
  const int64_t windows_w = (win.kernel[1] + win.stride[1] - 1) / win.stride[1];
  Value result = ctx.lazy(grad.dtype, x.sizes, [=](const Index& index) {
    const Expr h = index[win.h] + Expr(win.padding[0]), w = index[win.w] + Expr(win.padding[1]);
    const Expr here = index[win.h] * Expr(win.in_w) + index[win.w];
    Scalar sum;
    for (int64_t jh = windows_h - 1; jh >= 0; --jh) {
      for (int64_t jw = windows_w - 1; jw >= 0; --jw) {
        Index at = index;
        at[win.h] = ir::floordiv(h, Expr(win.stride[0])) - Expr(jh);
        at[win.w] = ir::floordiv(w, Expr(win.stride[1])) - Expr(jw);
        Scalar mask;
        require(mask, ScalarOp::Ge, at[win.h], 0);
        require(mask, ScalarOp::Lt, at[win.h], win.out_h);
        require(mask, ScalarOp::Lt, h - at[win.h] * Expr(win.stride[0]), win.kernel[0]);
        require(mask, ScalarOp::Ge, at[win.w], 0);
        require(mask, ScalarOp::Lt, at[win.w], win.out_w);
        require(mask, ScalarOp::Lt, w - at[win.w] * Expr(win.stride[1]), win.kernel[1]);
        Scalar argmax = mask_loads(indices.load(at), mask);
        Scalar hit = either(ScalarOp::LogicalAnd, mask,
                            ir::binary(ScalarOp::Eq, argmax, index_scalar(here), DType::Bool));
        Scalar term = ir::where(hit, mask_loads(ir::cast(grad.load(at), compute), mask), constant_of(0.0, compute));
        sum = sum ? ir::binary(ScalarOp::Add, sum, term, compute) : term;
      }
    }
    return sum;
  });
  return Lowered::one(result);
}

}  // namespace

void register_pooling_lowerings(Registry& r) {
  r["aten::max_pool2d_with_indices.default"] = lower_max_pool2d;
  r["aten::max_pool2d_with_indices_backward.default"] = lower_max_pool2d_backward;
}

}  // namespace cdynamo::lower
