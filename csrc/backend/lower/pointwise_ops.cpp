// Lowerings of elementwise aten ops into lazy pointwise values: math with torch type
// promotion and broadcasting, comparisons, logic, where, clamp, casts and copies.
// Assumes the graph is functional (no in-place variants) and Float32 is the default dtype.
#include <cmath>
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

using ir::ScalarOp;

enum class Promote {
  Default,     // result = promoted operands
  IntToFloat,  // integral operands compute in the default float dtype (sin, true division)
  AlwaysBool,  // compute in the promoted dtype, result Bool (comparisons)
  BoolArgs,    // operands converted to Bool, result Bool (logical ops)
};

using ScalarFn = std::function<Scalar(const std::vector<Scalar>&, DType compute)>;

DType meta_dtype_or(const FxNode& node, DType fallback) {
  if (node.meta.size() == 1 && node.meta[0]) return node.meta[0]->dtype;
  return fallback;
}

// The common machinery: promotion, broadcasting, and a lazy body applying `fn`.
Value elementwise(LoweringContext& ctx, const FxNode& node, std::vector<Operand> ops, Promote promote, ScalarFn fn) {
  DType common = result_type(ops);
  if (promote == Promote::IntToFloat && ir::is_integral(common)) common = DType::Float32;
  DType compute = promote == Promote::BoolArgs ? DType::Bool : compute_dtype(common);
  bool boolean = promote == Promote::AlwaysBool || promote == Promote::BoolArgs;
  DType out = meta_dtype_or(node, boolean ? DType::Bool : common);
  std::vector<std::vector<Expr>> shapes;
  for (const Operand& op : ops)
    if (op.tensor) shapes.push_back(op.tensor->sizes);
  std::vector<Expr> sizes = broadcast_shapes(shapes);
  for (Operand& op : ops)
    if (op.tensor) op.tensor = broadcast_to(*op.tensor, sizes);
  DType out_compute = compute_dtype(out);
  return ctx.lazy(out, sizes, [ops, compute, out_compute, fn, rank = sizes.size()](const Index& index) {
    std::vector<Scalar> args;
    for (const Operand& op : ops) args.push_back(operand_scalar(op, index, rank, compute));
    return ir::cast(fn(args, compute), out_compute);
  });
}

std::vector<Operand> operands(LoweringContext& ctx, const FxNode& node, std::initializer_list<size_t> params) {
  std::vector<Operand> out;
  for (size_t k : params) out.push_back(ctx.operand(node.param(k)));
  return out;
}

Scalar math(ScalarOp op, const std::vector<Scalar>& a, DType dtype) {
  if (a.size() == 1) return ir::unary(op, a[0], dtype);
  return ir::binary(op, a[0], a[1], dtype);
}

bool is_int_valued(const FxArg& arg, int64_t v) { return arg.is_fixed_number() && arg.as_double() == static_cast<double>(v); }

// ---- unary ----

void unary(Registry& r, const std::string& name, ScalarOp op, Promote promote) {
  r["aten::" + name + ".default"] = [op, promote](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0}), promote,
                                    [op](const std::vector<Scalar>& a, DType compute) {
                                      if (op == ScalarOp::Floor || op == ScalarOp::Ceil || op == ScalarOp::Round ||
                                          op == ScalarOp::Trunc) {
                                        if (ir::is_integral(compute)) return a[0];  // already whole
                                      }
                                      if (op == ScalarOp::BitwiseNot && compute == DType::Bool)
                                        return ir::unary(ScalarOp::LogicalNot, a[0], DType::Bool);
                                      if (op == ScalarOp::IsNan || op == ScalarOp::IsInf || op == ScalarOp::LogicalNot) {
                                        if (op != ScalarOp::LogicalNot && ir::is_integral(compute))
                                          return ir::constant_int(0, DType::Bool);
                                        return ir::unary(op, op == ScalarOp::LogicalNot ? ir::cast(a[0], DType::Bool) : a[0],
                                                         DType::Bool);
                                      }
                                      if (op == ScalarOp::Abs && compute == DType::Bool) return a[0];
                                      return ir::unary(op, a[0], compute);
                                    }));
  };
}

