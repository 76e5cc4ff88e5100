// One ir::Kernel as a Triton kernel: flat x (outer) and r (reduction) index tiles, nodes as tile
// computations, persistent reductions (a row in one tile) or looped ones (r blocks, accumulators).
// Assumes the scheduler's contract (ir::Kernel): reads of in-kernel buffers are at the producing point.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include "backend/codegen/triton/flat_index.h"
#include "backend/codegen/triton/launch_heuristics.h"
#include "backend/codegen/triton/triton_codegen.h"
#include "backend/codegen/triton/value_emitter.h"
#include "backend/ir/ir_walk.h"
#include "common/error.h"

namespace cdynamo::codegen::triton {
namespace {

using ir::DType;
using ir::Expr;

enum class NodeKind { Outer, Full, Reduction };

// One node of the kernel with its indices rewritten over the flat tiles (xindex, rindex).
struct TileNode {
  NodeKind kind = NodeKind::Outer;
  std::string output;
  Expr store_index;
  ir::Scalar body;
  ir::ReductionType reduction = ir::ReductionType::Sum;
  std::set<std::string> reads;  // buffers its body loads
  int loop = -1;                // looped reductions: which r loop it runs in
};

// "i3", "r0": the IR's loop variable names.
std::string loop_var(char prefix, size_t k) {
  std::string name(1, prefix);
  name += std::to_string(k);
  return name;
}

// Above any size a symbol takes: the range the index arithmetic may assume for one.
constexpr int64_t kSymbolBound = int64_t{1} << 62;
// Inputs beyond this many bytes cannot stay in a GPU's L2 (50 MB on an H200) for a later kernel:
// a single pass over them loads evict_first (measured: bench/outer_reduction_sweep.py).
constexpr int64_t kStreamingBytes = int64_t{64} << 20;

// var_k = (flat // stride_k) % size_k over dims in order (the last varies fastest); the first
// needs no modulo (live lanes have flat < the product of the sizes). With a dimension of size 0
// there is no point at all (no lane is live): every variable is 0.
std::map<std::string, Expr> unflatten(const std::vector<std::pair<std::string, Expr>>& dims, const std::string& flat) {
  std::map<std::string, Expr> out;
  for (const auto& [var, size] : dims)
    if (size.is_const(0)) {
      for (const auto& [v, s] : dims) out[v] = Expr(0);
      return out;
    }
  Expr stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const auto& [var, size] = dims[k];
    Expr position = ir::floordiv(Expr::var(flat), stride);
    out[var] = size.is_const(1) ? Expr(0) : k == 0 ? position : ir::mod(position, size);
    stride = stride * size;
  }
  return out;
}

// Outer dims ordered by the strides of the first stored output, largest outermost, so the flat
// x index walks it contiguously (a channels-last output is walked N, H, W, C).
std::vector<size_t> outer_order(const ir::Program& program, const ir::Kernel& kernel) {
  std::vector<size_t> order(kernel.ranges.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  for (const ir::Node& node : kernel.nodes) {
    const std::string* out = nullptr;
    if (auto* p = std::get_if<ir::Pointwise>(&node); p && p->ranges.size() == kernel.ranges.size()) out = &p->output;
    if (auto* r = std::get_if<ir::Reduction>(&node)) out = &r->output;
    if (!out || std::find(kernel.outputs.begin(), kernel.outputs.end(), *out) == kernel.outputs.end()) continue;
    const ir::Buffer& b = program.buffer(*out);
    if (b.strides.size() != order.size()) return order;
    std::vector<int64_t> strides;
    for (const Expr& s : b.strides) {
      if (!s.is_const()) return order;
      strides.push_back(s.const_value());
    }
    // Size-1 dimensions have no stride to speak of (their variable is 0): they go first.
    std::stable_partition(order.begin(), order.end(), [&](size_t k) { return kernel.ranges[k].is_const(1); });
    auto sized = std::find_if(order.begin(), order.end(), [&](size_t k) { return !kernel.ranges[k].is_const(1); });
    std::stable_sort(sized, order.end(), [&](size_t a, size_t c) { return strides[a] > strides[c]; });
    return order;
  }
  return order;
}

// A pointwise kernel whose store walks memory along one dimension (A) while a load walks it
// along another (B, a transpose or permute) runs on 2-D tiles, rows over the other dimensions
// with B innermost, columns over A: then both the loads and the stores can be coalesced (Triton
// moves the tile between layouts through shared memory). {A, B} positions in kernel.ranges.
// Symbolic sides qualify by their hints: the tiles' masks take the sizes as arguments.
std::optional<std::pair<size_t, size_t>> transpose_tiling(const ir::Program& program, const ir::Kernel& kernel,
                                                          const std::vector<size_t>& order) {
  constexpr int64_t kMinSide = 16;
  if (!kernel.reduction_ranges.empty() || order.size() < 2) return std::nullopt;
  for (const ir::Node& node : kernel.nodes) {
    const auto* p = std::get_if<ir::Pointwise>(&node);
    if (!p || p->ranges.size() != kernel.ranges.size()) return std::nullopt;
  }
  auto side_ok = [&](size_t k) { return ir::size_hint(kernel.ranges[k], program.symbols) >= kMinSide; };
  const size_t a = order.back();
  if (!side_ok(a)) return std::nullopt;
  std::optional<size_t> b;
  for (const ir::Node& node : kernel.nodes) {
    ir::visit_leaves(std::get<ir::Pointwise>(node).body, [&](const ir::ScalarNode& leaf) {
      if (b || leaf.op == ir::ScalarOp::Index || !leaf.indirect.empty()) return;
      for (size_t k = 0; k < kernel.ranges.size(); ++k) {
        ir::Affine along = ir::affine_in(leaf.index, loop_var('i', k));
        if (k != a && along.ok && along.coef.is_const(1) && side_ok(k)) b = k;
      }
    });
  }
  if (!b) return std::nullopt;
  return std::make_pair(a, *b);
}

// Every index expression of the kernel's nodes over its outer variables i0..: loads, index
// values and stores (a store's from its buffer's layout).
std::vector<Expr> outer_indices(const ir::Program& program, const ir::Kernel& kernel) {
  std::vector<Expr> out;
  for (const ir::Node& node : kernel.nodes) {
    const ir::Scalar* body = nullptr;
    const std::string* output = nullptr;
    size_t rank = 0;
    if (const auto* p = std::get_if<ir::Pointwise>(&node)) body = &p->body, output = &p->output, rank = p->ranges.size();
    if (const auto* r = std::get_if<ir::Reduction>(&node)) body = &r->body, output = &r->output, rank = r->ranges.size();
    if (!body) continue;
    ir::visit_leaves(*body, [&](const ir::ScalarNode& leaf) { out.push_back(leaf.index); });
    std::vector<Expr> vars;
    for (size_t k = 0; k < rank; ++k) vars.push_back(Expr::var(loop_var('i', k)));
    const ir::Buffer& b = program.buffer(*output);
    out.push_back(ir::linear_index(vars, b.strides, b.offset));
  }
  return out;
}

// Symbolic sizes: adjacent outer dimensions that every access walks as one run (the outer's
// coefficient is the inner's times the inner's size, in every index) become one, as the C++
// target's loops merge them: fewer divisions by symbols also in the indices that flat_index.h
// cannot build run by run (views that divide a loop variable). Returns the variables set to 0
// (each merged into its inner neighbour, which now ranges over both); dims is updated in place.
std::map<std::string, Expr> merge_contiguous_dims(std::vector<std::pair<std::string, Expr>>& dims, std::vector<Expr> indices) {
  std::map<std::string, Expr> zeroed;
  for (size_t k = dims.size(); k-- > 1;) {
    auto& [outer_var, outer_size] = dims[k - 1];
    const auto& [inner_var, inner_size] = dims[k];
    if (!ir::walks_as_one(indices, outer_var, inner_var, inner_size)) continue;
    std::map<std::string, Expr> subst{{outer_var, Expr(0)}};
    for (Expr& e : indices) e = e.substitute(subst);
    zeroed[outer_var] = Expr(0);
    dims[k].second = outer_size * inner_size;
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k - 1));
  }
  return zeroed;
}

