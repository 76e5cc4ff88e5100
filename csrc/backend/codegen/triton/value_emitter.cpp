// Scalar graphs to Triton: loads, casts with torch's conversions, math through the prelude's cd_*
// helpers and libdevice, masks by the axes a value varies along. Assumes 2-D tiles [X, R] in
// reduction kernels and 1-D tiles [X] in pointwise kernels (TileContext).
#include "backend/codegen/triton/value_emitter.h"
#include <cmath>
#include <cstdio>
#include <sstream>
#include "backend/ir/recursion_guard.h"
#include "common/error.h"

namespace cdynamo::codegen::triton {
namespace {

using ir::DType;
using ir::Expr;
using ir::ExprKind;
using ir::ScalarOp;

using ir::is_comparison;
using ir::is_reduced_float;

bool is_float(DType d) { return ir::is_floating(d); }

// Float math: the prelude's helper (libdevice on the GPU; the interpreter maps it to NumPy).
const char* float_function(ScalarOp op) {
  switch (op) {
    case ScalarOp::Exp: return "libdevice.exp";
    case ScalarOp::Exp2: return "libdevice.exp2";
    case ScalarOp::Expm1: return "libdevice.expm1";
    case ScalarOp::Log: return "libdevice.log";
    case ScalarOp::Log2: return "libdevice.log2";
    case ScalarOp::Log10: return "libdevice.log10";
    case ScalarOp::Log1p: return "libdevice.log1p";
    case ScalarOp::Sqrt: return "libdevice.sqrt";
    case ScalarOp::Rsqrt: return "libdevice.rsqrt";
    case ScalarOp::Sin: return "libdevice.sin";
    case ScalarOp::Cos: return "libdevice.cos";
    case ScalarOp::Tan: return "libdevice.tan";
    case ScalarOp::Asin: return "libdevice.asin";
    case ScalarOp::Acos: return "libdevice.acos";
    case ScalarOp::Atan: return "libdevice.atan";
    case ScalarOp::Sinh: return "libdevice.sinh";
    case ScalarOp::Cosh: return "libdevice.cosh";
    case ScalarOp::Tanh: return "libdevice.tanh";
    case ScalarOp::Asinh: return "libdevice.asinh";
    case ScalarOp::Acosh: return "libdevice.acosh";
    case ScalarOp::Atanh: return "libdevice.atanh";
    case ScalarOp::Erf: return "libdevice.erf";
    case ScalarOp::Erfc: return "libdevice.erfc";
    case ScalarOp::Floor: return "libdevice.floor";
    case ScalarOp::Ceil: return "libdevice.ceil";
    case ScalarOp::Trunc: return "libdevice.trunc";
    case ScalarOp::Round: return "libdevice.nearbyint";  // half to even, as torch.round
    default: return nullptr;
  }
}

std::string join_args(const std::vector<std::string>& a) {
  std::string out;
  for (size_t k = 0; k < a.size(); ++k) out += (k ? ", " : "") + a[k];
  return out;
}

}  // namespace

std::string storage_type(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "tl.int1";
    case DType::UInt8: return "tl.uint8";
    case DType::Int8: return "tl.int8";
    case DType::Int16: return "tl.int16";
    case DType::Int32: return "tl.int32";
    case DType::Int64: return "tl.int64";
    case DType::Float16: return "tl.float16";
    case DType::BFloat16: return "tl.bfloat16";
    case DType::Float32: return "tl.float32";
    case DType::Float64: return "tl.float64";
  }
  return "?";
}

std::string compute_type(DType dtype) { return is_reduced_float(dtype) ? "tl.float32" : storage_type(dtype); }

std::string pointer_signature(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "*i1";
    case DType::UInt8: return "*u8";
    case DType::Int8: return "*i8";
    case DType::Int16: return "*i16";
    case DType::Int32: return "*i32";
    case DType::Int64: return "*i64";
    case DType::Float16: return "*fp16";
    case DType::BFloat16: return "*bf16";
    case DType::Float32: return "*fp32";
    case DType::Float64: return "*fp64";
  }
  return "?";
}

