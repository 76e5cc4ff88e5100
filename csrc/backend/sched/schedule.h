// Scheduling: a lowered graph becomes an ir::Program of fused kernels and extern calls, with
// dead code removed, in-place buffer reuse and a memory plan. Target-neutral.
// Assumes the LoweredGraph invariants of lower.h (one producer per buffer, valid order).
#pragma once
#include "backend/ir/ir.h"
#include "backend/lower/lower.h"

namespace cdynamo::sched {

struct ScheduleStats {
  int dead_nodes = 0;    // nodes removed by dead-code elimination
  int fused_nodes = 0;   // nodes that joined an existing kernel
  int reused = 0;        // buffers planned in place of a dying one
};

// Switches for what a code generator may not support yet; everything defaults to on.
struct ScheduleOptions {
  // Pointwise nodes over ranges ++ reduction_ranges inside reduction kernels (ir.h "full"
  // pointwise: layer norm's normalising step after its row reductions); off: their own kernel.
  bool full_pointwise_in_reductions = true;
  bool reuse_buffers = true;  // in-place reuse of dying buffers
  // Buffer::cached on kernels that read only constants (config.freeze_constants).
  bool cache_constant_kernels = false;
  // Reductions of a few long rows become partial reductions over chunks plus a reduction of the
  // partial results (a GPU target: one program per row would leave the device idle).
  bool split_long_reductions = false;
};

// The full pipeline: dead-code elimination, fusion, kernel inputs/outputs/locals, in-place
// reuse, memory plan.
ir::Program schedule(lower::LoweredGraph graph, ScheduleStats* stats = nullptr, const ScheduleOptions& options = {});

// One step per node, no passes (frees all empty): the lowered graph as a Program, so the
// verifier can check the lowering stage on its own.
ir::Program unfused_program(const lower::LoweredGraph& graph);

}  // namespace cdynamo::sched
