// The C++ generator's view of one ir::Kernel: simplified loop dimensions, per-node stores, the
// ABI argument order and the choice of vectorized loop. Sizes may be symbolic (heuristics at hints).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include "backend/ir/ir.h"
#include "backend/ir/ir_walk.h"

namespace cdynamo::codegen::cpp {

struct LoopDim {
  std::string var;  // i0.. or r0.. (after merging, the name of the innermost merged dim)
  ir::Expr size;
};

struct NodePlan {
  bool is_reduction = false;
  // A "full" pointwise of a reduction kernel: over the i and r loops (its body and store use r
  // variables). Consecutive full nodes share one loop nest over the r dims (segment = its index
  // among those runs): per point they still run in node order, which is all ir::Kernel asks.
  bool full = false;
  int segment = -1;
  ir::ReductionType reduction = ir::ReductionType::Sum;
  std::string output;
  ir::DType out_dtype = ir::DType::Float32;
  ir::Expr store_index;  // over the plan's i variables
  ir::Scalar body;       // rewritten over the plan's variables
  bool store_elided = false;  // a kernel-local buffer read only at its store index: kept in registers
};

// Which loop runs CD_VLEN lanes at a time.
enum class VecMode {
  None,       // scalar loops only
  Inner,      // the innermost i loop (pointwise kernels; reductions over outer dims)
  Reduction,  // the innermost r loop (reductions over the innermost, contiguous dimension)
};

struct KernelArg {
  std::string buffer;
  ir::DType dtype = ir::DType::Float32;
  bool written = false;
  bool may_alias = false;  // shares storage with a buffer written by this kernel: no __restrict__
};

struct KernelPlan {
  std::string name;
  std::vector<LoopDim> idims, rdims;
  std::vector<NodePlan> nodes;
  std::vector<KernelArg> args;  // ABI order: kernel.inputs, then outputs, then locals
  VecMode vec = VecMode::None;
  bool empty = false;  // an i dimension of size 0: the kernel does nothing
  // Symbolic sizes: the program's symbols (for hints), and those this kernel reads, each with its
  // index in the program's symbol array (the ABI's second argument).
  std::vector<ir::Symbol> symbols;
  std::vector<std::pair<std::string, size_t>> used_symbols;
  // An expression's value at the symbols' hints (what heuristics decide by).
  int64_t hint(const ir::Expr& e) const { return ir::size_hint(e, symbols); }
};

using ir::Affine;
using ir::affine_in;

// Builds the plan: drops size-1 dimensions, merges adjacent dimensions that every access walks
// contiguously (so [N, C] contiguous becomes one loop of N*C), elides stores of locals kept in
// registers and chooses the vectorized loop.
KernelPlan plan_kernel(const ir::Program& program, const ir::Kernel& kernel);

using ir::visit_leaves;

}  // namespace cdynamo::codegen::cpp
