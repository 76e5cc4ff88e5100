// Splits reductions in two (partial results per chunk of the reduced range, then their reduction)
// where one program per row (few long rows) or per column block (outer reductions over few
// columns) leaves a GPU idle. Symbolic sizes: decided at hints, with a chunk count that divides
// the reduced range at every size, or else chunks of ceil(n / chunks) with the last one masked;
// for targets that want it (split_long_reductions).
#include <unordered_map>
#include "backend/ir/ir_walk.h"
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {
namespace {

constexpr int64_t kFewRows = 128;          // fewer outer points than this leaves a GPU mostly idle
constexpr int64_t kLongRow = 1 << 16;      // shorter rows fit a program's loop well enough
constexpr int64_t kTargetPrograms = 1024;  // partial results wanted in all
constexpr int64_t kMinChunk = 2048;        // elements a partial reduction should still cover
// Outer reductions (the reduced range strided, the outputs contiguous) run one program per
// block of this many outputs (the Triton target's x block for them); chunks of the reduced
// range give more programs, each still loading whole blocks of consecutive outputs.
constexpr int64_t kOuterBlock = 32;
constexpr int64_t kMinOuterChunk = 256;
// Programs wanted in all for an outer split: 2048 to 8192 were within 1% of each other on
// bench/outer_reduction_sweep.py's shapes (H200); fewer fell behind.
constexpr int64_t kOuterTargetPrograms = 2048;

bool splittable(ir::ReductionType type) {
  using RT = ir::ReductionType;
  return type == RT::Sum || type == RT::Prod || type == RT::Max || type == RT::Min || type == RT::Any ||
         type == RT::All || type == RT::XorSum;  // arg reductions would need positions carried along
}

// The number of chunks: a divisor of n (so no chunk runs past the row's end; for a symbolic n,
// one that divides it at every size: 4 of 8*s0) giving about `target` partial results
// with chunks of at least min_chunk elements at the hint n_hint; 1 when none does.
// The most chunks worth making: about `target` programs in all, each chunk at least min_chunk
// elements at the hint n_hint.
int64_t chunks_wanted(int64_t programs, int64_t n_hint, int64_t min_chunk, int64_t target) {
  return std::min(std::max<int64_t>(2, target / std::max<int64_t>(programs, 1)), n_hint / min_chunk);
}

int64_t chunk_count(int64_t programs, const ir::Expr& n, int64_t n_hint, int64_t min_chunk,
                    int64_t target = kTargetPrograms) {
  for (int64_t s = chunks_wanted(programs, n_hint, min_chunk, target); s >= 2; --s)
    if (ir::mod(n, ir::Expr(s)).is_const(0)) return s;
  return 1;
}

// Whether the reduced range is strided in the reduction's loads (the first load that moves with
// the innermost reduced variable decides, as the Triton target's launch choice does on the
// flattened range): then outputs are the contiguous side. Several reduced dimensions (batch
// norm's N, H, W) count as well as one.
bool outer_reduction(const ir::Reduction& r) {
  if (r.reduction_ranges.empty()) return false;
  const std::string innermost = "r" + std::to_string(r.reduction_ranges.size() - 1);
  bool decided = false, outer = false;
  ir::visit_leaves(r.body, [&](const ir::ScalarNode& leaf) {
    if (decided || leaf.op == ir::ScalarOp::Index) return;
    ir::Affine a = ir::affine_in(leaf.index, innermost);
    if (!a.ok || !a.coef.is_const() || a.coef.const_value() == 0) return;
    decided = true;
    outer = a.coef.const_value() != 1;
  });
  return outer;
}

// How to split r, or chunks = 0: a row split keeps the outputs' order and adds the chunk as the
// innermost range; an outer split puts the chunk outermost, so consecutive programs' lanes still
// walk consecutive outputs.
struct Split {
  int64_t chunks = 0;
  ir::Expr range = 0;  // elements reduced per output
  bool outer = false;
  bool masked = false;  // chunks do not divide the range: the last chunk runs past its end
};

Split choose_split(const ir::Reduction& r, const std::vector<ir::Symbol>& symbols) {
  if (!splittable(r.type)) return {};
  const ir::Expr n = ir::product(r.reduction_ranges);
  const int64_t rows = ir::size_hint(ir::product(r.ranges), symbols), n_hint = ir::size_hint(n, symbols);
  // Outer first: a strided reduced range split per row would leave each program reading one
  // element per cache line (batch norm's backward over channels-last N, H, W: 16 programs' worth
  // of bandwidth), where chunks outermost keep every load a block of consecutive outputs.
  if (outer_reduction(r)) {
    const int64_t programs = (rows + kOuterBlock - 1) / kOuterBlock;
    if (programs * 2 > kOuterTargetPrograms || n_hint < 2 * kMinOuterChunk) return {};
    int64_t chunks = chunk_count(programs, n, n_hint, kMinOuterChunk, kOuterTargetPrograms);
    if (chunks >= 2) return Split{chunks, n, true};
    // No count divides a symbolic range at every size (a bare symbol, a product of two): chunks
    // of ceil(n / chunks), the last one masked.
    chunks = n.is_const() ? 1 : chunks_wanted(programs, n_hint, kMinOuterChunk, kOuterTargetPrograms);
    return chunks >= 2 ? Split{chunks, n, true, true} : Split{};
  }
  if (rows < kFewRows && n_hint >= kLongRow) {
    int64_t chunks = chunk_count(rows, n, n_hint, kMinChunk);
    if (chunks >= 2) return Split{chunks, n, false};
    chunks = n.is_const() ? 1 : chunks_wanted(rows, n_hint, kMinChunk, kTargetPrograms);
    return chunks >= 2 ? Split{chunks, n, false, true} : Split{};
  }
  return {};
}

// body where position < range, else the identity of a sum, product or xor-sum (max, min, any
// and all read a duplicate there, which changes nothing).
ir::Scalar without_positions_past(const ir::Scalar& body, ir::ReductionType type, const ir::Expr& position,
                                  const ir::Expr& range) {
  using RT = ir::ReductionType;
  if (type != RT::Sum && type != RT::Prod && type != RT::XorSum) return body;
  ir::Scalar inside = ir::binary(ir::ScalarOp::Lt, ir::index_value(position, ir::DType::Int64),
                                 ir::index_value(range, ir::DType::Int64), ir::DType::Bool);
  const int64_t identity = type == RT::Prod ? 1 : 0;
  ir::Scalar neutral = ir::is_floating(body->dtype) ? ir::constant(static_cast<double>(identity), body->dtype)
                                                    : ir::constant_int(identity, body->dtype);
  return ir::where(inside, body, neutral);
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

// Merges adjacent reduced dimensions that every index walks as one (r{j}'s coefficient is
// r{j+1}'s times r{j+1}'s size in each load and index leaf, as N, H, W of a channels-last
// tensor): the split then cuts one flat range, and its loads stay linear in r0. Unflattening
// several dimensions instead leaves divisions and modulos the simplifier cannot always fold
// back (a chunk that is a multiple of W turns (c + r0) % W into r0 % W), and each load then
// pays them.
ir::Reduction merge_linear_reduced_dims(const ir::Reduction& r) {
  const size_t n = r.reduction_ranges.size();
  if (n < 2) return r;
  for (const ir::Expr& size : r.reduction_ranges)
    if (!size.is_const()) return r;
  std::vector<bool> joins_next(n, true);  // joins_next[j]: r{j} merges with r{j+1}
  joins_next[n - 1] = false;
  ir::visit_leaves(r.body, [&](const ir::ScalarNode& leaf) {
    for (size_t j = 0; j + 1 < n; ++j) {
      if (!joins_next[j]) continue;
      ir::Affine outer = ir::affine_in(leaf.index, var('r', j));
      ir::Affine inner = ir::affine_in(leaf.index, var('r', j + 1));
      joins_next[j] = outer.ok && inner.ok && outer.coef.is_const() && inner.coef.is_const() &&
                      outer.coef.const_value() == inner.coef.const_value() * r.reduction_ranges[j + 1].const_value();
    }
  });
  // Each group's innermost variable becomes the group's flat variable; the others vanish (their
  // part of every index is the flat variable's, by the check above).
  std::map<std::string, ir::Expr> subst;
  std::vector<ir::Expr> ranges;
  int64_t group_size = 1;
  for (size_t j = 0; j < n; ++j) {
    group_size *= r.reduction_ranges[j].const_value();
    if (joins_next[j]) {
      subst[var('r', j)] = ir::Expr(0);
      continue;
    }
    subst[var('r', j)] = ir::Expr::var(var('r', ranges.size()));
    ranges.push_back(ir::Expr(group_size));
    group_size = 1;
  }
  if (ranges.size() == n) return r;
  std::unordered_map<const ir::ScalarNode*, ir::Scalar> memo;
  return ir::Reduction{r.output, r.ranges, std::move(ranges), r.type, ir::rewrite_indices(r.body, subst, memo)};
}

}  // namespace

void split_long_reductions(lower::LoweredGraph& graph) {
  std::vector<ir::Node> nodes;
  for (ir::Node& node : graph.nodes) {
    auto* r = std::get_if<ir::Reduction>(&node);
    const Split split = r ? choose_split(*r, graph.symbols) : Split{};
    if (split.chunks < 2) {
      nodes.push_back(std::move(node));
      continue;
    }
    *r = merge_linear_reduced_dims(*r);
    const int64_t chunks = split.chunks;
    // exact when chunks divides the range; else ceil(range / chunks)
    const ir::Expr chunk = ir::floordiv(split.masked ? split.range + ir::Expr(chunks - 1) : split.range, ir::Expr(chunks));
    const size_t outer = r->ranges.size();
    std::string device = "cpu";
    for (const ir::Buffer& b : graph.buffers)
      if (b.name == r->output) device = b.device;
    // Partial results, contiguous, in the accumulator's dtype: [ranges..., chunks] for a row
    // split, [chunks, ranges...] for an outer one.
    ir::Buffer partial;
    partial.name = fresh_name(graph, r->output);
    partial.kind = ir::Buffer::Kind::Intermediate;
    partial.dtype = r->body->dtype;
    partial.sizes = r->ranges;
    if (split.outer) partial.sizes.insert(partial.sizes.begin(), ir::Expr(chunks));
    else partial.sizes.push_back(ir::Expr(chunks));
    partial.strides = ir::contiguous_strides(partial.sizes);
    partial.device = device;
    // The partial reduction: r{j} of the original = unflatten(chunk index * chunk + r0); for an
    // outer split the chunk index is i0 and the original i{k} become i{k+1}.
    std::map<std::string, ir::Expr> subst;
    const std::string chunk_var = split.outer ? var('i', 0) : var('i', outer);
    if (split.outer)
      for (size_t k = 0; k < outer; ++k) subst[var('i', k)] = ir::Expr::var(var('i', k + 1));
    const ir::Expr unclamped = ir::Expr::var(chunk_var) * chunk + ir::Expr::var("r0");
    // Past the range's end (masked splits) a position reads the range's last element: memory
    // that exists, and a duplicate that changes no max, min, any or all; sums mask it out.
    ir::Expr flat = split.masked ? ir::min(unclamped, split.range - ir::Expr(1)) : unclamped;
    ir::Expr stride = 1;
    for (size_t j = r->reduction_ranges.size(); j-- > 0;) {
      ir::Expr position = ir::floordiv(flat, stride);  // flat < the whole range: r0 needs no mod
      subst[var('r', j)] = j == 0 ? position : ir::mod(position, r->reduction_ranges[j]);
      stride = stride * r->reduction_ranges[j];
    }
    std::unordered_map<const ir::ScalarNode*, ir::Scalar> memo;
    ir::Scalar body = ir::rewrite_indices(r->body, subst, memo);
    if (split.masked) body = without_positions_past(body, r->type, unclamped, split.range);
    ir::Reduction first{partial.name, partial.sizes, {chunk}, r->type, body};
    // The final reduction over the partial results of each output.
    std::vector<ir::Expr> at;
    for (size_t k = 0; k < outer; ++k) at.push_back(ir::Expr::var(var('i', k)));
    if (split.outer) at.insert(at.begin(), ir::Expr::var("r0"));
    else at.push_back(ir::Expr::var("r0"));
    ir::Reduction second{r->output, r->ranges, {ir::Expr(chunks)}, r->type,
                         ir::load(partial.name, partial.dtype, ir::linear_index(at, partial.strides))};
    graph.buffers.push_back(std::move(partial));
    nodes.emplace_back(std::move(first));
    nodes.emplace_back(std::move(second));
  }
  graph.nodes = std::move(nodes);
}

}  // namespace cdynamo::sched