class KernelEmitter {
 public:
  KernelEmitter(const ir::Program& program, const ir::Kernel& kernel) : program_(program), kernel_(kernel) {}
  GeneratedTritonKernel run();

 private:
  void collect_nodes();
  void choose_index_width();
  void collect_symbol_params();
  void assign_loops();
  void emit_header();
  void emit_node(ValueEmitter& ve, TileNode& node);
  void emit_persistent_reduction(ValueEmitter& ve, TileNode& node);
  void emit_loops(ValueEmitter& ve);
  // Whether node's output must go to memory: a kernel output, or a local read outside its loop.
  bool needs_store(const TileNode& node) const;
  // Bytes of the kernel's inputs at the symbols' hints.
  int64_t input_bytes() const;

  const ir::Program& program_;
  const ir::Kernel& kernel_;
  GeneratedTritonKernel out_;
  PyWriter w_;
  TileContext tiles_;
  std::vector<TileNode> nodes_;
  std::map<std::string, std::string> pointers_;  // buffer -> its pointer parameter
  std::map<std::string, DType> dtypes_;
  Expr xnumel_expr_ = 1, rnumel_expr_ = 1;  // element counts (expressions of symbolic sizes)
  int64_t xnumel_ = 1, rnumel_ = 1;          // their values at the symbols' hints (heuristics)
  bool persistent_ = true;
  bool tiled_ = false;  // a pointwise kernel on 2-D tiles (transpose_tiling)
  int loops_ = 0;
};

