// Shared machinery of the lowering passes: lowered values (realized buffers, lazy pointwise
// bodies, views as index remappings), the lowering context and the op registry.
// Assumes single-threaded use under the GIL, one LoweringContext per graph.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>
#include "backend/ir/ir.h"
#include "backend/lower/fx_graph.h"
#include "backend/lower/lower.h"

namespace cdynamo::lower {

using ir::DType;
using ir::Expr;
using ir::Scalar;
using Index = std::vector<Expr>;
using Loader = std::function<Scalar(const Index&)>;
using Reindex = std::function<Index(const Index&)>;

// Float16/BFloat16 values are computed in Float32 and rounded when stored.
DType compute_dtype(DType dtype);
// Converts a compute-domain scalar to the compute domain of `target`, rounding through the
// narrow type when `target` is Float16/BFloat16 (an explicit cast must round, like eager).
Scalar convert(const Scalar& value, DType target);
// A constant in the compute domain of `dtype`.
Scalar constant_of(double value, DType dtype);
Scalar constant_of_int(int64_t value, DType dtype);

// What views are taken of: a buffer, or a lazy pointwise body not yet stored anywhere.
struct Storage {
  DType dtype = DType::Float32;
  std::vector<Expr> sizes;
  // Realized: the buffer and its layout (element (k..) at offset + sum(k*strides)).
  std::string buffer;
  std::vector<Expr> strides;
  Expr offset = 0;
  Expr origin = 0;  // the storage_offset of the tensor behind an Input buffer (for as_strided)
  // Lazy: the body (index -> compute-domain scalar), its size and what it reads.
  Loader compute;
  int cost = 0;
  std::set<std::string> reads;
  int users = 0;  // fx users that read this storage (through any view)
  // The layout eager gives this value (a dense permutation, e.g. channels-last), used when it is
  // realized without explicit strides; empty = contiguous.
  std::vector<Expr> layout;

  bool realized() const { return !buffer.empty(); }
  // The element at `index` in the compute domain (a load of the buffer once realized).
  Scalar load(const Index& index);
  void forget_cache() { cache_.clear(); }

 private:
  std::map<std::string, Scalar> cache_;  // index text -> scalar: shares identical subgraphs
};

// A lowered tensor: an index remapping (a view) onto a storage.
struct Value {
  std::shared_ptr<Storage> storage;
  DType dtype = DType::Float32;
  std::vector<Expr> sizes;
  Reindex reindex;  // this value's index -> the storage's index; empty = identity

  size_t rank() const { return sizes.size(); }
  bool is_view() const { return static_cast<bool>(reindex); }
  Scalar load(const Index& index) const { return storage->load(reindex ? reindex(index) : index); }
  // A view of this value: new sizes and a map from the view's index to this value's index.
  Value view(std::vector<Expr> new_sizes, Reindex to_this) const;
};

// One fx node's result: a single value, or a sequence of them (getitem picks one).
struct Lowered {
  std::vector<std::optional<Value>> values;
  bool is_sequence = false;
  static Lowered one(Value v) { return Lowered{{std::move(v)}, false}; }
  static Lowered many(std::vector<std::optional<Value>> vs) { return Lowered{std::move(vs), true}; }
};

// A tensor or Python-number operand of a pointwise op.
struct Operand {
  std::optional<Value> tensor;
  FxArg number;  // when !tensor
  bool zero_dim() const { return tensor && tensor->rank() == 0; }
};

class LoweringContext;
using LoweringFn = std::function<Lowered(LoweringContext&, const FxNode&)>;
using Registry = std::map<std::string, LoweringFn>;  // "aten::add.Tensor" -> lowering

class LoweringContext {
 public:
  LoweringContext(FxGraph graph, LowerOptions options);
  const LowerOptions& options() const { return options_; }

  const FxGraph& graph() const { return graph_; }
  LoweredGraph& out() { return out_; }

  // ---- buffers and nodes ----
  std::string fresh_name();                       // "buf0", "buf1", ...
  ir::Buffer& add_buffer(ir::Buffer buffer);
  ir::Buffer& buffer(const std::string& name);
  void add_node(ir::Node node);
  // The device of computed buffers: the graph's (its first tensor input's), "cpu" by default.
  void set_device(const std::string& device) { device_ = device; }
  const std::string& device() const { return device_; }

  // The layout eager gives the node being lowered (a dense permutation such as channels-last):
  // a value of those sizes realized during its lowering is stored that way. Empty: none.
  void set_layout_hint(std::vector<Expr> sizes, std::vector<Expr> strides) {
    hint_sizes_ = std::move(sizes);
    hint_strides_ = std::move(strides);
  }

