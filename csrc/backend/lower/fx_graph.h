// A C++ snapshot of an aten-level torch.fx graph: nodes, schema-normalised arguments and the
// tensor metadata of node.meta["val"]. Assumes the GIL is held while reading; afterwards only
// the Python objects kept in Refs (constants, targets) are touched again.
#pragma once
#include <optional>
#include <string>
#include <vector>
#include "backend/ir/ir.h"
#include "common/py_ref.h"

namespace cdynamo::lower {

// One argument of a node, converted from its Python value.
struct FxArg {
  enum class Kind { None, Bool, Int, Float, String, Node, List, Dtype, Device, SymInt, Other };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string text;          // String: the str; Dtype/Device/Other: str(object)
  int node = -1;             // Node: index into FxGraph::nodes
  ir::Expr expr;             // SymInt: a symbolic size (a SymInt node's value, or a SymInt object)
  std::vector<FxArg> items;  // List (list or tuple)
  Ref object;                // the Python value itself (for repr of constants)

  bool is_none() const { return kind == Kind::None; }
  bool is_node() const { return kind == Kind::Node; }
  bool is_number() const { return kind == Kind::Bool || kind == Kind::Int || kind == Kind::Float || kind == Kind::SymInt; }
  // A number whose value is known while compiling (a SymInt only when the guards fixed it).
  bool is_fixed_number() const { return is_number() && (kind != Kind::SymInt || expr.is_const()); }
  double as_double() const;   // a fixed number; throws otherwise
  bool is_int() const { return kind == Kind::Int || kind == Kind::Bool || kind == Kind::SymInt; }
  // Bool/Int, or a SymInt that is a constant; throws otherwise (symbolic_unsupported for a
  // symbolic one: the lowering that asked needs a fixed value).
  int64_t as_int() const;
  std::vector<int64_t> as_int_list() const;  // List of Int, or a single Int
  ir::Expr as_expr() const;                  // Bool/Int/SymInt
  std::vector<ir::Expr> as_expr_list() const;  // List of those, or a single one
  ir::DType as_dtype() const; // Dtype
};

// The metadata of a tensor value (a FakeTensor in node.meta["val"], or a real constant).
struct TensorMeta {
  ir::DType dtype = ir::DType::Float32;
  std::vector<ir::Expr> sizes, strides;
  ir::Expr storage_offset = 0;
  std::string device = "cpu";
};

struct FxNode {
  int index = 0;
  std::string name;    // the fx node name (a Python identifier)
  std::string op;      // placeholder | get_attr | call_function | output | ...
  std::string target;  // "aten::add.Tensor" for OpOverloads, "getitem", or the attribute name
  std::string schema_name, overload;  // OpOverloads only: "aten::add", "Tensor"
  Ref target_object;
  // OpOverloads: one entry per schema argument, in schema order, defaults filled in.
  // Everything else: the positional arguments.
  std::vector<FxArg> params;
  std::vector<std::string> param_names;
  std::vector<bool> param_kwarg_only;
  std::vector<int> users;  // indices of user nodes, in graph order
  bool returns_alias = false;  // OpOverloads: a return shares memory with an argument (a view op)
  // node.meta["val"]: one entry for a tensor, one per item for a tuple/list (nullopt for
  // non-tensor items); empty when missing.
  std::vector<std::optional<TensorMeta>> meta;
  bool meta_is_sequence = false;
  // A node whose value is an int (a SymInt of a symbolic graph: sym_size, size arithmetic, a
  // number placeholder): that value as an expression over the size symbols.
  std::optional<ir::Expr> symint;

  const FxArg& param(size_t k) const;                 // throws if out of range
  const FxArg* param_named(const std::string& name) const;  // nullptr if absent
  const TensorMeta& tensor_meta(size_t k = 0) const;  // throws when missing
};

// How eager PyTorch's result aliases the graph's inputs, for one flat output (read from the
// output node's meta["cdynamo_eager_aliases"], set by cdynamo.inductor.output_aliases).
struct EagerAlias {
  enum class Kind { Unknown, Fresh, Same, View, SameOutput };
  Kind kind = Kind::Unknown;
  // Same, View: the placeholder position; SameOutput: the earlier output's; Fresh: the first
  // output sharing its storage in eager (itself when none before it does; -1 unknown).
  int input = -1;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;  // elements from the input's (Fresh: output `input`'s) first element
  int base = -1;                      // Fresh inside another output of its storage: that output
  std::vector<int64_t> base_strides;  // and its eager strides
};

struct FxGraph {
  Ref module;  // the GraphModule (get_attr targets are read from it)
  std::vector<FxNode> nodes;
  std::vector<EagerAlias> output_aliases;  // one per flat output, or empty when unknown
};

FxGraph read_fx_graph(PyObject* graph_module);

// The metadata of a real or fake tensor object.
TensorMeta tensor_meta_of(PyObject* tensor);

// Thrown where a lowering needs a fixed value and the graph has a symbolic one: the graph is then
// compiled per sizes met instead (cdynamo.inductor catches NotImplementedError).
[[noreturn]] void symbolic_unsupported(const std::string& what);

}  // namespace cdynamo::lower
