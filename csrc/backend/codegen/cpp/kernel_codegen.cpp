// Emits one kernel's translation unit: pointers, OpenMP-parallel outer loops, the vectorized
// loop with its scalar tail, reductions with vector accumulators. Assumes plan_kernel's plan.
#include "backend/ir/recursion_guard.h"
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include "backend/codegen/cpp/code_writer.h"
#include "backend/codegen/cpp/cpp_codegen.h"
#include "backend/codegen/cpp/kernel_plan.h"
#include "backend/codegen/cpp/prelude.h"
#include "backend/codegen/cpp/value_emitter.h"
#include "common/error.h"

namespace cdynamo::codegen::cpp {
namespace {

using ir::DType;
using ir::Expr;
using ir::ReductionType;

// Fewer element-iterations than this run on one thread: a parallel region costs microseconds.
constexpr int64_t kParallelMinWork = 32768;
// The parallel loop is cut into at least this many chunks (several per thread balances load).
constexpr int64_t kParallelChunks = 64;
// Blocks of the innermost loop are multiples of the widest vector, so only the last has a tail.
constexpr int64_t kMaxLanes = 16;
// Independent vector accumulators of a vectorized row reduction (a power of two): enough to
// cover an add's latency (3-4 cycles) at one or two vector loads per cycle.
constexpr int kReductionUnroll = 4;

struct ParallelPlan {
  bool parallel = false;
  int collapse = 0;        // loops in the collapsed parallel nest (the block loop included)
  bool block = false;      // the innermost i loop is cut into nblocks blocks of block_size
  int64_t block_size = 0;
  std::string nblocks;     // a literal, or (symbolic sizes) the count computed on each call
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ceil(size / block) as C++: a literal for a fixed size, else computed on each call.
std::string ceil_div_text(const Expr& size, int64_t block) {
  if (size.is_const()) return std::to_string(ceil_div(size.const_value(), block));
  return "((" + size.str() + " + " + std::to_string(block - 1) + ") / " + std::to_string(block) + ")";
}

// Sizes decide at their hints (the compile-time values of symbolic sizes); the loops they shape
// stay correct for any size.
ParallelPlan choose_parallel(const KernelPlan& plan) {
  ParallelPlan pp;
  if (plan.idims.empty()) return pp;
  double work = 1;
  for (const LoopDim& d : plan.idims) work *= static_cast<double>(plan.hint(d.size));
  for (const LoopDim& d : plan.rdims) work *= static_cast<double>(std::max<int64_t>(plan.hint(d.size), 1));
  if (work < kParallelMinWork) return pp;
  const size_t n = plan.idims.size();
  int64_t outer = 1;
  for (size_t k = 0; k + 1 < n; ++k) {
    outer *= plan.hint(plan.idims[k].size);
    if (outer >= kParallelChunks) {
      pp.parallel = true;
      pp.collapse = static_cast<int>(k + 1);
      return pp;
    }
  }
  const Expr& last_size = plan.idims.back().size;
  const int64_t last = plan.hint(last_size);
  int64_t block = ceil_div(last, ceil_div(kParallelChunks, std::max<int64_t>(outer, 1)));
  block = std::max<int64_t>(ceil_div(block, kMaxLanes) * kMaxLanes, kMaxLanes);
  int64_t nblocks = ceil_div(last, block);
  if (outer * nblocks < 2) return pp;
  pp.parallel = true;
  pp.block = nblocks > 1 || !last_size.is_const();
  pp.block_size = block;
  pp.nblocks = ceil_div_text(last_size, block);
  pp.collapse = static_cast<int>(n - 1) + (pp.block ? 1 : 0);
  return pp;
}

using ir::is_reduced_float;
bool is_arg(ReductionType t) { return t == ReductionType::ArgMax || t == ReductionType::ArgMin; }

// The dtype a reduction accumulates in (argmax/argmin: of the compared value).
DType accumulator_dtype(const NodePlan& node) {
  switch (node.reduction) {
    case ReductionType::Any:
    case ReductionType::All: return DType::Bool;
    case ReductionType::ArgMax:
    case ReductionType::ArgMin: {
      DType b = node.body->dtype;
      if (b == DType::Bool) return DType::UInt8;  // masks compare as -1 < 0
      return is_reduced_float(b) ? DType::Float32 : b;
    }
    case ReductionType::Sum:
      // Sums of 32-bit and narrower floats add in double: as cheap as float for a memory-bound
      // loop, and more accurate than torch's cascade summation (a float accumulator drifts by
      // about n/lanes ulps). Prod stays in the output's precision: a double product could survive
      // an overflow that eager's float product does not.
      if (ir::is_floating(node.out_dtype)) return DType::Float64;
      return node.out_dtype;
    default: return is_reduced_float(node.out_dtype) ? DType::Float32 : node.out_dtype;
  }
}

std::string initial_value(ReductionType type, DType acc) {
  std::string ct = compute_type(acc);
  switch (type) {
    case ReductionType::Sum:
    case ReductionType::XorSum: return ValueEmitter::literal(acc, int64_t{0});
    case ReductionType::Prod: return ValueEmitter::literal(acc, int64_t{1});
    case ReductionType::Max:
    case ReductionType::ArgMax: return "cd_lowest<" + ct + ">()";
    case ReductionType::Min:
    case ReductionType::ArgMin: return "cd_highest<" + ct + ">()";
    case ReductionType::Any: return "false";
    case ReductionType::All: return "true";
  }
  return "0";
}

// acc = combine(acc, v) for scalars; pos is the flattened reduction index (argmax/argmin).
std::string scalar_combine(ReductionType type, const std::string& acc, const std::string& acc_i, const std::string& v,
                           const std::string& pos) {
  switch (type) {
    case ReductionType::Sum: return acc + " = " + acc + " + " + v + ";";
    case ReductionType::Prod: return acc + " = " + acc + " * " + v + ";";
    case ReductionType::Max: return acc + " = cd_maximum(" + acc + ", " + v + ");";
    case ReductionType::Min: return acc + " = cd_minimum(" + acc + ", " + v + ");";
    case ReductionType::Any: return acc + " = " + acc + " || " + v + ";";
    case ReductionType::All: return acc + " = " + acc + " && " + v + ";";
    case ReductionType::XorSum: return acc + " = " + acc + " ^ " + v + ";";
    case ReductionType::ArgMax: return "cd_argmax_combine(" + acc + ", " + acc_i + ", " + v + ", (int64_t)(" + pos + "));";
    case ReductionType::ArgMin: return "cd_argmin_combine(" + acc + ", " + acc_i + ", " + v + ", (int64_t)(" + pos + "));";
  }
  return "";
}

std::vector<std::string> vector_combine(ReductionType type, DType acc_dtype, const std::string& acc, const std::string& acc_i,
                                        const std::string& v, const std::string& pos) {
  bool b = acc_dtype == DType::Bool;
  switch (type) {
    case ReductionType::Sum: return {acc + " = " + acc + (b ? " | " : " + ") + v + ";"};
    case ReductionType::Prod: return {acc + " = " + acc + (b ? " & " : " * ") + v + ";"};
    case ReductionType::Max: return {b ? acc + " = " + acc + " | " + v + ";" : acc + " = cd_vmaximum(" + acc + ", " + v + ");"};
    case ReductionType::Min: return {b ? acc + " = " + acc + " & " + v + ";" : acc + " = cd_vminimum(" + acc + ", " + v + ");"};
    case ReductionType::Any: return {acc + " = " + acc + " | " + v + ";"};
    case ReductionType::All: return {acc + " = " + acc + " & " + v + ";"};
    case ReductionType::XorSum: return {acc + " = " + acc + " ^ " + v + ";"};
    case ReductionType::ArgMax:
    case ReductionType::ArgMin: {
      // The order-independent rule of cd_argmax_combine, lane-wise.
      const char* cmp = type == ReductionType::ArgMax ? " > " : " < ";
      return {"{",
              "  const cd_vi64 cd_p = " + pos + ";",
              "  const cd_vmask cd_nn = cd_visnan(" + v + "), cd_an = cd_visnan(" + acc + ");",
              "  const cd_vmask cd_lt = cd_vtomask(cd_p < " + acc_i + ");",
              "  const cd_vmask cd_take = (cd_nn & (~cd_an | cd_lt)) | (~cd_nn & ~cd_an & (cd_vtomask(" + v + cmp + acc +
                  ") | (cd_vtomask(" + v + " == " + acc + ") & cd_lt)));",
              "  " + acc + " = cd_vsel(cd_take, " + v + ", " + acc + ");",
              "  " + acc_i + " = cd_vsel(cd_take, cd_p, " + acc_i + ");",
              "}"};
    }
  }
  return {};
}

class KernelEmitter {
 public:
  KernelEmitter(const KernelPlan& plan, std::map<std::string, std::string> pointers, std::map<std::string, DType> dtypes)
      : plan_(plan), ve_(w_, std::move(pointers), std::move(dtypes)) {}

