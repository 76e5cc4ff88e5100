// Index expressions over a kernel's loop variables rewritten over its flat tile variables
// (xindex, rindex), one division and one modulo per run of dimensions an access walks as one.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "backend/ir/expr.h"

namespace cdynamo::codegen::triton {

// One flat tile variable and the loop dimensions it enumerates, outermost first (the last
// varies fastest): (loop variable, its size).
struct FlatAxis {
  std::string flat;
  std::vector<std::pair<std::string, ir::Expr>> dims;
};

// index with every loop variable of axes replaced. An index affine in them becomes, per run of
// adjacent dimensions with coef(outer) == coef(inner) * size(inner), coef * ((flat // stride) %
// span), without the division at the innermost end and without the modulo at the outermost: a
// contiguous access is the flat variable itself, sizes symbolic or not, where substituting each
// variable (var_k = (flat // stride_k) % size_k) would leave divisions by symbols that no rule
// recombines. Other indices (views that divide a loop variable) get fallback substituted.
ir::Expr flatten_index(const ir::Expr& index, const std::vector<FlatAxis>& axes,
                       const std::map<std::string, ir::Expr>& fallback);

}  // namespace cdynamo::codegen::triton
