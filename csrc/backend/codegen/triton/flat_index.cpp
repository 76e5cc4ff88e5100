// Index expressions over a kernel's loop variables rewritten over its flat tile variables, by
// runs of dimensions walked as one. Assumes live lanes have flat < the product of the axis' sizes.
#include "backend/codegen/triton/flat_index.h"
#include <optional>
#include <set>
#include "backend/ir/ir_walk.h"

namespace cdynamo::codegen::triton {
namespace {

using ir::Expr;

// The coefficient of each dimension of axis in index (consumed from rest), or nullopt when the
// index is not affine in them with coefficients free of loop variables.
std::optional<std::vector<Expr>> coefficients(const FlatAxis& axis, Expr& rest, const std::set<std::string>& loop_vars) {
  std::vector<Expr> coef;
  for (const auto& [var, size] : axis.dims) {
    ir::Affine a = ir::affine_in(rest, var);
    if (!a.ok) return std::nullopt;
    for (const std::string& v : a.coef.free_vars())
      if (loop_vars.count(v)) return std::nullopt;
    coef.push_back(a.coef);
    rest = a.rest;
  }
  return coef;
}

// sum_k coef[k] * var_k over one axis, as runs over its flat variable.
Expr runs_over(const FlatAxis& axis, const std::vector<Expr>& coef) {
  const auto& dims = axis.dims;
  const Expr flat = Expr::var(axis.flat);
  auto sized = [&](size_t k) { return !dims[k].second.is_const(1); };
  std::optional<size_t> outermost;  // the outermost dimension of more than one point
  for (size_t k = 0; k < dims.size() && !outermost; ++k)
    if (sized(k)) outermost = k;
  Expr out = 0, stride = 1;
  size_t k = dims.size();
  while (k-- > 0) {
    if (!sized(k) || coef[k].is_const(0)) {
      stride = stride * dims[k].second;
      continue;
    }
    const Expr inner_coef = coef[k], run_stride = stride;
    Expr span = dims[k].second;
    size_t first = k;  // the run's outermost dimension so far
    for (size_t j = k; j-- > 0;) {
      if (!sized(j)) continue;  // a point: no stride of its own, the run goes on across it
      if (!(coef[j] == coef[first] * dims[first].second)) break;
      for (size_t p = j; p < first; ++p) span = span * dims[p].second;
      first = j;
    }
    Expr position = ir::floordiv(flat, run_stride);
    if (first != *outermost) position = ir::mod(position, span);
    out = out + inner_coef * position;
    stride = run_stride * span;
    k = first;
  }
  return out;
}

}  // namespace

Expr flatten_index(const Expr& index, const std::vector<FlatAxis>& axes, const std::map<std::string, Expr>& fallback) {
  std::set<std::string> loop_vars;
  for (const FlatAxis& axis : axes)
    for (const auto& [var, size] : axis.dims) {
      loop_vars.insert(var);
      if (size.is_const(0)) return index.substitute(fallback);  // no live lane: any index will do
    }
  Expr rest = index, out = 0;
  for (const FlatAxis& axis : axes) {
    std::optional<std::vector<Expr>> coef = coefficients(axis, rest, loop_vars);
    if (!coef) return index.substitute(fallback);
    out = out + runs_over(axis, *coef);
  }
  for (const std::string& v : rest.free_vars())
    if (loop_vars.count(v)) return index.substitute(fallback);
  return out + rest;
}

}  // namespace cdynamo::codegen::triton