// ---- binary ----

// a op b with the promoted compute dtype; Bool arithmetic maps to logic like torch.
Scalar arith(ScalarOp op, Scalar a, Scalar b, DType compute) {
  if (compute == DType::Bool) {
    if (op == ScalarOp::Add) op = ScalarOp::LogicalOr;
    else if (op == ScalarOp::Mul) op = ScalarOp::LogicalAnd;
    else if (op == ScalarOp::Maximum) op = ScalarOp::LogicalOr;
    else if (op == ScalarOp::Minimum) op = ScalarOp::LogicalAnd;
  }
  return ir::binary(op, std::move(a), std::move(b), compute);
}

void add_sub(Registry& r, const std::string& name, bool subtract, bool reversed) {
  for (const char* overload : {".Tensor", ".Scalar"}) {
    r["aten::" + name + overload] = [subtract, reversed](LoweringContext& ctx, const FxNode& node) {
      const FxArg* alpha = node.param_named("alpha");
      std::vector<Operand> ops = operands(ctx, node, {0, 1});
      bool has_alpha = alpha && alpha->is_number() && !is_int_valued(*alpha, 1);
      FxArg alpha_value = has_alpha ? *alpha : FxArg{};
      if (has_alpha) ops.push_back(Operand{std::nullopt, alpha_value});
      return Lowered::one(elementwise(ctx, node, ops, Promote::Default,
                                      [subtract, reversed, has_alpha](const std::vector<Scalar>& a, DType compute) {
                                        Scalar self = a[0], other = a[1];
                                        if (has_alpha) other = arith(ScalarOp::Mul, other, a[2], compute);
                                        if (reversed) return arith(ScalarOp::Sub, other, self, compute);
                                        return arith(subtract ? ScalarOp::Sub : ScalarOp::Add, self, other, compute);
                                      }));
    };
  }
}

void binary(Registry& r, const std::string& name, std::initializer_list<const char*> overloads, ScalarOp op,
            Promote promote) {
  for (const char* overload : overloads) {
    r["aten::" + name + overload] = [op, promote](LoweringContext& ctx, const FxNode& node) {
      return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0, 1}), promote,
                                      [op, promote](const std::vector<Scalar>& a, DType compute) {
                                        if (promote == Promote::AlwaysBool) return ir::binary(op, a[0], a[1], DType::Bool);
                                        if (promote == Promote::BoolArgs)
                                          return ir::binary(op, ir::cast(a[0], DType::Bool), ir::cast(a[1], DType::Bool),
                                                            DType::Bool);
                                        return arith(op, a[0], a[1], compute);
                                      }));
    };
  }
}

Scalar trunc_divide(Scalar a, Scalar b, DType compute) {
  if (ir::is_floating(compute)) return ir::unary(ScalarOp::Trunc, ir::binary(ScalarOp::Div, a, b, compute), compute);
  // Integers: floor division corrected toward zero when the signs differ and it is inexact.
  Scalar q = ir::binary(ScalarOp::FloorDiv, a, b, compute);
  Scalar rem = ir::binary(ScalarOp::Remainder, a, b, compute);
  Scalar zero = ir::constant_int(0, compute);
  Scalar inexact = ir::binary(ScalarOp::Ne, rem, zero, DType::Bool);
  Scalar signs_differ = ir::binary(ScalarOp::Ne, ir::binary(ScalarOp::Lt, a, zero, DType::Bool),
                                   ir::binary(ScalarOp::Lt, b, zero, DType::Bool), DType::Bool);
  Scalar adjust = ir::binary(ScalarOp::LogicalAnd, inexact, signs_differ, DType::Bool);
  return ir::where(adjust, ir::binary(ScalarOp::Add, q, ir::constant_int(1, compute), compute), q);
}