int64_t KernelEmitter::input_bytes() const {
  int64_t bytes = 0;
  for (const std::string& name : kernel_.inputs) {
    const ir::Buffer& b = program_.buffer(name);
    bytes += ir::size_hint(ir::product(b.sizes), program_.symbols) * ir::dtype_size(b.dtype);
  }
  return bytes;
}

void KernelEmitter::collect_nodes() {
  std::vector<std::pair<std::string, Expr>> xdims, rdims;
  std::vector<size_t> order = outer_order(program_, kernel_);
  std::optional<std::pair<size_t, size_t>> tiling = transpose_tiling(program_, kernel_, order);
  if (tiling) {  // rows: every dimension but A, B innermost; columns: A
    const auto [a, b] = *tiling;
    for (size_t k : order)
      if (k != a && k != b) xdims.emplace_back(loop_var('i', k), kernel_.ranges[k]);
    xdims.emplace_back(loop_var('i', b), kernel_.ranges[b]);
    tiled_ = true;
  } else {
    for (size_t k : order) xdims.emplace_back(loop_var('i', k), kernel_.ranges[k]);
  }
  std::map<std::string, Expr> merged;  // outer variables merged into their inner neighbour
  const bool symbolic = std::any_of(xdims.begin(), xdims.end(), [](const auto& d) { return !d.second.is_const(); });
  if (symbolic && !tiled_) merged = merge_contiguous_dims(xdims, outer_indices(program_, kernel_));
  for (size_t k = 0; k < kernel_.reduction_ranges.size(); ++k) rdims.emplace_back(loop_var('r', k), kernel_.reduction_ranges[k]);
  for (const auto& [var, size] : xdims) xnumel_expr_ = xnumel_expr_ * size;
  for (const Expr& s : kernel_.reduction_ranges) rnumel_expr_ = rnumel_expr_ * s;
  if (tiled_) rnumel_expr_ = kernel_.ranges[tiling->first];
  xnumel_ = ir::size_hint(xnumel_expr_, program_.symbols);
  rnumel_ = ir::size_hint(rnumel_expr_, program_.symbols);
  // A reduction over no dimension (of a 0-d tensor) still reduces: one r lane.
  tiles_.has_r = !kernel_.reduction_ranges.empty() || tiled_;
  for (const ir::Node& node : kernel_.nodes) tiles_.has_r = tiles_.has_r || std::holds_alternative<ir::Reduction>(node);
  auto tile_range = [](const Expr& numel) { return numel.is_const() ? Expr(std::max<int64_t>(numel.const_value(), 1)) : numel; };
  tiles_.ranges = {{tiles_.x_var, tile_range(xnumel_expr_)}, {tiles_.r_var, tile_range(rnumel_expr_)}};
  // Size symbols are non-negative: index arithmetic over them may use Triton's // and %.
  for (const ir::Symbol& symbol : program_.symbols) tiles_.ranges[symbol.name] = Expr(kSymbolBound);
  std::map<std::string, Expr> outer = unflatten(xdims, tiles_.x_var);
  outer.insert(merged.begin(), merged.end());
  if (tiled_) outer[loop_var('i', tiling->first)] = Expr::var(tiles_.r_var);
  std::map<std::string, Expr> reduce = outer, full = outer;
  std::map<std::string, Expr> r = unflatten(rdims, tiles_.r_var);
  const size_t n = kernel_.ranges.size();
  for (size_t j = 0; j < rdims.size(); ++j) {
    reduce[loop_var('r', j)] = r[loop_var('r', j)];
    full[loop_var('i', n + j)] = r[loop_var('r', j)];
  }
  auto simplified = [&](std::map<std::string, Expr> m) {
    for (auto& [var, e] : m) e = ir::simplify(e, tiles_.ranges);
    return m;
  };
  outer = simplified(outer), reduce = simplified(reduce), full = simplified(full);
  // Indices go over the flat tiles run by run (flat_index.h); the maps above are the fallback.
  std::vector<FlatAxis> outer_axes{{tiles_.x_var, xdims}};
  if (tiled_) outer_axes.push_back({tiles_.r_var, {{loop_var('i', tiling->first), kernel_.ranges[tiling->first]}}});
  std::vector<FlatAxis> reduce_axes = outer_axes, full_axes = outer_axes;
  reduce_axes.push_back({tiles_.r_var, rdims});
  full_axes.push_back({tiles_.r_var, {}});
  for (size_t j = 0; j < rdims.size(); ++j) full_axes.back().dims.emplace_back(loop_var('i', n + j), rdims[j].second);
  auto flat = [&](const std::vector<FlatAxis>& axes, const std::map<std::string, Expr>& fallback) {
    return [this, &merged, axes, fallback](const Expr& index) {
      return ir::simplify(flatten_index(index.substitute(merged), axes, fallback), tiles_.ranges);
    };
  };
  const std::function<Expr(const Expr&)> to_outer = flat(outer_axes, outer), to_reduce = flat(reduce_axes, reduce),
                                         to_full = flat(full_axes, full);
  std::unordered_map<const ir::ScalarNode*, ir::Scalar> memo_outer, memo_reduce, memo_full;
  for (const ir::Node& node : kernel_.nodes) {
    TileNode t;
    if (const auto* p = std::get_if<ir::Pointwise>(&node)) {
      bool is_full = p->ranges.size() > n;
      t.kind = is_full || tiled_ ? NodeKind::Full : NodeKind::Outer;
      const auto& to_tiles = is_full ? to_full : to_outer;
      t.output = p->output;
      t.body = ir::rewrite_indices(p->body, to_tiles, is_full ? memo_full : memo_outer);
      std::vector<Expr> index;
      for (size_t k = 0; k < p->ranges.size(); ++k) index.push_back(Expr::var(loop_var('i', k)));
      const ir::Buffer& b = program_.buffer(p->output);
      t.store_index = to_tiles(ir::linear_index(index, b.strides, b.offset));
    } else if (const auto* red = std::get_if<ir::Reduction>(&node)) {
      t.kind = NodeKind::Reduction;
      t.output = red->output;
      t.reduction = red->type;
      t.body = ir::rewrite_indices(red->body, to_reduce, memo_reduce);
      std::vector<Expr> index;
      for (size_t k = 0; k < red->ranges.size(); ++k) index.push_back(Expr::var(loop_var('i', k)));
      const ir::Buffer& b = program_.buffer(red->output);
      t.store_index = to_outer(ir::linear_index(index, b.strides, b.offset));
    } else {
      throw InternalError("triton codegen: an extern call inside kernel " + kernel_.name);
    }
    t.store_index = ir::simplify(t.store_index, tiles_.ranges);
    ir::visit_leaves(t.body, [&](const ir::ScalarNode& leaf) {
      if (!leaf.buffer.empty()) t.reads.insert(leaf.buffer);
    });
    nodes_.push_back(std::move(t));
  }
}

