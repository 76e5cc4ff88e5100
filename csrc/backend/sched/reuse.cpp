// In-place reuse: a kernel output takes over the storage of a kernel input that dies in that
// kernel, when both have one layout and dtype and every read of the input is at the point the
// output is written, before it is written. Assumes kernel IO is assigned; marks Buffer::reuses.
#include <algorithm>
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {
namespace {

struct Lifetimes {
  std::map<std::string, size_t> last_use;  // per buffer name: last step reading or writing it
  std::map<std::string, std::vector<std::string>> family;  // root -> root and its aliases
};

Lifetimes lifetimes_of(const ir::Program& program) {
  Lifetimes life;
  for (size_t k = 0; k < program.steps.size(); ++k) {
    auto touch = [&](const std::string& name) { life.last_use[name] = k; };
    if (auto* e = std::get_if<ir::Extern>(&program.steps[k])) {
      for (const std::string& r : node_reads(*e)) touch(r);
      for (const std::string& w : node_writes(*e)) touch(w);
    } else {
      for (const ir::Node& node : std::get<ir::Kernel>(program.steps[k]).nodes) {
        for (const std::string& r : node_reads(node)) touch(r);
        for (const std::string& w : node_writes(node)) touch(w);
      }
    }
  }
  for (const ir::Buffer& b : program.buffers) life.family[b.reuses.empty() ? b.name : b.reuses].push_back(b.name);
  return life;
}

}  // namespace

void plan_reuse(ir::Program& program, ScheduleStats& stats) {
  std::set<std::string> outputs(program.outputs.begin(), program.outputs.end());
  for (size_t k = 0; k < program.steps.size(); ++k) {
    auto* kernel = std::get_if<ir::Kernel>(&program.steps[k]);
    if (!kernel) continue;
    Lifetimes life = lifetimes_of(program);
    std::map<std::string, std::string> roots = alias_roots(program.buffers);
    Space space{kernel->ranges, kernel->reduction_ranges};
    std::set<std::string> taken;  // donors already given away in this kernel
    for (const std::string& out_name : kernel->outputs) {
      ir::Buffer& out = program.buffer(out_name);
      // Outputs may take a dying intermediate's storage too: the caller gets that tensor.
      if (out.kind == ir::Buffer::Kind::Input || out.kind == ir::Buffer::Kind::Constant || !out.reuses.empty() || out.cached)
        continue;
      if (life.family[out_name].size() > 1) continue;  // something already views it
      // The node writing `out` and its position in the kernel.
      size_t writer = 0;
      while (writer < kernel->nodes.size() && node_writes(kernel->nodes[writer]).front() != out_name) ++writer;
      if (writer == kernel->nodes.size()) continue;
      ir::Expr at = store_index(kernel->nodes[writer], out, space);
      for (const std::string& donor_name : kernel->inputs) {
        const ir::Buffer& donor = program.buffer(donor_name);
        const std::string& root = roots[donor_name];
        const ir::Buffer& root_buffer = program.buffer(root);
        if (root_buffer.kind != ir::Buffer::Kind::Intermediate || root_buffer.cached || root_buffer.extern_view || taken.count(root) ||
            outputs.count(root))
          continue;
        if (donor.dtype != out.dtype || donor.sizes != out.sizes || donor.strides != out.strides || donor.offset != out.offset)
          continue;
        // The whole family must die here, and only `donor` of it may be read in this kernel.
        bool ok = true;
        for (const std::string& member : life.family[root]) {
          if (outputs.count(member) || program.buffer(member).kind != ir::Buffer::Kind::Intermediate) ok = false;
          if (life.last_use.count(member) && life.last_use[member] > k) ok = false;
          if (member != donor_name && std::find(kernel->inputs.begin(), kernel->inputs.end(), member) != kernel->inputs.end())
            ok = false;
        }
        // Reads of the donor: at the output's store point, and none after the writer.
        for (size_t n = 0; n < kernel->nodes.size() && ok; ++n) {
          std::vector<std::string> reads = node_reads(kernel->nodes[n]);
          if (std::find(reads.begin(), reads.end(), donor_name) == reads.end()) continue;
          ok = n <= writer && reads_only_at(kernel->nodes[n], donor_name, at, space);
        }
        if (!ok) continue;
        out.reuses = root;
        taken.insert(root);
        ++stats.reused;
        break;
      }
    }
  }
}

}  // namespace cdynamo::sched
