// Reads a torch.fx GraphModule into FxGraph: node kinds, targets, schema-normalised arguments
// and tensor metadata. Assumes the GIL is held and the graph is at aten level (OpOverloads).
#include "backend/lower/fx_graph.h"
#include <algorithm>
#include <unordered_map>
#include "common/error.h"
#include "backend/ir/expr_parser.h"
#include "common/py_import.h"

namespace cdynamo::lower {
namespace {

Ref getattr(Handle obj, const char* name) { return check(PyObject_GetAttrString(obj.ptr(), name)); }

std::string str_of(Handle obj) {
  Ref s = check(PyObject_Str(obj.ptr()));
  const char* utf8 = PyUnicode_AsUTF8(s.ptr());
  if (!utf8) throw PythonError();
  return utf8;
}

bool isinstance(Handle obj, Handle type) {
  int result = PyObject_IsInstance(obj.ptr(), type.ptr());
  if (result < 0) throw PythonError();
  return result == 1;
}

// A size, stride or offset: a Python int, or a SymInt as an expression over the size symbols
// (cdynamo.inductor.symbolic renders its sympy expression in the parser's syntax).
ir::Expr expr_of(Handle obj) {
  if (PyLong_Check(obj.ptr())) {
    int64_t v = PyLong_AsLongLong(obj.ptr());
    if (v == -1 && PyErr_Occurred()) throw PythonError();
    return ir::Expr(v);
  }
  Ref text = call_helper("cdynamo.symbolic_graphs", "expr_text", {obj});
  if (text.ptr() == Py_None) symbolic_unsupported("a size of the form " + str_of(obj));
  return ir::parse_expr(str_of(text));
}

std::vector<ir::Expr> exprs_of(Handle sequence) {
  Ref items = check(PySequence_Tuple(sequence.ptr()));
  std::vector<ir::Expr> out;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items.ptr()); ++k) out.push_back(expr_of(PyTuple_GET_ITEM(items.ptr(), k)));
  return out;
}

struct Converter {
  Ref node_type, tensor_type, dtype_type, device_type, symint_type;
  std::unordered_map<PyObject*, int> node_index;
  const std::vector<FxNode>* converted = nullptr;  // the nodes before the one being read

  FxArg convert(Handle obj) const {
    FxArg arg;
    arg.object = Ref::borrow(obj);
    PyObject* o = obj.ptr();
    if (o == Py_None) {
      arg.kind = FxArg::Kind::None;
    } else if (PyBool_Check(o)) {
      arg.kind = FxArg::Kind::Bool;
      arg.b = o == Py_True;
      arg.i = arg.b;
    } else if (PyLong_Check(o)) {
      arg.kind = FxArg::Kind::Int;
      arg.i = PyLong_AsLongLong(o);
      if (arg.i == -1 && PyErr_Occurred()) throw PythonError();
    } else if (PyFloat_Check(o)) {
      arg.kind = FxArg::Kind::Float;
      arg.f = PyFloat_AS_DOUBLE(o);
    } else if (PyUnicode_Check(o)) {
      arg.kind = FxArg::Kind::String;
      arg.text = str_of(obj);
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
      arg.kind = FxArg::Kind::List;
      Ref items = check(PySequence_Tuple(o));
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items.ptr()); ++k) arg.items.push_back(convert(PyTuple_GET_ITEM(items.ptr(), k)));
    } else if (isinstance(obj, node_type)) {
      arg.kind = FxArg::Kind::Node;
      auto it = node_index.find(o);
      if (it == node_index.end()) throw InternalError("fx argument refers to a node outside the graph");
      arg.node = it->second;
      if (converted && arg.node < static_cast<int>(converted->size()) && (*converted)[arg.node].symint) {
        arg.kind = FxArg::Kind::SymInt;  // a size computed from the inputs' sizes: its expression
        arg.expr = *(*converted)[arg.node].symint;
      }
    } else if (isinstance(obj, symint_type)) {
      arg.kind = FxArg::Kind::SymInt;
      arg.expr = expr_of(obj);
    } else if (isinstance(obj, dtype_type)) {
      arg.kind = FxArg::Kind::Dtype;
      arg.text = str_of(obj);
    } else if (isinstance(obj, device_type)) {
      arg.kind = FxArg::Kind::Device;
      arg.text = str_of(obj);
    } else {
      arg.kind = FxArg::Kind::Other;
      arg.text = str_of(obj);
    }
    return arg;
  }
};