  CodeWriter& writer() { return w_; }

  void emit_loops() {
    if (plan_.empty) {
      w_.line("(void)buffers;  // an empty iteration space");
      return;
    }
    const ParallelPlan pp = choose_parallel(plan_);
    const size_t n = plan_.idims.size();
    if (n == 0) {
      emit_point(Width::Scalar);
      return;
    }
    if (pp.parallel) w_.pragma(pp.collapse > 1 ? "omp parallel for collapse(" + std::to_string(pp.collapse) + ")" : "omp parallel for");
    for (size_t k = 0; k + 1 < n; ++k) open_loop(plan_.idims[k]);
    const LoopDim& last = plan_.idims.back();
    const std::string v = last.var;
    std::string lo = "0", hi = last.size.str();
    if (pp.block) {
      w_.open("for (int64_t cd_b = 0; cd_b < " + pp.nblocks + "; ++cd_b)");
      w_.line("const int64_t cd_lo = cd_b * " + std::to_string(pp.block_size) + ";");
      w_.line("const int64_t cd_hi = cd_min(cd_lo + " + std::to_string(pp.block_size) + ", " + last.size.str() + ");");
      lo = "cd_lo";
      hi = "cd_hi";
    }
    if (plan_.vec == VecMode::Inner) {
      w_.line("int64_t " + v + " = " + lo + ";");
      w_.open("for (; " + v + " + CD_VLEN <= " + hi + "; " + v + " += CD_VLEN)");
      emit_point(Width::Vector);
      w_.close();
      w_.open("for (; " + v + " < " + hi + "; ++" + v + ")");
      emit_point(Width::Scalar);
      w_.close();
    } else {
      w_.open("for (int64_t " + v + " = " + lo + "; " + v + " < " + hi + "; ++" + v + ")");
      emit_point(Width::Scalar);
      w_.close();
    }
    if (pp.block) w_.close();
    for (size_t k = 0; k + 1 < n; ++k) w_.close();
  }

