// Walks and rewrites of the loop IR shared by the code generators: leaves of scalar graphs,
// index substitution in scalar graphs, affine decomposition of index expressions.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::ir {

bool contains_var(const Expr& e, const std::string& var);
// Load, MaskedLoad and Index nodes: the leaves that carry an index expression.
bool is_leaf_with_index(const ScalarNode& n);

// Rebuilds a scalar graph with index expressions substituted (leaves' indices only), keeping
// shared nodes shared and unchanged subgraphs the same objects (emitters memoize by node).
// memo maps original nodes to their rewrites; share it across the bodies of one kernel.
Scalar rewrite_indices(const Scalar& s, const std::map<std::string, Expr>& subst,
                       std::unordered_map<const ScalarNode*, Scalar>& memo);
// The same with each leaf's index replaced by rewrite(index).
Scalar rewrite_indices(const Scalar& s, const std::function<Expr(const Expr&)>& rewrite,
                       std::unordered_map<const ScalarNode*, Scalar>& memo);

// Calls f on every Load/MaskedLoad/Index node reachable from s (through indirect positions
// too), once per node.
void visit_leaves(const Scalar& s, const std::function<void(const ScalarNode&)>& f);

// Affine decomposition e = coef * var + rest, with rest free of var.
struct Affine {
  bool ok = false;
  Expr coef;
  Expr rest;
};
Affine affine_in(const Expr& e, const std::string& var);

// Whether every index walks loop dims (outer, inner) as one run: each is affine in both, with
// coef(outer) == coef(inner) * inner_size (symbolic coefficients compare as expressions). Then
// outer can be set to 0 and inner range over both: what both code generators' loop merging asks.
bool walks_as_one(const std::vector<Expr>& indices, const std::string& outer, const std::string& inner, const Expr& inner_size);

}  // namespace cdynamo::ir
