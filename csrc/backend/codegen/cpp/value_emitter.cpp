// Scalar value graphs to C++: loads, constants, casts and every ScalarOp, in scalar or vector width.
// Assumes cd_prelude.h provides the helpers named here (cd_cast, cd_vload, cd_vexp, ...).
#include "backend/ir/recursion_guard.h"
#include "backend/codegen/cpp/value_emitter.h"
#include <cctype>
#include <cmath>
#include <cstdio>
#include "backend/codegen/cpp/kernel_plan.h"
#include "common/error.h"

namespace cdynamo::codegen::cpp {
namespace {

using ir::DType;
using ir::ScalarOp;

bool is_float(DType d) { return ir::is_floating(d); }
using ir::is_comparison;
using ir::is_reduced_float;

// std:: functions (and cd_v<name> vector forms) of the unary float math ops.
const char* math_function(ScalarOp op) {
  switch (op) {
    case ScalarOp::Exp: return "exp";
    case ScalarOp::Exp2: return "exp2";
    case ScalarOp::Expm1: return "expm1";
    case ScalarOp::Log: return "log";
    case ScalarOp::Log2: return "log2";
    case ScalarOp::Log10: return "log10";
    case ScalarOp::Log1p: return "log1p";
    case ScalarOp::Sqrt: return "sqrt";
    case ScalarOp::Sin: return "sin";
    case ScalarOp::Cos: return "cos";
    case ScalarOp::Tan: return "tan";
    case ScalarOp::Asin: return "asin";
    case ScalarOp::Acos: return "acos";
    case ScalarOp::Atan: return "atan";
    case ScalarOp::Sinh: return "sinh";
    case ScalarOp::Cosh: return "cosh";
    case ScalarOp::Tanh: return "tanh";
    case ScalarOp::Asinh: return "asinh";
    case ScalarOp::Acosh: return "acosh";
    case ScalarOp::Atanh: return "atanh";
    case ScalarOp::Erf: return "erf";
    case ScalarOp::Erfc: return "erfc";
    case ScalarOp::Floor: return "floor";
    case ScalarOp::Ceil: return "ceil";
    case ScalarOp::Trunc: return "trunc";
    case ScalarOp::Round: return "nearbyint";  // round half to even in the default rounding mode
    default: return nullptr;
  }
}

const char* comparison_operator(ScalarOp op) {
  switch (op) {
    case ScalarOp::Eq: return "==";
    case ScalarOp::Ne: return "!=";
    case ScalarOp::Lt: return "<";
    case ScalarOp::Le: return "<=";
    case ScalarOp::Gt: return ">";
    case ScalarOp::Ge: return ">=";
    default: return "?";
  }
}
std::string lane(const Value& v) {
  if (v.width == Width::Scalar) return v.name;
  if (v.dtype == DType::Bool) return "(" + v.name + "[cd_l] != 0)";
  return v.name + "[cd_l]";
}

// "const int64_t <lv> = <vec> + cd_l; " for a lane loop whose body names lv, else "": a gather
// whose positions do not depend on the vector loop never reads it (-Wunused-variable).
std::string lane_value_decl(const std::string& lv, const std::string& vec, const std::string& body) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = body.find(lv); at != std::string::npos; at = body.find(lv, at + 1)) {
    size_t end = at + lv.size();
    if ((at == 0 || !ident(body[at - 1])) && (end == body.size() || !ident(body[end])))
      return "const int64_t " + lv + " = " + vec + " + cd_l; ";
  }
  return "";
}

}  // namespace

std::string storage_type(DType dtype) {
  switch (dtype) {
#define CDYNAMO_STORAGE_TYPE(name, ctype, torch_name) \
  case DType::name: return #ctype;
    CDYNAMO_DTYPES(CDYNAMO_STORAGE_TYPE)
#undef CDYNAMO_STORAGE_TYPE
  }
  return "?";
}

std::string compute_type(DType dtype) {
  if (is_reduced_float(dtype)) return "float";
  return storage_type(dtype);
}

