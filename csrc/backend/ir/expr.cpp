// Symbolic integer expressions: construction, simplifying arithmetic (range-aware // and %),
// printing, evaluation. Assumes divisors of FloorDiv/Mod are positive, as in tensor indexing.
#include "backend/ir/recursion_guard.h"
#include "backend/ir/expr.h"
#include <algorithm>
#include <optional>
#include <stdexcept>
#include "common/error.h"
#include "common/int_math.h"

namespace cdynamo::ir {
namespace {

using cdynamo::floor_div;
using cdynamo::python_mod;

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
  if (rest.kind() != ExprKind::Mul) return make_expr(ExprKind::Mul, {Expr(coefficient), rest});
  // A product of symbols stays one flat product: 2*(s0*i0) would hide i0's coefficient.
  std::vector<Expr> factors{Expr(coefficient)};
  factors.insert(factors.end(), rest.operands().begin(), rest.operands().end());
  return make_expr(ExprKind::Mul, std::move(factors));
}

// ---- bounds: what variable ranges prove about an expression -------------------------------

// An interval [lo, hi]; a side is unknown when its flag is false.
struct Bounds {
  bool has_lo = false, has_hi = false;
  int64_t lo = 0, hi = 0;
  static Bounds exactly(int64_t v) { return {true, true, v, v}; }
};

// Bounds that would overflow are dropped rather than wrapped.
std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

Bounds bounds_of(const Expr& e, const VarRanges& ranges);

Bounds bounds_of_sum(const Expr& e, const VarRanges& ranges) {
  Bounds sum = Bounds::exactly(0);
  for (const Expr& term : e.operands()) {
    Bounds t = bounds_of(term, ranges);
    auto lo = sum.has_lo && t.has_lo ? checked_add(sum.lo, t.lo) : std::nullopt;
    auto hi = sum.has_hi && t.has_hi ? checked_add(sum.hi, t.hi) : std::nullopt;
    sum = {lo.has_value(), hi.has_value(), lo.value_or(0), hi.value_or(0)};
  }
  return sum;
}

Bounds bounds_of_product(const Expr& e, const VarRanges& ranges) {
  Bounds prod = Bounds::exactly(1);
  for (const Expr& factor : e.operands()) {
    Bounds f = bounds_of(factor, ranges);
    if (!(prod.has_lo && prod.has_hi && f.has_lo && f.has_hi)) {
      // Only the sign survives: a product of non-negative factors is non-negative.
      bool nonneg = prod.has_lo && prod.lo >= 0 && f.has_lo && f.lo >= 0;
      prod = Bounds{nonneg, false, 0, 0};
      continue;
    }
    std::optional<int64_t> corners[4] = {checked_mul(prod.lo, f.lo), checked_mul(prod.lo, f.hi),
                                         checked_mul(prod.hi, f.lo), checked_mul(prod.hi, f.hi)};
    if (std::any_of(std::begin(corners), std::end(corners), [](const auto& c) { return !c; })) {
      bool nonneg = prod.lo >= 0 && f.lo >= 0;  // past int64: only the sign survives
      prod = Bounds{nonneg, false, 0, 0};
      continue;
    }
    prod.lo = std::min({*corners[0], *corners[1], *corners[2], *corners[3]});
    prod.hi = std::max({*corners[0], *corners[1], *corners[2], *corners[3]});
  }
  return prod;
}

Bounds bounds_of(const Expr& e, const VarRanges& ranges) {
  ir::RecursionGuard recursion("an index expression");
  switch (e.kind()) {
    case ExprKind::Const: return Bounds::exactly(e.const_value());
    case ExprKind::Var: {
      auto it = ranges.find(e.var_name());
      if (it == ranges.end()) return {};
      Bounds b{true, false, 0, 0};  // loop indices are >= 0 even over symbolic ranges
      if (it->second.is_const()) {
        b.has_hi = true;
        b.hi = it->second.const_value() - 1;
      }
      return b;
    }
    case ExprKind::Add: return bounds_of_sum(e, ranges);
    case ExprKind::Mul: return bounds_of_product(e, ranges);
    case ExprKind::FloorDiv: {
      Bounds a = bounds_of(e.operands()[0], ranges);
      const Expr& d = e.operands()[1];
      if (!d.is_const() || d.const_value() <= 0)
        return a.has_lo && a.lo >= 0 ? Bounds{true, false, 0, 0} : Bounds{};
      int64_t k = d.const_value();
      return {a.has_lo, a.has_hi, a.has_lo ? floor_div(a.lo, k) : 0, a.has_hi ? floor_div(a.hi, k) : 0};
    }
    case ExprKind::Mod: {
      const Expr& d = e.operands()[1];
      Bounds a = bounds_of(e.operands()[0], ranges);
      if (!d.is_const()) return Bounds{true, false, 0, 0};
      int64_t k = d.const_value();
      if (a.has_lo && a.has_hi && a.lo >= 0 && a.hi < k) return a;
      return {true, true, 0, k - 1};
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      Bounds a = bounds_of(e.operands()[0], ranges), b = bounds_of(e.operands()[1], ranges);
      Bounds out;
      if (e.kind() == ExprKind::Min) {  // lo needs both sides, hi either
        out.has_lo = a.has_lo && b.has_lo;
        out.lo = std::min(a.lo, b.lo);
        out.has_hi = a.has_hi || b.has_hi;
        out.hi = a.has_hi && b.has_hi ? std::min(a.hi, b.hi) : (a.has_hi ? a.hi : b.hi);
      } else {  // the mirror image
        out.has_hi = a.has_hi && b.has_hi;
        out.hi = std::max(a.hi, b.hi);
        out.has_lo = a.has_lo || b.has_lo;
        out.lo = a.has_lo && b.has_lo ? std::max(a.lo, b.lo) : (a.has_lo ? a.lo : b.lo);
      }
      return out;
    }
  }
  return {};
}

bool provably_in(const Expr& e, int64_t lo, int64_t hi_exclusive, const VarRanges& ranges) {
  Bounds b = bounds_of(e, ranges);
  return b.has_lo && b.has_hi && b.lo >= lo && b.hi < hi_exclusive;
}

int64_t gcd64(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

std::vector<Expr> terms_of(const Expr& e) {
  if (e.kind() == ExprKind::Add) return e.operands();
  return {e};
}

// a == k*quotient + rest, where quotient gathers the terms whose coefficient k divides.
struct DivSplit {
  Expr quotient, rest;
  int64_t rest_gcd = 0;  // gcd of the rest's coefficients (constants included)
};
DivSplit split_by_divisor(const Expr& a, int64_t k);

// Divides every coefficient of a sum by g (g divides all of them).
Expr divide_coefficients(const Expr& a, int64_t g);

// A term's rest as (div/mod atom, the product of its other factors): s*(x // 4) -> (x // 4, s).
// nullopt when the rest has no FloorDiv/Mod factor or more than one.
std::optional<std::pair<Expr, Expr>> split_atom(const Expr& rest) {
  if (rest.kind() == ExprKind::FloorDiv || rest.kind() == ExprKind::Mod) return std::make_pair(rest, Expr(1));
  if (rest.kind() != ExprKind::Mul) return std::nullopt;
  std::optional<Expr> atom;
  Expr others = 1;
  for (const Expr& f : rest.operands()) {
    if (f.kind() == ExprKind::FloorDiv || f.kind() == ExprKind::Mod) {
      if (atom) return std::nullopt;
      atom = f;
    } else {
      others = others * f;
    }
  }
  if (!atom) return std::nullopt;
  return std::make_pair(*atom, others);
}

// K*m*(x // (a*m)) + K*((x // a) % m) -> K*(x // a), and with a == 1: K*m*(x // m) + K*(x % m)
// -> K*x, for any multiplier K and modulus m, constant or symbolic: the recombinations that
// reshapes of contiguous data produce (a head split of [b*h, s, d] over symbolic s), applied
// to a fixpoint by the caller (each step removes a term).
std::optional<Expr> recombine_div_mod(const std::vector<std::pair<Expr, int64_t>>& collected) {
  for (size_t m = 0; m < collected.size(); ++m) {
    auto mod_split = split_atom(collected[m].first);
    if (!mod_split || mod_split->first.kind() != ExprKind::Mod) continue;
    const Expr multiplier = Expr(collected[m].second) * mod_split->second;  // K
    const Expr& y = mod_split->first.operands()[0];
    const Expr& modulus = mod_split->first.operands()[1];
    const bool y_is_div = y.kind() == ExprKind::FloorDiv;
    const Expr x = y_is_div ? y.operands()[0] : y;
    const Expr divisor = (y_is_div ? y.operands()[1] : Expr(1)) * modulus;
    const Expr div_multiplier = multiplier * modulus;
    for (size_t d = 0; d < collected.size(); ++d) {
      if (d == m) continue;
      auto div_split = split_atom(collected[d].first);
      if (!div_split || div_split->first.kind() != ExprKind::FloorDiv) continue;
      const Expr& div = div_split->first;
      if (!(div.operands()[0] == x) || !(div.operands()[1] == divisor)) continue;
      if (!(Expr(collected[d].second) * div_split->second == div_multiplier)) continue;
      Expr sum = multiplier * y;
      for (size_t t = 0; t < collected.size(); ++t)
        if (t != m && t != d) sum = sum + scaled(collected[t].second, collected[t].first);
      return sum;
    }
  }
  return std::nullopt;
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
  ir::RecursionGuard recursion("an index expression");
  if (node_ == other.node_) return true;
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case ExprKind::Const: return node_->value == other.node_->value;
    case ExprKind::Var: return node_->name == other.node_->name;
    default: return node_->args == other.node_->args;
  }
}

bool Expr::operator<(const Expr& other) const {
  ir::RecursionGuard recursion("an index expression");
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
  std::erase_if(collected, [](auto& entry) { return entry.second == 0; });
  if (auto recombined = recombine_div_mod(collected)) return *recombined + Expr(constant);
  std::vector<Expr> result;
  for (auto& [rest, coefficient] : collected) result.push_back(scaled(coefficient, rest));
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

namespace {

DivSplit split_by_divisor(const Expr& a, int64_t k) {
  DivSplit out;
  for (const Expr& term : terms_of(a)) {
    auto [coefficient, rest] = split_coefficient(term);
    if (coefficient % k == 0) {
      out.quotient = out.quotient + (rest ? Expr(coefficient / k) * *rest : Expr(coefficient / k));
    } else {
      out.rest = out.rest + term;
      out.rest_gcd = gcd64(out.rest_gcd, coefficient);
    }
  }
  return out;
}

Expr divide_coefficients(const Expr& a, int64_t g) {
  Expr out = 0;
  for (const Expr& term : terms_of(a)) {
    auto [coefficient, rest] = split_coefficient(term);
    out = out + (rest ? Expr(coefficient / g) * *rest : Expr(coefficient / g));
  }
  return out;
}

Expr floordiv_ranged(const Expr& a, const Expr& b, const VarRanges& ranges) {
  ir::RecursionGuard recursion("an index expression");
  if (b.is_const(1)) return a;
  if (a.is_const() && b.is_const()) return Expr(floor_div(a.const_value(), b.const_value()));
  if (a.is_const(0)) return Expr(0);
  if (a == b) return Expr(1);
  // (x // d) // b == x // (d*b) for positive divisors: nested divisions of reshapes meet the
  // single ones that other accesses of the same data have.
  if (a.kind() == ExprKind::FloorDiv && (!b.is_const() || b.const_value() > 0))
    return floordiv_ranged(a.operands()[0], a.operands()[1] * b, ranges);
  if (b.is_const() && b.const_value() > 0) {
    int64_t k = b.const_value();
    // (k*q + rest) // k == q + rest // k for integer q, always.
    DivSplit split = split_by_divisor(a, k);
    if (split.rest.is_const()) return split.quotient + Expr(floor_div(split.rest.const_value(), k));
    if (provably_in(split.rest, 0, k, ranges)) return split.quotient;
    // (g*y) // (g*m) == y // m
    if (int64_t g = gcd64(split.rest_gcd, k); g > 1)
      return split.quotient + floordiv_ranged(divide_coefficients(split.rest, g), Expr(k / g), ranges);
    Expr rest_div = split.quotient.is_const(0) ? make_expr(ExprKind::FloorDiv, {a, b})
                                               : make_expr(ExprKind::FloorDiv, {split.rest, b});
    return split.quotient + rest_div;
  }
  // Symbolic divisor: (k*b*q) // (j*b) -> (k/j)*q when j divides k (the -1 of a view over
  // symbolic sizes: (128*s0*s1) // (32*s0*s1) -> 4).
  if (a.kind() == ExprKind::Mul || a.kind() == ExprKind::Var) {
    std::vector<Expr> rest = a.kind() == ExprKind::Mul ? a.operands() : std::vector<Expr>{a};
    std::vector<Expr> divisor = b.kind() == ExprKind::Mul ? b.operands() : std::vector<Expr>{b};
    int64_t numerator = 1, denominator = 1;
    if (!rest.empty() && rest.front().is_const()) numerator = rest.front().const_value(), rest.erase(rest.begin());
    if (!divisor.empty() && divisor.front().is_const()) denominator = divisor.front().const_value(), divisor.erase(divisor.begin());
    bool cancels = denominator > 0 && numerator % denominator == 0;
    for (const Expr& f : divisor) {
      auto it = cancels ? std::find(rest.begin(), rest.end(), f) : rest.end();
      if (it == rest.end()) {
        cancels = false;
        break;
      }
      rest.erase(it);
    }
    if (cancels) {
      Expr quotient = numerator / denominator;
      for (const Expr& f : rest) quotient = quotient * f;
      return quotient;
    }
  }
  return make_expr(ExprKind::FloorDiv, {a, b});
}

Expr mod_ranged(const Expr& a, const Expr& b, const VarRanges& ranges) {
  ir::RecursionGuard recursion("an index expression");
  if (b.is_const(1)) return Expr(0);
  if (a.is_const() && b.is_const()) return Expr(python_mod(a.const_value(), b.const_value()));
  if (a == b || a.is_const(0)) return Expr(0);
  if (b.is_const() && b.const_value() > 0) {
    int64_t k = b.const_value();
    if (a.kind() == ExprKind::Mod && a.operands()[1].is_const() && a.operands()[1].const_value() % k == 0)
      return mod_ranged(a.operands()[0], b, ranges);  // (x % (m*k)) % k == x % k
    DivSplit split = split_by_divisor(a, k);
    const Expr& rest = split.rest;
    if (rest.is_const()) return Expr(python_mod(rest.const_value(), k));
    if (provably_in(rest, 0, k, ranges)) return rest;
    // (g*y) % (g*m) == g*(y % m)
    if (int64_t g = gcd64(split.rest_gcd, k); g > 1)
      return Expr(g) * mod_ranged(divide_coefficients(rest, g), Expr(k / g), ranges);
    return make_expr(ExprKind::Mod, {rest, b});
  }
  if (a.kind() == ExprKind::Mul && std::find(a.operands().begin(), a.operands().end(), b) != a.operands().end())
    return Expr(0);
  return make_expr(ExprKind::Mod, {a, b});
}

Expr min_ranged(const Expr& a, const Expr& b, const VarRanges& ranges) {
  if (a.is_const() && b.is_const()) return Expr(std::min(a.const_value(), b.const_value()));
  if (a == b) return a;
  Bounds ba = bounds_of(a, ranges), bb = bounds_of(b, ranges);
  if (ba.has_hi && bb.has_lo && ba.hi <= bb.lo) return a;
  if (bb.has_hi && ba.has_lo && bb.hi <= ba.lo) return b;
  return make_expr(ExprKind::Min, {a, b});
}

Expr max_ranged(const Expr& a, const Expr& b, const VarRanges& ranges) {
  if (a.is_const() && b.is_const()) return Expr(std::max(a.const_value(), b.const_value()));
  if (a == b) return a;
  Bounds ba = bounds_of(a, ranges), bb = bounds_of(b, ranges);
  if (ba.has_lo && bb.has_hi && ba.lo >= bb.hi) return a;
  if (bb.has_lo && ba.has_hi && bb.lo >= ba.hi) return b;
  return make_expr(ExprKind::Max, {a, b});
}

}  // namespace

Expr floordiv(const Expr& a, const Expr& b) { return floordiv_ranged(a, b, {}); }
Expr mod(const Expr& a, const Expr& b) { return mod_ranged(a, b, {}); }
Expr min(const Expr& a, const Expr& b) { return min_ranged(a, b, {}); }
Expr max(const Expr& a, const Expr& b) { return max_ranged(a, b, {}); }

Expr simplify(const Expr& e, const VarRanges& ranges) {
  ir::RecursionGuard recursion("an index expression");
  switch (e.kind()) {
    case ExprKind::Const: return e;
    case ExprKind::Var: {
      auto it = ranges.find(e.var_name());  // an index over a range of one is always 0
      if (it != ranges.end() && it->second.is_const(1)) return Expr(0);
      return e;
    }
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
    case ExprKind::FloorDiv:
      return floordiv_ranged(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges), ranges);
    case ExprKind::Mod: return mod_ranged(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges), ranges);
    case ExprKind::Min: return min_ranged(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges), ranges);
    case ExprKind::Max: return max_ranged(simplify(e.operands()[0], ranges), simplify(e.operands()[1], ranges), ranges);
  }
  return e;
}