 private:
  // The bounds of reduction loop k: the outermost may be a block [lo, hi) of a split loop.
  std::pair<std::string, std::string> r_bounds(size_t k, const std::string& lo, const std::string& hi) const {
    if (k == 0) return {lo, hi};
    return {"0", plan_.rdims[k].size.str()};
  }
  // Opens the first `count` reduction loops as plain (scalar) loops.
  void open_scalar_r_loops(size_t count, const std::string& lo, const std::string& hi) {
    for (size_t k = 0; k < count; ++k) {
      auto [from, to] = r_bounds(k, lo, hi);
      const std::string& v = plan_.rdims[k].var;
      w_.open("for (int64_t " + v + " = " + from + "; " + v + " < " + to + "; ++" + v + ")");
    }
  }
  void open_loop(const LoopDim& d) { w_.open("for (int64_t " + d.var + " = 0; " + d.var + " < " + d.size.str() + "; ++" + d.var + ")"); }

  // Every node at one i point (CD_VLEN consecutive points in vector width): outer nodes inline,
  // each reduction and each run of full pointwise nodes as its own loop nest over the r dims.
  void emit_point(Width width) {
    ve_.push_scope(width, width == Width::Vector ? plan_.idims.back().var : "");
    shared_ = width == Width::Scalar ? find_shared() : Shared{};
    if (shared_.expr) {
      shared_.scratch = w_.fresh("cd_scratch");
      w_.line("alignas(64) float " + shared_.scratch + "[" + std::to_string(rspace()) + "];  // " +
              "a value the reduction computes and a later full node reads again");
    }
    for (size_t k = 0; k < plan_.nodes.size();) {
      const NodePlan& node = plan_.nodes[k];
      if (node.full) {
        size_t end = k;
        while (end < plan_.nodes.size() && plan_.nodes[end].segment == node.segment) ++end;
        emit_full_segment(k, end);
        k = end;
        continue;
      }
      Value v = node.is_reduction ? emit_reduction(node, shared_.expr && shared_.reduction == k) : ve_.emit(node.body);
      emit_store(node, v);
      ++k;
    }
    ve_.pop_scope();
    shared_ = Shared{};
  }

  // A value computed in a reduction's r loop and again by a later full node (softmax's
  // exp(x - max), summed, then divided by the sum): the reduction also writes it into a scratch
  // row and the full node reads it back instead of recomputing the transcendental.
  struct Shared {
    const ir::ScalarNode* expr = nullptr;         // in the reduction's body
    std::set<const ir::ScalarNode*> twins;       // structurally equal nodes in full nodes' bodies
    size_t reduction = 0;                        // the reduction's index in plan_.nodes
    std::string scratch;
  };

  // Elements of the reduction space (a scratch array's length): fixed sizes only.
  int64_t rspace() const {
    int64_t n = 1;
    for (const LoopDim& d : plan_.rdims) n *= d.size.const_value();
    return n;
  }
  bool fixed_rspace() const {
    return std::all_of(plan_.rdims.begin(), plan_.rdims.end(), [](const LoopDim& d) { return d.size.is_const(); });
  }

  static bool same(const ir::ScalarNode* a, const ir::ScalarNode* b) {
    if (a == b) return true;
    if (a->op != b->op || a->dtype != b->dtype || a->args.size() != b->args.size() || !a->indirect.empty() ||
        !b->indirect.empty() || a->buffer != b->buffer || a->constant != b->constant || a->index.str() != b->index.str())
      return false;
    for (size_t k = 0; k < a->args.size(); ++k)
      if (!same(a->args[k].get(), b->args[k].get())) return false;
    return true;
  }

