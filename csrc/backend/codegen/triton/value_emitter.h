// Turns scalar value graphs (ir::Scalar) into Triton tile expressions, one Python variable per
// value, tracking which block axes (x, r) each value varies along. Assumes the kernel emitter
// owns the program ids, index tiles, masks and loops; index variables are already the kernel's.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include "backend/codegen/triton/py_writer.h"
#include "backend/ir/ir.h"

namespace cdynamo::codegen::triton {

// Block axes a tile varies along (bit set): a value of no axis is a 0-d scalar.
enum Axes : unsigned { kNoAxes = 0, kXAxis = 1, kRAxis = 2 };

// Triton spellings of a dtype: in memory (pointer element type), and in registers (float16 and
// bfloat16 are computed in float32, as eager does).
std::string storage_type(ir::DType dtype);       // "tl.float16"
std::string compute_type(ir::DType dtype);       // "tl.float32"
std::string pointer_signature(ir::DType dtype);  // "*fp16", for triton.compile's signature

struct Value {
  std::string name;  // a Python expression, usually a variable
  ir::DType dtype = ir::DType::Float32;
  unsigned axes = kNoAxes;
};

// What the kernel emitter tells the value emitter about the tile space it emits into.
struct TileContext {
  std::string x_var = "xindex", r_var = "rindex";  // the flat index tiles (Expr variable names)
  std::string x_mask = "xmask", r_mask = "rmask";  // their masks
  bool has_r = false;                              // 2-D tiles (reduction and tiled kernels)
  ir::VarRanges ranges;                            // xindex -> xnumel, rindex -> rnumel
};

class ValueEmitter {
 public:
  // pointers: buffer name -> the kernel argument holding its storage pointer.
  ValueEmitter(PyWriter& w, const TileContext& tiles, std::map<std::string, std::string> pointers,
               std::map<std::string, ir::DType> dtypes, std::string error_flag)
      : w_(w), tiles_(tiles), pointers_(std::move(pointers)), dtypes_(std::move(dtypes)), error_flag_(std::move(error_flag)) {}

  // Values defined in a scope (a loop body) are forgotten when it closes.
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }

  Value emit(const ir::Scalar& s);
  Value cast(const Value& v, ir::DType to);
  // Defines a value for expr, or returns the one an identical expression already defined (so
  // two nodes of a tile computing the same exp(x - max) compute it once).
  Value define(const std::string& expr, ir::DType dtype, unsigned axes);
  // Later loads of buffer at index (in this scope and inner ones) read v instead of memory.
  void produced(const std::string& buffer, const ir::Expr& index, const Value& v);
  // The tile of an index expression (rendered with Triton's integer operators).
  std::string index_expr(const ir::Expr& e) const;
  unsigned axes_of(const ir::Expr& e) const;
  // tl.store of v (converted to the buffer's dtype) at index, broadcast to `axes` and masked there.
  void store(const std::string& buffer, const ir::Expr& index, const Value& v, unsigned axes);
  // " + 0 * xindex" (and/or rindex): added to an address, makes it a tile along `axes` without
  // changing it (an address must be as wide as its mask).
  std::string widening(unsigned axes) const;
  // The mask of the lanes inside the ranges along `axes`, or "" for none.
  std::string mask_of(unsigned axes) const;
  // A literal of dtype for a double / int64 / bool payload, as a 0-d tile.
  static std::string literal(ir::DType dtype, const std::variant<double, int64_t, bool>& payload);
  PyWriter& writer() { return w_; }
  // Loads that move with r are marked evict_first: a single pass over more data than the L2
  // holds, which nothing in the kernel reads again (an outer reduction's loop).
  void set_streaming_loads(bool streaming) { streaming_loads_ = streaming; }

 private:
  struct Scope {
    std::unordered_map<const ir::ScalarNode*, Value> memo;
    std::map<std::string, std::pair<ir::Expr, Value>> produced;
    // Value numbering: expression text -> the value defined for it (every expression is a pure
    // function of earlier values; loads are forgotten when their buffer is stored to).
    std::unordered_map<std::string, Value> by_text;
  };
  bool streaming_loads_ = false;
  std::optional<Value> lookup(const ir::ScalarNode* n) const;
  std::optional<Value> lookup_produced(const std::string& buffer, const ir::Expr& index) const;
  Value emit_load(const ir::ScalarNode& n);
  Value emit_index(const ir::ScalarNode& n);
  Value emit_op(const ir::ScalarNode& n, std::vector<Value> args);
  // buffer[index] (index over the tiles and the given ind variables), masked by `mask` ("" none).
  Value load_at(const std::string& buffer, ir::DType dtype, const ir::Expr& index, unsigned extra_axes,
                const std::string& mask, const std::map<std::string, std::string>& ind_vars);
  std::string pointer(const std::string& buffer) const;

  PyWriter& w_;
  const TileContext& tiles_;
  std::map<std::string, std::string> pointers_;
  std::map<std::string, ir::DType> dtypes_;
  std::string error_flag_;
  std::vector<Scope> scopes_{1};
};

}  // namespace cdynamo::codegen::triton
