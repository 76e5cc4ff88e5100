// Walks and rewrites of the loop IR that every code generator needs: the leaves of a scalar
// graph, index substitution in scalar graphs, affine decomposition of index expressions.
#include "backend/ir/ir_walk.h"
#include <set>
#include "backend/ir/recursion_guard.h"

namespace cdynamo::ir {

bool contains_var(const Expr& e, const std::string& var) {
  ir::RecursionGuard recursion("an index expression");
  if (e.kind() == ExprKind::Var) return e.var_name() == var;
  for (const Expr& arg : e.operands())
    if (contains_var(arg, var)) return true;
  return false;
}

bool is_leaf_with_index(const ScalarNode& n) {
  return n.op == ScalarOp::Load || n.op == ScalarOp::MaskedLoad || n.op == ScalarOp::Index;
}

Scalar rewrite_indices(const Scalar& s, const std::map<std::string, Expr>& subst,
                       std::unordered_map<const ScalarNode*, Scalar>& memo) {
  return rewrite_indices(s, [&](const Expr& index) { return index.substitute(subst); }, memo);
}

Scalar rewrite_indices(const Scalar& s, const std::function<Expr(const Expr&)>& rewrite,
                       std::unordered_map<const ScalarNode*, Scalar>& memo) {
  auto it = memo.find(s.get());
  if (it != memo.end()) return it->second;
  ir::RecursionGuard recursion("a kernel's scalar graph");
  auto copy = std::make_shared<ScalarNode>(*s);
  bool changed = false;
  if (is_leaf_with_index(*s)) {
    copy->index = rewrite(s->index);
    changed = !(copy->index == s->index);
  }
  for (Scalar& arg : copy->args) {
    Scalar next = rewrite_indices(arg, rewrite, memo);
    changed = changed || next != arg;
    arg = next;
  }
  for (Scalar& position : copy->indirect) {
    Scalar next = rewrite_indices(position, rewrite, memo);
    changed = changed || next != position;
    position = next;
  }
  Scalar result = changed ? Scalar(copy) : s;
  memo.emplace(s.get(), result);
  return result;
}

void visit_leaves(const Scalar& s, const std::function<void(const ScalarNode&)>& f) {
  std::set<const ScalarNode*> seen;
  std::vector<const ScalarNode*> stack{s.get()};
  while (!stack.empty()) {
    const ScalarNode* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (is_leaf_with_index(*n)) f(*n);
    for (const Scalar& arg : n->args) stack.push_back(arg.get());
    for (const Scalar& position : n->indirect) stack.push_back(position.get());
  }
}

Affine affine_in(const Expr& e, const std::string& var) {
  ir::RecursionGuard recursion("an index expression");
  if (!contains_var(e, var)) return {true, Expr(0), e};
  switch (e.kind()) {
    case ExprKind::Var: return {true, Expr(1), Expr(0)};
    case ExprKind::Add: {
      Expr coef = 0, rest = 0;
      for (const Expr& term : e.operands()) {
        Affine a = affine_in(term, var);
        if (!a.ok) return {};
        coef = coef + a.coef;
        rest = rest + a.rest;
      }
      return {true, coef, rest};
    }
    case ExprKind::Mul: {
      Expr other = 1;
      const Expr* with_var = nullptr;
      for (const Expr& factor : e.operands()) {
        if (contains_var(factor, var)) {
          if (with_var) return {};  // var * var
          with_var = &factor;
        } else {
          other = other * factor;
        }
      }
      Affine a = affine_in(*with_var, var);
      if (!a.ok) return {};
      return {true, a.coef * other, a.rest * other};
    }
    default: return {};
  }
}

bool walks_as_one(const std::vector<Expr>& indices, const std::string& outer, const std::string& inner, const Expr& inner_size) {
  for (const Expr& e : indices) {
    Affine a = affine_in(e, outer), b = affine_in(e, inner);
    if (!a.ok || !b.ok || !(a.coef == b.coef * inner_size)) return false;
  }
  return true;
}

}  // namespace cdynamo::ir