  // Only in the row-vectorized layout (both loops over the r space in the same order, per i
  // point, on one thread) with a float value, a scratch row of at most 32 KiB, and loads of
  // buffers nothing from the reduction on writes (so the value is the same at both points).
  Shared find_shared() const {
    Shared none;
    if (plan_.vec != VecMode::Reduction || plan_.rdims.empty() || split_chunks() != 0 || !fixed_rspace()) return none;
    if (rspace() * 4 > 32768) return none;
    for (size_t k = 0; k < plan_.nodes.size(); ++k) {
      const NodePlan& red = plan_.nodes[k];
      if (!red.is_reduction) continue;
      std::set<std::string> written;
      for (size_t j = k; j < plan_.nodes.size(); ++j) written.insert(plan_.nodes[j].output);
      // Candidates, largest first: expensive, varying with r, float, loading only stable buffers.
      std::vector<const ir::ScalarNode*> order;
      std::set<const ir::ScalarNode*> seen;
      std::function<void(const ir::ScalarNode*)> walk = [&](const ir::ScalarNode* n) {
        ir::RecursionGuard recursion("a reduction's scalar graph");
        if (!seen.insert(n).second) return;
        order.push_back(n);
        for (const ir::Scalar& a : n->args) walk(a.get());
      };
      walk(red.body.get());
      for (const ir::ScalarNode* cand : order) {
        if (cand->dtype != DType::Float32) continue;
        bool costly = false, varies = false, stable = true;
        std::set<const ir::ScalarNode*> scanned;  // shared subgraphs once: a DAG walked as a tree is exponential
        std::function<void(const ir::ScalarNode*)> scan = [&](const ir::ScalarNode* n) {
          if (!scanned.insert(n).second) return;
          ir::RecursionGuard recursion("a reduction's scalar graph");
          costly = costly || ir::is_expensive(n->op);
          if (!n->indirect.empty() || n->op == ir::ScalarOp::Index) stable = false;
          if (n->op == ir::ScalarOp::Load || n->op == ir::ScalarOp::MaskedLoad) {
            if (written.count(n->buffer)) stable = false;
            for (const KernelArg& a : plan_.args)
              if (a.buffer == n->buffer && a.may_alias) stable = false;
            for (const std::string& v : n->index.free_vars())
              for (const LoopDim& d : plan_.rdims) varies = varies || v == d.var;
          }
          for (const ir::Scalar& a : n->args) scan(a.get());
        };
        scan(cand);
        if (!costly || !varies || !stable) continue;
        Shared sh;
        for (size_t j = k + 1; j < plan_.nodes.size(); ++j) {
          if (!plan_.nodes[j].full) continue;
          std::set<const ir::ScalarNode*> visited;
          std::function<void(const ir::ScalarNode*)> look = [&](const ir::ScalarNode* n) {
            if (!visited.insert(n).second) return;
            ir::RecursionGuard recursion("a reduction's scalar graph");
            if (same(n, cand)) {
              sh.twins.insert(n);
              return;
            }
            for (const ir::Scalar& a : n->args) look(a.get());
          };
          look(plan_.nodes[j].body.get());
        }
        if (sh.twins.empty()) continue;
        sh.expr = cand;
        sh.reduction = k;
        return sh;
      }
    }
    return none;
  }

  void emit_store(const NodePlan& node, Value v) {
    v = ve_.cast(v, node.out_dtype);
    if (!node.store_elided) ve_.store(node.output, node.store_index, v);
    ve_.produced(node.output, node.store_index, v);
  }

  // Emits, at the current i point, the parts of `body` that do not depend on the r variables
  // (layer norm's rsqrt(var / n + eps), softmax's 1 / sum): the r loops then find them memoized
  // instead of recomputing them per element; g++ does not hoist the vector math calls. Safe to
  // evaluate early: loads at i-point indices are in bounds and integer division cannot trap.
  void hoist_invariants(const ir::Scalar& body) {
    if (plan_.rdims.empty()) return;
    std::unordered_map<const ir::ScalarNode*, bool> varies;
    std::function<bool(const ir::ScalarNode*)> depends = [&](const ir::ScalarNode* n) {
      auto it = varies.find(n);
      if (it != varies.end()) return it->second;
      ir::RecursionGuard recursion("a reduction's scalar graph");
      bool result = false;
      if (n->op == ir::ScalarOp::Load || n->op == ir::ScalarOp::MaskedLoad || n->op == ir::ScalarOp::Index)
        for (const std::string& v : n->index.free_vars())
          for (const LoopDim& d : plan_.rdims) result = result || v == d.var;
      for (const ir::Scalar& a : n->args) result = depends(a.get()) || result;
      for (const ir::Scalar& a : n->indirect) result = depends(a.get()) || result;
      varies[n] = result;
      return result;
    };
    std::set<const ir::ScalarNode*> seen;
    std::function<void(const ir::Scalar&)> visit = [&](const ir::Scalar& n) {
      if (!seen.insert(n.get()).second || n->op == ir::ScalarOp::Constant) return;
      ir::RecursionGuard recursion("a reduction's scalar graph");
      if (!depends(n.get())) {
        ve_.emit(n);
        return;
      }
      for (const ir::Scalar& a : n->args) visit(a);
      for (const ir::Scalar& a : n->indirect) visit(a);
    };
    visit(body);
  }