std::string ValueEmitter::literal(DType dtype, const std::variant<double, int64_t, bool>& payload) {
  std::string text;
  if (dtype == DType::Bool) {
    bool b = std::holds_alternative<bool>(payload)    ? std::get<bool>(payload)
             : std::holds_alternative<int64_t>(payload) ? std::get<int64_t>(payload) != 0
                                                        : std::get<double>(payload) != 0;
    return std::string("tl.full([], ") + (b ? "1" : "0") + ", tl.int1)";
  }
  if (is_float(dtype)) {
    double d = std::holds_alternative<double>(payload)    ? std::get<double>(payload)
               : std::holds_alternative<int64_t>(payload) ? static_cast<double>(std::get<int64_t>(payload))
                                                          : (std::get<bool>(payload) ? 1.0 : 0.0);
    if (std::isnan(d)) text = "CD_NAN";
    else if (std::isinf(d)) text = d > 0 ? "CD_INF" : "-CD_INF";
    else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      text = buf;
      if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    }
  } else {
    int64_t i = std::holds_alternative<int64_t>(payload) ? std::get<int64_t>(payload)
                : std::holds_alternative<double>(payload) ? static_cast<int64_t>(std::get<double>(payload))
                                                          : (std::get<bool>(payload) ? 1 : 0);
    // The most negative int64 has no literal: Python would read the minus as an operator.
    text = i == INT64_MIN ? "-9223372036854775807 - 1" : std::to_string(i);
  }
  return "tl.full([], " + text + ", " + compute_type(dtype) + ")";
}

std::optional<Value> ValueEmitter::lookup(const ir::ScalarNode* n) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->memo.find(n);
    if (found != it->memo.end()) return found->second;
  }
  return std::nullopt;
}

std::optional<Value> ValueEmitter::lookup_produced(const std::string& buffer, const Expr& index) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->produced.find(buffer);
    if (found != it->produced.end() && found->second.first == index) return found->second.second;
  }
  return std::nullopt;
}

void ValueEmitter::produced(const std::string& buffer, const Expr& index, const Value& v) {
  scopes_.back().produced[buffer] = {index, v};
}

Value ValueEmitter::define(const std::string& expr, DType dtype, unsigned axes) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->by_text.find(expr);
    if (found != it->by_text.end() && found->second.dtype == dtype) return found->second;
  }
  std::string name = w_.fresh("t");
  w_.line(name + " = " + expr);
  Value v{name, dtype, axes};
  scopes_.back().by_text.emplace(expr, v);
  return v;
}

std::string ValueEmitter::pointer(const std::string& buffer) const {
  auto it = pointers_.find(buffer);
  if (it == pointers_.end()) throw InternalError("triton codegen: no pointer for buffer " + buffer);
  return it->second;
}

unsigned ValueEmitter::axes_of(const Expr& e) const {
  unsigned axes = kNoAxes;
  for (const std::string& v : e.free_vars()) {
    if (v == tiles_.x_var) axes |= kXAxis;
    else if (v == tiles_.r_var) axes |= kRAxis;
  }
  return axes;
}

std::string ValueEmitter::widening(unsigned axes) const {
  std::string zeros;
  if (axes & kXAxis) zeros += " + 0 * " + tiles_.x_var;
  if (axes & kRAxis) zeros += " + 0 * " + tiles_.r_var;
  return zeros;
}

std::string ValueEmitter::mask_of(unsigned axes) const {
  std::string mask;
  if (axes & kXAxis) mask = tiles_.x_mask;
  if (axes & kRAxis) mask = mask.empty() ? tiles_.r_mask : mask + " & " + tiles_.r_mask;
  return mask;
}

