// Shared helpers of the scheduling passes: what a node reads and writes, alias roots, and the
// mapping of a node's loop variables onto its kernel's (i.. outer, r.. reduction).
// Assumes names in loads and extern arguments refer to buffers of the same Program.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>
#include "backend/ir/ir.h"
#include "backend/sched/schedule.h"

namespace cdynamo::sched {

// Buffers a node reads (loads, extern tensor arguments) and writes (its outputs).
std::vector<std::string> node_reads(const ir::Node& node);
std::vector<std::string> node_writes(const ir::Node& node);
// Every load node in a body (indirect positions included).
std::vector<const ir::ScalarNode*> loads_of(const ir::Scalar& body);
const ir::Scalar* body_of(const ir::Node& node);

// buffer name -> root buffer name (itself when it owns its memory).
std::map<std::string, std::string> alias_roots(const std::vector<ir::Buffer>& buffers);

// A kernel's iteration space.
struct Space {
  std::vector<ir::Expr> ranges, reduction_ranges;
  bool operator==(const Space& o) const { return ranges == o.ranges && reduction_ranges == o.reduction_ranges; }
};
// The variable renaming that places a node in a kernel of `space` (empty map: names agree).
// Returns false when the node does not fit the space.
bool kernel_renaming(const ir::Node& node, const Space& space, std::map<std::string, ir::Expr>* renaming);
ir::VarRanges kernel_ranges(const Space& space);
// The flat index `node` stores at, in kernel variables.
ir::Expr store_index(const ir::Node& node, const ir::Buffer& output, const Space& space);
// True when every load of `buffer` in `node` reads the element at `at` (kernel variables).
bool reads_only_at(const ir::Node& node, const std::string& buffer, const ir::Expr& at, const Space& space);

// The passes, in pipeline order.
void split_long_reductions(lower::LoweredGraph& graph);
void eliminate_dead_code(lower::LoweredGraph& graph, ScheduleStats& stats);
struct Group {
  bool is_extern = false;
  std::vector<size_t> members;  // indices into graph.nodes, in execution order
  Space space;
};
std::vector<Group> fuse(const lower::LoweredGraph& graph, ScheduleStats& stats, const ScheduleOptions& options);
// Fills kernel inputs/outputs/locals of every Kernel step.
void assign_kernel_io(ir::Program& program);
// Buffer::cached on outputs of kernels computed from constants only (see ir.h).
void mark_cached_buffers(ir::Program& program);
void plan_reuse(ir::Program& program, ScheduleStats& stats);
void plan_memory(ir::Program& program);

}  // namespace cdynamo::sched