// 64-bit indices when an element count or an offset into any buffer reaches 2^31. With symbolic
// sizes the choice is made at the hints, and a 32-bit kernel lists what the runtime checks on
// each call (narrow_limits): a call past 2^31 is refused rather than wrapped around.
void KernelEmitter::choose_index_width() {
  constexpr int64_t kLimit = int64_t{1} << 31;
  std::vector<Expr> limits = {xnumel_expr_ * rnumel_expr_, xnumel_expr_};
  for (const auto* list : {&kernel_.inputs, &kernel_.outputs, &kernel_.locals})
    for (const std::string& name : *list) limits.push_back(ir::element_extent_expr(program_.buffer(name)));
  bool wide = false;
  for (const Expr& e : limits) wide = wide || ir::size_hint(e, program_.symbols) >= kLimit;
  out_.index64 = wide;  // the tiles widen from the program id on (emit_header)
  if (!wide)
    for (const Expr& e : limits)
      if (!e.is_const()) out_.narrow_limits.push_back(e);
}

// The size symbols the kernel's index arithmetic reads: parameters after the numels.
void KernelEmitter::collect_symbol_params() {
  std::set<std::string> used;
  auto note = [&](const Expr& e) {
    for (const std::string& v : e.free_vars()) used.insert(v);
  };
  for (const TileNode& node : nodes_) {
    note(node.store_index);
    ir::visit_leaves(node.body, [&](const ir::ScalarNode& leaf) {
      note(leaf.index);
      for (const Expr& size : leaf.indirect_sizes) note(size);
    });
  }
  for (const ir::Symbol& symbol : program_.symbols)
    if (used.count(symbol.name)) out_.symbol_params.push_back(symbol.name);
}