namespace {

// Triton's integer // and % truncate toward zero (as C does); the IR's floor division and
// modulo are Python's. They agree when the dividend is provably non-negative (divisors are
// positive in the IR); otherwise the prelude's floor helpers run.
std::string render(const Expr& e, const ir::VarRanges& ranges) {
  ir::RecursionGuard recursion("an index expression");
  switch (e.kind()) {
    case ExprKind::Const: {
      int64_t v = e.const_value();
      return v == INT64_MIN ? "(-9223372036854775807 - 1)" : (v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v));
    }
    case ExprKind::Var: return e.var_name();
    case ExprKind::Add:
    case ExprKind::Mul: {
      std::string op = e.kind() == ExprKind::Add ? " + " : " * ";
      std::string out = "(";
      for (size_t k = 0; k < e.operands().size(); ++k) out += (k ? op : "") + render(e.operands()[k], ranges);
      return out + ")";
    }
    case ExprKind::FloorDiv:
    case ExprKind::Mod: {
      const Expr& a = e.operands()[0];
      const Expr& b = e.operands()[1];
      bool exact = ir::provably_nonnegative(a, ranges) && ir::provably_nonnegative(b, ranges);
      std::string ra = render(a, ranges), rb = render(b, ranges);
      if (exact) return "(" + ra + (e.kind() == ExprKind::FloorDiv ? " // " : " % ") + rb + ")";
      return std::string(e.kind() == ExprKind::FloorDiv ? "cd_floordiv_int(" : "cd_mod_int(") + ra + ", " + rb + ")";
    }
    case ExprKind::Min:
    case ExprKind::Max:
      return std::string(e.kind() == ExprKind::Min ? "tl.minimum(" : "tl.maximum(") + render(e.operands()[0], ranges) +
             ", " + render(e.operands()[1], ranges) + ")";
  }
  throw InternalError("triton codegen: unknown expression kind");
}

}  // namespace

std::string ValueEmitter::index_expr(const Expr& e) const { return render(e, tiles_.ranges); }

Value ValueEmitter::emit(const ir::Scalar& s) {
  if (auto v = lookup(s.get())) return *v;
  ir::RecursionGuard recursion("a kernel's scalar graph");
  Value result;
  switch (s->op) {
    case ScalarOp::Load:
    case ScalarOp::MaskedLoad: result = emit_load(*s); break;
    case ScalarOp::Index: result = emit_index(*s); break;
    case ScalarOp::Constant: result = define(literal(s->dtype, s->constant), s->dtype, kNoAxes); break;
    default: {
      std::vector<Value> args;
      for (const ir::Scalar& a : s->args) args.push_back(emit(a));
      result = emit_op(*s, std::move(args));
    }
  }
  scopes_.back().memo[s.get()] = result;
  return result;
}

Value ValueEmitter::load_at(const std::string& buffer, DType dtype, const Expr& index, unsigned extra_axes,
                            const std::string& extra_mask, const std::map<std::string, std::string>& ind_vars) {
  ir::VarRanges ranges = tiles_.ranges;
  std::map<std::string, Expr> subst;
  for (const auto& [var, tile] : ind_vars) subst[var] = Expr::var(tile);
  Expr at = subst.empty() ? index : index.substitute(subst);
  unsigned axes = axes_of(at) | extra_axes;
  std::string mask = mask_of(axes);
  if (!extra_mask.empty()) mask = mask.empty() ? extra_mask : mask + " & " + extra_mask;
  // Indirect positions are clamped into [0, size), so they count as non-negative.
  for (const auto& [var, tile] : ind_vars) ranges[tile] = Expr(int64_t{1} << 62);
  std::string address = pointer(buffer) + " + " + render(at, ranges);
  // A masked load needs its address as wide as its mask (a padding mask along x of a broadcast).
  unsigned missing = mask.empty() ? kNoAxes : axes & ~axes_of(at);
  address += widening(missing);
  std::string options = mask.empty() ? "" : ", mask=" + mask + ", other=0";
  if (streaming_loads_ && (axes & kRAxis)) options += ", eviction_policy=\"evict_first\"";
  Value raw = define("tl.load(" + address + options + ")", dtypes_.at(buffer), axes);
  raw.dtype = dtypes_.at(buffer);
  if (is_reduced_float(raw.dtype)) raw = define(raw.name + ".to(tl.float32)", raw.dtype, axes);
  return cast(raw, dtype);
}