std::string vector_type(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "cd_vmask";
    case DType::UInt8: return "cd_vu8";
    case DType::Int8: return "cd_vi8";
    case DType::Int16: return "cd_vi16";
    case DType::Int32: return "cd_vi32";
    case DType::Int64: return "cd_vi64";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return "cd_vf32";
    case DType::Float64: return "cd_vf64";
  }
  return "?";
}

std::string ValueEmitter::literal(DType dtype, const std::variant<double, int64_t, bool>& payload) {
  std::string ct = compute_type(dtype);
  if (dtype == DType::Bool) {
    bool b = std::visit([](auto v) { return v != 0; }, payload);
    return b ? "true" : "false";
  }
  if (!is_float(dtype)) {
    int64_t v = std::visit([](auto x) { return static_cast<int64_t>(x); }, payload);
    if (v == INT64_MIN) return "(" + ct + ")(-9223372036854775807LL - 1)";
    return "(" + ct + ")" + std::to_string(v) + "LL";
  }
  double d = std::visit([](auto x) { return static_cast<double>(x); }, payload);
  if (std::isnan(d)) return "std::numeric_limits<" + ct + ">::quiet_NaN()";
  if (std::isinf(d)) return std::string(d < 0 ? "-" : "") + "std::numeric_limits<" + ct + ">::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return "(" + ct + ")" + text;
}

void ValueEmitter::push_scope(Width width, const std::string& vec_var) { scopes_.push_back({width, vec_var, {}, {}}); }
void ValueEmitter::pop_scope() { scopes_.pop_back(); }

std::optional<Value> ValueEmitter::lookup(const ir::ScalarNode* n) {
  for (size_t k = scopes_.size(); k-- > 0;) {
    auto it = scopes_[k].memo.find(n);
    if (it != scopes_[k].memo.end()) {
      if (k + 1 == scopes_.size()) return it->second;
      Value v = widen(it->second);
      scopes_.back().memo[n] = v;
      return v;
    }
  }
  return std::nullopt;
}

std::optional<Value> ValueEmitter::lookup_produced(const std::string& buffer, const ir::Expr& index) {
  for (size_t k = scopes_.size(); k-- > 0;) {
    auto it = scopes_[k].produced.find(buffer);
    if (it != scopes_[k].produced.end()) {
      if (it->second.first == index) return widen(it->second.second);
      return std::nullopt;  // produced at another index: read memory
    }
  }
  return std::nullopt;
}

void ValueEmitter::produced(const std::string& buffer, const ir::Expr& index, const Value& v) {
  scopes_.back().produced[buffer] = {index, v};
}

Value ValueEmitter::define(const std::string& expr, DType dtype, Width width) {
  std::string name = w_.fresh("t");
  std::string type = width == Width::Vector ? vector_type(dtype) : compute_type(dtype);
  w_.line("const " + type + " " + name + " = " + expr + ";");
  return {name, dtype, width};
}

Value ValueEmitter::widen(const Value& v) {
  if (width() == Width::Scalar || v.width == Width::Vector) return v;
  if (v.dtype == DType::Bool) return define("cd_vbcast<cd_vmask>(" + v.name + " ? -1 : 0)", DType::Bool, Width::Vector);
  return define("cd_vbcast<" + vector_type(v.dtype) + ">(" + v.name + ")", v.dtype, Width::Vector);
}

Value ValueEmitter::cast(const Value& v0, DType to) {
  if (v0.dtype == to) return v0;
  Value v = width() == Width::Vector ? widen(v0) : v0;
  DType from = v.dtype;
  if (v.width == Width::Scalar) {
    std::string x = v.name;
    if (to == DType::Float16) return define("cd_round_f16(cd_cast<float>(" + x + "))", to, Width::Scalar);
    if (to == DType::BFloat16) return define("cd_round_bf16(cd_cast<float>(" + x + "))", to, Width::Scalar);
    if (compute_type(from) == compute_type(to)) return {x, to, Width::Scalar};
    return define("cd_cast<" + compute_type(to) + ">(" + x + ")", to, Width::Scalar);
  }
  const std::string& x = v.name;
  std::string vt = vector_type(to);
  if (to == DType::Bool)
    return define("cd_vtomask(" + x + " != cd_vbcast<" + vector_type(from) + ">(0))", to, Width::Vector);
  std::string wide;  // x converted to the vector type of `to`
  if (from == DType::Bool) wide = "__builtin_convertvector(-" + x + ", " + vt + ")";
  else if (vector_type(from) == vt) wide = x;
  else if (is_float(from) && !is_float(to) && ir::dtype_size(to) < 8)
    wide = "__builtin_convertvector(__builtin_convertvector(" + x + ", cd_vi64), " + vt + ")";
  else wide = "__builtin_convertvector(" + x + ", " + vt + ")";
  if (to == DType::Float16) return define("cd_vround_f16(" + wide + ")", to, Width::Vector);
  if (to == DType::BFloat16) return define("cd_vround_bf16(" + wide + ")", to, Width::Vector);
  if (wide == x) return {x, to, Width::Vector};
  return define(wide, to, Width::Vector);
}