  // Full pointwise nodes [begin, end) over the r loops, at the current i point. In a scalar scope
  // with VecMode::Reduction the innermost r loop runs CD_VLEN lanes, with a scalar tail.
  void emit_full_segment(size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) hoist_invariants(plan_.nodes[k].body);
    const Width width = ve_.width();
    const bool vector_r = width == Width::Scalar && plan_.vec == VecMode::Reduction;
    auto step = [&](Width inner, const std::string& vec_var) {
      w_.open("");  // values of this r point stay inside
      ve_.push_scope(inner, vec_var);
      if (shared_.expr && shared_.reduction < begin && !shared_.scratch.empty()) {
        const std::string at = shared_.scratch + " + (" + rpos() + ")";
        Value v = inner == Width::Vector ? ve_.define("cd_vload<cd_vf32>(" + at + ")", DType::Float32, Width::Vector)
                                         : ve_.define(shared_.scratch + "[" + rpos() + "]", DType::Float32, Width::Scalar);
        for (const ir::ScalarNode* t : shared_.twins) ve_.bind(t, v);
      }
      for (size_t k = begin; k < end; ++k) emit_store(plan_.nodes[k], ve_.emit(plan_.nodes[k].body));
      ve_.pop_scope();
      w_.close();
    };
    const size_t m = plan_.rdims.size();
    const size_t scalar_loops = vector_r ? m - 1 : m;
    w_.open("");  // the r loop variables are local to this segment
    // Without i loops (softmax of one long vector) nothing else runs in parallel: blocks of the
    // outermost r loop do, like the chunks of a long reduction (the points are independent).
    std::string lo = "0", hi = m ? plan_.rdims.front().size.str() : "";
    const int64_t chunks = split_chunks();
    if (chunks > 1) {
      const ChunkPlan c = chunk_plan(chunks);
      w_.pragma("omp parallel for");
      w_.open("for (int64_t cd_c = 0; cd_c < " + c.count + "; ++cd_c)");
      lo = "cd_c * " + c.block;
      hi = "cd_min(cd_c * " + c.block + " + " + c.block + ", " + c.size + ")";
    }
    auto bounds = [&](size_t k) { return r_bounds(k, lo, hi); };
    open_scalar_r_loops(scalar_loops, lo, hi);
    if (vector_r) {
      const LoopDim& last = plan_.rdims.back();
      auto [from, to] = bounds(m - 1);
      w_.line("int64_t " + last.var + " = " + from + ";");
      w_.open("for (; " + last.var + " + CD_VLEN <= " + to + "; " + last.var + " += CD_VLEN)");
      step(Width::Vector, last.var);
      w_.close();
      w_.open("for (; " + last.var + " < " + to + "; ++" + last.var + ")");
      step(Width::Scalar, "");
      w_.close();
    } else {
      step(width, width == Width::Vector ? plan_.idims.back().var : "");
    }
    for (size_t k = 0; k < scalar_loops; ++k) w_.close();
    if (chunks > 1) w_.close();
    w_.close();
  }

  // Accumulates node.body over the r loops and returns the result (the position for arg*).
  Value emit_reduction(const NodePlan& node, bool tap = false) {
    const Width width = ve_.width();
    const DType acc_dtype = accumulator_dtype(node);
    const bool arg = is_arg(node.reduction);
    hoist_invariants(node.body);
    const std::string acc = w_.fresh("acc");
    declare(node, width, acc);
    const int64_t chunks = split_chunks();
    if (chunks > 1) {
      // One reduction over many elements (nothing else to share out): fixed chunks of the
      // outermost r loop run in parallel into partial results, combined in chunk order so the
      // result does not depend on the thread count.
      const ChunkPlan c = chunk_plan(chunks);
      const std::string ct = compute_type(acc_dtype);
      w_.line(ct + " " + acc + "_part[" + std::to_string(c.max_count) + "];");
      if (arg) w_.line("int64_t " + acc + "_part_i[" + std::to_string(c.max_count) + "];");
      w_.pragma("omp parallel for");
      w_.open("for (int64_t cd_c = 0; cd_c < " + c.count + "; ++cd_c)");
      const std::string part = w_.fresh("acc");
      declare(node, Width::Scalar, part);
      accumulate(node, part, "cd_c * " + c.block, "cd_min(cd_c * " + c.block + " + " + c.block + ", " + c.size + ")");
      w_.line(acc + "_part[cd_c] = " + part + ";");
      if (arg) w_.line(acc + "_part_i[cd_c] = " + part + "_i;");
      w_.close();
      w_.line("for (int64_t cd_c = 0; cd_c < " + c.count + "; ++cd_c) " +
              scalar_combine(node.reduction, acc, acc + "_i", acc + "_part[cd_c]", acc + "_part_i[cd_c]"));
    } else {
      accumulate(node, acc, "0", plan_.rdims.empty() ? "" : plan_.rdims.front().size.str(), tap);
    }
    if (arg) return {acc + "_i", DType::Int64, width};
    return {acc, acc_dtype, width};
  }

