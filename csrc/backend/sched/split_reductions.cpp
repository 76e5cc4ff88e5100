// Splits reductions of a few long rows in two (partial results per chunk of the row, then their
// reduction), so a GPU runs many programs instead of one per row. Assumes static sizes; only
// for targets that want it (ScheduleOptions::split_long_reductions).
#include <unordered_map>
#include "backend/ir/ir_walk.h"
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {
namespace {

constexpr int64_t kFewRows = 128;          // fewer outer points than this leaves a GPU mostly idle
constexpr int64_t kLongRow = 1 << 16;      // shorter rows fit a program's loop well enough
constexpr int64_t kTargetPrograms = 1024;  // partial results wanted in all
constexpr int64_t kMinChunk = 2048;        // elements a partial reduction should still cover

bool splittable(ir::ReductionType type) {
  using RT = ir::ReductionType;
  return type == RT::Sum || type == RT::Prod || type == RT::Max || type == RT::Min || type == RT::Any ||
         type == RT::All || type == RT::XorSum;  // arg reductions would need positions carried along
}

bool static_product(const std::vector<ir::Expr>& sizes, int64_t* out) {
  int64_t n = 1;
  for (const ir::Expr& s : sizes) {
    if (!s.is_const()) return false;
    n *= s.const_value();
  }
  *out = n;
  return true;
}

// The number of chunks: a divisor of n (so no chunk runs past the row's end) giving about
// kTargetPrograms partial results with chunks of at least kMinChunk elements; 1 when none does.
int64_t chunk_count(int64_t rows, int64_t n) {
  int64_t wanted = std::max<int64_t>(2, kTargetPrograms / std::max<int64_t>(rows, 1));
  for (int64_t s = std::min(wanted, n / kMinChunk); s >= 2; --s)
    if (n % s == 0) return s;
  return 1;
}

std::string fresh_name(const lower::LoweredGraph& graph, const std::string& base) {
  for (int k = 0;; ++k) {
    std::string name = base + "_partial" + (k ? std::to_string(k) : "");
    bool used = false;
    for (const ir::Buffer& b : graph.buffers) used = used || b.name == name;
    if (!used) return name;
  }
}

std::string var(char prefix, size_t k) {
  std::string name(1, prefix);
  name += std::to_string(k);
  return name;
}

}  // namespace

void split_long_reductions(lower::LoweredGraph& graph) {
  std::vector<ir::Node> nodes;
  for (ir::Node& node : graph.nodes) {
    auto* r = std::get_if<ir::Reduction>(&node);
    int64_t rows = 0, n = 0;
    if (!r || !splittable(r->type) || !static_product(r->ranges, &rows) || !static_product(r->reduction_ranges, &n) ||
        rows >= kFewRows || n < kLongRow) {
      nodes.push_back(std::move(node));
      continue;
    }
    const int64_t chunks = chunk_count(rows, n);
    if (chunks < 2) {
      nodes.push_back(std::move(node));
      continue;
    }
    const int64_t chunk = n / chunks;
    const size_t outer = r->ranges.size();
    std::string device = "cpu";
    for (const ir::Buffer& b : graph.buffers)
      if (b.name == r->output) device = b.device;
    // Partial results: [ranges..., chunks], contiguous, in the accumulator's dtype.
    ir::Buffer partial;
    partial.name = fresh_name(graph, r->output);
    partial.kind = ir::Buffer::Kind::Intermediate;
    partial.dtype = r->body->dtype;
    partial.sizes = r->ranges;
    partial.sizes.push_back(ir::Expr(chunks));
    partial.strides = ir::contiguous_strides(partial.sizes);
    partial.device = device;
    // The partial reduction: r{j} of the row = unflatten(i{outer} * chunk + r0).
    std::map<std::string, ir::Expr> subst;
    ir::Expr flat = ir::Expr::var(var('i', outer)) * ir::Expr(chunk) + ir::Expr::var("r0");
    ir::Expr stride = 1;
    for (size_t j = r->reduction_ranges.size(); j-- > 0;) {
      subst[var('r', j)] = ir::mod(ir::floordiv(flat, stride), r->reduction_ranges[j]);
      stride = stride * r->reduction_ranges[j];
    }
    std::unordered_map<const ir::ScalarNode*, ir::Scalar> memo;
    ir::Reduction first{partial.name, partial.sizes, {ir::Expr(chunk)}, r->type, ir::rewrite_indices(r->body, subst, memo)};
    // The final reduction over the partial results of each row.
    std::vector<ir::Expr> at;
    for (size_t k = 0; k < outer; ++k) at.push_back(ir::Expr::var(var('i', k)));
    at.push_back(ir::Expr::var("r0"));
    ir::Reduction second{r->output, r->ranges, {ir::Expr(chunks)}, r->type,
                         ir::load(partial.name, partial.dtype, ir::linear_index(at, partial.strides))};
    graph.buffers.push_back(std::move(partial));
    nodes.emplace_back(std::move(first));
    nodes.emplace_back(std::move(second));
  }
  graph.nodes = std::move(nodes);
}

}  // namespace cdynamo::sched
