// The IR verifier: structural invariants of a Program, checked after each pass in tests.
// Assumes the conventions documented in ir.h (kernel variable naming, alias roots, frees).
#include "backend/ir/recursion_guard.h"
#include <algorithm>
#include <map>
#include <set>
#include "backend/ir/ir.h"
#include "common/error.h"

namespace cdynamo::ir {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InternalError("IR verify: " + where + ": " + what);
}

// Ops whose result is Bool whatever their operands: comparisons, tests, logic.
bool yields_bool(ScalarOp op) {
  switch (op) {
    case ScalarOp::Eq: case ScalarOp::Ne: case ScalarOp::Lt: case ScalarOp::Le: case ScalarOp::Gt:
    case ScalarOp::Ge: case ScalarOp::IsNan: case ScalarOp::IsInf: case ScalarOp::LogicalNot:
    case ScalarOp::LogicalAnd: case ScalarOp::LogicalOr: case ScalarOp::LogicalXor:
      return true;
    default: return false;
  }
}

// Checks one scalar body: arities, dtypes, variables in scope, buffers readable.
class BodyChecker {
 public:
  BodyChecker(const Program& program, std::string where, std::set<std::string> vars,
              const std::set<std::string>& readable)
      : program_(program), where_(std::move(where)), vars_(std::move(vars)), readable_(readable) {}

  void check(const Scalar& s) {
    if (!s) fail(where_, "null scalar node");
    if (!seen_.insert(s.get()).second) return;
    RecursionGuard recursion("a scalar graph to verify");
    if (s->op != ScalarOp::Load && s->op != ScalarOp::MaskedLoad && !s->indirect.empty())
      fail(where_, std::string("indirect positions on ") + scalar_op_name(s->op));
    if (s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad) {
      check_load(*s);
    } else if (static_cast<int>(s->args.size()) != scalar_op_arity(s->op)) {
      fail(where_, std::string("wrong arity for ") + scalar_op_name(s->op));
    }
    for (const Scalar& arg : s->args) check(arg);
    for (const Scalar& position : s->indirect) check(position);
    check_dtypes(*s);
    if (s->op == ScalarOp::Index) check_vars(s->index, {});
  }

 private:
  void check_load(const ScalarNode& s) {
    int arity = s.op == ScalarOp::Load ? 0 : 2;
    if (static_cast<int>(s.args.size()) != arity) fail(where_, "wrong arity for a load");
    if (!readable_.count(s.buffer)) fail(where_, "reads " + s.buffer + " before it is written");
    const Buffer& b = program_.buffer(s.buffer);
    if (b.dtype != s.dtype) fail(where_, "load of " + s.buffer + " with dtype " + dtype_name(s.dtype));
    std::set<std::string> bound;
    if (s.indirect_sizes.size() != s.indirect.size()) fail(where_, "an indirect load needs one size per position");
    for (size_t k = 0; k < s.indirect.size(); ++k) {
      bound.insert(indirect_var(k));
      if (s.indirect[k]->dtype != DType::Int64) fail(where_, "indirect position is not Int64");
    }
    check_vars(s.index, bound);
  }

  void check_vars(const Expr& e, const std::set<std::string>& extra) {
    for (const std::string& name : e.free_vars()) {
      bool loop_var = vars_.count(name) || extra.count(name);
      bool size_symbol = !(name.size() > 1 && (name[0] == 'i' || name[0] == 'r') && isdigit(name[1])) &&
                         name.rfind("ind", 0) != 0;
      if (!loop_var && !size_symbol) fail(where_, "index uses " + name + " outside its scope");
    }
  }

