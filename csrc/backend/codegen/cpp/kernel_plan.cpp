// Builds the C++ generator's plan of one kernel: loop dimensions, stores, ABI order, vector mode.
// Assumes the kernel's nodes iterate exactly the kernel's ranges (the scheduler's contract).
#include "backend/ir/recursion_guard.h"
#include "backend/codegen/cpp/kernel_plan.h"
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include "common/error.h"

namespace cdynamo::codegen::cpp {
namespace {

using ir::contains_var;
using ir::Expr;
using ir::is_leaf_with_index;
using ir::ExprKind;
using ir::Scalar;
using ir::ScalarNode;
using ir::ScalarOp;

// Kernels shorter than this along the vectorized loop gain nothing from SIMD.
constexpr int64_t kMinVectorExtent = 8;

void substitute_all(KernelPlan& plan, const std::map<std::string, Expr>& subst) {
  std::unordered_map<const ScalarNode*, Scalar> memo;  // shared across nodes: fused bodies share subgraphs
  for (NodePlan& node : plan.nodes) {
    node.store_index = node.store_index.substitute(subst);
    node.body = ir::rewrite_indices(node.body, subst, memo);
  }
}

// Every index expression of the kernel: stores, loads and index values.
std::vector<Expr> all_indices(const KernelPlan& plan) {
  std::vector<Expr> out;
  for (const NodePlan& node : plan.nodes) {
    out.push_back(node.store_index);
    visit_leaves(node.body, [&](const ScalarNode& n) { out.push_back(n.index); });
  }
  return out;
}

// Merges dims[k] into dims[k+1] when every access walks them as one contiguous run:
// coef(outer) == coef(inner) * size(inner). The merged loop keeps the inner variable.
bool try_merge(KernelPlan& plan, std::vector<LoopDim>& dims, size_t k) {
  const LoopDim& outer = dims[k];
  const LoopDim& inner = dims[k + 1];
  if (!ir::walks_as_one(all_indices(plan), outer.var, inner.var, inner.size)) return false;
  std::map<std::string, Expr> subst{{outer.var, Expr(0)}};
  dims[k + 1].size = outer.size * inner.size;
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k));
  substitute_all(plan, subst);
  return true;
}

void simplify_dims(KernelPlan& plan, std::vector<LoopDim>& dims) {
  // Size-1 loops contribute nothing but index 0.
  std::map<std::string, Expr> ones;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k].size.is_const(1)) {
      ones[dims[k].var] = Expr(0);
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  if (!ones.empty()) substitute_all(plan, ones);
  // Merge adjacent pairs, innermost first, until no pair merges.
  for (bool merged = true; merged && dims.size() >= 2;) {
    merged = false;
    for (size_t k = dims.size() - 1; k-- > 0;) {
      if (try_merge(plan, dims, k)) {
        merged = true;
        break;
      }
    }
  }
}

// Any order of a kernel's outer points is correct (ir::Kernel's contract), so the outer loops
// are nested by the strides of the kernel's first stored output, largest outermost: a
// channels-last buffer is walked N, H, W, C with C innermost and contiguous.
void order_outer_loops(KernelPlan& plan, const std::set<std::string>& locals) {
  const NodePlan* primary = nullptr;
  for (const NodePlan& node : plan.nodes)
    if (!node.full && !locals.count(node.output)) {
      primary = &node;
      break;
    }
  if (!primary || plan.idims.size() < 2) return;
  std::vector<std::pair<int64_t, size_t>> order;  // (stride, position)
  for (size_t k = 0; k < plan.idims.size(); ++k) {
    Affine a = affine_in(primary->store_index, plan.idims[k].var);
    if (!a.ok || !a.coef.is_const()) return;
    order.emplace_back(a.coef.const_value(), k);
  }
  // Size-1 dims have no stride to speak of: keep them where they are (simplify drops them).
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<LoopDim> nested;
  for (const auto& [stride, k] : order) nested.push_back(plan.idims[k]);
  plan.idims = std::move(nested);
}

std::string storage_root(const ir::Program& program, const std::string& name) {
  std::string current = name;
  for (int guard = 0; guard < 1000; ++guard) {
    const ir::Buffer& b = program.buffer(current);
    if (b.reuses.empty()) return current;
    current = b.reuses;
  }
  throw InternalError("buffer reuse cycle at " + name);
}

bool const_coef_in(const Expr& e, const std::string& var, std::initializer_list<int64_t> allowed) {
  Affine a = affine_in(e, var);
  if (!a.ok || !a.coef.is_const()) return false;
  return std::find(allowed.begin(), allowed.end(), a.coef.const_value()) != allowed.end();
}

bool long_enough(const KernelPlan& plan, const LoopDim& d) { return plan.hint(d.size) >= kMinVectorExtent; }