std::string ValueEmitter::pointer(const std::string& buffer) const {
  auto it = pointers_.find(buffer);
  if (it == pointers_.end()) throw InternalError("generated code reads buffer " + buffer + " without a pointer to it");
  return it->second;
}

std::string ValueEmitter::scalar_load(const std::string& buffer, const std::string& index) const {
  std::string ref = pointer(buffer) + "[" + index + "]";
  switch (dtypes_.at(buffer)) {
    case DType::Float16: return "cd_f16_to_f32(" + ref + ")";
    case DType::BFloat16: return "cd_bf16_to_f32(" + ref + ")";
    default: return ref;
  }
}

Value ValueEmitter::lanes(DType dtype, const std::vector<Value>& args,
                          const std::function<std::string(const std::vector<std::string>&)>& scalar_expr) {
  std::vector<std::string> elems;
  for (const Value& a : args) elems.push_back(lane(a));
  std::string name = w_.fresh("t");
  std::string expr = scalar_expr(elems);
  if (dtype == DType::Bool) expr = "(" + expr + ") ? -1 : 0";
  w_.line(vector_type(dtype) + " " + name + ";");
  w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) " + name + "[cd_l] = " + expr + ";");
  return {name, dtype, Width::Vector};
}

Value ValueEmitter::emit(const ir::Scalar& s) {
  ir::RecursionGuard recursion("a kernel's scalar graph");
  if (auto v = lookup(s.get())) return *v;
  Value result;
  switch (s->op) {
    case ScalarOp::Load: result = emit_load(*s); break;
    case ScalarOp::MaskedLoad: result = emit_masked_load(*s); break;
    case ScalarOp::Index: result = emit_index(*s); break;
    case ScalarOp::Constant: {
      std::string lit = literal(s->dtype, s->constant);
      if (width() == Width::Scalar) result = define(lit, s->dtype, Width::Scalar);
      else if (s->dtype == DType::Bool) result = define("cd_vbcast<cd_vmask>(" + lit + " ? -1 : 0)", DType::Bool, Width::Vector);
      else result = define("cd_vbcast<" + vector_type(s->dtype) + ">(" + lit + ")", s->dtype, Width::Vector);
      break;
    }
    default: {
      std::vector<Value> args;
      for (const ir::Scalar& arg : s->args) args.push_back(emit(arg));
      result = emit_op(*s, std::move(args));
    }
  }
  scopes_.back().memo[s.get()] = result;
  return result;
}

Value ValueEmitter::emit_load(const ir::ScalarNode& n) {
  if (!n.indirect.empty()) return emit_indirect_load(n);
  if (auto v = lookup_produced(n.buffer, n.index)) return cast(*v, n.dtype);
  return cast(load_at(n.buffer, n.index), n.dtype);
}