bool KernelEmitter::needs_store(const TileNode& node) const {
  if (std::find(kernel_.outputs.begin(), kernel_.outputs.end(), node.output) != kernel_.outputs.end()) return true;
  if (persistent_ || node.kind == NodeKind::Outer || node.kind == NodeKind::Reduction) return false;
  for (const TileNode& other : nodes_)
    if (other.reads.count(node.output) && other.loop != node.loop) return true;
  return false;
}

// Looped reductions: consecutive full and reduction nodes share an r loop until one reads a
// reduction finished in the open loop; an outer node closes the open loop.
void KernelEmitter::assign_loops() {
  int open = -1;
  std::set<std::string> reduced_in_open;
  for (TileNode& node : nodes_) {
    if (node.kind == NodeKind::Outer) {
      open = -1;
      reduced_in_open.clear();
      continue;
    }
    bool depends = false;
    for (const std::string& b : node.reads) depends = depends || reduced_in_open.count(b);
    if (open < 0 || depends) {
      open = loops_++;
      reduced_in_open.clear();
    }
    node.loop = open;
    if (node.kind == NodeKind::Reduction) reduced_in_open.insert(node.output);
  }
}

void KernelEmitter::emit_header() {
  std::map<std::string, std::string> pointers;
  std::map<std::string, DType> dtypes;
  std::vector<std::string> params;
  for (const auto* list : {&kernel_.inputs, &kernel_.outputs, &kernel_.locals})
    for (const std::string& name : *list) {
      std::string p = "p" + std::to_string(params.size());
      const ir::Buffer& b = program_.buffer(name);
      pointers[name] = p;
      dtypes[name] = b.dtype;
      params.push_back(p);
      out_.args.push_back({p, pointer_signature(b.dtype), name});
    }
  if (out_.error_flag) {
    params.push_back("cd_error");
    out_.args.push_back({"cd_error", "*i32", ""});
  }
  const std::string numel_type = out_.index64 ? "i64" : "i32";
  params.push_back("xnumel");
  out_.args.push_back({"xnumel", numel_type, ""});
  if (tiles_.has_r) {
    params.push_back("rnumel");
    out_.args.push_back({"rnumel", numel_type, ""});
  }
  for (const std::string& symbol : out_.symbol_params) {
    params.push_back(symbol);
    out_.args.push_back({symbol, numel_type, ""});
  }
  params.push_back("XBLOCK: tl.constexpr");
  if (tiles_.has_r) params.push_back("RBLOCK: tl.constexpr");
  std::string signature;
  for (size_t k = 0; k < params.size(); ++k) signature += (k ? ", " : "") + params[k];
  w_.line("");
  w_.line("@triton.jit");
  w_.open(std::string("def ") + kFunctionName + "(" + signature + ")");
  w_.line(out_.index64 ? "xoffset = tl.program_id(0).to(tl.int64) * XBLOCK" : "xoffset = tl.program_id(0) * XBLOCK");
  w_.line(tiles_.has_r ? "xindex = xoffset + tl.arange(0, XBLOCK)[:, None]" : "xindex = xoffset + tl.arange(0, XBLOCK)");
  w_.line("xmask = xindex < xnumel");
  if (tiled_) {
    w_.line("rindex = tl.program_id(1) * RBLOCK + tl.arange(0, RBLOCK)[None, :]");
    w_.line("rmask = rindex < rnumel");
  } else if (tiles_.has_r && persistent_) {
    w_.line("rindex = tl.arange(0, RBLOCK)[None, :]");
    w_.line("rmask = rindex < rnumel");
  }
  pointers_ = std::move(pointers);
  dtypes_ = std::move(dtypes);
}