  // ---- values ----
  // A lazy pointwise value. Realized right away when its body is very large.
  Value lazy(DType dtype, std::vector<Expr> sizes, Loader compute);
  // The value of a realized buffer.
  Value from_buffer(const std::string& name);
  // Stores a lazy storage into a new buffer (the given strides, else the storage's layout, else
  // contiguous); a no-op once realized.
  void realize(Storage& storage, std::vector<Expr> strides = {},
               ir::Buffer::Kind kind = ir::Buffer::Kind::Intermediate);
  // A buffer whose layout yields exactly `v`: the storage's own buffer, an alias of it (for
  // strided views, when allowed) or a fresh contiguous copy.
  std::string buffer_for(const Value& v, bool allow_alias, ir::Buffer::Kind kind = ir::Buffer::Kind::Intermediate);
  // Stores `v` into a new buffer with the given layout and kind (graph outputs).
  std::string store(const Value& v, std::vector<Expr> strides, ir::Buffer::Kind kind);
  // Builds a Pointwise node writing `v` into an existing buffer (input mutation).
  void store_into(const Value& v, const std::string& buffer);
  // Builds a reduction node over `v`: output sizes = kept, reduced dims listed.
  std::string reduce(ir::ReductionType type, const Value& v, const std::vector<int64_t>& reduced_dims,
                     DType body_dtype, DType out_dtype);

  // ---- arguments ----
  const Lowered& lowered(int node_index) const;
  bool has_lowered(int node_index) const { return lowered_.count(node_index) > 0; }
  Value tensor(const FxArg& arg) const;   // the value of a Node argument; throws otherwise
  Value tensor_param(const FxNode& node, size_t k) const { return tensor(node.param(k)); }
  Operand operand(const FxArg& arg) const;
  bool is_tensor(const FxArg& arg) const { return arg.is_node(); }

  void set_lowered(int node_index, Lowered lowered);

 private:
  FxGraph graph_;
  LowerOptions options_;
  LoweredGraph out_;
  std::map<int, Lowered> lowered_;
  std::map<std::string, size_t> buffer_index_;
  int next_name_ = 0;
  std::string device_ = "cpu";
  std::vector<Expr> hint_sizes_, hint_strides_;
};

// ---- shapes and dtypes -----------------------------------------------------------------
int64_t normalize_dim(int64_t dim, size_t rank);  // negative dims counted from the end
std::vector<Expr> broadcast_shapes(const std::vector<std::vector<Expr>>& shapes);
Value broadcast_to(const Value& v, const std::vector<Expr>& sizes);
// torch.result_type over tensors (by rank tier) and Python numbers.
DType result_type(const std::vector<Operand>& operands);
DType promote_types(DType a, DType b);
Scalar operand_scalar(const Operand& op, const Index& index, size_t out_rank, DType compute);
Index make_vars(char prefix, size_t n, size_t start = 0);  // i0..i{n-1}
// The value of an index expression as a scalar of `dtype`: a constant when it is one.
Scalar index_scalar(const Expr& e, DType dtype = DType::Int64);
ir::VarRanges ranges_of(const Index& vars, const std::vector<Expr>& sizes);
// Rewrites every load index of a body through simplify(ranges).
Scalar simplify_body(const Scalar& body, const ir::VarRanges& ranges);
// Loads inside `body` become masked by `mask` (for cat / pad branches that may be out of range).
Scalar mask_loads(const Scalar& body, const Scalar& mask);
// Indirect indexing: a fresh variable to put into an index in place of a loaded position, and
// the rewrite that binds it (every load whose index uses it gets `position` as an indirect
// operand, the variable renamed to that load's ind<k>, and `size` as its extent). Positions are
// cast to Int64.
Expr fresh_indirect_placeholder();
Scalar bind_indirect(const Scalar& body, const Expr& placeholder, const Scalar& position, const Expr& size);
// Buffers read by a body (transitively through indirect positions).
std::set<std::string> buffers_read(const Scalar& body);
int body_cost(const Scalar& body);
// True when the strides lay the sizes out densely (some permutation of a contiguous layout) at
// every size; symbolic strides are ordered by their values at `hints` (symbol -> its hint).
bool is_dense_layout(const std::vector<Expr>& sizes, const std::vector<Expr>& strides,
                     const std::map<std::string, Expr>& hints = {});
// The strides and offset of `v` as a strided view of its realized storage, if it is one.
std::optional<std::pair<std::vector<Expr>, Expr>> strided_layout(const Value& v);

// Thrown by a lowering for a variant it does not handle: the driver falls back to an extern.
struct NotLowered : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Heuristics: bodies above this many ops are realized at once; a value read by several
// consumers is realized when its body exceeds kReuseCost ops or kReuseReads loads.
constexpr int kMaxInlineCost = 96;
constexpr int kReuseCost = 12;
constexpr int kReuseReads = 4;

// ---- registries, one per lowering file ----
void register_pointwise_lowerings(Registry& registry);
void register_reduction_lowerings(Registry& registry);
void register_view_lowerings(Registry& registry);
void register_misc_lowerings(Registry& registry);
void register_pooling_lowerings(Registry& registry);
bool is_view_op(const std::string& target);  // view-like: results share the input's storage
const Registry& registry();
// The extern call of an op without a lowering.
Lowered lower_as_extern(LoweringContext& ctx, const FxNode& node);

}  // namespace cdynamo::lower
