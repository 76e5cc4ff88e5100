// Fusion: groups nodes into kernels. Each node joins the latest compatible kernel it can move
// up to without crossing a dependency: pointwise chains, producers into reductions, epilogues
// after reductions over the same outer ranges, and independent nodes of the same space.
// Assumes nodes arrive in a valid order; legality is checked by point-locality (see ir.h).
#include <algorithm>
#include "backend/sched/sched_internal.h"
#include "common/error.h"

namespace cdynamo::sched {
namespace {

class Fuser {
 public:
  Fuser(const lower::LoweredGraph& graph, ScheduleStats& stats, const ScheduleOptions& options)
      : graph_(graph), stats_(stats), options_(options) {
    roots_ = alias_roots(graph.buffers);
    for (const ir::Buffer& b : graph.buffers) buffers_[b.name] = &b;
  }

  std::vector<Group> run() {
    for (size_t idx = 0; idx < graph_.nodes.size(); ++idx) place(idx);
    return std::move(groups_);
  }

 private:
  struct Access {
    std::set<std::string> reads, writes;  // root-resolved
  };

  Access access_of(const ir::Node& node) {
    Access a;
    for (const std::string& r : node_reads(node)) a.reads.insert(roots_.at(r));
    for (const std::string& w : node_writes(node)) a.writes.insert(roots_.at(w));
    return a;
  }

  static bool intersects(const std::set<std::string>& a, const std::set<std::string>& b) {
    for (const std::string& x : a)
      if (b.count(x)) return true;
    return false;
  }

  void place(size_t idx) {
    const ir::Node& node = graph_.nodes[idx];
    Access access = access_of(node);
    if (!std::holds_alternative<ir::Extern>(node)) {
      for (size_t g = groups_.size(); g-- > 0;) {
        if (!groups_[g].is_extern && try_join(g, idx)) {
          merge_access(g, access);
          ++stats_.fused_nodes;
          return;
        }
        const Access& ga = access_[g];
        // Cannot move above a group it depends on or that must see the old value of what it writes.
        if (intersects(ga.writes, access.reads) || intersects(ga.writes, access.writes) || intersects(ga.reads, access.writes))
          break;
      }
    }
    Group group;
    group.is_extern = std::holds_alternative<ir::Extern>(node);
    group.members = {idx};
    if (auto* p = std::get_if<ir::Pointwise>(&node)) group.space = {p->ranges, {}};
    if (auto* r = std::get_if<ir::Reduction>(&node)) group.space = {r->ranges, r->reduction_ranges};
    groups_.push_back(std::move(group));
    access_.push_back(std::move(access));
  }

  void merge_access(size_t g, const Access& a) {
    access_[g].reads.insert(a.reads.begin(), a.reads.end());
    access_[g].writes.insert(a.writes.begin(), a.writes.end());
  }

  const ir::Buffer& buffer(const std::string& name) const { return *buffers_.at(name); }

  bool try_join(size_t g, size_t idx) {
    Group& group = groups_[g];
    const ir::Node& node = graph_.nodes[idx];
    Space space = group.space;
    if (auto* r = std::get_if<ir::Reduction>(&node)) {
      Space wanted{r->ranges, r->reduction_ranges};
      if (!space.reduction_ranges.empty() && !(space == wanted)) return false;
      if (space.reduction_ranges.empty()) {
        // A pointwise kernel becomes a reduction kernel if all its nodes fit the new space.
        for (size_t m : group.members)
          if (!fits(graph_.nodes[m], wanted)) return false;
        space = wanted;
      }
    } else if (!fits(node, space)) {
      return false;
    }
    if (!point_local(group, idx, space)) return false;
    group.space = space;
    group.members.push_back(idx);
    return true;
  }

  // Every buffer shared between the node and the group is touched at one kernel point only.
  bool point_local(const Group& group, size_t idx, const Space& space) {
    const ir::Node& node = graph_.nodes[idx];
    std::vector<std::string> node_writes_list = node_writes(node);
    for (size_t m : group.members) {
      const ir::Node& member = graph_.nodes[m];
      for (const std::string& produced : node_writes(member)) {
        // RAW: the node reads what the member wrote, only where it was written.
        if (!reads_at_store(node, member, produced, space)) return false;
      }
      for (const std::string& written : node_writes_list) {
        // WAW is never fused; WAR only at the same point (input mutation of a read input).
        for (const std::string& w : node_writes(member))
          if (roots_.at(w) == roots_.at(written)) return false;
        ir::Expr at = store_index(node, buffer(written), space);
        if (!reads_only_at(member, written, at, space)) return false;
      }
    }
    return true;
  }

  bool reads_at_store(const ir::Node& reader, const ir::Node& producer, const std::string& produced, const Space& space) {
    std::vector<std::string> reads = node_reads(reader);
    if (std::find(reads.begin(), reads.end(), produced) == reads.end()) return true;
    ir::Expr at = store_index(producer, buffer(produced), space);
    return reads_only_at(reader, produced, at, space);
  }

  // Whether `node` can run in a kernel of `space`, under the options.
  bool fits(const ir::Node& node, const Space& space) const {
    if (!kernel_renaming(node, space, nullptr)) return false;
    if (options_.full_pointwise_in_reductions) return true;
    auto* p = std::get_if<ir::Pointwise>(&node);
    return !p || p->ranges == space.ranges;
  }

  const lower::LoweredGraph& graph_;
  ScheduleStats& stats_;
  ScheduleOptions options_;
  std::map<std::string, std::string> roots_;
  std::map<std::string, const ir::Buffer*> buffers_;
  std::vector<Group> groups_;
  std::vector<Access> access_;
};

}  // namespace

std::vector<Group> fuse(const lower::LoweredGraph& graph, ScheduleStats& stats, const ScheduleOptions& options) {
  return Fuser(graph, stats, options).run();
}

}  // namespace cdynamo::sched