Value ValueEmitter::emit_load(const ir::ScalarNode& n) {
  const bool masked = n.op == ScalarOp::MaskedLoad;
  // A buffer of this kernel kept in registers: the value itself (masked: where the mask holds).
  if (n.indirect.empty())
    if (auto v = lookup_produced(n.buffer, n.index)) {
      Value value = cast(*v, n.dtype);
      if (!masked) return value;
      Value mask = cast(emit(n.args[0]), DType::Bool);
      Value other = cast(emit(n.args[1]), n.dtype);
      return define("tl.where(" + mask.name + ", " + value.name + ", " + other.name + ")", n.dtype,
                    mask.axes | value.axes | other.axes);
    }
  std::optional<Value> mask, other;
  unsigned extra_axes = kNoAxes;
  if (masked) {
    mask = cast(emit(n.args[0]), DType::Bool);
    other = cast(emit(n.args[1]), n.dtype);
    extra_axes |= mask->axes | other->axes;
  }
  std::map<std::string, std::string> ind_vars;
  for (size_t k = 0; k < n.indirect.size(); ++k) {
    Value p = cast(emit(n.indirect[k]), DType::Int64);
    std::string size = render(n.indirect_sizes[k], tiles_.ranges);
    std::string ok = "(" + p.name + " >= 0) & (" + p.name + " < " + size + ")";
    Value inside = define(ok, DType::Bool, p.axes);
    // Out-of-range positions (eager raises IndexError) read element 0 instead and raise the
    // kernel's error flag, so no read leaves the buffer.
    Value clamped = define("tl.where(" + inside.name + ", " + p.name + ", 0)", DType::Int64, p.axes);
    const unsigned flag_axes = p.axes | (masked ? mask->axes : kNoAxes);
    std::string lanes = mask_of(flag_axes);
    if (masked) lanes = lanes.empty() ? mask->name : lanes + " & " + mask->name;
    if (!error_flag_.empty()) {
      std::string bad = "(" + inside.name + " == 0)" + (lanes.empty() ? "" : " & " + lanes);
      // The flag's address as wide as the lanes that may set it (every lane writes the same 1).
      std::string address = error_flag_ + " + " + p.name + " * 0";
      address += widening(flag_axes);
      w_.line("tl.store(" + address + ", tl.full([], 1, tl.int32), mask=" + bad + ")");
    }
    ind_vars[ir::indirect_var(k)] = clamped.name;
    extra_axes |= p.axes;
  }
  std::string load_mask = masked ? mask->name : "";
  Value loaded = load_at(n.buffer, n.dtype, n.index, extra_axes, load_mask, ind_vars);
  if (!masked) return loaded;
  return define("tl.where(" + mask->name + ", " + loaded.name + ", " + other->name + ")", n.dtype, loaded.axes | other->axes);
}

Value ValueEmitter::emit_index(const ir::ScalarNode& n) {
  Value v = define(index_expr(n.index), DType::Int64, axes_of(n.index));
  if (v.axes == kNoAxes) v = define("tl.full([], " + v.name + ", tl.int64)", DType::Int64, kNoAxes);
  else v = define(v.name + ".to(tl.int64)", DType::Int64, v.axes);
  return cast(v, n.dtype);
}