  void check_dtypes(const ScalarNode& s) {
    auto same = [&](size_t a, size_t b) {
      if (s.args[a]->dtype != s.args[b]->dtype)
        fail(where_, std::string(scalar_op_name(s.op)) + " operands of different dtypes " +
                         dtype_name(s.args[a]->dtype) + " and " + dtype_name(s.args[b]->dtype));
    };
    switch (s.op) {
      case ScalarOp::Constant: {
        bool ok = std::holds_alternative<bool>(s.constant) ? s.dtype == DType::Bool
                  : std::holds_alternative<int64_t>(s.constant) ? is_integral(s.dtype) && s.dtype != DType::Bool
                                                                 : is_floating(s.dtype);
        if (!ok) fail(where_, std::string("constant payload does not match dtype ") + dtype_name(s.dtype));
        return;
      }
      case ScalarOp::Where:
        if (s.args[0]->dtype != DType::Bool) fail(where_, "Where condition is not Bool");
        same(1, 2);
        if (s.args[1]->dtype != s.dtype) fail(where_, "Where result dtype differs from its branches");
        return;
      case ScalarOp::MaskedLoad:
        if (s.args[0]->dtype != DType::Bool) fail(where_, "MaskedLoad mask is not Bool");
        if (s.args[1]->dtype != s.dtype) fail(where_, "MaskedLoad fallback dtype differs");
        return;
      case ScalarOp::Pow:
      case ScalarOp::ShiftLeft:
      case ScalarOp::ShiftRight:
      case ScalarOp::Cast:
      case ScalarOp::Load:
      case ScalarOp::Index:
        return;
      default: break;
    }
    if (s.args.size() == 2) same(0, 1);
    if (yields_bool(s.op)) {
      if (s.dtype != DType::Bool) fail(where_, std::string(scalar_op_name(s.op)) + " must produce Bool");
    } else if (!s.args.empty() && s.args[0]->dtype != s.dtype) {
      fail(where_, std::string(scalar_op_name(s.op)) + " changes dtype without a Cast");
    }
  }

  const Program& program_;
  std::string where_;
  std::set<std::string> vars_;
  const std::set<std::string>& readable_;
  std::set<const ScalarNode*> seen_;
};

std::set<std::string> var_names(char prefix, size_t n, size_t start = 0) {
  std::set<std::string> out;
  for (size_t k = 0; k < n; ++k) out.insert(prefix + std::to_string(start + k));
  return out;
}