void KernelEmitter::emit_node(ValueEmitter& ve, TileNode& node) {
  const ir::Buffer& b = program_.buffer(node.output);
  unsigned axes = node.kind == NodeKind::Full ? (kXAxis | kRAxis) : kXAxis;
  Value v = ve.cast(ve.emit(node.body), b.dtype);
  if (needs_store(node)) ve.store(node.output, node.store_index, v, axes);
  ve.produced(node.output, node.store_index, v);
}

// The identity of a reduction in the accumulator's dtype, as a Python literal.
std::string identity(ir::ReductionType type, DType dtype) {
  using RT = ir::ReductionType;
  const bool fl = ir::is_floating(dtype);
  auto int_limit = [&](bool lowest) -> std::string {
    switch (dtype) {
      case DType::Bool: return lowest ? "0" : "1";
      case DType::UInt8: return lowest ? "0" : "255";
      case DType::Int8: return lowest ? "-128" : "127";
      case DType::Int16: return lowest ? "-32768" : "32767";
      case DType::Int32: return lowest ? "-2147483648" : "2147483647";
      default: return lowest ? "-9223372036854775807 - 1" : "9223372036854775807";
    }
  };
  switch (type) {
    case RT::Sum:
    case RT::XorSum:
    case RT::Any: return fl ? "0.0" : "0";
    case RT::Prod:
    case RT::All: return fl ? "1.0" : "1";
    case RT::Max:
    case RT::ArgMax: return fl ? "-CD_INF" : int_limit(true);
    case RT::Min:
    case RT::ArgMin: return fl ? "CD_INF" : int_limit(false);
  }
  return "0";
}

// The elementwise combine of a reduction (a prelude helper).
const char* combine_function(ir::ReductionType type) {
  using RT = ir::ReductionType;
  switch (type) {
    case RT::Sum: return "cd_add";
    case RT::Prod: return "cd_mul";
    case RT::Max: return "cd_maximum";
    case RT::Min: return "cd_minimum";
    case RT::Any: return "cd_or";
    case RT::All: return "cd_and";
    case RT::XorSum: return "cd_xor";
    case RT::ArgMax: return "cd_argmax_combine";
    case RT::ArgMin: return "cd_argmin_combine";
  }
  return "cd_add";
}

// The row-combining expression of a reduction's tile over axis 1. Sums of 32- and 64-bit types
// use tl.sum (a tree on the GPU; NumPy's pairwise sum in the interpreter), which would widen
// narrower integers; the other reductions and types combine with the prelude's helpers.
std::string reduce_rows(ir::ReductionType type, DType dtype, const std::string& tile, const char* combine) {
  bool wide = dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Int32 || dtype == DType::Int64 ||
              dtype == DType::Float16 || dtype == DType::BFloat16;  // (held as float32)
  if (type == ir::ReductionType::Sum && wide) return "tl.sum(" + tile + ", 1)";
  return "tl.reduce(" + tile + ", 1, " + combine + ")";
}

