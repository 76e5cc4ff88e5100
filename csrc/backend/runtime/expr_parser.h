// A tiny parser of index expressions for hand-built test programs: "i0*4 + i1", "(i0 // 3) % 2".
// Assumes integers, names, + - * // %, parentheses, min(a, b) and max(a, b); nothing else.
#pragma once
#include <string>
#include "backend/ir/expr.h"

namespace cdynamo::runtime {

// Parses and simplifies (through ir::Expr's operators). Throws UserError on a syntax error.
ir::Expr parse_expr(const std::string& text);

}  // namespace cdynamo::runtime
