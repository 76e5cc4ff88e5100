// Kernel interfaces: which buffers each kernel reads from outside (inputs), writes for others
// (outputs) and keeps to itself (locals). Assumes aliases count as uses of their root.
#include <algorithm>
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {
namespace {

std::vector<std::string> step_reads(const ir::Step& step) {
  if (auto* e = std::get_if<ir::Extern>(&step)) return node_reads(*e);
  std::vector<std::string> out;
  for (const ir::Node& node : std::get<ir::Kernel>(step).nodes)
    for (const std::string& r : node_reads(node))
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

}  // namespace

void assign_kernel_io(ir::Program& program) {
  std::map<std::string, std::string> roots = alias_roots(program.buffers);
  // Root-resolved reads of each step, and what must survive the program.
  std::vector<std::set<std::string>> reads(program.steps.size());
  for (size_t k = 0; k < program.steps.size(); ++k)
    for (const std::string& r : step_reads(program.steps[k])) {
      reads[k].insert(r);
      reads[k].insert(roots[r]);
    }
  std::set<std::string> escaping;
  for (const std::string& out : program.outputs) {
    escaping.insert(out);
    escaping.insert(roots[out]);
  }
  for (const ir::Buffer& b : program.buffers)
    if (b.kind == ir::Buffer::Kind::Input || b.kind == ir::Buffer::Kind::Output) escaping.insert(b.name);

  for (size_t k = 0; k < program.steps.size(); ++k) {
    auto* kernel = std::get_if<ir::Kernel>(&program.steps[k]);
    if (!kernel) continue;
    kernel->inputs.clear();
    kernel->outputs.clear();
    kernel->locals.clear();
    std::set<std::string> produced;
    for (const ir::Node& node : kernel->nodes) {
      for (const std::string& r : node_reads(node))
        if (!produced.count(r) && std::find(kernel->inputs.begin(), kernel->inputs.end(), r) == kernel->inputs.end())
          kernel->inputs.push_back(r);
      for (const std::string& w : node_writes(node)) produced.insert(w);
    }
    for (const ir::Node& node : kernel->nodes) {
      for (const std::string& w : node_writes(node)) {
        bool used_elsewhere = escaping.count(w) > 0;
        for (size_t other = 0; other < program.steps.size() && !used_elsewhere; ++other)
          used_elsewhere = other != k && reads[other].count(w);
        (used_elsewhere ? kernel->outputs : kernel->locals).push_back(w);
      }
    }
  }
}

}  // namespace cdynamo::sched