bool is_arg_reduction(ir::ReductionType type) {
  return type == ir::ReductionType::ArgMax || type == ir::ReductionType::ArgMin;
}

constexpr const char* kNoPosition = "9223372036854775807";  // masked lanes never win an arg reduction

// The tile the reduction combines: the body where the lanes are live, the identity elsewhere.
Value masked_body(ValueEmitter& ve, const TileNode& node) {
  Value v = ve.emit(node.body);
  std::string ident = identity(node.reduction, v.dtype);
  std::string full = "tl.full([], " + ident + ", " + compute_type(v.dtype) + ")";
  return ve.define("tl.where(xmask & rmask, " + v.name + ", " + full + ")", v.dtype, kXAxis | kRAxis);
}

Value positions(ValueEmitter& ve) {
  return ve.define("tl.where(xmask & rmask, (rindex + 0 * xindex).to(tl.int64), " + std::string(kNoPosition) + ")",
                   DType::Int64, kXAxis | kRAxis);
}

}  // namespace

void KernelEmitter::emit_persistent_reduction(ValueEmitter& ve, TileNode& node) {
  Value values = masked_body(ve, node);
  const char* combine = combine_function(node.reduction);
  Value result;
  if (is_arg_reduction(node.reduction)) {
    Value where = positions(ve);
    std::string pair = w_.fresh("t");
    w_.line("_, " + pair + " = tl.reduce((" + values.name + ", " + where.name + "), 1, " + combine + ")");
    result = ve.define(pair + "[:, None]", DType::Int64, kXAxis);
  } else {
    result = ve.define(reduce_rows(node.reduction, values.dtype, values.name, combine) + "[:, None]", values.dtype, kXAxis);
  }
  const ir::Buffer& b = program_.buffer(node.output);
  result = ve.cast(result, b.dtype);
  if (needs_store(node)) ve.store(node.output, node.store_index, result, kXAxis);
  ve.produced(node.output, node.store_index, result);
}

void KernelEmitter::emit_loops(ValueEmitter& ve) {
  for (size_t i = 0; i < nodes_.size();) {
    if (nodes_[i].kind == NodeKind::Outer) {
      emit_node(ve, nodes_[i++]);
      continue;
    }
    size_t end = i;
    while (end < nodes_.size() && nodes_[end].loop == nodes_[i].loop) ++end;
    // Accumulators: one [XBLOCK, RBLOCK] tile per reduction (plus positions for arg reductions).
    std::map<size_t, std::pair<std::string, std::string>> acc;
    for (size_t k = i; k < end; ++k) {
      if (nodes_[k].kind != NodeKind::Reduction) continue;
      DType d = nodes_[k].body->dtype;
      std::string a = w_.fresh("acc");
      w_.line(a + " = tl.full([XBLOCK, RBLOCK], " + identity(nodes_[k].reduction, d) + ", " + compute_type(d) + ")");
      std::string p;
      if (is_arg_reduction(nodes_[k].reduction)) {
        p = w_.fresh("acc");
        w_.line(p + " = tl.full([XBLOCK, RBLOCK], " + std::string(kNoPosition) + ", tl.int64)");
      }
      acc[k] = {a, p};
    }
    w_.open("for roffset in range(0, rnumel, RBLOCK)");
    w_.line("rindex = roffset + tl.arange(0, RBLOCK)[None, :]");
    w_.line("rmask = rindex < rnumel");
    ve.push_scope();
    bool stored_local = false;
    for (size_t k = i; k < end; ++k) {
      TileNode& node = nodes_[k];
      if (node.kind == NodeKind::Full) {
        emit_node(ve, node);
        stored_local = stored_local || needs_store(node);
        continue;
      }
      Value values = masked_body(ve, node);
      const auto& [a, p] = acc[k];
      const char* combine = combine_function(node.reduction);
      if (is_arg_reduction(node.reduction)) {
        Value where = positions(ve);
        w_.line(a + ", " + p + " = " + combine + "(" + a + ", " + p + ", " + values.name + ", " + where.name + ")");
      } else {
        w_.line(a + " = " + combine + "(" + a + ", " + values.name + ")");
      }
    }
    ve.pop_scope();
    w_.close();
    // Locals stored in this loop are read by other threads of the program in a later loop.
    if (stored_local) w_.line("tl.debug_barrier()");
    for (const auto& [k, names] : acc) {
      TileNode& node = nodes_[k];
      const char* combine = combine_function(node.reduction);
      Value result;
      if (is_arg_reduction(node.reduction)) {
        std::string pair = w_.fresh("t");
        w_.line("_, " + pair + " = tl.reduce((" + names.first + ", " + names.second + "), 1, " + combine + ")");
        result = ve.define(pair + "[:, None]", DType::Int64, kXAxis);
      } else {
        result = ve.define(reduce_rows(node.reduction, node.body->dtype, names.first, combine) + "[:, None]", node.body->dtype,
                           kXAxis);
      }
      result = ve.cast(result, program_.buffer(node.output).dtype);
      if (needs_store(node)) ve.store(node.output, node.store_index, result, kXAxis);
      ve.produced(node.output, node.store_index, result);
    }
    i = end;
  }
}