  // Chunks for a parallel split of the outermost r loop: only for a kernel without i loops whose
  // single reduction loop is long; 0 otherwise.
  int64_t split_chunks() const {
    if (!plan_.idims.empty() || plan_.rdims.empty() || ve_.width() != Width::Scalar) return 0;
    double work = 1;
    for (const LoopDim& d : plan_.rdims) work *= static_cast<double>(plan_.hint(d.size));
    const int64_t outer = plan_.hint(plan_.rdims.front().size);
    if (work < 4 * kParallelMinWork || outer < 2 * kMaxLanes) return 0;
    return std::min<int64_t>(kParallelChunks, outer / kMaxLanes);
  }

  // The chunks of the outermost r loop, as C++ text: literals for a fixed size; for a symbolic
  // one, `chunks` chunks (some may be empty) of a block computed on each call.
  struct ChunkPlan {
    std::string size, block, count;
    int64_t max_count = 0;  // the most chunks there can be (partial-result arrays)
  };
  ChunkPlan chunk_plan(int64_t chunks) {
    const Expr& size = plan_.rdims.front().size;
    if (size.is_const()) {
      const int64_t n = size.const_value();
      const int64_t block = ceil_div(ceil_div(n, chunks), kMaxLanes) * kMaxLanes;
      return {std::to_string(n), std::to_string(block), std::to_string(ceil_div(n, block)), ceil_div(n, block)};
    }
    const std::string block = w_.fresh("cd_block");
    w_.line("const int64_t " + block + " = cd_max((" + size.str() + " + " + std::to_string(chunks * kMaxLanes - 1) + ") / " +
            std::to_string(chunks * kMaxLanes) + ", 1) * " + std::to_string(kMaxLanes) + ";");
    return {size.str(), block, std::to_string(chunks), chunks};
  }

  // Declares accumulator `name` (and name_i for arg*) of width `wd`, set to the initial value.
  void declare(const NodePlan& node, Width wd, const std::string& name) {
    const DType acc_dtype = accumulator_dtype(node);
    const std::string init = initial_value(node.reduction, acc_dtype);
    if (wd == Width::Scalar) {
      w_.line(compute_type(acc_dtype) + " " + name + " = " + init + ";");
      if (is_arg(node.reduction)) w_.line("int64_t " + name + "_i = INT64_MAX;");
    } else {
      std::string lanes = acc_dtype == DType::Bool ? "(" + init + ") ? -1 : 0" : init;
      w_.line(vector_type(acc_dtype) + " " + name + " = cd_vbcast<" + vector_type(acc_dtype) + ">(" + lanes + ");");
      if (is_arg(node.reduction)) w_.line("cd_vi64 " + name + "_i = cd_vbcast<cd_vi64>(INT64_MAX);");
    }
  }

