// Symbolic integer expressions: construction, simplifying arithmetic, printing, evaluation.
// Assumes divisors of FloorDiv/Mod are positive (sizes and strides), as in tensor indexing.
#include "backend/ir/expr.h"
#include <algorithm>
#include <optional>
#include <stdexcept>
#include "common/error.h"

namespace cdynamo::ir {
namespace {

int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t mod_int(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Splits a term into (coefficient, rest): 3*x*y -> (3, x*y); 5 -> (5, null).
std::pair<int64_t, std::optional<Expr>> split_coefficient(const Expr& term) {
  if (term.is_const()) return {term.const_value(), std::nullopt};
  if (term.kind() == ExprKind::Mul && term.operands().front().is_const()) {
    std::vector<Expr> rest(term.operands().begin() + 1, term.operands().end());
    if (rest.size() == 1) return {term.operands().front().const_value(), rest.front()};
    return {term.operands().front().const_value(), make_expr(ExprKind::Mul, rest)};
  }
  return {1, term};
}

Expr scaled(int64_t coefficient, const Expr& rest) {
  if (coefficient == 1) return rest;
  return make_expr(ExprKind::Mul, {Expr(coefficient), rest});
}

}  // namespace

Expr::Expr() : Expr(int64_t{0}) {}
Expr::Expr(int64_t value) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::Const;
  node->value = value;
  node_ = std::move(node);
}
Expr Expr::var(const std::string& name) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::Var;
  node->name = name;
  return Expr(std::shared_ptr<const ExprNode>(std::move(node)));
}
Expr make_expr(ExprKind kind, std::vector<Expr> operands) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->args = std::move(operands);
  return Expr(std::shared_ptr<const ExprNode>(std::move(node)));
}

ExprKind Expr::kind() const { return node_->kind; }
bool Expr::is_const() const { return node_->kind == ExprKind::Const; }
bool Expr::is_const(int64_t value) const { return is_const() && node_->value == value; }
int64_t Expr::const_value() const {
  if (!is_const()) throw InternalError("Expr::const_value of a non-constant " + str());
  return node_->value;
}
const std::string& Expr::var_name() const { return node_->name; }
const std::vector<Expr>& Expr::operands() const { return node_->args; }

bool Expr::operator==(const Expr& other) const {
  if (node_ == other.node_) return true;
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case ExprKind::Const: return node_->value == other.node_->value;
    case ExprKind::Var: return node_->name == other.node_->name;
    default: return node_->args == other.node_->args;
  }
}

bool Expr::operator<(const Expr& other) const {
  if (kind() != other.kind()) return kind() < other.kind();
  switch (kind()) {
    case ExprKind::Const: return node_->value < other.node_->value;
    case ExprKind::Var: return node_->name < other.node_->name;
    default: return std::lexicographical_compare(node_->args.begin(), node_->args.end(), other.node_->args.begin(),
                                                 other.node_->args.end());
  }
}

Expr operator+(const Expr& a, const Expr& b) {
  // Flatten, fold constants, collect like terms, sort.
  std::vector<Expr> terms;
  for (const Expr* e : {&a, &b}) {
    if (e->kind() == ExprKind::Add) terms.insert(terms.end(), e->operands().begin(), e->operands().end());
    else terms.push_back(*e);
  }
  int64_t constant = 0;
  std::vector<std::pair<Expr, int64_t>> collected;
  for (const Expr& term : terms) {
    auto [coefficient, rest] = split_coefficient(term);
    if (!rest) {
      constant += coefficient;
      continue;
    }
    auto it = std::find_if(collected.begin(), collected.end(), [&](auto& entry) { return entry.first == *rest; });
    if (it == collected.end()) collected.emplace_back(*rest, coefficient);
    else it->second += coefficient;
  }
  std::vector<Expr> result;
  for (auto& [rest, coefficient] : collected)
    if (coefficient != 0) result.push_back(scaled(coefficient, rest));
  std::sort(result.begin(), result.end());
  if (constant != 0) result.push_back(Expr(constant));
  if (result.empty()) return Expr(0);
  if (result.size() == 1) return result.front();
  return make_expr(ExprKind::Add, std::move(result));
}

