// SizeExpr (size_expr.h): compiles an ir::Expr to postfix code once, runs it on each call with a
// fixed stack. Assumes the simplifier's forms: n-ary Add/Mul, binary FloorDiv/Mod/Min/Max.
#include "backend/runtime/size_expr.h"
#include <algorithm>
#include "common/error.h"
#include "common/int_math.h"

namespace cdynamo::runtime {

SizeExpr::SizeExpr(const ir::Expr& e, const std::vector<ir::Symbol>& symbols, const std::string& what) {
  if (e.is_const()) {
    constant_ = e.const_value();
    return;
  }
  emit(e, symbols, what, 1);
}

void SizeExpr::emit(const ir::Expr& e, const std::vector<ir::Symbol>& symbols, const std::string& what, int depth) {
  if (depth + static_cast<int>(e.operands().size()) > kMaxDepth) throw UserError(what + ": a size expression too deep to evaluate: " + e.str());
  switch (e.kind()) {
    case ir::ExprKind::Const: code_.emplace_back(Op::Push, e.const_value()); return;
    case ir::ExprKind::Var: {
      auto it = std::find_if(symbols.begin(), symbols.end(), [&](const ir::Symbol& s) { return s.name == e.var_name(); });
      if (it == symbols.end()) throw UserError(what + " uses " + e.var_name() + ", which no argument gives");
      code_.emplace_back(Op::Load, it - symbols.begin());
      return;
    }
    default: break;
  }
  const auto& args = e.operands();
  for (size_t k = 0; k < args.size(); ++k) emit(args[k], symbols, what, depth + static_cast<int>(k));
  Op op = Op::Add;
  switch (e.kind()) {
    case ir::ExprKind::Add: op = Op::Add; break;
    case ir::ExprKind::Mul: op = Op::Mul; break;
    case ir::ExprKind::FloorDiv: op = Op::FloorDiv; break;
    case ir::ExprKind::Mod: op = Op::Mod; break;
    case ir::ExprKind::Min: op = Op::Min; break;
    case ir::ExprKind::Max: op = Op::Max; break;
    default: throw InternalError("size expression of an unknown kind: " + e.str());
  }
  code_.emplace_back(op, static_cast<int64_t>(args.size()));
}

int64_t SizeExpr::run(const int64_t* symbol_values) const {
  int64_t stack[kMaxDepth];
  int top = 0;
  for (const auto& [op, arg] : code_) {
    switch (op) {
      case Op::Push: stack[top++] = arg; continue;
      case Op::Load: stack[top++] = symbol_values[arg]; continue;
      default: break;
    }
    const int n = static_cast<int>(arg);
    int64_t* operands = stack + top - n;
    int64_t v = operands[0];
    for (int k = 1; k < n; ++k) {
      const int64_t b = operands[k];
      switch (op) {
        case Op::Add: v += b; break;
        case Op::Mul: v *= b; break;
        case Op::FloorDiv:
          if (b == 0) throw UserError("a size expression divides by zero (a symbolic size is 0)", PyExc_ZeroDivisionError);
          v = floor_div(v, b);
          break;
        case Op::Mod:
          if (b == 0) throw UserError("a size expression divides by zero (a symbolic size is 0)", PyExc_ZeroDivisionError);
          v = python_mod(v, b);
          break;
        case Op::Min: v = std::min(v, b); break;
        case Op::Max: v = std::max(v, b); break;
        default: break;
      }
    }
    top -= n;
    stack[top++] = v;
  }
  return stack[0];
}

std::vector<SizeExpr> size_exprs(const std::vector<ir::Expr>& list, const std::vector<ir::Symbol>& symbols,
                                 const std::string& what) {
  std::vector<SizeExpr> out;
  out.reserve(list.size());
  for (const ir::Expr& e : list) out.emplace_back(e, symbols, what);
  return out;
}

}  // namespace cdynamo::runtime