void read_meta(FxNode& node, Handle fx_node, const Converter& conv) {
  Ref meta = getattr(fx_node, "meta");
  PyObject* val = PyDict_GetItemString(meta.ptr(), "val");  // borrowed
  if (!val) return;
  if (isinstance(val, conv.tensor_type)) {
    node.meta.push_back(tensor_meta_of(val));
    return;
  }
  if (isinstance(val, conv.symint_type) || (PyLong_Check(val) && !PyBool_Check(val))) {
    node.symint = expr_of(val);
    return;
  }
  if (PyList_Check(val) || PyTuple_Check(val)) {
    node.meta_is_sequence = true;
    Ref items = check(PySequence_Tuple(val));
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items.ptr()); ++k) {
      PyObject* item = PyTuple_GET_ITEM(items.ptr(), k);
      if (isinstance(item, conv.tensor_type)) node.meta.push_back(tensor_meta_of(item));
      else node.meta.push_back(std::nullopt);
    }
  }
}

// Fills params in schema order: positional args, then kwargs by name, then defaults.
void read_op_arguments(FxNode& node, Handle fx_node, const Converter& conv) {
  Ref args = getattr(fx_node, "args");
  Ref kwargs = getattr(fx_node, "kwargs");
  Ref schema = getattr(node.target_object, "_schema");
  Ref arguments = check(PySequence_Tuple(getattr(schema, "arguments").ptr()));
  Py_ssize_t positional = PyTuple_GET_SIZE(args.ptr());
  Py_ssize_t next_positional = 0;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(arguments.ptr()); ++k) {
    Handle argument = PyTuple_GET_ITEM(arguments.ptr(), k);
    std::string name = str_of(getattr(argument, "name"));
    bool kwarg_only = PyObject_IsTrue(getattr(argument, "kwarg_only").ptr()) == 1;
    node.param_names.push_back(name);
    node.param_kwarg_only.push_back(kwarg_only);
    if (!kwarg_only && next_positional < positional) {
      node.params.push_back(conv.convert(PyTuple_GET_ITEM(args.ptr(), next_positional++)));
      continue;
    }
    if (PyObject* value = PyDict_GetItemString(kwargs.ptr(), name.c_str())) {
      node.params.push_back(conv.convert(value));
      continue;
    }
    Ref has_default = check(PyObject_CallMethod(argument.ptr(), "has_default_value", nullptr));
    if (PyObject_IsTrue(has_default.ptr()) == 1) node.params.push_back(conv.convert(getattr(argument, "default_value")));
    else node.params.push_back(FxArg{});
  }
}

}  // namespace

double FxArg::as_double() const {
  switch (kind) {
    case Kind::Bool: return b ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(i);
    case Kind::Float: return f;
    case Kind::SymInt: return static_cast<double>(as_int());
    default: throw InternalError("expected a number argument, got " + text);
  }
}

int64_t FxArg::as_int() const {
  if (kind == Kind::Int || kind == Kind::Bool) return i;
  if (kind == Kind::SymInt) {
    if (expr.is_const()) return expr.const_value();
    symbolic_unsupported("an argument " + expr.py_str() + " that must be a fixed int");
  }
  throw InternalError("expected an int argument, got " + (text.empty() ? std::to_string(static_cast<int>(kind)) : text));
}

