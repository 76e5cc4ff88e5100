// The scheduling pipeline, as a table of contents: reduction splits (GPU targets), dead code,
// fusion, kernel interfaces, in-place reuse, memory plan. Assumes a LoweredGraph from lower_graph (valid node order).
#include "backend/sched/schedule.h"
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {
namespace {

ir::Program program_shell(const lower::LoweredGraph& graph) {
  ir::Program program;
  program.buffers = graph.buffers;
  program.inputs = graph.inputs;
  program.outputs = graph.outputs;
  program.symbols = graph.symbols;
  program.input_arguments = graph.input_arguments;
  program.arguments = graph.arguments;
  return program;
}

ir::Kernel kernel_of(std::vector<ir::Node> nodes, const Space& space, size_t number) {
  ir::Kernel kernel;
  kernel.name = "kernel" + std::to_string(number);
  kernel.ranges = space.ranges;
  kernel.reduction_ranges = space.reduction_ranges;
  kernel.nodes = std::move(nodes);
  return kernel;
}

Space space_of(const ir::Node& node) {
  if (auto* p = std::get_if<ir::Pointwise>(&node)) return {p->ranges, {}};
  if (auto* r = std::get_if<ir::Reduction>(&node)) return {r->ranges, r->reduction_ranges};
  return {};
}

}  // namespace

ir::Program schedule(lower::LoweredGraph graph, ScheduleStats* stats_out, const ScheduleOptions& options) {
  ScheduleStats stats;
  if (options.split_long_reductions) split_long_reductions(graph);
  eliminate_dead_code(graph, stats);
  std::vector<Group> groups = fuse(graph, stats, options);

  ir::Program program = program_shell(graph);
  size_t kernels = 0;
  for (const Group& group : groups) {
    if (group.is_extern) {
      program.steps.emplace_back(std::get<ir::Extern>(graph.nodes[group.members.front()]));
      continue;
    }
    std::vector<ir::Node> nodes;
    for (size_t m : group.members) nodes.push_back(graph.nodes[m]);
    program.steps.emplace_back(kernel_of(std::move(nodes), group.space, kernels++));
  }
  assign_kernel_io(program);
  if (options.cache_constant_kernels) mark_cached_buffers(program);
  if (options.reuse_buffers) plan_reuse(program, stats);
  plan_memory(program);
  if (stats_out) *stats_out = stats;
  return program;
}

ir::Program unfused_program(const lower::LoweredGraph& graph) {
  ir::Program program = program_shell(graph);
  size_t kernels = 0;
  for (const ir::Node& node : graph.nodes) {
    if (auto* e = std::get_if<ir::Extern>(&node)) program.steps.emplace_back(*e);
    else program.steps.emplace_back(kernel_of({node}, space_of(node), kernels++));
  }
  assign_kernel_io(program);
  program.frees.assign(program.steps.size(), {});
  return program;
}

}  // namespace cdynamo::sched