  // The r loops into accumulator `acc` (declared, of the current width); the outermost r loop
  // runs over [lo, hi). In a scalar scope with VecMode::Reduction the innermost r loop is
  // vectorized into vector accumulators folded into acc at the end: kReductionUnroll of them
  // when the loop is long, each taking every kReductionUnroll-th vector, so consecutive adds do
  // not wait on each other (one accumulator makes the loop latency-bound). They combine in a
  // fixed tree, then lane by lane in lane order: the same input gives the same result.
  void accumulate(const NodePlan& node, const std::string& acc, const std::string& lo, const std::string& hi, bool tap = false) {
    const Width width = ve_.width();
    const DType acc_dtype = accumulator_dtype(node);
    const bool vector_r = width == Width::Scalar && plan_.vec == VecMode::Reduction;
    const size_t m = plan_.rdims.size();
    // Rows shorter than kReductionUnroll full vectors keep one accumulator (no combine cost).
    const int unroll = vector_r && plan_.hint(plan_.rdims.back().size) >= kReductionUnroll * kMaxLanes ? kReductionUnroll : 1;
    // 8-byte accumulators (float sums in double, integer sums in int64) as two register halves.
    const bool halves = vector_r && ir::dtype_size(acc_dtype) == 8 &&
                        (node.reduction == ReductionType::Sum || node.reduction == ReductionType::Prod ||
                         node.reduction == ReductionType::XorSum);
    const char* op = node.reduction == ReductionType::Sum ? " + " : node.reduction == ReductionType::Prod ? " * " : " ^ ";
    std::vector<std::string> vaccs;
    for (int k = 0; vector_r && k < unroll; ++k) {
      vaccs.push_back(w_.fresh("vacc"));
      if (halves) {
        const std::string half = "cd_vhalf_of<" + vector_type(acc_dtype) + ">::type";
        const std::string init = "cd_vbcast<" + vector_type(acc_dtype) + ">(" + initial_value(node.reduction, acc_dtype) + ")";
        w_.line(half + " " + vaccs[k] + "_lo = cd_vlo(" + init + "), " + vaccs[k] + "_hi = cd_vhi(" + init + ");");
      } else {
        declare(node, Width::Vector, vaccs[k]);
      }
    }

    std::vector<Expr> rvars, rsizes;
    for (const LoopDim& d : plan_.rdims) {
      rvars.push_back(Expr::var(d.var));
      rsizes.push_back(d.size);
    }
    const std::string pos = ir::linear_index(rvars, ir::contiguous_strides(rsizes)).str();

    // One accumulation step in width `inner`, into accumulator `into`.
    auto step = [&](Width inner, const std::string& vec_var, const std::string& into) {
      ve_.push_scope(inner, vec_var);
      Value raw = ve_.emit(node.body);
      if (tap) {  // the shared value (memoized by the body) into the scratch row
        Value sv = ve_.emit(ir::Scalar(ir::Scalar(), shared_.expr));  // non-owning: a memo hit
        if (inner == Width::Vector) w_.line("cd_vstore(" + shared_.scratch + " + (" + pos + "), " + ve_.widen(sv).name + ");");
        else w_.line(shared_.scratch + "[" + pos + "] = " + sv.name + ";");
      }
      if (inner == Width::Vector && halves && vector_r && raw.dtype == DType::Float32 && acc_dtype == DType::Float64) {
        // Each half converted on its own: no two-register double temporary (g++ stores those).
        raw = ve_.widen(raw);
        const std::string h = "cd_vhalf_of<cd_vf64>::type";
        w_.line(into + "_lo = " + into + "_lo" + op + "cd_vlo_as<" + h + ">(" + raw.name + ");");
        w_.line(into + "_hi = " + into + "_hi" + op + "cd_vhi_as<" + h + ">(" + raw.name + ");");
        ve_.pop_scope();
        return;
      }
      Value v = ve_.cast(raw, acc_dtype);
      if (inner == Width::Vector) {
        v = ve_.widen(v);
        if (halves && vector_r) {
          w_.line(into + "_lo = " + into + "_lo" + op + "cd_vlo(" + v.name + ");");
          w_.line(into + "_hi = " + into + "_hi" + op + "cd_vhi(" + v.name + ");");
        } else {
          std::string p = vector_r ? "cd_vbcast<cd_vi64>((int64_t)(" + pos + ")) + cd_viota<cd_vi64>()" : "cd_vbcast<cd_vi64>((int64_t)(" + pos + "))";
          for (const std::string& line : vector_combine(node.reduction, acc_dtype, into, into + "_i", v.name, p)) w_.line(line);
        }
      } else {
        w_.line(scalar_combine(node.reduction, into, into + "_i", v.name, pos));
      }
      ve_.pop_scope();
    };
    // vaccs[a] = combine(vaccs[a], vaccs[b]).
    auto merge = [&](int a, int b) {
      const std::string& x = vaccs[a];
      const std::string& y = vaccs[b];
      if (halves) {
        w_.line(x + "_lo = " + x + "_lo" + op + y + "_lo;");
        w_.line(x + "_hi = " + x + "_hi" + op + y + "_hi;");
        return;
      }
      for (const std::string& line : vector_combine(node.reduction, acc_dtype, x, x + "_i", y, y + "_i")) w_.line(line);
    };

    w_.open("");  // the r loop variables are local to this reduction
    const size_t scalar_loops = vector_r ? m - 1 : m;
    auto bounds = [&](size_t k) { return r_bounds(k, lo, hi); };
    open_scalar_r_loops(scalar_loops, lo, hi);
    const std::string ivar = width == Width::Vector ? plan_.idims.back().var : "";
    if (vector_r) {
      const LoopDim& last = plan_.rdims.back();
      const std::string& r = last.var;
      auto [from, to] = bounds(m - 1);
      w_.line("int64_t " + r + " = " + from + ";");
      if (unroll > 1) {
        const std::string span = std::to_string(unroll) + " * CD_VLEN";
        w_.open("for (; " + r + " + " + span + " <= " + to + "; " + r + " += " + span + ")");
        step(Width::Vector, r, vaccs[0]);
        for (int k = 1; k < unroll; ++k) {
          // The k-th vector of the group: r shadowed by its first index, so the body's indices
          // (and argmax positions) need no rewriting.
          w_.open("");
          const std::string base = w_.fresh("cd_r");
          w_.line("const int64_t " + base + " = " + r + " + " + std::to_string(k) + " * CD_VLEN;");
          w_.open("");
          w_.line("const int64_t " + r + " = " + base + ";");
          step(Width::Vector, r, vaccs[k]);
          w_.close();
          w_.close();
        }
        w_.close();
      }
      w_.open("for (; " + r + " + CD_VLEN <= " + to + "; " + r + " += CD_VLEN)");
      step(Width::Vector, r, vaccs[0]);
      w_.close();
      w_.open("for (; " + r + " < " + to + "; ++" + r + ")");
      step(Width::Scalar, "", acc);
      w_.close();
    } else {
      step(width, ivar, acc);
    }
    for (size_t k = 0; k < scalar_loops; ++k) w_.close();
    w_.close();
    if (vector_r) {
      // A fixed pairwise tree: ((0 + 1) + (2 + 3)) for four accumulators.
      for (int gap = 1; gap < unroll; gap *= 2)
        for (int k = 0; k + gap < unroll; k += 2 * gap) merge(k, k + gap);
      const std::string& v0 = vaccs[0];
      if (halves) {
        for (const char* h : {"_lo", "_hi"})
          w_.line("for (int cd_l = 0; cd_l < CD_VLEN / 2; ++cd_l) " +
                  scalar_combine(node.reduction, acc, acc + "_i", v0 + h + "[cd_l]", ""));
      } else {
        std::string lane = acc_dtype == DType::Bool ? "(" + v0 + "[cd_l] != 0)" : v0 + "[cd_l]";
        std::string combine = scalar_combine(node.reduction, acc, acc + "_i", lane, v0 + "_i[cd_l]");
        w_.line("for (int cd_l = 0; cd_l < CD_VLEN; ++cd_l) " + combine);
      }
    }
  }