ir::Expr FxArg::as_expr() const {
  if (kind == Kind::SymInt) return expr;
  return ir::Expr(as_int());
}

std::vector<ir::Expr> FxArg::as_expr_list() const {
  if (kind != Kind::List) return {as_expr()};
  std::vector<ir::Expr> out;
  for (const FxArg& item : items) out.push_back(item.as_expr());
  return out;
}

void symbolic_unsupported(const std::string& what) {
  throw UserError("symbolic sizes: the inductor cannot compile " + what + " for every size", PyExc_NotImplementedError);
}

std::vector<int64_t> FxArg::as_int_list() const {
  if (kind == Kind::Int || kind == Kind::SymInt) return {as_int()};
  if (kind != Kind::List) throw InternalError("expected a list of ints");
  std::vector<int64_t> out;
  for (const FxArg& item : items) out.push_back(item.as_int());
  return out;
}

ir::DType FxArg::as_dtype() const {
  if (kind != Kind::Dtype) throw InternalError("expected a dtype argument");
  return ir::dtype_from_torch_name(text);
}

const FxArg& FxNode::param(size_t k) const {
  if (k >= params.size()) throw InternalError(target + ": no argument " + std::to_string(k));
  return params[k];
}

const FxArg* FxNode::param_named(const std::string& wanted) const {
  for (size_t k = 0; k < param_names.size(); ++k)
    if (param_names[k] == wanted) return &params[k];
  return nullptr;
}

const TensorMeta& FxNode::tensor_meta(size_t k) const {
  if (k >= meta.size() || !meta[k]) throw InternalError("node " + name + " has no tensor metadata");
  return *meta[k];
}

TensorMeta tensor_meta_of(PyObject* tensor) {
  TensorMeta meta;
  meta.dtype = ir::dtype_from_torch_name(str_of(getattr(tensor, "dtype")));
  meta.sizes = exprs_of(getattr(tensor, "shape"));
  meta.strides = exprs_of(check(PyObject_CallMethod(tensor, "stride", nullptr)));
  meta.storage_offset = expr_of(check(PyObject_CallMethod(tensor, "storage_offset", nullptr)));
  meta.device = str_of(getattr(tensor, "device"));
  return meta;
}

std::vector<int64_t> ints_of(Handle sequence) {
  Ref items = check(PySequence_Tuple(sequence.ptr()));
  std::vector<int64_t> out;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items.ptr()); ++k) {
    out.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(items.ptr(), k)));
    if (out.back() == -1 && PyErr_Occurred()) throw PythonError();
  }
  return out;
}

// Entries: None or ("fresh", j[, sizes, strides, offset, base strides, base]), ("same", k), ("view", k, sizes, strides, offset), ("output", j),
// ("keep",).
std::vector<EagerAlias> read_output_aliases(Handle output_node) {
  Ref meta = getattr(output_node, "meta");
  PyObject* entries = PyDict_GetItemString(meta.ptr(), "cdynamo_eager_aliases");  // borrowed
  std::vector<EagerAlias> out;
  if (!entries) return out;
  Ref items = check(PySequence_Tuple(entries));
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items.ptr()); ++k) {
    PyObject* entry = PyTuple_GET_ITEM(items.ptr(), k);
    EagerAlias alias;
    if (entry == Py_None) {
      alias.kind = EagerAlias::Kind::Fresh;
    } else {
      if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 1) throw InternalError("malformed eager alias entry");
      std::string kind = str_of(PyTuple_GET_ITEM(entry, 0));
      if (kind == "fresh") {
        alias.kind = EagerAlias::Kind::Fresh;
        alias.input = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(entry, 1)));
        if (PyTuple_GET_SIZE(entry) == 7) {
          alias.base = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(entry, 6)));
          alias.sizes = ints_of(PyTuple_GET_ITEM(entry, 2));
          alias.strides = ints_of(PyTuple_GET_ITEM(entry, 3));
          alias.offset = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 4));
          alias.base_strides = ints_of(PyTuple_GET_ITEM(entry, 5));
        }
      }
      if (kind == "same" || kind == "view" || kind == "output") {
        alias.kind = kind == "same" ? EagerAlias::Kind::Same : kind == "view" ? EagerAlias::Kind::View : EagerAlias::Kind::SameOutput;
        alias.input = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(entry, 1)));
      }
      if (kind == "view") {
        if (PyTuple_GET_SIZE(entry) != 5) throw InternalError("malformed eager view entry");
        alias.sizes = ints_of(PyTuple_GET_ITEM(entry, 2));
        alias.strides = ints_of(PyTuple_GET_ITEM(entry, 3));
        alias.offset = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 4));
      }
      if (PyErr_Occurred()) throw PythonError();
    }
    out.push_back(std::move(alias));
  }
  return out;
}

