// Symbolic integer expressions for sizes, strides and indices: immutable nodes shared by
// pointer, built through operators that simplify as they go. Symbolic sizes (dynamic shapes)
// are Var nodes; loop indices are Var nodes named i0, i1, ... (pointwise) and r0, ... (reduction).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cdynamo::ir {

#define CDYNAMO_EXPR_KINDS(X) \
  X(Const)    /* an int64 literal */                         \
  X(Var)      /* a named variable: loop index or size symbol */ \
  X(Add)      /* sum of the operands (n-ary) */               \
  X(Mul)      /* product of the operands (n-ary) */           \
  X(FloorDiv) /* a // b, floor division (b > 0) */            \
  X(Mod)      /* a % b, Python modulo (b > 0) */              \
  X(Min)      /* min(a, b) */                                 \
  X(Max)      /* max(a, b) */

enum class ExprKind {
#define CDYNAMO_EXPR_ENUM(name) name,
  CDYNAMO_EXPR_KINDS(CDYNAMO_EXPR_ENUM)
#undef CDYNAMO_EXPR_ENUM
};

struct ExprNode;

// A value type: cheap to copy, compared structurally (after simplification, equal expressions
// have equal structure for the forms the simplifier normalises: sums and products of terms
// sorted canonically, constants folded).
class Expr {
 public:
  Expr();                 // the constant 0
  Expr(int64_t value);    // NOLINT: a constant, implicitly
  static Expr var(const std::string& name);

  ExprKind kind() const;
  bool is_const() const;
  bool is_const(int64_t value) const;
  int64_t const_value() const;          // requires is_const()
  const std::string& var_name() const;  // requires kind() == Var
  const std::vector<Expr>& operands() const;

  // C/C++ syntax with int64_t arithmetic; floor division and modulo printed as calls of the
  // helpers cd_floordiv / cd_mod unless provably non-negative operands make / and % exact.
  std::string str() const;
  // Python syntax (for Triton code and for tests): //, %, min(), max().
  std::string py_str() const;

  bool operator==(const Expr& other) const;
  bool operator!=(const Expr& other) const { return !(*this == other); }
  bool operator<(const Expr& other) const;  // a total order, for canonical sorting

  // Variables appearing in the expression.
  std::vector<std::string> free_vars() const;
  // Replaces variables by expressions (simultaneously) and simplifies.
  Expr substitute(const std::map<std::string, Expr>& replacements) const;
  // Evaluates with every variable bound; throws if one is missing.
  int64_t evaluate(const std::map<std::string, int64_t>& values) const;

  const ExprNode* node() const { return node_.get(); }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const ExprNode> node_;
  friend Expr make_expr(ExprKind, std::vector<Expr>);
  friend struct ExprNode;
};

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;        // Const
  std::string name;         // Var
  std::vector<Expr> args;   // Add/Mul: >= 2 operands; FloorDiv/Mod/Min/Max: exactly 2
};

// Builds a node of `kind` from operands WITHOUT simplifying (for the simplifier and tests).
Expr make_expr(ExprKind kind, std::vector<Expr> operands);

// Arithmetic that simplifies: constant folding, flattening, like-term collection
// (2*x + 3*x -> 5*x), x*1, x+0, x*0, (a*k)//k -> a, (a*k + b)//k -> a + b//k when 0 <= b < k is
// provable from variable ranges, (x % k) % k, and min/max of constants.
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);

// Range knowledge the simplifier may use: var -> [0, upper) for loop indices.
// With ranges, simplify() also proves (k*q + r) // k -> q and (k*q + r) % k -> r when
// 0 <= r < k, x // k -> 0 and x % k -> x for x in [0, k), drops variables over a range of 1,
// resolves min/max by bounds, and recombines k*(y // k) + y % k -> y (always).
using VarRanges = std::map<std::string, Expr>;
Expr simplify(const Expr& e, const VarRanges& ranges = {});
// Bound queries over the same range knowledge (other variables are unbounded).
bool provably_nonnegative(const Expr& e, const VarRanges& ranges);
std::optional<std::pair<int64_t, int64_t>> constant_bounds(const Expr& e, const VarRanges& ranges);  // [lo, hi]

// The product of sizes (numel), simplified.
Expr product(const std::vector<Expr>& sizes);
// Contiguous (row-major) strides for sizes.
std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes);
// sum(index[i] * strides[i]) + offset, simplified.
Expr linear_index(const std::vector<Expr>& index, const std::vector<Expr>& strides, const Expr& offset = 0);

}  // namespace cdynamo::ir