Expr operator-(const Expr& a, const Expr& b) { return a + Expr(-1) * b; }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.const_value() * b.const_value());
  if (a.is_const(0) || b.is_const(0)) return Expr(0);
  if (a.is_const(1)) return b;
  if (b.is_const(1)) return a;
  // Distribute constants over sums so like terms can meet: 2*(x + 1) -> 2*x + 2.
  if (a.is_const() && b.kind() == ExprKind::Add) {
    Expr sum = 0;
    for (const Expr& term : b.operands()) sum = sum + a * term;
    return sum;
  }
  if (b.is_const() && a.kind() == ExprKind::Add) return b * a;
  std::vector<Expr> factors;
  int64_t constant = 1;
  for (const Expr* e : {&a, &b}) {
    std::vector<Expr> parts = e->kind() == ExprKind::Mul ? e->operands() : std::vector<Expr>{*e};
    for (const Expr& part : parts) {
      if (part.is_const()) constant *= part.const_value();
      else factors.push_back(part);
    }
  }
  if (constant == 0) return Expr(0);
  std::sort(factors.begin(), factors.end());
  if (constant != 1) factors.insert(factors.begin(), Expr(constant));
  if (factors.size() == 1) return factors.front();
  return make_expr(ExprKind::Mul, std::move(factors));
}

Expr floordiv(const Expr& a, const Expr& b) {
  if (b.is_const(1)) return a;
  if (a.is_const() && b.is_const()) return Expr(floordiv_int(a.const_value(), b.const_value()));
  if (a.is_const(0)) return Expr(0);
  if (b.is_const()) {
    int64_t k = b.const_value();
    auto [coefficient, rest] = split_coefficient(a);
    if (rest && coefficient % k == 0) return Expr(coefficient / k) * *rest;
    if (a.kind() == ExprKind::FloorDiv && a.operands()[1].is_const())
      return floordiv(a.operands()[0], Expr(a.operands()[1].const_value() * k));
  }
  return make_expr(ExprKind::FloorDiv, {a, b});
}

Expr mod(const Expr& a, const Expr& b) {
  if (b.is_const(1)) return Expr(0);
  if (a.is_const() && b.is_const()) return Expr(mod_int(a.const_value(), b.const_value()));
  if (b.is_const()) {
    auto [coefficient, rest] = split_coefficient(a);
    if (rest && coefficient % b.const_value() == 0) return Expr(0);
    if (a.kind() == ExprKind::Mod && a.operands()[1] == b) return a;
  }
  return make_expr(ExprKind::Mod, {a, b});
}

Expr min(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::min(a.const_value(), b.const_value()));
  if (a == b) return a;
  return make_expr(ExprKind::Min, {a, b});
}

Expr max(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::max(a.const_value(), b.const_value()));
  if (a == b) return a;
  return make_expr(ExprKind::Max, {a, b});
}

Expr simplify(const Expr& e, const VarRanges& ranges) {
  (void)ranges;
  switch (e.kind()) {
    case ExprKind::Const:
    case ExprKind::Var: return e;
    case ExprKind::Add: {
      Expr sum = 0;
      for (const Expr& term : e.operands()) sum = sum + simplify(term, ranges);
      return sum;
    }
    case ExprKind::Mul: {
      Expr product = 1;
      for (const Expr& factor : e.operands()) product = product * simplify(factor, ranges);
      return product;
    }
    case ExprKind::FloorDiv: return floordiv(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges));
    case ExprKind::Mod: return mod(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges));
    case ExprKind::Min: return min(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges));
    case ExprKind::Max: return max(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges));
  }
  return e;
}

