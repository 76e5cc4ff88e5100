// The reference evaluator: storages per root buffer, kernels run point by point with the
// per-point node order of ir.h, scalar ops with torch semantics computed in double and rounded
// to each node's dtype. Assumes small tensors (tests); nothing here is meant to be fast.
#include "backend/ir/recursion_guard.h"
#include "backend/ir/ir_eval.h"
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include "common/error.h"

namespace cdynamo::ir {
namespace {

double round_bfloat16(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits += 0x7fff + ((bits >> 16) & 1);
  bits &= 0xffff0000u;
  return std::bit_cast<float>(bits);
}

double round_float16(double v) { return static_cast<double>(static_cast<_Float16>(static_cast<float>(v))); }

int64_t wrap_integer(int64_t v, DType dtype) {
  switch (dtype) {
    case DType::Bool: return v != 0;
    case DType::UInt8: return static_cast<uint8_t>(v);
    case DType::Int8: return static_cast<int8_t>(v);
    case DType::Int16: return static_cast<int16_t>(v);
    case DType::Int32: return static_cast<int32_t>(v);
    default: return v;
  }
}

EvalNumber of_float(double f, DType dtype) {
  EvalNumber n;
  switch (dtype) {
    case DType::Float32: n.f = static_cast<float>(f); break;
    case DType::BFloat16: n.f = round_bfloat16(f); break;
    case DType::Float16: n.f = round_float16(f); break;
    default: n.f = f;
  }
  return n;
}

EvalNumber of_int(int64_t i, DType dtype) {
  EvalNumber n;
  n.i = wrap_integer(i, dtype);
  return n;
}

double as_double(EvalNumber n, DType dtype) { return is_floating(dtype) ? n.f : static_cast<double>(n.i); }

int64_t floordiv64(int64_t a, int64_t b) {
  if (b == 0) throw UserError("integer division by zero in the reference evaluator");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

EvalNumber eval_convert(EvalNumber value, DType from, DType to) {
  if (is_floating(to)) return of_float(as_double(value, from), to);
  if (to == DType::Bool) return of_int(is_floating(from) ? value.f != 0.0 : value.i != 0, to);
  if (is_floating(from)) {
    double f = value.f;
    if (std::isnan(f) || std::isinf(f)) return of_int(std::numeric_limits<int64_t>::min(), to);
    return of_int(static_cast<int64_t>(std::trunc(f)), to);
  }
  return of_int(value.i, to);
}

Evaluator::Evaluator(const Program& program) : program_(program) {
  for (const Buffer& b : program.buffers) root_[b.name] = b.reuses.empty() ? b.name : b.reuses;
  // Each root's storage covers the furthest element any member of its family addresses.
  std::map<std::string, int64_t> extent;
  for (const Buffer& b : program.buffers) {
    std::map<std::string, int64_t> none;
    int64_t last = b.offset.evaluate(none);
    bool empty = false;
    for (size_t d = 0; d < b.sizes.size(); ++d) {
      int64_t size = b.sizes[d].evaluate(none);
      if (size == 0) empty = true;
      else last += (size - 1) * b.strides[d].evaluate(none);
    }
    int64_t& e = extent[root_[b.name]];
    e = std::max(e, empty ? int64_t{0} : last + 1);
  }
  for (auto& [root, size] : extent) {
    auto storage = std::make_shared<Storage>();
    storage->data.resize(static_cast<size_t>(size));
    storages_[root] = storage;
  }
}

Evaluator::Storage& Evaluator::storage_of(const std::string& buffer) {
  if (freed_.count(buffer)) throw InternalError("reference evaluator: " + buffer + " used after it was freed");
  return *storages_.at(root_.at(buffer));
}
const Evaluator::Storage& Evaluator::storage_of(const std::string& buffer) const {
  if (freed_.count(buffer)) throw InternalError("reference evaluator: " + buffer + " used after it was freed");
  return *storages_.at(root_.at(buffer));
}

EvalNumber Evaluator::load(const std::string& buffer, int64_t flat) const {
  const Storage& s = storage_of(buffer);
  if (flat < 0 || flat >= static_cast<int64_t>(s.data.size()))
    throw InternalError("reference evaluator: load of " + buffer + " out of bounds at " + std::to_string(flat));
  return s.data[flat];
}

void Evaluator::store(const std::string& buffer, int64_t flat, EvalNumber value) {
  Storage& s = storage_of(buffer);
  if (flat < 0 || flat >= static_cast<int64_t>(s.data.size()))
    throw InternalError("reference evaluator: store to " + buffer + " out of bounds at " + std::to_string(flat));
  s.data[flat] = value;
}

namespace {
// Calls fn(index) for every point of `sizes`, row-major.
template <typename Fn>
void for_each_point(const std::vector<int64_t>& sizes, Fn fn) {
  for (int64_t s : sizes)
    if (s == 0) return;
  std::vector<int64_t> index(sizes.size(), 0);
  for (;;) {
    fn(index);
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

std::vector<int64_t> evaluate_all(const std::vector<Expr>& exprs) {
  std::vector<int64_t> out;
  std::map<std::string, int64_t> none;
  for (const Expr& e : exprs) out.push_back(e.evaluate(none));
  return out;
}

int64_t flat_of(const Buffer& b, const std::vector<int64_t>& index) {
  std::map<std::string, int64_t> none;
  int64_t flat = b.offset.evaluate(none);
  for (size_t d = 0; d < index.size(); ++d) flat += index[d] * b.strides[d].evaluate(none);
  return flat;
}
}  // namespace

std::vector<EvalNumber> Evaluator::read_logical(const std::string& name) const {
  const Buffer& b = program_.buffer(name);
  std::vector<EvalNumber> out;
  for_each_point(evaluate_all(b.sizes), [&](const std::vector<int64_t>& index) { out.push_back(load(name, flat_of(b, index))); });
  return out;
}

void Evaluator::write_logical(const std::string& name, const std::vector<EvalNumber>& values) {
  const Buffer& b = program_.buffer(name);
  size_t k = 0;
  for_each_point(evaluate_all(b.sizes), [&](const std::vector<int64_t>& index) {
    if (k >= values.size()) throw InternalError("reference evaluator: too few values for " + name);
    store(name, flat_of(b, index), eval_convert(values[k++], b.dtype, b.dtype));
  });
}

EvalNumber Evaluator::eval(const Scalar& s, const std::map<std::string, int64_t>& env,
                           std::map<const ScalarNode*, EvalNumber>& memo) const {
  auto it = memo.find(s.get());
  if (it != memo.end()) return it->second;
  RecursionGuard recursion("a scalar graph to evaluate");
  DType dt = s->dtype;
  auto arg = [&](size_t k) { return eval(s->args[k], env, memo); };
  auto argf = [&](size_t k) { return as_double(arg(k), s->args[k]->dtype); };
  EvalNumber out;
  bool floating = is_floating(dt);
  switch (s->op) {
    case ScalarOp::Load:
    case ScalarOp::MaskedLoad: {
      if (s->op == ScalarOp::MaskedLoad && arg(0).i == 0) {
        out = arg(1);
        break;
      }
      std::map<std::string, int64_t> local = env;
      for (size_t k = 0; k < s->indirect.size(); ++k) {
        int64_t position = eval(s->indirect[k], env, memo).i;
        int64_t size = k < s->indirect_sizes.size() ? s->indirect_sizes[k].evaluate(env) : INT64_MAX;
        if (position < 0 || position >= size)
          throw UserError("index " + std::to_string(position) + " is out of bounds for size " + std::to_string(size), PyExc_IndexError);
        local[indirect_var(k)] = position;
      }
      out = load(s->buffer, s->index.evaluate(local));
      break;
    }
    case ScalarOp::Constant:
      if (auto* d = std::get_if<double>(&s->constant)) out = of_float(*d, dt);
      else if (auto* i = std::get_if<int64_t>(&s->constant)) out = of_int(*i, dt);
      else out = of_int(std::get<bool>(s->constant), dt);
      break;
    case ScalarOp::Index: {
      int64_t v = s->index.evaluate(env);
      out = floating ? of_float(static_cast<double>(v), dt) : of_int(v, dt);
      break;
    }
    case ScalarOp::Cast: out = eval_convert(arg(0), s->args[0]->dtype, dt); break;
    case ScalarOp::Where: out = arg(0).i ? arg(1) : arg(2); break;
    case ScalarOp::IsNan: out = of_int(is_floating(s->args[0]->dtype) && std::isnan(arg(0).f), dt); break;
    case ScalarOp::IsInf: out = of_int(is_floating(s->args[0]->dtype) && std::isinf(arg(0).f), dt); break;
    case ScalarOp::LogicalNot: out = of_int(argf(0) == 0.0, dt); break;
    case ScalarOp::LogicalAnd: out = of_int(argf(0) != 0.0 && argf(1) != 0.0, dt); break;
    case ScalarOp::LogicalOr: out = of_int(argf(0) != 0.0 || argf(1) != 0.0, dt); break;
    case ScalarOp::LogicalXor: out = of_int((argf(0) != 0.0) != (argf(1) != 0.0), dt); break;
    case ScalarOp::Eq: out = of_int(argf(0) == argf(1), dt); break;
    case ScalarOp::Ne: out = of_int(argf(0) != argf(1), dt); break;
    case ScalarOp::Lt: out = of_int(argf(0) < argf(1), dt); break;
    case ScalarOp::Le: out = of_int(argf(0) <= argf(1), dt); break;
    case ScalarOp::Gt: out = of_int(argf(0) > argf(1), dt); break;
    case ScalarOp::Ge: out = of_int(argf(0) >= argf(1), dt); break;
    default:
      if (floating) {
        double a = argf(0), b = s->args.size() > 1 ? argf(1) : 0.0, r = 0.0;
        switch (s->op) {
          case ScalarOp::Neg: r = -a; break;
          case ScalarOp::Abs: r = std::fabs(a); break;
          case ScalarOp::Sign: r = std::isnan(a) ? a : (a > 0) - (a < 0); break;
          case ScalarOp::Exp: r = std::exp(a); break;
          case ScalarOp::Exp2: r = std::exp2(a); break;
          case ScalarOp::Expm1: r = std::expm1(a); break;
          case ScalarOp::Log: r = std::log(a); break;
          case ScalarOp::Log2: r = std::log2(a); break;
          case ScalarOp::Log10: r = std::log10(a); break;
          case ScalarOp::Log1p: r = std::log1p(a); break;
          case ScalarOp::Sqrt: r = std::sqrt(a); break;
          case ScalarOp::Rsqrt: r = 1.0 / std::sqrt(a); break;
          case ScalarOp::Reciprocal: r = 1.0 / a; break;
          case ScalarOp::Sin: r = std::sin(a); break;
          case ScalarOp::Cos: r = std::cos(a); break;
          case ScalarOp::Tan: r = std::tan(a); break;
          case ScalarOp::Asin: r = std::asin(a); break;
          case ScalarOp::Acos: r = std::acos(a); break;
          case ScalarOp::Atan: r = std::atan(a); break;
          case ScalarOp::Sinh: r = std::sinh(a); break;
          case ScalarOp::Cosh: r = std::cosh(a); break;
          case ScalarOp::Tanh: r = std::tanh(a); break;
          case ScalarOp::Asinh: r = std::asinh(a); break;
          case ScalarOp::Acosh: r = std::acosh(a); break;
          case ScalarOp::Atanh: r = std::atanh(a); break;
          case ScalarOp::Erf: r = std::erf(a); break;
          case ScalarOp::Erfc: r = std::erfc(a); break;
          case ScalarOp::Sigmoid: r = 1.0 / (1.0 + std::exp(-a)); break;
          case ScalarOp::Floor: r = std::floor(a); break;
          case ScalarOp::Ceil: r = std::ceil(a); break;
          case ScalarOp::Round: r = std::nearbyint(a); break;
          case ScalarOp::Trunc: r = std::trunc(a); break;
          case ScalarOp::Add: r = a + b; break;
          case ScalarOp::Sub: r = a - b; break;
          case ScalarOp::Mul: r = a * b; break;
          case ScalarOp::Div: r = a / b; break;
          case ScalarOp::FloorDiv: r = std::floor(a / b); break;
          case ScalarOp::Remainder: {
            r = std::fmod(a, b);
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
            break;
          }
          case ScalarOp::Fmod: r = std::fmod(a, b); break;
          case ScalarOp::Pow: r = std::pow(a, b); break;
          case ScalarOp::Atan2: r = std::atan2(a, b); break;
          case ScalarOp::Maximum: r = std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); break;
          case ScalarOp::Minimum: r = std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b); break;
          default: throw InternalError(std::string("reference evaluator: no float semantics for ") + scalar_op_name(s->op));
        }
        out = of_float(r, dt);
      } else {
        int64_t a = arg(0).i, b = s->args.size() > 1 ? arg(1).i : 0, r = 0;
        switch (s->op) {
          case ScalarOp::Neg: r = -a; break;
          case ScalarOp::Abs: r = a < 0 ? -a : a; break;
          case ScalarOp::Sign: r = (a > 0) - (a < 0); break;
          case ScalarOp::BitwiseNot: r = dt == DType::Bool ? !a : ~a; break;
          case ScalarOp::Add: r = a + b; break;
          case ScalarOp::Sub: r = a - b; break;
          case ScalarOp::Mul: r = a * b; break;
          case ScalarOp::FloorDiv: r = floordiv64(a, b); break;
          case ScalarOp::Remainder: r = a - floordiv64(a, b) * b; break;
          case ScalarOp::Fmod: r = b == 0 ? throw UserError("fmod by zero") : a % b; break;
          case ScalarOp::Pow: {
            r = 1;
            for (int64_t k = 0; k < b; ++k) r *= a;
            break;
          }
          case ScalarOp::Maximum: r = std::max(a, b); break;
          case ScalarOp::Minimum: r = std::min(a, b); break;
          case ScalarOp::BitwiseAnd: r = a & b; break;
          case ScalarOp::BitwiseOr: r = a | b; break;
          case ScalarOp::BitwiseXor: r = a ^ b; break;
          case ScalarOp::ShiftLeft: r = b >= 64 ? 0 : a << b; break;
          case ScalarOp::ShiftRight: r = b >= 64 ? (a < 0 ? -1 : 0) : a >> b; break;
          default: throw InternalError(std::string("reference evaluator: no integer semantics for ") + scalar_op_name(s->op));
        }
        out = of_int(r, dt);
      }
  }
  memo[s.get()] = out;
  return out;
}

void Evaluator::run_pointwise(const Pointwise& node, std::map<std::string, int64_t> env) {
  std::map<const ScalarNode*, EvalNumber> memo;
  EvalNumber v = eval(node.body, env, memo);
  const Buffer& b = program_.buffer(node.output);
  std::vector<Expr> vars;
  for (size_t k = 0; k < node.ranges.size(); ++k) vars.push_back(Expr::var("i" + std::to_string(k)));
  store(node.output, linear_index(vars, b.strides, b.offset).evaluate(env), eval_convert(v, node.body->dtype, b.dtype));
}

void Evaluator::run_reduction(const Reduction& node, std::map<std::string, int64_t> env) {
  DType body = node.body->dtype;
  bool floating = is_floating(body);
  double facc = 0.0;
  int64_t iacc = 0, position = 0, best_position = 0;
  bool first = true;
  switch (node.type) {
    case ReductionType::Prod: facc = 1.0; iacc = 1; break;
    case ReductionType::All: iacc = 1; break;
    case ReductionType::Max: facc = -INFINITY; iacc = std::numeric_limits<int64_t>::min(); break;
    case ReductionType::Min: facc = INFINITY; iacc = std::numeric_limits<int64_t>::max(); break;
    default: break;
  }
  for_each_point(evaluate_all(node.reduction_ranges), [&](const std::vector<int64_t>& r) {
    for (size_t k = 0; k < r.size(); ++k) env["r" + std::to_string(k)] = r[k];
    std::map<const ScalarNode*, EvalNumber> memo;
    EvalNumber v = eval(node.body, env, memo);
    double f = floating ? v.f : static_cast<double>(v.i);
    switch (node.type) {
      case ReductionType::Sum: floating ? facc = static_cast<double>(of_float(facc + v.f, body).f) : iacc += v.i; break;
      case ReductionType::Prod: floating ? facc = static_cast<double>(of_float(facc * v.f, body).f) : iacc *= v.i; break;
      case ReductionType::XorSum: iacc ^= v.i; break;
      case ReductionType::Any: iacc = iacc || v.i; break;
      case ReductionType::All: iacc = iacc && v.i; break;
      case ReductionType::Max:
      case ReductionType::Min: {
        bool is_max = node.type == ReductionType::Max;
        if (floating) {
          if (std::isnan(facc)) break;
          if (std::isnan(f) || (is_max ? f > facc : f < facc)) facc = f;
        } else {
          iacc = is_max ? std::max(iacc, v.i) : std::min(iacc, v.i);
        }
        break;
      }
      case ReductionType::ArgMax:
      case ReductionType::ArgMin: {
        bool is_max = node.type == ReductionType::ArgMax;
        bool better = first || (!std::isnan(facc) && (std::isnan(f) || (is_max ? f > facc : f < facc)));
        if (better) {
          facc = f;
          best_position = position;
        }
        break;
      }
    }
    first = false;
    ++position;
  });
  EvalNumber result;
  DType out_dtype = program_.buffer(node.output).dtype;
  if (node.type == ReductionType::ArgMax || node.type == ReductionType::ArgMin) result = of_int(best_position, DType::Int64);
  else if (floating) result = of_float(facc, body);
  else result = of_int(iacc, body);
  DType from = node.type == ReductionType::ArgMax || node.type == ReductionType::ArgMin ? DType::Int64 : body;
  const Buffer& b = program_.buffer(node.output);
  std::vector<Expr> vars;
  for (size_t k = 0; k < node.ranges.size(); ++k) vars.push_back(Expr::var("i" + std::to_string(k)));
  store(node.output, linear_index(vars, b.strides, b.offset).evaluate(env), eval_convert(result, from, out_dtype));
}

void Evaluator::run_kernel(const Kernel& kernel) {
  size_t n = kernel.ranges.size();
  std::vector<int64_t> inner = evaluate_all(kernel.reduction_ranges);
  for_each_point(evaluate_all(kernel.ranges), [&](const std::vector<int64_t>& outer) {
    std::map<std::string, int64_t> env;
    for (size_t k = 0; k < n; ++k) env["i" + std::to_string(k)] = outer[k];
    for (const Node& node : kernel.nodes) {
      if (auto* r = std::get_if<Reduction>(&node)) {
        run_reduction(*r, env);
      } else if (auto* p = std::get_if<Pointwise>(&node)) {
        if (p->ranges.size() == n) {
          run_pointwise(*p, env);
        } else {  // a full pointwise: its own loop over the reduction ranges
          for_each_point(inner, [&](const std::vector<int64_t>& r) {
            std::map<std::string, int64_t> full = env;
            for (size_t j = 0; j < r.size(); ++j) full["i" + std::to_string(n + j)] = r[j];
            run_pointwise(*p, full);
          });
        }
      }
    }
  });
}

void Evaluator::run(const ExternFn& call_extern) {
  for (size_t k = 0; k < program_.steps.size(); ++k) {
    if (auto* kernel = std::get_if<Kernel>(&program_.steps[k])) run_kernel(*kernel);
    else call_extern(std::get<Extern>(program_.steps[k]), *this);
    if (k < program_.frees.size())
      for (const std::string& name : program_.frees[k]) freed_.insert(name);
  }
}

}  // namespace cdynamo::ir