Value ValueEmitter::load_at(const std::string& buffer, const ir::Expr& index) {
  DType stored = dtypes_.at(buffer);
  Value result;
  if (width() == Width::Scalar) {
    result = define(scalar_load(buffer, index.str()), stored, Width::Scalar);
  } else {
    Affine a = affine_in(index, vec_var());
    std::string p = pointer(buffer), idx = index.str();
    if (a.ok && a.coef.is_const(0)) {
      result = widen(define(scalar_load(buffer, idx), stored, Width::Scalar));
    } else if (a.ok && a.coef.is_const(1)) {
      std::string at = p + " + " + idx;
      switch (stored) {
        case DType::Bool: result = define("cd_vload_bool(" + at + ")", stored, Width::Vector); break;
        case DType::Float16: result = define("cd_vload_f16(" + at + ")", stored, Width::Vector); break;
        case DType::BFloat16: result = define("cd_vload_bf16(" + at + ")", stored, Width::Vector); break;
        default: result = define("cd_vload<" + vector_type(stored) + ">(" + at + ")", stored, Width::Vector);
      }
    } else {
      // A gather: each lane evaluates the index with its own loop value.
      std::string lv = vec_var() + "_l";
      std::string lane_idx = index.substitute({{vec_var(), ir::Expr::var(lv)}}).str();
      std::string name = w_.fresh("t");
      std::string expr = scalar_load(buffer, lane_idx);
      if (stored == DType::Bool) expr = "(" + expr + ") ? -1 : 0";
      w_.line(vector_type(stored) + " " + name + ";");
      w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) { " + lane_value_decl(lv, vec_var(), expr) + name + "[cd_l] = " +
              expr + "; }");
      result = {name, stored, Width::Vector};
    }
  }
  return result;
}

bool ValueEmitter::uniform(const ir::Scalar& s) {
  ir::RecursionGuard recursion("a kernel's scalar graph");
  auto key = std::make_pair(s.get(), vec_var());
  auto it = uniform_memo_.find(key);
  if (it != uniform_memo_.end()) return it->second;
  bool result = true;
  if (s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad || s->op == ScalarOp::Index) {
    for (const std::string& v : s->index.free_vars()) result = result && v != vec_var();
  }
  for (const ir::Scalar& a : s->args) result = result && uniform(a);
  for (const ir::Scalar& a : s->indirect) result = result && uniform(a);
  uniform_memo_[key] = result;
  return result;
}

// Indirect loads: the positions are computed first, checked against their sizes (an
// out-of-range position sets the kernel's error flag and reads element 0 instead, so no read
// leaves the buffer and the runtime raises IndexError like eager), then bound to ind0, ind1, ..
// A masked-off lane neither checks nor reads. In vector width, positions uniform across the lanes
// (embedding rows, index_select along an outer dim) give one scalar position and an ordinary
// contiguous or broadcast vector load; otherwise each lane loads for itself (a gather).
Value ValueEmitter::emit_indirect_load(const ir::ScalarNode& n) {
  const bool masked = n.op == ScalarOp::MaskedLoad;
  std::optional<Value> mask, other;
  if (masked) {
    mask = cast(emit(n.args[0]), DType::Bool);
    other = cast(emit(n.args[1]), n.dtype);
  }
  std::vector<Value> positions;
  bool empty_dim = false;  // a position into a size-0 dimension is always out of range: no read at all
  for (size_t k = 0; k < n.indirect.size(); ++k) {
    positions.push_back(cast(emit(n.indirect[k]), DType::Int64));
    empty_dim = empty_dim || n.indirect_sizes[k].is_const(0);
  }
  const DType stored = dtypes_.at(n.buffer);
  auto checked = [&](size_t k, const std::string& position) {
    return "cd_index_checked(" + position + ", (int64_t)" + n.indirect_sizes[k].str() + ", &" + kErrorFlag + ")";
  };
  // The value read with the ind variables (and the vector variable) substituted, as one scalar.
  auto lane_read = [&](const std::map<std::string, ir::Expr>& subst) {
    std::string load = empty_dim ? literal(stored, int64_t{0}) : scalar_load(n.buffer, n.index.substitute(subst).str());
    load = "cd_cast<" + compute_type(n.dtype) + ">(" + load + ")";
    if (n.dtype == DType::Float16) load = "cd_round_f16(" + load + ")";
    if (n.dtype == DType::BFloat16) load = "cd_round_bf16(" + load + ")";
    return load;
  };

  bool all_uniform = width() == Width::Vector && !masked;
  for (const ir::Scalar& p : n.indirect) all_uniform = all_uniform && uniform(p);

  if (width() == Width::Scalar || all_uniform) {
    std::map<std::string, ir::Expr> subst;
    for (size_t k = 0; k < positions.size(); ++k) {
      std::string p = positions[k].width == Width::Vector ? positions[k].name + "[0]" : positions[k].name;
      std::string expr = masked ? "(" + mask->name + " ? " + checked(k, p) + " : (int64_t)0)" : checked(k, p);
      subst[ir::indirect_var(k)] = ir::Expr::var(define(expr, DType::Int64, Width::Scalar).name);
    }
    if (width() == Width::Vector) {  // uniform positions: an ordinary vector load
      if (empty_dim) return widen(define(literal(n.dtype, int64_t{0}), n.dtype, Width::Scalar));
      return cast(load_at(n.buffer, n.index.substitute(subst)), n.dtype);
    }
    std::string load = lane_read(subst);
    if (masked) return define("(" + mask->name + " ? " + load + " : " + other->name + ")", n.dtype, Width::Scalar);
    return define(load, n.dtype, Width::Scalar);
  }

  // Lane by lane.
  std::string lv = vec_var() + "_l";
  std::map<std::string, ir::Expr> subst{{vec_var(), ir::Expr::var(lv)}};
  std::string body;
  std::string mask_lane = masked ? lane(widen(*mask)) : "";
  for (size_t k = 0; k < positions.size(); ++k) {
    std::string ind = w_.fresh("ind");
    std::string check = checked(k, lane(positions[k]));
    body += "const int64_t " + ind + " = " + (masked ? "(" + mask_lane + " ? " + check + " : (int64_t)0)" : check) + "; ";
    subst[ir::indirect_var(k)] = ir::Expr::var(ind);
  }
  std::string expr = lane_read(subst);
  if (masked) expr = "(" + mask_lane + " ? " + expr + " : " + lane(widen(*other)) + ")";
  if (n.dtype == DType::Bool) expr = "(" + expr + ") ? -1 : 0";
  std::string name = w_.fresh("t");
  w_.line(vector_type(n.dtype) + " " + name + ";");
  body += name + "[cd_l] = " + expr + "; ";
  w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) { " + lane_value_decl(lv, vec_var(), body) + body + "}");
  return {name, n.dtype, Width::Vector};
}

