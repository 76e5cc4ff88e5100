// A tiny parser of integer expressions: index text of hand-built test programs ("i0*4 + i1",
// "(i0 // 3) % 2") and symbolic sizes (cdynamo.inductor.symbolic renders SymInts in this syntax).
// Assumes integers, names, + - * // %, parentheses, min(a, b) and max(a, b); nothing else.
#pragma once
#include <string>
#include "backend/ir/expr.h"

namespace cdynamo::ir {

// Parses and simplifies (through Expr's operators). Throws UserError on a syntax error.
Expr parse_expr(const std::string& text);

}  // namespace cdynamo::ir
