// Builds the torch.fx graph of one trace: placeholders for tensor inputs, get_attr for module
// parameters, one node per torch call, with fake tensors propagated through every node.
#pragma once
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>
#include "common/py_ref.h"
#include "frontend/interp/value.h"

namespace cdynamo::graph {

using interp::SourcePtr;
using interp::ValuePtr;

struct GraphInput {
  SourcePtr source;  // where the transformed code loads it from
  Ref example;       // the real tensor seen while tracing (the backend's example input)
};

using KwArgs = std::vector<std::pair<std::string, ValuePtr>>;

class GraphBuilder {
 public:
  GraphBuilder();
  // The trace's cdynamo.shapes.ShapeTrace: static (sizes only recorded) or dynamic (a ShapeEnv
  // whose SymInts reach the graph as nodes). Set once, before the first input.
  void set_shape_trace(Ref shape_trace);
  bool dynamic() const { return dynamic_; }
  // Where the trace is in the user's code (a dynamic trace's guards name it).
  void set_location(PyCodeObject* code, int line);
  Handle shape_trace() const { return shape_trace_; }
  // Graph outputs for the SymInts inside a constant (returned sizes, sizes kept across a graph
  // break): one Constant per SymInt object, its node the graph computation of it.
  void add_symbolic_outputs(Handle constant, std::vector<ValuePtr>& outputs);

  // A placeholder for a tensor the transformed code will pass in.
  ValuePtr add_input(Handle tensor, SourcePtr source);
  // For an int or float read from the frame's locals: a placeholder and a SymInt/SymFloat
  // constant when the shape trace makes it a graph input (it changed between compiles, or
  // dynamic=True), else null (the caller specialises it). Throws RetraceDynamic.
  ValuePtr scalar_input(Handle number, SourcePtr source);
  // A get_attr node for a parameter or buffer reached through an nn.Module, named by path.
  ValuePtr add_attribute(Handle tensor, const std::string& path, SourcePtr source);
  // Registers a module for call_module nodes; returns its target name in the GraphModule.
  std::string add_module(Handle module, const std::string& path);
  // Whether a call_module node may already call this module (it was registered).
  bool holds_module(Handle module) const;

  // A call node (op: call_function, call_method, call_module) whose result is wrapped: tensors
  // become Tensor values, tuples and lists of tensors Tuple values of getitem nodes, and
  // non-tensor results (metadata such as sizes) constants with the node removed.
  // `what` names the operation for error messages. A node run only for its side effect
  // (setitem) is kept with keep_node. Throws Unsupported.
  // Tensor subclasses (Value::cls of Tensor values) carried from an op's arguments to its results,
  // as torch.Tensor.__torch_function__ does: only while subclass results are on (off where the
  // trace runs a __torch_function__'s operator itself, interp/tensor_subclasses.cpp).
  void set_subclass_results(bool enabled) { subclass_results_ = enabled; }
  // cls's __torch_function__ is live (its tensors' operators give results of it); cached per class.
  static bool wraps_results(Handle cls);
  static Handle most_derived_subclass(const ValuePtr& value, Handle found);
  static void mark_subclass(const ValuePtr& result, Handle subclass);
  ValuePtr call(const char* op, Handle target, const std::vector<ValuePtr>& args, const KwArgs& kwargs,
                const std::string& what, bool keep_node = false);
  // Runs fn on fake arguments without adding a node (for metadata methods like size()).
  Ref fake_call(Handle fn, const std::vector<ValuePtr>& args, const KwArgs& kwargs, const std::string& what);

  void set_output(const std::vector<ValuePtr>& tensors);
  Ref build_graph_module(const std::string& name);

  // The tensor a node of this graph computed whose fake is `fake` (still alive), or null: what
  // Tensor._base answers for a view the graph made.
  ValuePtr computed_tensor(Handle fake) const;

  const std::vector<GraphInput>& inputs() const { return inputs_; }
  int op_count() const { return op_count_; }
  // The trace's FakeTensorMode, created on first use.
  Handle fake_mode();

 private:
  Ref to_fx_arg(const ValuePtr& value, bool fake, const std::string& what);
  Ref to_fx_arg(const ValuePtr& value, bool fake, const std::string& what, interp::WalkPath& path);
  Ref to_fx_container(const ValuePtr& value, bool fake, const std::string& what, interp::WalkPath& path);
  ValuePtr wrap_result(Handle node, Handle fake_result, bool keep_node);
  std::string unique_name(const std::string& path);

  Ref fake_of(Handle tensor);

  Ref graph_;
  Ref fake_mode_;
  Ref shape_trace_;
  bool dynamic_ = false;
  bool subclass_results_ = true;
  Ref root_;  // dict: attribute name in the GraphModule -> module, parameter or buffer
  std::vector<GraphInput> inputs_;
  int op_count_ = 0;
  // fake -> the tensor value a node computed (checked against the value's fake on lookup, since
  // a freed fake's address may be reused).
  std::unordered_map<PyObject*, std::weak_ptr<interp::Value>> computed_;
  // Fakes of inputs and attributes (kept alive): an in-place op on one returns its fake, which
  // must never name a computed tensor.
  std::unordered_map<PyObject*, Ref> input_fakes_;
};

// SymInt, SymFloat or SymBool (a size of a dynamic trace), and containers holding one.
bool is_symbolic(PyObject* obj);
bool holds_symbolic(PyObject* obj);
// The Python int, float or bool a symbolic value has now; the ShapeEnv guards on it.
Ref specialize(Handle symbolic);
// obj with every symbolic value in it specialised (itself, items of tuples, lists, torch.Size).
Ref specialize_all(Handle obj);
// int, float or bool for a symbolic value (its type at run time); otherwise its own type.
PyTypeObject* concrete_type(PyObject* symbolic);

// Turns a Python error raised by cdynamo._trace_support.TraceUnsupported into Unsupported,
// and cdynamo.shapes.RetraceDynamic into interp::RetraceDynamic (other errors stay
// PythonError). Call from a catch (PythonError&) block.
[[noreturn]] void rethrow_trace_error();

}  // namespace cdynamo::graph