Value ValueEmitter::emit_masked_load(const ir::ScalarNode& n) {
  if (!n.indirect.empty()) return emit_indirect_load(n);
  Value mask = cast(emit(n.args[0]), DType::Bool);
  Value other = cast(emit(n.args[1]), n.dtype);
  DType stored = dtypes_.at(n.buffer);
  if (width() == Width::Scalar) {
    // Only the chosen branch of ?: is evaluated: no read where the mask is false.
    std::string load = "cd_cast<" + compute_type(n.dtype) + ">(" + scalar_load(n.buffer, n.index.str()) + ")";
    if (n.dtype == DType::Float16) load = "cd_round_f16(" + load + ")";
    if (n.dtype == DType::BFloat16) load = "cd_round_bf16(" + load + ")";
    return define("(" + mask.name + " ? " + load + " : " + other.name + ")", n.dtype, Width::Scalar);
  }
  (void)stored;
  Affine along = affine_in(n.index, vec_var());
  if (uniform(n.args[0]) && along.ok && along.coef.is_const() &&
      (along.coef.const_value() == 0 || along.coef.const_value() == 1)) {
    // One mask for all lanes (padding of a window, a cat branch along an outer dim): an ordinary
    // vector load under a branch, which reads nothing when the mask is false.
    std::string all_lanes = mask.width == Width::Vector ? "(" + mask.name + "[0] != 0)" : mask.name;
    other = widen(other);
    std::string name = w_.fresh("t");
    w_.line(vector_type(n.dtype) + " " + name + " = " + other.name + ";");
    w_.line("if (" + all_lanes + ") {");
    Value loaded = cast(load_at(n.buffer, n.index), n.dtype);
    w_.line(name + " = " + loaded.name + ";");
    w_.line("}");
    return {name, n.dtype, Width::Vector};
  }
  mask = widen(mask);
  other = widen(other);
  std::string lv = vec_var() + "_l";
  std::string lane_idx = n.index.substitute({{vec_var(), ir::Expr::var(lv)}}).str();
  std::string load = "cd_cast<" + compute_type(n.dtype) + ">(" + scalar_load(n.buffer, lane_idx) + ")";
  if (n.dtype == DType::Float16) load = "cd_round_f16(" + load + ")";
  if (n.dtype == DType::BFloat16) load = "cd_round_bf16(" + load + ")";
  std::string expr = "(" + lane(mask) + " ? " + load + " : " + lane(other) + ")";
  if (n.dtype == DType::Bool) expr = "(" + expr + ") ? -1 : 0";
  std::string name = w_.fresh("t");
  w_.line(vector_type(n.dtype) + " " + name + ";");
  w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) { " + lane_value_decl(lv, vec_var(), expr) + name + "[cd_l] = " +
          expr + "; }");
  return {name, n.dtype, Width::Vector};
}