// For every direct load not served from a register (see NodePlan::store_elided), calls
// f(load, in_r_loop). Indirect loads vectorize whatever their index (as gathers), so they never
// decide the vector loop; their positions' loads do.
void for_memory_loads(const KernelPlan& plan, const std::function<void(const ScalarNode&, bool)>& f) {
  std::map<std::string, Expr> produced;
  for (const NodePlan& node : plan.nodes) {
    visit_leaves(node.body, [&](const ScalarNode& n) {
      if (n.op == ScalarOp::Index || !n.indirect.empty()) return;
      auto it = produced.find(n.buffer);
      if (n.op == ScalarOp::Load && it != produced.end() && it->second == n.index) return;
      f(n, node.is_reduction || node.full);
    });
    produced[node.output] = node.store_index;
  }
}

VecMode choose_vec_mode(const KernelPlan& plan) {
  bool inner_ok = !plan.idims.empty() && long_enough(plan, plan.idims.back());
  if (inner_ok) {
    const std::string& v = plan.idims.back().var;
    for (const NodePlan& node : plan.nodes)
      if (!node.store_elided && !const_coef_in(node.store_index, v, {1})) inner_ok = false;
    for_memory_loads(plan, [&](const ScalarNode& n, bool) {
      if (!const_coef_in(n.index, v, {0, 1})) inner_ok = false;
    });
  }
  bool has_reduction = !plan.rdims.empty();
  bool red_ok = has_reduction && long_enough(plan, plan.rdims.back());
  bool red_contiguous = false;
  if (red_ok) {
    const std::string& v = plan.rdims.back().var;
    for_memory_loads(plan, [&](const ScalarNode& n, bool in_reduction) {
      if (!in_reduction) return;
      if (!const_coef_in(n.index, v, {0, 1})) red_ok = false;
      else if (const_coef_in(n.index, v, {1})) red_contiguous = true;
    });
    // Full pointwise nodes store inside the r loop: contiguously, or not vectorized at all.
    for (const NodePlan& node : plan.nodes)
      if (node.full && !node.store_elided && !const_coef_in(node.store_index, v, {1})) red_ok = false;
  }
  if (red_ok && red_contiguous) return VecMode::Reduction;
  if (inner_ok) return VecMode::Inner;
  if (red_ok) return VecMode::Reduction;
  return VecMode::None;
}

}  // namespace