Lowered lower_div(LoweringContext& ctx, const FxNode& node) {
  std::string mode;
  if (const FxArg* rounding = node.param_named("rounding_mode"); rounding && rounding->kind == FxArg::Kind::String)
    mode = rounding->text;
  Promote promote = mode.empty() ? Promote::IntToFloat : Promote::Default;
  return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0, 1}), promote,
                                  [mode](const std::vector<Scalar>& a, DType compute) {
                                    if (mode == "floor") return ir::binary(ScalarOp::FloorDiv, a[0], a[1], compute);
                                    if (mode == "trunc") return trunc_divide(a[0], a[1], compute);
                                    return ir::binary(ScalarOp::Div, a[0], a[1], compute);
                                  }));
}

Lowered lower_pow(LoweringContext& ctx, const FxNode& node) {
  std::vector<Operand> ops = operands(ctx, node, {0, 1});
  const FxArg exponent = ops[1].tensor ? FxArg{} : ops[1].number;
  return Lowered::one(elementwise(ctx, node, ops, Promote::Default, [exponent](const std::vector<Scalar>& a, DType compute) {
    // Strength reduction of common constant exponents, as eager's pow kernels do.
    if (exponent.is_fixed_number()) {
      double e = exponent.as_double();
      if (e == 1.0) return a[0];
      if (e == 2.0) return ir::binary(ScalarOp::Mul, a[0], a[0], compute);
      if (e == 3.0) return ir::binary(ScalarOp::Mul, ir::binary(ScalarOp::Mul, a[0], a[0], compute), a[0], compute);
      if (ir::is_floating(compute) && e == 0.5) return ir::unary(ScalarOp::Sqrt, a[0], compute);
      if (ir::is_floating(compute) && e == -1.0) return ir::unary(ScalarOp::Reciprocal, a[0], compute);
    }
    return ir::binary(ScalarOp::Pow, a[0], a[1], compute);
  }));
}

// ---- selection and clamping ----

Lowered lower_where(LoweringContext& ctx, const FxNode& node) {
  Operand condition = ctx.operand(node.param(0));
  std::vector<Operand> branches = operands(ctx, node, {1, 2});
  DType common = result_type(branches);
  DType compute = compute_dtype(common);
  DType out = meta_dtype_or(node, common);
  std::vector<std::vector<Expr>> shapes;
  if (condition.tensor) shapes.push_back(condition.tensor->sizes);
  for (auto& b : branches)
    if (b.tensor) shapes.push_back(b.tensor->sizes);
  std::vector<Expr> sizes = broadcast_shapes(shapes);
  if (condition.tensor) condition.tensor = broadcast_to(*condition.tensor, sizes);
  for (auto& b : branches)
    if (b.tensor) b.tensor = broadcast_to(*b.tensor, sizes);
  return Lowered::one(ctx.lazy(out, sizes, [=, rank = sizes.size()](const Index& index) {
    Scalar c = operand_scalar(condition, index, rank, DType::Bool);
    Scalar a = operand_scalar(branches[0], index, rank, compute);
    Scalar b = operand_scalar(branches[1], index, rank, compute);
    return ir::cast(ir::where(c, a, b), compute_dtype(out));
  }));
}

// clamp(x, min, max): min/max are optional numbers (clamp.default) or tensors (clamp.Tensor).
Lowered lower_clamp(LoweringContext& ctx, const FxNode& node, bool has_min, bool has_max) {
  std::vector<Operand> ops{ctx.operand(node.param(0))};
  size_t k = 1;
  int min_at = -1, max_at = -1;
  if (has_min) {
    if (!node.param(k).is_none()) {
      min_at = static_cast<int>(ops.size());
      ops.push_back(ctx.operand(node.param(k)));
    }
    ++k;
  }
  if (has_max && !node.param(k).is_none()) {
    max_at = static_cast<int>(ops.size());
    ops.push_back(ctx.operand(node.param(k)));
  }
  return Lowered::one(elementwise(ctx, node, ops, Promote::Default, [min_at, max_at](const std::vector<Scalar>& a, DType compute) {
    Scalar x = a[0];
    if (min_at >= 0) x = arith(ScalarOp::Maximum, x, a[min_at], compute);
    if (max_at >= 0) x = arith(ScalarOp::Minimum, x, a[max_at], compute);
    return x;
  }));
}