std::string Expr::str() const {
  switch (kind()) {
    case ExprKind::Const: return std::to_string(node_->value) + (node_->value > 2147483647 || node_->value < -2147483647 ? "LL" : "");
    case ExprKind::Var: return node_->name;
    case ExprKind::Add:
    case ExprKind::Mul: {
      std::string out = "(";
      for (size_t i = 0; i < node_->args.size(); ++i) {
        if (i) out += kind() == ExprKind::Add ? " + " : "*";
        out += node_->args[i].str();
      }
      return out + ")";
    }
    case ExprKind::FloorDiv: return "cd_floordiv(" + node_->args[0].str() + ", " + node_->args[1].str() + ")";
    case ExprKind::Mod: return "cd_mod(" + node_->args[0].str() + ", " + node_->args[1].str() + ")";
    case ExprKind::Min: return "cd_min(" + node_->args[0].str() + ", " + node_->args[1].str() + ")";
    case ExprKind::Max: return "cd_max(" + node_->args[0].str() + ", " + node_->args[1].str() + ")";
  }
  return "?";
}

std::string Expr::py_str() const {
  switch (kind()) {
    case ExprKind::Const: return std::to_string(node_->value);
    case ExprKind::Var: return node_->name;
    case ExprKind::Add:
    case ExprKind::Mul: {
      std::string out = "(";
      for (size_t i = 0; i < node_->args.size(); ++i) {
        if (i) out += kind() == ExprKind::Add ? " + " : "*";
        out += node_->args[i].py_str();
      }
      return out + ")";
    }
    case ExprKind::FloorDiv: return "(" + node_->args[0].py_str() + " // " + node_->args[1].py_str() + ")";
    case ExprKind::Mod: return "(" + node_->args[0].py_str() + " % " + node_->args[1].py_str() + ")";
    case ExprKind::Min: return "min(" + node_->args[0].py_str() + ", " + node_->args[1].py_str() + ")";
    case ExprKind::Max: return "max(" + node_->args[0].py_str() + ", " + node_->args[1].py_str() + ")";
  }
  return "?";
}

std::vector<std::string> Expr::free_vars() const {
  std::vector<std::string> out;
  if (kind() == ExprKind::Var) return {node_->name};
  for (const Expr& arg : node_->args)
    for (auto& name : arg.free_vars())
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

Expr Expr::substitute(const std::map<std::string, Expr>& replacements) const {
  switch (kind()) {
    case ExprKind::Const: return *this;
    case ExprKind::Var: {
      auto it = replacements.find(node_->name);
      return it == replacements.end() ? *this : it->second;
    }
    default: {
      std::vector<Expr> args;
      for (const Expr& arg : node_->args) args.push_back(arg.substitute(replacements));
      return simplify(make_expr(kind(), std::move(args)));
    }
  }
}

int64_t Expr::evaluate(const std::map<std::string, int64_t>& values) const {
  switch (kind()) {
    case ExprKind::Const: return node_->value;
    case ExprKind::Var: {
      auto it = values.find(node_->name);
      if (it == values.end()) throw InternalError("unbound variable " + node_->name);
      return it->second;
    }
    case ExprKind::Add: {
      int64_t sum = 0;
      for (const Expr& arg : node_->args) sum += arg.evaluate(values);
      return sum;
    }
    case ExprKind::Mul: {
      int64_t product = 1;
      for (const Expr& arg : node_->args) product *= arg.evaluate(values);
      return product;
    }
    case ExprKind::FloorDiv: return floordiv_int(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
    case ExprKind::Mod: return mod_int(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
    case ExprKind::Min: return std::min(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
    case ExprKind::Max: return std::max(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
  }
  return 0;
}

Expr product(const std::vector<Expr>& sizes) {
  Expr result = 1;
  for (const Expr& size : sizes) result = result * size;
  return result;
}

std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes) {
  std::vector<Expr> strides(sizes.size());
  Expr stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride = stride * sizes[i];
  }
  return strides;
}

Expr linear_index(const std::vector<Expr>& index, const std::vector<Expr>& strides, const Expr& offset) {
  Expr result = offset;
  for (size_t i = 0; i < index.size() && i < strides.size(); ++i) result = result + index[i] * strides[i];
  return result;
}

}  // namespace cdynamo::ir