void ValueEmitter::store(const std::string& buffer, const Expr& index, const Value& v, unsigned axes) {
  DType stored = dtypes_.at(buffer);
  Value value = cast(v, stored);
  std::string at = index_expr(index);
  // Broadcast the address to the tile the value belongs to (a store at an index that does not
  // vary along an axis of the tile writes the same element from every lane: the same value).
  unsigned missing = axes & ~axes_of(index);
  at += widening(missing);
  std::string data = value.name;
  if (is_reduced_float(stored)) data += ".to(" + storage_type(stored) + ")";
  std::string mask = mask_of(axes);
  w_.line("tl.store(" + pointer(buffer) + " + " + at + ", " + data + (mask.empty() ? "" : ", mask=" + mask) + ")");
  // Loads of this buffer defined so far may read what the store replaced: forget them.
  const std::string reads = "tl.load(" + pointer(buffer) + " ";
  for (Scope& scope : scopes_)
    for (auto it = scope.by_text.begin(); it != scope.by_text.end();)
      it = it->first.find(reads) != std::string::npos ? scope.by_text.erase(it) : std::next(it);
}

// torch's conversions: to bool is != 0; floating point to a narrow integer goes through int64
// (as c10 does); float16/bfloat16 values are float32 rounded to the narrow type.
Value ValueEmitter::cast(const Value& v, DType to) {
  if (v.dtype == to) return v;
  if (to == DType::Bool) return define("(" + v.name + " != 0)", to, v.axes);
  if (is_reduced_float(to)) {
    // Through float32 from every type, float64 included: c10's Half and BFloat16 are built
    // from a float, so eager rounds a double twice.
    std::string f32 = compute_type(v.dtype) == "tl.float32" ? v.name : v.name + ".to(tl.float32)";
    return define(f32 + ".to(" + storage_type(to) + ").to(tl.float32)", to, v.axes);
  }
  if (is_float(v.dtype) && !is_float(to) && ir::dtype_size(to) < 8)
    return define(v.name + ".to(tl.int64).to(" + storage_type(to) + ")", to, v.axes);
  if (is_reduced_float(v.dtype) && compute_type(to) == "tl.float32") return {v.name, to, v.axes};
  return define(v.name + ".to(" + compute_type(to) + ")", to, v.axes);
}

