// Dead-code elimination: drops nodes whose outputs nobody returns or reads, and the buffers
// only they wrote. Assumes writes to Input buffers (input mutations) are always live.
#include <algorithm>
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {

void eliminate_dead_code(lower::LoweredGraph& graph, ScheduleStats& stats) {
  std::map<std::string, std::string> roots = alias_roots(graph.buffers);
  std::map<std::string, ir::Buffer::Kind> kinds;
  for (const ir::Buffer& b : graph.buffers) kinds[b.name] = b.kind;
  std::set<std::string> live;
  auto mark = [&](const std::string& name) {
    live.insert(name);
    live.insert(roots[name]);
  };
  for (const std::string& out : graph.outputs) mark(out);

  std::vector<bool> keep(graph.nodes.size(), false);
  for (size_t k = graph.nodes.size(); k-- > 0;) {
    bool needed = false;
    for (const std::string& w : node_writes(graph.nodes[k]))
      needed = needed || live.count(w) || kinds[w] == ir::Buffer::Kind::Input;
    if (!needed) continue;
    keep[k] = true;
    for (const std::string& r : node_reads(graph.nodes[k])) mark(r);
  }

  std::set<std::string> written;
  std::vector<ir::Node> kept;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    if (!keep[k]) {
      ++stats.dead_nodes;
      continue;
    }
    for (const std::string& w : node_writes(graph.nodes[k])) written.insert(w);
    kept.push_back(std::move(graph.nodes[k]));
  }
  graph.nodes = std::move(kept);
  std::erase_if(graph.buffers, [&](const ir::Buffer& b) {
    if (b.kind == ir::Buffer::Kind::Input || b.kind == ir::Buffer::Kind::Constant) return false;
    if (written.count(b.name)) return false;
    // Aliases own nothing: keep those still used whose root survives.
    if (!b.reuses.empty()) return !(live.count(b.name) && (written.count(b.reuses) || kinds[b.reuses] == ir::Buffer::Kind::Input ||
                                                           kinds[b.reuses] == ir::Buffer::Kind::Constant));
    return true;
  });
}

}  // namespace cdynamo::sched