// ---- casts and copies ----

Value cast_value(LoweringContext& ctx, const Value& v, DType target) {
  if (v.dtype == target) return v;
  return ctx.lazy(target, v.sizes, [v, target](const Index& index) { return convert(v.load(index), target); });
}

Lowered lower_to_copy(LoweringContext& ctx, const FxNode& node) {
  Value x = ctx.tensor_param(node, 0);
  const FxArg* device = node.param_named("device");
  if (device && device->kind == FxArg::Kind::Device && !node.meta.empty() && node.meta[0] &&
      x.storage->realized() && ctx.buffer(x.storage->buffer).device != node.meta[0]->device)
    throw NotLowered("device transfer");
  if (!node.meta.empty() && node.meta[0] && node.meta[0]->device != "cpu" && node.meta[0]->device.rfind("cuda", 0) != 0)
    throw NotLowered("unsupported device");
  const FxArg* dtype = node.param_named("dtype");
  DType target = dtype && dtype->kind == FxArg::Kind::Dtype ? dtype->as_dtype() : x.dtype;
  // A copy must not alias its input: a lazy cast is a new value even when dtypes agree.
  Value out = cast_value(ctx, x, target);
  if (out.storage == x.storage) out = ctx.lazy(target, x.sizes, [x](const Index& index) { return x.load(index); });
  return Lowered::one(out);
}

}  // namespace

