// Helpers shared by the scheduling passes: node reads/writes, alias roots and kernel-variable
// renaming for point-locality checks. Assumes the kernel conventions documented in ir.h.
#include <algorithm>
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {

using ir::Expr;

const ir::Scalar* body_of(const ir::Node& node) {
  if (auto* p = std::get_if<ir::Pointwise>(&node)) return &p->body;
  if (auto* r = std::get_if<ir::Reduction>(&node)) return &r->body;
  return nullptr;
}

std::vector<const ir::ScalarNode*> loads_of(const ir::Scalar& body) {
  std::vector<const ir::ScalarNode*> out;
  std::set<const ir::ScalarNode*> seen;
  std::vector<const ir::ScalarNode*> stack{body.get()};
  while (!stack.empty()) {
    const ir::ScalarNode* s = stack.back();
    stack.pop_back();
    if (!seen.insert(s).second) continue;
    if (s->op == ir::ScalarOp::Load || s->op == ir::ScalarOp::MaskedLoad) out.push_back(s);
    for (const ir::Scalar& a : s->args) stack.push_back(a.get());
    for (const ir::Scalar& a : s->indirect) stack.push_back(a.get());
  }
  return out;
}

std::vector<std::string> node_reads(const ir::Node& node) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (const ir::Scalar* body = body_of(node)) {
    // Loads in a stable order: by position in a depth-first walk from the root.
    std::vector<const ir::ScalarNode*> loads = loads_of(*body);
    std::reverse(loads.begin(), loads.end());
    for (const ir::ScalarNode* load : loads) add(load->buffer);
    std::sort(out.begin(), out.end());
    return out;
  }
  for (const ir::ExternArg& arg : std::get<ir::Extern>(node).args) {
    if (auto* b = std::get_if<std::string>(&arg.tensor)) add(*b);
    if (auto* bs = std::get_if<std::vector<std::string>>(&arg.tensor))
      for (const std::string& b : *bs) add(b);
  }
  return out;
}

std::vector<std::string> node_writes(const ir::Node& node) {
  if (auto* p = std::get_if<ir::Pointwise>(&node)) return {p->output};
  if (auto* r = std::get_if<ir::Reduction>(&node)) return {r->output};
  std::vector<std::string> out;
  for (const std::string& o : std::get<ir::Extern>(node).outputs)
    if (!o.empty()) out.push_back(o);
  return out;
}

std::map<std::string, std::string> alias_roots(const std::vector<ir::Buffer>& buffers) {
  std::map<std::string, std::string> roots;
  for (const ir::Buffer& b : buffers) roots[b.name] = b.reuses.empty() ? b.name : b.reuses;
  return roots;
}

bool kernel_renaming(const ir::Node& node, const Space& space, std::map<std::string, Expr>* renaming) {
  size_t n = space.ranges.size();
  if (auto* r = std::get_if<ir::Reduction>(&node)) return r->ranges == space.ranges && r->reduction_ranges == space.reduction_ranges;
  auto* p = std::get_if<ir::Pointwise>(&node);
  if (!p) return false;
  if (p->ranges == space.ranges) return true;
  if (space.reduction_ranges.empty() || p->ranges.size() != n + space.reduction_ranges.size()) return false;
  for (size_t k = 0; k < n; ++k)
    if (p->ranges[k] != space.ranges[k]) return false;
  for (size_t j = 0; j < space.reduction_ranges.size(); ++j)
    if (p->ranges[n + j] != space.reduction_ranges[j]) return false;
  if (renaming)
    for (size_t j = 0; j < space.reduction_ranges.size(); ++j)
      (*renaming)["i" + std::to_string(n + j)] = Expr::var("r" + std::to_string(j));
  return true;
}

ir::VarRanges kernel_ranges(const Space& space) {
  ir::VarRanges ranges;
  for (size_t k = 0; k < space.ranges.size(); ++k) ranges["i" + std::to_string(k)] = space.ranges[k];
  for (size_t k = 0; k < space.reduction_ranges.size(); ++k) ranges["r" + std::to_string(k)] = space.reduction_ranges[k];
  return ranges;
}

namespace {
Expr in_kernel(const Expr& e, const std::map<std::string, Expr>& renaming, const Space& space) {
  Expr renamed = renaming.empty() ? e : e.substitute(renaming);
  return ir::simplify(renamed, kernel_ranges(space));
}
}  // namespace

Expr store_index(const ir::Node& node, const ir::Buffer& output, const Space& space) {
  std::map<std::string, Expr> renaming;
  kernel_renaming(node, space, &renaming);
  std::vector<Expr> vars;
  size_t rank = output.sizes.size();
  for (size_t k = 0; k < rank; ++k) vars.push_back(Expr::var("i" + std::to_string(k)));
  return in_kernel(ir::linear_index(vars, output.strides, output.offset), renaming, space);
}

bool reads_only_at(const ir::Node& node, const std::string& buffer, const Expr& at, const Space& space) {
  const ir::Scalar* body = body_of(node);
  if (!body) return false;
  std::map<std::string, Expr> renaming;
  kernel_renaming(node, space, &renaming);
  for (const ir::ScalarNode* load : loads_of(*body)) {
    if (load->buffer != buffer) continue;
    if (!load->indirect.empty()) return false;
    if (in_kernel(load->index, renaming, space) != at) return false;
  }
  return true;
}

}  // namespace cdynamo::sched