Value ValueEmitter::emit_op(const ir::ScalarNode& n, std::vector<Value> args) {
  std::vector<DType> given;
  for (const Value& v : args) given.push_back(v.dtype);
  for (size_t k = 0; k < args.size(); ++k) args[k] = cast(args[k], ir::operand_dtype(n, k, given));
  if (n.op == ScalarOp::Cast) return cast(args[0], n.dtype);
  const DType d = n.dtype;
  const bool fl = is_float(d);
  const bool boolean = d == DType::Bool;
  const ScalarOp op = n.op;
  unsigned axes = kNoAxes;
  std::vector<std::string> a;
  for (const Value& v : args) {
    axes |= v.axes;
    a.push_back(v.name);
  }
  auto call = [&](const std::string& fn) { return fn + "(" + join_args(a) + ")"; };
  // Float math on an integer operand runs in float64 and converts back (as the C++ target).
  auto via_double = [&](const std::string& fn) {
    std::vector<std::string> wide;
    for (const std::string& x : a) wide.push_back(x + ".to(tl.float64)");
    return fn + "(" + join_args(wide) + ").to(" + compute_type(d) + ")";
  };
  auto divide = [&](const std::string& x, const std::string& y) {
    return d == DType::Float64 ? "(" + x + " / " + y + ")" : "tl.div_rn(" + x + ", " + y + ")";
  };
  std::string expr;
  if (const char* fn = float_function(op)) {
    bool rounding = op == ScalarOp::Floor || op == ScalarOp::Ceil || op == ScalarOp::Trunc || op == ScalarOp::Round;
    expr = fl ? call(fn) : rounding ? a[0] : via_double(fn);
  } else if (is_comparison(op)) {
    static const std::map<ScalarOp, const char*> symbols{{ScalarOp::Eq, "=="}, {ScalarOp::Ne, "!="}, {ScalarOp::Lt, "<"},
                                                         {ScalarOp::Le, "<="}, {ScalarOp::Gt, ">"},  {ScalarOp::Ge, ">="}};
    expr = "(" + a[0] + " " + symbols.at(op) + " " + a[1] + ")";
  } else {
    switch (op) {
      case ScalarOp::Neg: expr = boolean ? a[0] : "(-" + a[0] + ")"; break;
      case ScalarOp::Abs: expr = boolean || d == DType::UInt8 ? a[0] : "tl.abs(" + a[0] + ")"; break;
      case ScalarOp::Sign: expr = boolean ? a[0] : call("cd_sign"); break;
      case ScalarOp::Reciprocal: expr = fl ? divide("1.0", a[0]) : via_double("cd_reciprocal"); break;
      case ScalarOp::Sigmoid: expr = fl ? call(d == DType::Float64 ? "cd_sigmoid64" : "cd_sigmoid") : via_double("cd_sigmoid64"); break;
      case ScalarOp::IsNan: expr = "(" + a[0] + " != " + a[0] + ")"; break;  // false for integers
      case ScalarOp::IsInf: expr = is_float(args[0].dtype) ? "(tl.abs(" + a[0] + ") == CD_INF)" : "(" + a[0] + " != " + a[0] + ")"; break;
      case ScalarOp::LogicalNot: expr = "(" + a[0] + " == 0)"; break;
      case ScalarOp::BitwiseNot: expr = boolean ? "(" + a[0] + " == 0)" : "(~" + a[0] + ")"; break;
      case ScalarOp::Add: expr = boolean ? "(" + a[0] + " | " + a[1] + ")" : "(" + a[0] + " + " + a[1] + ")"; break;
      case ScalarOp::Sub: expr = boolean ? "(" + a[0] + " ^ " + a[1] + ")" : "(" + a[0] + " - " + a[1] + ")"; break;
      case ScalarOp::Mul: expr = boolean ? "(" + a[0] + " & " + a[1] + ")" : "(" + a[0] + " * " + a[1] + ")"; break;
      case ScalarOp::Div: expr = fl ? divide(a[0], a[1]) : boolean ? a[0] : call("cd_idiv"); break;
      case ScalarOp::FloorDiv: expr = fl ? call("cd_floordiv_float") : boolean ? a[0] : call("cd_floordiv"); break;
      case ScalarOp::Remainder: expr = fl ? call("cd_remainder_float") : boolean ? "(" + a[0] + " & 0)" : call("cd_remainder"); break;
      case ScalarOp::Fmod: expr = fl ? call("libdevice.fmod") : boolean ? "(" + a[0] + " & 0)" : call("cd_imod"); break;
      case ScalarOp::Pow: expr = fl ? call("libdevice.pow") : boolean ? "(" + a[0] + " | (" + a[1] + " == 0))" : call("cd_ipow"); break;
      case ScalarOp::Atan2: expr = fl ? call("libdevice.atan2") : via_double("libdevice.atan2"); break;
      case ScalarOp::Maximum: expr = call("cd_maximum"); break;
      case ScalarOp::Minimum: expr = call("cd_minimum"); break;
      case ScalarOp::LogicalAnd: expr = "(" + a[0] + " & " + a[1] + ")"; break;
      case ScalarOp::LogicalOr: expr = "(" + a[0] + " | " + a[1] + ")"; break;
      case ScalarOp::LogicalXor: expr = "(" + a[0] + " ^ " + a[1] + ")"; break;
      case ScalarOp::BitwiseAnd: expr = "(" + a[0] + " & " + a[1] + ")"; break;
      case ScalarOp::BitwiseOr: expr = "(" + a[0] + " | " + a[1] + ")"; break;
      case ScalarOp::BitwiseXor: expr = "(" + a[0] + " ^ " + a[1] + ")"; break;
      case ScalarOp::ShiftLeft: expr = call("cd_shl"); break;
      case ScalarOp::ShiftRight: expr = call("cd_shr"); break;
      case ScalarOp::Where: expr = call("tl.where"); break;
      default: throw InternalError(std::string("triton codegen: no rendering of ") + ir::scalar_op_name(op));
    }
  }
  // float16/bfloat16 results stay float32 until a Cast rounds them (the IR's contract).
  return define(expr, d, axes);
}

}  // namespace cdynamo::codegen::triton
