// Sizes of a program compiled for symbolic sizes, evaluated on each call: an ir::Expr over the
// program's size symbols as postfix code over their values (indexed as ir::Program::symbols).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::runtime {

class SizeExpr {
 public:
  SizeExpr() = default;
  explicit SizeExpr(int64_t value) : constant_(value) {}
  // Throws UserError naming `what` when e uses a variable that is not one of the symbols.
  SizeExpr(const ir::Expr& e, const std::vector<ir::Symbol>& symbols, const std::string& what);

  bool is_const() const { return code_.empty(); }
  int64_t const_value() const { return constant_; }
  // The value for these symbol values (ignored when constant).
  int64_t operator()(const int64_t* symbol_values) const { return code_.empty() ? constant_ : run(symbol_values); }
  // True if the value reads the symbol of this index.
  bool reads_symbol(size_t index) const {
    for (const auto& [op, operand] : code_)
      if (op == Op::Load && operand == static_cast<int64_t>(index)) return true;
    return false;
  }

 private:
  enum class Op : uint8_t { Push, Load, Add, Mul, FloorDiv, Mod, Min, Max };
  int64_t run(const int64_t* symbol_values) const;
  void emit(const ir::Expr& e, const std::vector<ir::Symbol>& symbols, const std::string& what, int depth);

  std::vector<std::pair<Op, int64_t>> code_;  // (op, constant or symbol index or operand count)
  int64_t constant_ = 0;
  static constexpr int kMaxDepth = 64;
};

// Every expression of a list, with a shortcut for all-constant lists.
std::vector<SizeExpr> size_exprs(const std::vector<ir::Expr>& list, const std::vector<ir::Symbol>& symbols,
                                 const std::string& what);

}  // namespace cdynamo::runtime