KernelPlan plan_kernel(const ir::Program& program, const ir::Kernel& kernel) {
  KernelPlan plan;
  plan.name = kernel.name;
  for (size_t k = 0; k < kernel.ranges.size(); ++k) plan.idims.push_back({"i" + std::to_string(k), kernel.ranges[k]});
  for (size_t k = 0; k < kernel.reduction_ranges.size(); ++k)
    plan.rdims.push_back({"r" + std::to_string(k), kernel.reduction_ranges[k]});
  std::vector<Expr> ivars;
  for (const LoopDim& d : plan.idims) ivars.push_back(Expr::var(d.var));

  // A full pointwise names r{j} as i{n+j}: renamed to the kernel's r variables here.
  const size_t n = kernel.ranges.size();
  std::vector<Expr> full_ranges = kernel.ranges, full_vars = ivars;
  std::map<std::string, Expr> full_rename;
  for (size_t j = 0; j < kernel.reduction_ranges.size(); ++j) {
    full_ranges.push_back(kernel.reduction_ranges[j]);
    full_vars.push_back(Expr::var(plan.rdims[j].var));
    full_rename["i" + std::to_string(n + j)] = Expr::var(plan.rdims[j].var);
  }
  std::unordered_map<const ScalarNode*, Scalar> rename_memo;
  int segments = 0;
  for (const ir::Node& node : kernel.nodes) {
    NodePlan np;
    if (const auto* p = std::get_if<ir::Pointwise>(&node)) {
      np.full = !kernel.reduction_ranges.empty() && p->ranges == full_ranges;
      if (p->ranges != kernel.ranges && !np.full)
        throw InternalError("kernel " + kernel.name + ": pointwise node for " + p->output + " iterates other ranges than its kernel");
      np.output = p->output;
      np.body = np.full ? ir::rewrite_indices(p->body, full_rename, rename_memo) : p->body;
      if (np.full) {
        bool continues = !plan.nodes.empty() && plan.nodes.back().full;
        np.segment = continues ? plan.nodes.back().segment : segments++;
      }
    } else if (const auto* r = std::get_if<ir::Reduction>(&node)) {
      if (r->ranges != kernel.ranges || r->reduction_ranges != kernel.reduction_ranges)
        throw InternalError("kernel " + kernel.name + ": reduction node for " + r->output + " iterates other ranges than its kernel");
      np.is_reduction = true;
      np.reduction = r->type;
      np.output = r->output;
      np.body = r->body;
    } else {
      throw InternalError("kernel " + kernel.name + " holds an extern call; externs are program steps");
    }
    const ir::Buffer& out = program.buffer(np.output);
    np.out_dtype = out.dtype;
    const std::vector<Expr>& vars = np.full ? full_vars : ivars;
    if (out.strides.size() != vars.size())
      throw InternalError("kernel " + kernel.name + ": output " + np.output + " has rank " + std::to_string(out.strides.size()) +
                          " but the node has " + std::to_string(vars.size()) + " loop dimensions");
    np.store_index = ir::linear_index(vars, out.strides, out.offset);
    plan.nodes.push_back(std::move(np));
  }

  // Every variable is a loop index, an indirect position or a size symbol of the program (read
  // from the ABI's symbol array).
  plan.symbols = program.symbols;
  std::set<std::string> loop_vars, used;
  for (const auto* dims : {&plan.idims, &plan.rdims})
    for (const LoopDim& d : *dims) {
      loop_vars.insert(d.var);
      for (const std::string& v : d.size.free_vars()) used.insert(v);
    }
  auto check_vars = [&](const Expr& e, size_t indirect) {
    for (const std::string& v : e.free_vars()) {
      bool bound = loop_vars.count(v) > 0;
      for (size_t k = 0; k < indirect; ++k) bound = bound || v == ir::indirect_var(k);
      if (!bound) used.insert(v);
    }
  };
  for (const NodePlan& node : plan.nodes) {
    check_vars(node.store_index, 0);
    visit_leaves(node.body, [&](const ScalarNode& leaf) {
      check_vars(leaf.index, leaf.indirect.size());
      for (const Expr& size : leaf.indirect_sizes) check_vars(size, 0);
    });
  }
  for (const std::string& v : used) {
    auto it = std::find_if(program.symbols.begin(), program.symbols.end(), [&](const ir::Symbol& s) { return s.name == v; });
    if (it == program.symbols.end()) throw InternalError("kernel " + kernel.name + " uses " + v + ", neither a loop index nor a size symbol");
    plan.used_symbols.emplace_back(v, static_cast<size_t>(it - program.symbols.begin()));
  }

  for (const LoopDim& d : plan.idims)
    if (d.size.is_const(0)) plan.empty = true;

  std::set<std::string> locals(kernel.locals.begin(), kernel.locals.end());
  order_outer_loops(plan, locals);
  simplify_dims(plan, plan.idims);
  simplify_dims(plan, plan.rdims);

  // A local read only at exactly its store index (by later nodes of this kernel) stays in registers.
  // A full node's value lives only in its segment's loop body: readers elsewhere need memory.
  for (size_t k = 0; k < plan.nodes.size(); ++k) {
    NodePlan& node = plan.nodes[k];
    if (!locals.count(node.output)) continue;
    bool only_register_reads = true;
    for (size_t j = k + 1; j < plan.nodes.size(); ++j) {
      const bool same_loop = !node.full || plan.nodes[j].segment == node.segment;
      visit_leaves(plan.nodes[j].body, [&](const ScalarNode& n) {
        if (n.op == ScalarOp::Index || n.buffer != node.output) return;
        if (n.op != ScalarOp::Load || !(n.index == node.store_index) || !same_loop) only_register_reads = false;
      });
    }
    node.store_elided = only_register_reads;
  }
  plan.vec = choose_vec_mode(plan);

  // ABI arguments and aliasing: buffers sharing storage with a written one get no __restrict__.
  auto add_args = [&](const std::vector<std::string>& names, bool written) {
    for (const std::string& name : names) plan.args.push_back({name, program.buffer(name).dtype, written, false});
  };
  add_args(kernel.inputs, false);
  add_args(kernel.outputs, true);
  add_args(kernel.locals, true);
  for (KernelArg& a : plan.args)
    for (const KernelArg& b : plan.args)
      if (&a != &b && (a.written || b.written) && storage_root(program, a.buffer) == storage_root(program, b.buffer))
        a.may_alias = true;
  std::set<std::string> arg_names;
  for (const KernelArg& a : plan.args) arg_names.insert(a.buffer);
  for (const NodePlan& node : plan.nodes) {
    if (!arg_names.count(node.output)) throw InternalError("kernel " + kernel.name + " writes " + node.output + ", which is not among its outputs or locals");
    visit_leaves(node.body, [&](const ScalarNode& n) {
      if (n.op != ScalarOp::Index && !arg_names.count(n.buffer))
        throw InternalError("kernel " + kernel.name + " reads " + n.buffer + ", which is not among its arguments");
    });
  }
  return plan;
}

}  // namespace cdynamo::codegen::cpp