FxGraph read_fx_graph(PyObject* graph_module) {
  FxGraph graph;
  graph.module = Ref::borrow(graph_module);
  Converter conv;
  conv.node_type = import_attr("torch.fx", "Node");
  conv.tensor_type = import_attr("torch", "Tensor");
  conv.dtype_type = import_attr("torch", "dtype");
  conv.device_type = import_attr("torch", "device");
  conv.symint_type = import_attr("torch", "SymInt");
  conv.converted = &graph.nodes;
  Ref getitem = import_attr("operator", "getitem");

  Ref fx_graph = getattr(graph_module, "graph");
  Ref node_list = check(PySequence_Tuple(getattr(fx_graph, "nodes").ptr()));
  Py_ssize_t n = PyTuple_GET_SIZE(node_list.ptr());
  for (Py_ssize_t k = 0; k < n; ++k) conv.node_index[PyTuple_GET_ITEM(node_list.ptr(), k)] = static_cast<int>(k);

  for (Py_ssize_t k = 0; k < n; ++k) {
    Handle fx_node = PyTuple_GET_ITEM(node_list.ptr(), k);
    FxNode node;
    node.index = static_cast<int>(k);
    node.name = str_of(getattr(fx_node, "name"));
    node.op = str_of(getattr(fx_node, "op"));
    node.target_object = getattr(fx_node, "target");
    if (node.op == "call_function" && PyObject_HasAttrString(node.target_object.ptr(), "_schema")) {
      Ref schema = getattr(node.target_object, "_schema");
      node.schema_name = str_of(getattr(schema, "name"));
      node.overload = str_of(getattr(schema, "overload_name"));
      if (node.overload.empty()) node.overload = "default";
      node.target = node.schema_name + "." + node.overload;
      read_op_arguments(node, fx_node, conv);
      Ref returns = check(PySequence_Tuple(getattr(schema, "returns").ptr()));
      for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(returns.ptr()); ++r)
        node.returns_alias = node.returns_alias || getattr(PyTuple_GET_ITEM(returns.ptr(), r), "alias_info").ptr() != Py_None;
    } else {
      if (node.target_object.is(getitem)) node.target = "getitem";
      else node.target = str_of(node.target_object);
      Ref args = check(PySequence_Tuple(getattr(fx_node, "args").ptr()));
      for (Py_ssize_t a = 0; a < PyTuple_GET_SIZE(args.ptr()); ++a) node.params.push_back(conv.convert(PyTuple_GET_ITEM(args.ptr(), a)));
    }
    Ref users = check(PySequence_Tuple(getattr(fx_node, "users").ptr()));
    for (Py_ssize_t u = 0; u < PyTuple_GET_SIZE(users.ptr()); ++u)
      node.users.push_back(conv.node_index.at(PyTuple_GET_ITEM(users.ptr(), u)));
    std::sort(node.users.begin(), node.users.end());
    read_meta(node, fx_node, conv);
    if (node.op == "output") graph.output_aliases = read_output_aliases(fx_node);
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

}  // namespace cdynamo::lower