bool provably_nonnegative(const Expr& e, const VarRanges& ranges) {
  Bounds b = bounds_of(e, ranges);
  return b.has_lo && b.lo >= 0;
}

std::optional<std::pair<int64_t, int64_t>> constant_bounds(const Expr& e, const VarRanges& ranges) {
  Bounds b = bounds_of(e, ranges);
  if (!b.has_lo || !b.has_hi) return std::nullopt;
  return std::make_pair(b.lo, b.hi);
}

namespace {

// One printer for both syntaxes: C++ (int64 literals, helper calls for floor division and modulo
// with Python semantics) and Python (for Triton code and tests).
std::string print(const Expr& e, bool python) {
  ir::RecursionGuard recursion("an index expression");
  const auto& args = e.operands();
  auto call = [&](const char* name) {
    std::string out = name;
    out.append("(").append(print(args[0], python)).append(", ").append(print(args[1], python)).append(")");
    return out;
  };
  auto infix = [&](const char* op) {
    std::string out = "(";
    out.append(print(args[0], python)).append(op).append(print(args[1], python)).append(")");
    return out;
  };
  switch (e.kind()) {
    case ExprKind::Const: {
      int64_t value = e.const_value();
      bool wide = !python && (value > 2147483647 || value < -2147483647);
      return std::to_string(value) + (wide ? "LL" : "");
    }
    case ExprKind::Var: return e.var_name();
    case ExprKind::Add:
    case ExprKind::Mul: {
      std::string out = "(";
      for (size_t i = 0; i < args.size(); ++i) {
        if (i) out += e.kind() == ExprKind::Add ? " + " : "*";
        out += print(args[i], python);
      }
      return out + ")";
    }
    case ExprKind::FloorDiv: return python ? infix(" // ") : call("cd_floordiv");
    case ExprKind::Mod: return python ? infix(" % ") : call("cd_mod");
    case ExprKind::Min: return call(python ? "min" : "cd_min");
    case ExprKind::Max: return call(python ? "max" : "cd_max");
  }
  return "?";
}

}  // namespace

std::string Expr::str() const { return print(*this, false); }
std::string Expr::py_str() const { return print(*this, true); }

std::vector<std::string> Expr::free_vars() const {
  ir::RecursionGuard recursion("an index expression");
  std::vector<std::string> out;
  if (kind() == ExprKind::Var) return {node_->name};
  for (const Expr& arg : node_->args)
    for (auto& name : arg.free_vars())
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

Expr Expr::substitute(const std::map<std::string, Expr>& replacements) const {
  ir::RecursionGuard recursion("an index expression");
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
  ir::RecursionGuard recursion("an index expression");
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
    case ExprKind::FloorDiv: return floor_div(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
    case ExprKind::Mod: return python_mod(node_->args[0].evaluate(values), node_->args[1].evaluate(values));
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