std::vector<Expr> concat(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  std::vector<Expr> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

class ProgramChecker {
 public:
  explicit ProgramChecker(const Program& p) : p_(p) {}

  void run() {
    check_buffers();
    for (const std::string& name : p_.inputs) {
      if (p_.buffer(name).kind != Buffer::Kind::Input) fail("inputs", name + " is not an Input buffer");
    }
    for (const Buffer& b : p_.buffers) {
      if (b.kind == Buffer::Kind::Input || b.kind == Buffer::Kind::Constant) readable_.insert(b.name);
      if (!b.reuses.empty() && readable_.count(b.reuses)) readable_.insert(b.name);
    }
    if (!p_.frees.empty() && p_.frees.size() != p_.steps.size()) fail("frees", "one entry per step expected");
    for (size_t k = 0; k < p_.steps.size(); ++k) {
      if (auto* kernel = std::get_if<Kernel>(&p_.steps[k])) check_kernel(*kernel);
      else check_extern(std::get<Extern>(p_.steps[k]), "step " + std::to_string(k));
      if (k < p_.frees.size()) check_frees(k);
    }
    for (const std::string& name : p_.outputs) {
      if (!readable_.count(name)) fail("outputs", name + " is never written");
      if (freed_.count(name)) fail("outputs", name + " is freed");
    }
  }

 private:
  void check_buffers() {
    std::set<std::string> names;
    for (const Buffer& b : p_.buffers) {
      if (b.name.empty()) fail("buffers", "unnamed buffer");
      if (!names.insert(b.name).second) fail("buffers", "duplicate buffer " + b.name);
      if (b.sizes.size() != b.strides.size()) fail(b.name, "sizes and strides differ in length");
    }
    for (const Buffer& b : p_.buffers) {
      if (b.reuses.empty()) continue;
      if (!names.count(b.reuses)) fail(b.name, "reuses unknown buffer " + b.reuses);
      const Buffer& root = p_.buffer(b.reuses);
      if (!root.reuses.empty()) fail(b.name, "reuses " + b.reuses + ", which is not a root");
      if (root.dtype != b.dtype) fail(b.name, "alias of a buffer of another dtype");
    }
  }

  // Marks a buffer (and any alias of it) as written.
  void mark_written(const std::string& name) {
    readable_.insert(name);
    for (const Buffer& b : p_.buffers)
      if (b.reuses == name) readable_.insert(b.name);
    const Buffer& buffer = p_.buffer(name);
    if (!buffer.reuses.empty()) readable_.insert(buffer.reuses);
  }

  void check_output(const std::string& output, const std::vector<Expr>& ranges, const std::string& where) {
    const Buffer& b = p_.buffer(output);
    if (b.kind == Buffer::Kind::Constant) fail(where, "writes constant " + output);
    if (b.sizes.size() != ranges.size()) fail(where, "output " + output + " rank differs from the ranges");
    for (size_t d = 0; d < ranges.size(); ++d)
      if (simplify(b.sizes[d]) != simplify(ranges[d])) fail(where, "output " + output + " size differs from the ranges");
  }

  void check_kernel(const Kernel& k) {
    std::string where = k.name;
    if (!kernel_names_.insert(k.name).second) fail(where, "duplicate kernel name");
    if (k.nodes.empty()) fail(where, "empty kernel");
    std::set<std::string> produced;
    std::set<std::string> declared(k.inputs.begin(), k.inputs.end());
    size_t n = k.ranges.size(), m = k.reduction_ranges.size();
    for (const Node& node : k.nodes) {
      std::set<std::string> vars;
      if (auto* pw = std::get_if<Pointwise>(&node)) {
        bool outer = pw->ranges == k.ranges;
        bool full = m > 0 && pw->ranges == concat(k.ranges, k.reduction_ranges);
        if (!outer && !full) fail(where, "pointwise " + pw->output + " does not match the kernel's ranges");
        check_output(pw->output, pw->ranges, where);
        if (!pw->body) fail(where, "pointwise without a body");
        if (pw->body->dtype != p_.buffer(pw->output).dtype)
          fail(where, "pointwise " + pw->output + " body dtype differs from the buffer's");
        BodyChecker(p_, where + "/" + pw->output, var_names('i', pw->ranges.size()), readable_).check(pw->body);
        collect_reads(pw->body, produced, declared, where);
        produced.insert(pw->output);
        mark_written(pw->output);
      } else if (auto* red = std::get_if<Reduction>(&node)) {
        if (red->ranges != k.ranges || red->reduction_ranges != k.reduction_ranges)
          fail(where, "reduction " + red->output + " does not match the kernel's ranges");
        check_output(red->output, red->ranges, where);
        check_reduction_dtypes(*red, where);
        vars = var_names('i', n);
        auto r = var_names('r', m);
        vars.insert(r.begin(), r.end());
        BodyChecker(p_, where + "/" + red->output, vars, readable_).check(red->body);
        collect_reads(red->body, produced, declared, where);
        produced.insert(red->output);
        mark_written(red->output);
      } else {
        fail(where, "extern inside a kernel");
      }
    }
    for (const std::string& out : k.outputs)
      if (!produced.count(out)) fail(where, "declares output " + out + " it does not produce");
    for (const std::string& local : k.locals)
      if (!produced.count(local)) fail(where, "declares local " + local + " it does not produce");
    for (const std::string& name : produced) {
      bool listed = std::find(k.outputs.begin(), k.outputs.end(), name) != k.outputs.end() ||
                    std::find(k.locals.begin(), k.locals.end(), name) != k.locals.end();
      if (!listed) fail(where, "produces " + name + " but lists it neither as output nor local");
    }
  }

  void check_reduction_dtypes(const Reduction& r, const std::string& where) {
    DType out = p_.buffer(r.output).dtype, body = r.body->dtype;
    switch (r.type) {
      case ReductionType::ArgMax:
      case ReductionType::ArgMin:
        if (out != DType::Int64) fail(where, "arg-reduction output must be Int64");
        return;
      case ReductionType::Any:
      case ReductionType::All:
        if (out != DType::Bool || body != DType::Bool) fail(where, "any/all must be Bool");
        return;
      default:
        if (out == body) return;
        if (body == DType::Float32 && (out == DType::Float16 || out == DType::BFloat16)) return;
        fail(where, "reduction " + r.output + " output dtype differs from its body");
    }
  }

  // Every buffer the body reads must be produced earlier in the kernel or be a kernel input.
  void collect_reads(const Scalar& s, const std::set<std::string>& produced, const std::set<std::string>& declared,
                     const std::string& where) {
    std::vector<const ScalarNode*> stack{s.get()};
    std::set<const ScalarNode*> seen;
    while (!stack.empty()) {
      const ScalarNode* node = stack.back();
      stack.pop_back();
      if (!seen.insert(node).second) continue;
      if ((node->op == ScalarOp::Load || node->op == ScalarOp::MaskedLoad) && !produced.count(node->buffer) &&
          !declared.count(node->buffer) && !declared_any_.count(node->buffer))
        fail(where, "reads " + node->buffer + " without listing it as an input");
      for (const Scalar& a : node->args) stack.push_back(a.get());
      for (const Scalar& a : node->indirect) stack.push_back(a.get());
    }
  }

  void check_extern(const Extern& e, const std::string& where) {
    if (e.op.empty()) fail(where, "extern without an op name");
    for (const ExternArg& arg : e.args) {
      if (auto* buffer = std::get_if<std::string>(&arg.tensor)) {
        if (!readable_.count(*buffer)) fail(where, e.op + " reads " + *buffer + " before it is written");
      } else if (auto* buffers = std::get_if<std::vector<std::string>>(&arg.tensor)) {
        for (const std::string& b : *buffers)
          if (!b.empty() && !readable_.count(b)) fail(where, e.op + " reads " + b + " before it is written");
      }
    }
    for (const std::string& out : e.outputs) {
      if (out.empty()) continue;  // a return nobody uses
      const Buffer& b = p_.buffer(out);
      if (b.kind == Buffer::Kind::Input || b.kind == Buffer::Kind::Constant) fail(where, "extern writes " + out);
      mark_written(out);
    }
  }

  void check_frees(size_t k) {
    for (const std::string& name : p_.frees[k]) {
      const Buffer& b = p_.buffer(name);
      if (b.kind != Buffer::Kind::Intermediate) fail("frees", "frees non-intermediate " + name);
      if (!freed_.insert(name).second) fail("frees", name + " freed twice");
      for (const Buffer& other : p_.buffers)
        if (other.reuses == name && other.kind == Buffer::Kind::Output) fail("frees", "frees root of output " + other.name);
    }
    // Nothing freed may be read later.
    for (size_t later = k + 1; later < p_.steps.size(); ++later) {
      for (const std::string& name : p_.frees[k]) {
        if (step_reads(p_.steps[later], name)) fail("frees", name + " is freed after step " + std::to_string(k) +
                                                              " but read by step " + std::to_string(later));
      }
    }
  }

  // Iterative, shared nodes once: a DAG walked as a tree takes exponential time.
  static bool scalar_reads(const Scalar& root, const std::string& name) {
    std::set<const ScalarNode*> seen;
    std::vector<const ScalarNode*> pending{root.get()};
    while (!pending.empty()) {
      const ScalarNode* s = pending.back();
      pending.pop_back();
      if (!seen.insert(s).second) continue;
      if ((s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad) && s->buffer == name) return true;
      for (const Scalar& a : s->args) pending.push_back(a.get());
      for (const Scalar& a : s->indirect) pending.push_back(a.get());
    }
    return false;
  }

  bool step_reads(const Step& step, const std::string& name) const {
    if (auto* kernel = std::get_if<Kernel>(&step)) {
      for (const Node& node : kernel->nodes) {
        if (auto* pw = std::get_if<Pointwise>(&node); pw && scalar_reads(pw->body, name)) return true;
        if (auto* red = std::get_if<Reduction>(&node); red && scalar_reads(red->body, name)) return true;
      }
      return false;
    }
    for (const ExternArg& arg : std::get<Extern>(step).args) {
      if (auto* b = std::get_if<std::string>(&arg.tensor); b && *b == name) return true;
      if (auto* bs = std::get_if<std::vector<std::string>>(&arg.tensor))
        for (const std::string& b : *bs)
          if (b == name) return true;
    }
    return false;
  }

  const Program& p_;
  std::set<std::string> readable_, freed_, kernel_names_;
  std::set<std::string> declared_any_;
};

}  // namespace

void verify(const Program& p) { ProgramChecker(p).run(); }

}  // namespace cdynamo::ir