  // The flat position in the r space (row-major over the r dims).
  std::string rpos() const {
    std::vector<Expr> rvars, rsizes;
    for (const LoopDim& d : plan_.rdims) {
      rvars.push_back(Expr::var(d.var));
      rsizes.push_back(d.size);
    }
    return ir::linear_index(rvars, ir::contiguous_strides(rsizes)).str();
  }

  const KernelPlan& plan_;
  Shared shared_;
  CodeWriter w_;
  ValueEmitter ve_;
};

const char* mode_name(VecMode m) {
  switch (m) {
    case VecMode::None: return "scalar";
    case VecMode::Inner: return "vectorized along the innermost loop";
    case VecMode::Reduction: return "vectorized along the innermost reduction loop";
  }
  return "?";
}

}  // namespace

GeneratedKernel generate_kernel(const ir::Program& program, const ir::Kernel& kernel) {
  KernelPlan plan = plan_kernel(program, kernel);
  std::map<std::string, std::string> pointers;
  std::map<std::string, DType> dtypes;
  std::vector<std::string> declarations;
  for (size_t k = 0; k < plan.args.size(); ++k) {
    const KernelArg& a = plan.args[k];
    std::string name = "b" + std::to_string(k);
    std::string type = (a.written ? "" : "const ") + storage_type(a.dtype) + "*";
    std::string qual = a.may_alias ? " " : " __restrict__ ";
    // maybe_unused: a local kept in registers never touches its buffer (-Wunused-variable).
    declarations.push_back("[[maybe_unused]] " + type + qual + name + " = reinterpret_cast<" + type + ">(buffers[" + std::to_string(k) + "]);" +
                           (a.written ? "  // written" : ""));
    pointers[a.buffer] = name;
    dtypes[a.buffer] = a.dtype;
  }
  KernelEmitter emitter(plan, pointers, dtypes);
  CodeWriter& w = emitter.writer();
  w.line(std::string("// A kernel generated by cdynamo's C++ backend; ") + mode_name(plan.vec) + ".");
  std::string loops = "// loops:";
  for (const LoopDim& d : plan.idims) loops += " " + d.var + "<" + d.size.str();
  for (const LoopDim& d : plan.rdims) loops += " " + d.var + "<" + d.size.str();
  w.line(loops);
  w.line(std::string("#include <") + kPreludeFileName + ">");
  w.line("");
  w.line("// Ownership contract: buffers holds " + std::to_string(plan.args.size()) +
         " borrowed storage pointers (inputs, outputs, locals), cd_symbols the program's size symbols (or null);");
  w.line("// nothing is retained after the call.");
  w.open(std::string("extern \"C\" __attribute__((visibility(\"default\"))) int ") + kKernelSymbol +
         "(char** buffers, [[maybe_unused]] const int64_t* cd_symbols)");
  for (const auto& [name, index] : plan.used_symbols) w.line("const int64_t " + name + " = cd_symbols[" + std::to_string(index) + "];");
  for (const std::string& d : declarations) w.line(d);
  w.line("int cd_error = 0;  // set (never cleared) by an out-of-range indirect position");
  emitter.emit_loops();
  w.line("return cd_error;");
  w.close();
  return {kernel.name, w.str()};
}

}  // namespace cdynamo::codegen::cpp