Value ValueEmitter::emit_index(const ir::ScalarNode& n) {
  if (width() == Width::Scalar) return cast(define(n.index.str(), DType::Int64, Width::Scalar), n.dtype);
  Affine a = affine_in(n.index, vec_var());
  Value v;
  if (a.ok && a.coef.is_const()) {
    v = define("cd_vbcast<cd_vi64>((int64_t)(" + n.index.str() + ")) + cd_viota<cd_vi64>() * cd_vbcast<cd_vi64>((int64_t)" +
                   std::to_string(a.coef.const_value()) + ")",
               DType::Int64, Width::Vector);
  } else {
    std::string lv = vec_var() + "_l";
    std::string lane_idx = n.index.substitute({{vec_var(), ir::Expr::var(lv)}}).str();
    std::string name = w_.fresh("t");
    w_.line("cd_vi64 " + name + ";");
    w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) { " + lane_value_decl(lv, vec_var(), lane_idx) + name +
            "[cd_l] = " + lane_idx + "; }");
    v = {name, DType::Int64, Width::Vector};
  }
  return cast(v, n.dtype);
}

Value ValueEmitter::emit_op(const ir::ScalarNode& n, std::vector<Value> args) {
  std::vector<DType> given;
  for (const Value& v : args) given.push_back(v.dtype);
  for (size_t k = 0; k < args.size(); ++k) args[k] = cast(args[k], ir::operand_dtype(n, k, given));
  if (n.op == ScalarOp::Cast) return cast(args[0], n.dtype);
  const DType d = n.dtype;
  const std::string ct = compute_type(d);
  const bool fl = is_float(d);
  const ScalarOp op = n.op;

  // The scalar form, over operand expressions (also used lane by lane in vector width).
  auto scalar_expr = [&](const std::vector<std::string>& a) -> std::string {
    if (const char* fn = math_function(op)) {
      if (!fl) {
        if (op == ScalarOp::Floor || op == ScalarOp::Ceil || op == ScalarOp::Trunc || op == ScalarOp::Round) return a[0];
        return "(" + ct + ")std::" + std::string(fn) + "((double)" + a[0] + ")";
      }
      return "std::" + std::string(fn) + "(" + a[0] + ")";
    }
    if (is_comparison(op)) return "(" + a[0] + " " + comparison_operator(op) + " " + a[1] + ")";
    switch (op) {
      case ScalarOp::Neg: return d == DType::Bool ? a[0] : "(" + ct + ")(-" + a[0] + ")";
      case ScalarOp::Abs: return "cd_abs(" + a[0] + ")";
      case ScalarOp::Sign: return "cd_sign(" + a[0] + ")";
      case ScalarOp::Rsqrt: return fl ? "cd_rsqrt(" + a[0] + ")" : "(" + ct + ")cd_rsqrt((double)" + a[0] + ")";
      case ScalarOp::Reciprocal: return "((" + ct + ")1 / " + a[0] + ")";
      case ScalarOp::Sigmoid: return fl ? "cd_sigmoid(" + a[0] + ")" : "(" + ct + ")cd_sigmoid((double)" + a[0] + ")";
      case ScalarOp::IsNan: return "cd_isnan(" + a[0] + ")";
      case ScalarOp::IsInf: return "cd_isinf(" + a[0] + ")";
      case ScalarOp::LogicalNot: return "(!" + a[0] + ")";
      case ScalarOp::BitwiseNot: return d == DType::Bool ? "(!" + a[0] + ")" : "(" + ct + ")(~" + a[0] + ")";
      case ScalarOp::Add: return "(" + ct + ")(" + a[0] + " + " + a[1] + ")";
      case ScalarOp::Sub: return "(" + ct + ")(" + a[0] + " - " + a[1] + ")";
      case ScalarOp::Mul: return "(" + ct + ")(" + a[0] + " * " + a[1] + ")";
      case ScalarOp::Div: return fl ? "(" + ct + ")(" + a[0] + " / " + a[1] + ")" : "cd_idiv(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::FloorDiv: return "cd_div_floor(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Remainder: return "cd_remainder(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Fmod: return "cd_fmod(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Pow: return "cd_pow(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Atan2: return fl ? "std::atan2(" + a[0] + ", " + a[1] + ")" : "(" + ct + ")std::atan2((double)" + a[0] + ", (double)" + a[1] + ")";
      case ScalarOp::Maximum: return "cd_maximum(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Minimum: return "cd_minimum(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::LogicalAnd: return "(" + a[0] + " && " + a[1] + ")";
      case ScalarOp::LogicalOr: return "(" + a[0] + " || " + a[1] + ")";
      case ScalarOp::LogicalXor: return "(" + a[0] + " != " + a[1] + ")";
      case ScalarOp::BitwiseAnd: return "(" + ct + ")(" + a[0] + " & " + a[1] + ")";
      case ScalarOp::BitwiseOr: return "(" + ct + ")(" + a[0] + " | " + a[1] + ")";
      case ScalarOp::BitwiseXor: return "(" + ct + ")(" + a[0] + " ^ " + a[1] + ")";
      case ScalarOp::ShiftLeft: return "cd_shl(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::ShiftRight: return "cd_shr(" + a[0] + ", " + a[1] + ")";
      case ScalarOp::Where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
      default: throw InternalError(std::string("the C++ generator has no form for ") + ir::scalar_op_name(op));
    }
  };

  if (width() == Width::Scalar) {
    std::vector<std::string> names;
    for (const Value& v : args) names.push_back(v.name);
    return define(scalar_expr(names), d, Width::Scalar);
  }

  for (Value& v : args) v = widen(v);
  const std::string vt = vector_type(d);
  const std::string x = args.empty() ? "" : args[0].name;
  const std::string y = args.size() > 1 ? args[1].name : "";
  const bool bool_args = !args.empty() && args[0].dtype == DType::Bool;
  std::optional<std::string> vexpr;  // the vector form, where one exists
  if (const char* fn = math_function(op)) {
    bool rounding = op == ScalarOp::Floor || op == ScalarOp::Ceil || op == ScalarOp::Trunc || op == ScalarOp::Round;
    if (fl) vexpr = "cd_v" + std::string(fn) + "(" + x + ")";
    else if (rounding) vexpr = x;
  } else if (is_comparison(op)) {
    if (!bool_args) vexpr = "cd_vtomask(" + x + " " + comparison_operator(op) + " " + y + ")";
    else if (op == ScalarOp::Eq) vexpr = "(~(" + x + " ^ " + y + "))";
    else if (op == ScalarOp::Ne) vexpr = "(" + x + " ^ " + y + ")";
  } else {
    switch (op) {
      case ScalarOp::Neg: if (d != DType::Bool) vexpr = "(-" + x + ")"; break;
      case ScalarOp::Abs: if (d != DType::Bool && d != DType::UInt8) vexpr = "cd_vabs(" + x + ")"; break;
      case ScalarOp::Sign: if (fl) vexpr = "cd_vsign(" + x + ")"; break;
      case ScalarOp::Rsqrt: if (fl) vexpr = "cd_vrsqrt(" + x + ")"; break;
      case ScalarOp::Reciprocal: if (fl) vexpr = "(cd_vbcast<" + vt + ">(1) / " + x + ")"; break;
      case ScalarOp::Sigmoid: if (fl) vexpr = "cd_vsigmoid(" + x + ")"; break;
      case ScalarOp::IsNan: vexpr = is_float(args[0].dtype) ? "cd_visnan(" + x + ")" : "cd_vbcast<cd_vmask>(0)"; break;
      case ScalarOp::IsInf: vexpr = is_float(args[0].dtype) ? "cd_visinf(" + x + ")" : "cd_vbcast<cd_vmask>(0)"; break;
      case ScalarOp::LogicalNot:
      case ScalarOp::BitwiseNot: vexpr = "(~" + x + ")"; break;
      case ScalarOp::Add: vexpr = d == DType::Bool ? "(" + x + " | " + y + ")" : "(" + x + " + " + y + ")"; break;
      case ScalarOp::Mul: vexpr = d == DType::Bool ? "(" + x + " & " + y + ")" : "(" + x + " * " + y + ")"; break;
      case ScalarOp::Sub: if (d != DType::Bool) vexpr = "(" + x + " - " + y + ")"; break;
      case ScalarOp::Div: if (fl) vexpr = "(" + x + " / " + y + ")"; break;  // integers: lane by lane, guarded
      case ScalarOp::Pow: if (fl) vexpr = "cd_vpow(" + x + ", " + y + ")"; break;
      case ScalarOp::Atan2: if (fl) vexpr = "cd_vatan2(" + x + ", " + y + ")"; break;
      case ScalarOp::Maximum: vexpr = d == DType::Bool ? "(" + x + " | " + y + ")" : "cd_vmaximum(" + x + ", " + y + ")"; break;
      case ScalarOp::Minimum: vexpr = d == DType::Bool ? "(" + x + " & " + y + ")" : "cd_vminimum(" + x + ", " + y + ")"; break;
      case ScalarOp::LogicalAnd:
      case ScalarOp::BitwiseAnd: vexpr = "(" + x + " & " + y + ")"; break;
      case ScalarOp::LogicalOr:
      case ScalarOp::BitwiseOr: vexpr = "(" + x + " | " + y + ")"; break;
      case ScalarOp::LogicalXor:
      case ScalarOp::BitwiseXor: vexpr = "(" + x + " ^ " + y + ")"; break;
      case ScalarOp::Where: vexpr = "cd_vsel(" + x + ", " + y + ", " + args[2].name + ")"; break;
      default: break;  // FloorDiv, Remainder, Fmod, shifts, integer Pow: lane by lane
    }
  }
  if (vexpr) return define(*vexpr, d, Width::Vector);
  return lanes(d, args, scalar_expr);
}

void ValueEmitter::store(const std::string& buffer, const ir::Expr& index, const Value& v0) {
  DType stored = dtypes_.at(buffer);
  Value v = cast(v0, stored);
  std::string p = pointer(buffer), idx = index.str();
  auto scalar_store = [&](const std::string& at, const std::string& value) {
    switch (stored) {
      case DType::Float16: return p + "[" + at + "] = cd_f32_to_f16(" + value + ");";
      case DType::BFloat16: return p + "[" + at + "] = cd_f32_to_bf16(" + value + ");";
      default: return p + "[" + at + "] = " + value + ";";
    }
  };
  if (v.width == Width::Scalar) {
    w_.line(scalar_store(idx, v.name));
    return;
  }
  Affine a = affine_in(index, vec_var());
  if (a.ok && a.coef.is_const(1)) {
    std::string at = p + " + " + idx;
    switch (stored) {
      case DType::Bool: w_.line("cd_vstore_bool(" + at + ", " + v.name + ");"); break;
      case DType::Float16: w_.line("cd_vstore_f16(" + at + ", " + v.name + ");"); break;
      case DType::BFloat16: w_.line("cd_vstore_bf16(" + at + ", " + v.name + ");"); break;
      default: w_.line("cd_vstore(" + at + ", " + v.name + ");");
    }
    return;
  }
  // A scatter, lane by lane (the planner avoids it; kept for completeness).
  std::string lv = vec_var() + "_l";
  std::string lane_idx = index.substitute({{vec_var(), ir::Expr::var(lv)}}).str();
  std::string store = scalar_store(lane_idx, lane(v));
  w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) { " + lane_value_decl(lv, vec_var(), store) + store + " }");
}

}  // namespace cdynamo::codegen::cpp
