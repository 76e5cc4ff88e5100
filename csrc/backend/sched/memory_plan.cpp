// The memory plan: frees[k] lists the intermediate buffers whose last use is step k. A root
// lives as long as any alias of it; roots of outputs and inputs/constants/outputs are never freed.
// Assumes aliases were created by lowering (views) or by plan_reuse (in-place storage).
#include <algorithm>
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {

void plan_memory(ir::Program& program) {
  std::map<std::string, size_t> last_use;
  for (size_t k = 0; k < program.steps.size(); ++k) {
    std::vector<std::string> touched;
    if (auto* e = std::get_if<ir::Extern>(&program.steps[k])) {
      touched = node_reads(*e);
      for (const std::string& w : node_writes(*e)) touched.push_back(w);
    } else {
      for (const ir::Node& node : std::get<ir::Kernel>(program.steps[k]).nodes) {
        for (const std::string& r : node_reads(node)) touched.push_back(r);
        for (const std::string& w : node_writes(node)) touched.push_back(w);
      }
    }
    for (const std::string& name : touched) last_use[name] = k;
  }
  std::map<std::string, std::string> roots = alias_roots(program.buffers);
  std::set<std::string> returned(program.outputs.begin(), program.outputs.end());
  // A family (root + aliases) ends at its last member's last use; it never ends if returned.
  std::map<std::string, size_t> family_end;
  std::set<std::string> immortal;
  for (const ir::Buffer& b : program.buffers) {
    const std::string& root = roots[b.name];
    if (b.kind == ir::Buffer::Kind::Output || returned.count(b.name)) immortal.insert(root);
    if (last_use.count(b.name)) family_end[root] = std::max(family_end[root], last_use[b.name]);
  }
  program.frees.assign(program.steps.size(), {});
  for (const ir::Buffer& b : program.buffers) {
    if (b.kind != ir::Buffer::Kind::Intermediate || returned.count(b.name)) continue;
    const std::string& root = roots[b.name];
    const ir::Buffer& root_buffer = program.buffer(root);
    bool root_owned_here = root_buffer.kind == ir::Buffer::Kind::Intermediate;
    size_t end;
    if (root_owned_here && !immortal.count(root)) {
      if (!family_end.count(root)) continue;
      end = family_end[root];  // every member goes when the storage does
    } else {
      // A view of an input, a constant or a returned buffer: drop it after its own last use.
      if (b.name == root || !last_use.count(b.name)) continue;
      end = last_use[b.name];
    }
    program.frees[end].push_back(b.name);
  }
}

}  // namespace cdynamo::sched