void register_pointwise_lowerings(Registry& r) {
  struct UnaryDef {
    const char* name;
    ScalarOp op;
    Promote promote;
  };
  const UnaryDef unaries[] = {
      {"abs", ScalarOp::Abs, Promote::Default},          {"neg", ScalarOp::Neg, Promote::Default},
      {"sign", ScalarOp::Sign, Promote::Default},        {"sgn", ScalarOp::Sign, Promote::Default},
      {"exp", ScalarOp::Exp, Promote::IntToFloat},       {"exp2", ScalarOp::Exp2, Promote::IntToFloat},
      {"expm1", ScalarOp::Expm1, Promote::IntToFloat},   {"log", ScalarOp::Log, Promote::IntToFloat},
      {"log2", ScalarOp::Log2, Promote::IntToFloat},     {"log10", ScalarOp::Log10, Promote::IntToFloat},
      {"log1p", ScalarOp::Log1p, Promote::IntToFloat},   {"sqrt", ScalarOp::Sqrt, Promote::IntToFloat},
      {"rsqrt", ScalarOp::Rsqrt, Promote::IntToFloat},   {"reciprocal", ScalarOp::Reciprocal, Promote::IntToFloat},
      {"sin", ScalarOp::Sin, Promote::IntToFloat},       {"cos", ScalarOp::Cos, Promote::IntToFloat},
      {"tan", ScalarOp::Tan, Promote::IntToFloat},       {"asin", ScalarOp::Asin, Promote::IntToFloat},
      {"acos", ScalarOp::Acos, Promote::IntToFloat},     {"atan", ScalarOp::Atan, Promote::IntToFloat},
      {"sinh", ScalarOp::Sinh, Promote::IntToFloat},     {"cosh", ScalarOp::Cosh, Promote::IntToFloat},
      {"tanh", ScalarOp::Tanh, Promote::IntToFloat},     {"asinh", ScalarOp::Asinh, Promote::IntToFloat},
      {"acosh", ScalarOp::Acosh, Promote::IntToFloat},   {"atanh", ScalarOp::Atanh, Promote::IntToFloat},
      {"erf", ScalarOp::Erf, Promote::IntToFloat},       {"erfc", ScalarOp::Erfc, Promote::IntToFloat},
      {"sigmoid", ScalarOp::Sigmoid, Promote::IntToFloat}, {"floor", ScalarOp::Floor, Promote::Default},
      {"ceil", ScalarOp::Ceil, Promote::Default},        {"round", ScalarOp::Round, Promote::Default},
      {"trunc", ScalarOp::Trunc, Promote::Default},      {"isnan", ScalarOp::IsNan, Promote::AlwaysBool},
      {"isinf", ScalarOp::IsInf, Promote::AlwaysBool},   {"logical_not", ScalarOp::LogicalNot, Promote::AlwaysBool},
      {"bitwise_not", ScalarOp::BitwiseNot, Promote::Default},
  };
  for (const UnaryDef& u : unaries) unary(r, u.name, u.op, u.promote);
  unary(r, "fix", ScalarOp::Trunc, Promote::Default);

  add_sub(r, "add", false, false);
  add_sub(r, "sub", true, false);
  add_sub(r, "rsub", true, true);
  binary(r, "mul", {".Tensor", ".Scalar"}, ScalarOp::Mul, Promote::Default);
  binary(r, "floor_divide", {".default", ".Scalar"}, ScalarOp::FloorDiv, Promote::Default);
  binary(r, "remainder", {".Tensor", ".Scalar", ".Scalar_Tensor"}, ScalarOp::Remainder, Promote::Default);
  binary(r, "fmod", {".Tensor", ".Scalar"}, ScalarOp::Fmod, Promote::Default);
  binary(r, "atan2", {".default"}, ScalarOp::Atan2, Promote::IntToFloat);
  binary(r, "maximum", {".default"}, ScalarOp::Maximum, Promote::Default);
  binary(r, "minimum", {".default"}, ScalarOp::Minimum, Promote::Default);
  const std::pair<const char*, ScalarOp> comparisons[] = {{"eq", ScalarOp::Eq}, {"ne", ScalarOp::Ne}, {"lt", ScalarOp::Lt},
                                                          {"le", ScalarOp::Le}, {"gt", ScalarOp::Gt}, {"ge", ScalarOp::Ge}};
  for (auto& [name, op] : comparisons) binary(r, name, {".Tensor", ".Scalar"}, op, Promote::AlwaysBool);
  binary(r, "logical_and", {".default"}, ScalarOp::LogicalAnd, Promote::BoolArgs);
  binary(r, "logical_or", {".default"}, ScalarOp::LogicalOr, Promote::BoolArgs);
  binary(r, "logical_xor", {".default"}, ScalarOp::LogicalXor, Promote::BoolArgs);
  binary(r, "bitwise_and", {".Tensor", ".Scalar"}, ScalarOp::BitwiseAnd, Promote::Default);
  binary(r, "bitwise_or", {".Tensor", ".Scalar"}, ScalarOp::BitwiseOr, Promote::Default);
  binary(r, "bitwise_xor", {".Tensor", ".Scalar"}, ScalarOp::BitwiseXor, Promote::Default);
  binary(r, "bitwise_left_shift", {".Tensor", ".Tensor_Scalar"}, ScalarOp::ShiftLeft, Promote::Default);
  binary(r, "bitwise_right_shift", {".Tensor", ".Tensor_Scalar"}, ScalarOp::ShiftRight, Promote::Default);

  for (const char* overload : {".Tensor", ".Scalar", ".Tensor_mode", ".Scalar_mode"}) r[std::string("aten::div") + overload] = lower_div;
  for (const char* overload : {".Tensor_Tensor", ".Tensor_Scalar", ".Scalar"}) r[std::string("aten::pow") + overload] = lower_pow;
  for (const char* overload : {".self", ".ScalarSelf", ".ScalarOther", ".Scalar"}) r[std::string("aten::where") + overload] = lower_where;

  r["aten::clamp.default"] = [](LoweringContext& c, const FxNode& n) { return lower_clamp(c, n, true, true); };
  r["aten::clamp.Tensor"] = r["aten::clamp.default"];
  r["aten::clamp_min.default"] = [](LoweringContext& c, const FxNode& n) { return lower_clamp(c, n, true, false); };
  r["aten::clamp_min.Tensor"] = r["aten::clamp_min.default"];
  r["aten::clamp_max.default"] = [](LoweringContext& c, const FxNode& n) { return lower_clamp(c, n, false, true); };
  r["aten::clamp_max.Tensor"] = r["aten::clamp_max.default"];

  r["aten::relu.default"] = [](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0}), Promote::Default, [](const std::vector<Scalar>& a, DType c) {
      return arith(ScalarOp::Maximum, a[0], ir::constant_int(0, c), c);
    }));
  };
  r["aten::silu.default"] = [](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0}), Promote::IntToFloat, [](const std::vector<Scalar>& a, DType c) {
      return ir::binary(ScalarOp::Mul, a[0], ir::unary(ScalarOp::Sigmoid, a[0], c), c);
    }));
  };
  r["aten::addcmul.default"] = [](LoweringContext& ctx, const FxNode& node) {
    std::vector<Operand> ops = operands(ctx, node, {0, 1, 2, 3});
    return Lowered::one(elementwise(ctx, node, ops, Promote::Default, [](const std::vector<Scalar>& a, DType c) {
      return arith(ScalarOp::Add, a[0], arith(ScalarOp::Mul, a[3], arith(ScalarOp::Mul, a[1], a[2], c), c), c);
    }));
  };
  auto lerp = [](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(elementwise(ctx, node, operands(ctx, node, {0, 1, 2}), Promote::Default, [](const std::vector<Scalar>& a, DType c) {
      // torch's formula: exact at both ends (weight 0 gives self, weight 1 gives end).
      Scalar diff = ir::binary(ScalarOp::Sub, a[1], a[0], c);
      Scalar small = ir::binary(ScalarOp::Lt, ir::unary(ScalarOp::Abs, a[2], c), ir::constant(0.5, c), DType::Bool);
      Scalar low = ir::binary(ScalarOp::Add, a[0], ir::binary(ScalarOp::Mul, a[2], diff, c), c);
      Scalar high = ir::binary(ScalarOp::Sub, a[1],
                               ir::binary(ScalarOp::Mul, diff, ir::binary(ScalarOp::Sub, ir::constant(1.0, c), a[2], c), c), c);
      return ir::where(small, low, high);
    }));
  };
  r["aten::lerp.Scalar"] = lerp;
  r["aten::lerp.Tensor"] = lerp;

  r["aten::_to_copy.default"] = lower_to_copy;
  r["prims::convert_element_type.default"] = [](LoweringContext& ctx, const FxNode& node) {
    return Lowered::one(cast_value(ctx, ctx.tensor_param(node, 0), node.param(1).as_dtype()));
  };
  // Functional copies: the graph is functional, so a copy may share the input's value.
  auto identity = [](LoweringContext& ctx, const FxNode& node) { return Lowered::one(ctx.tensor_param(node, 0)); };
  // clone(x, memory_format=...) asks for a layout: a value of its own, so it can be stored in
  // that layout (the driver adopts the result's eager strides) while x keeps its own.
  r["aten::clone.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value x = ctx.tensor_param(node, 0);
    const FxArg* format = node.param_named("memory_format");
    if (!format || format->is_none() || format->text == "torch.preserve_format") return Lowered::one(x);
    return Lowered::one(ctx.lazy(x.dtype, x.sizes, [x](const Index& index) { return x.load(index); }));
  };
  r["aten::lift_fresh_copy.default"] = identity;
  r["aten::contiguous.default"] = identity;
  r["aten::copy.default"] = [](LoweringContext& ctx, const FxNode& node) {
    Value self = ctx.tensor_param(node, 0);
    Value src = broadcast_to(ctx.tensor_param(node, 1), self.sizes);
    return Lowered::one(cast_value(ctx, src, self.dtype));
  };
}

}  // namespace cdynamo::lower