GeneratedTritonKernel KernelEmitter::run() {
  out_.name = kernel_.name;
  collect_nodes();
  choose_index_width();
  for (const TileNode& node : nodes_)
    ir::visit_leaves(node.body, [&](const ir::ScalarNode& leaf) { out_.error_flag = out_.error_flag || !leaf.indirect.empty(); });
  out_.reduction = tiles_.has_r;
  collect_symbol_params();
  out_.xnumel = xnumel_expr_;
  out_.rnumel = rnumel_expr_;
  bool r_contiguous = true;
  if (tiles_.has_r) {
    bool any = false;
    for (const TileNode& node : nodes_) {
      if (node.kind == NodeKind::Outer) continue;
      ir::visit_leaves(node.body, [&](const ir::ScalarNode& leaf) {
        if (leaf.op == ir::ScalarOp::Index || any) return;
        ir::Affine a = ir::affine_in(leaf.index, tiles_.r_var);
        if (!a.ok || !a.coef.is_const() || a.coef.const_value() == 0) return;
        any = true;
        r_contiguous = a.coef.const_value() == 1;
      });
    }
  }
  // A row of symbolic length may outgrow any one tile: such reductions loop over r blocks.
  const bool r_fixed = rnumel_expr_.is_const();
  HeuristicChoice choice = tiled_ ? choose_tiled_launch(xnumel_, rnumel_)
                                  : choose_launch(xnumel_, rnumel_, tiles_.has_r, r_contiguous, r_fixed);
  out_.tiled = tiled_;
  out_.config = choice.config;
  out_.candidates = choice.candidates;
  persistent_ = !tiles_.has_r || choice.persistent;
  if (!persistent_) assign_loops();
  w_.line(prelude());
  emit_header();
  ValueEmitter ve(w_, tiles_, pointers_, dtypes_, out_.error_flag ? "cd_error" : "");
  ve.set_streaming_loads(!persistent_ && loops_ == 1 && !r_contiguous && input_bytes() > kStreamingBytes);
  if (persistent_) {
    for (TileNode& node : nodes_) {
      if (node.kind == NodeKind::Reduction) emit_persistent_reduction(ve, node);
      else emit_node(ve, node);
    }
  } else {
    emit_loops(ve);
  }
  w_.close();
  out_.source = w_.str();
  return out_;
}

ir::Expr grid_size(const GeneratedTritonKernel& k, const LaunchConfig& config) {
  return ir::floordiv(k.xnumel + Expr(config.xblock - 1), Expr(config.xblock));
}

ir::Expr grid_columns(const GeneratedTritonKernel& k, const LaunchConfig& config) {
  if (!k.tiled) return Expr(1);
  return ir::floordiv(k.rnumel + Expr(config.rblock - 1), Expr(config.rblock));
}

GeneratedTritonKernel generate_kernel(const ir::Program& program, const ir::Kernel& kernel) {
  return KernelEmitter(program, kernel).run();
}

}  // namespace cdynamo::codegen::triton
