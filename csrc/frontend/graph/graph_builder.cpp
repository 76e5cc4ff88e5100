// torch.fx graph construction with fake-tensor propagation, driven by the interpreter.
// Assumes the GIL is held; uses torch.fx and FakeTensorMode through their Python APIs.
#include "frontend/graph/graph_builder.h"
#include <cctype>
#include <functional>
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/compile_frame.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::graph {
namespace {

Ref call_method(Handle obj, const char* name, std::initializer_list<Handle> args) {
  Ref method = check(PyObject_GetAttrString(obj.ptr(), name));
  std::vector<PyObject*> argv;
  for (Handle h : args) argv.push_back(h.ptr());
  return check(PyObject_Vectorcall(method.ptr(), argv.data(), argv.size(), nullptr));
}

Ref str(const std::string& text) { return check(PyUnicode_FromStringAndSize(text.data(), text.size())); }

// Why a tensor of class cls may not reach an operation without its __torch_function__ run by the
// trace (_tensor_subclasses.subclass_refusal), or "" ; cached per class.
const std::string& subclass_refusal(Handle cls) {
  static std::unordered_map<PyObject*, std::pair<Ref, std::string>>& answers = *new std::unordered_map<PyObject*, std::pair<Ref, std::string>>();  // never freed: outlives the interpreter
  auto found = answers.find(cls.ptr());
  if (found != answers.end()) return found->second.second;
  static PyObject* const ask = import_attr("cdynamo._tensor_subclasses", "subclass_refusal").release();  // never freed: likewise
  Ref refusal = check(PyObject_CallOneArg(ask, cls.ptr()));
  std::string text = refusal.ptr() == Py_None ? std::string() : to_std_string(refusal);
  return answers.emplace(cls.ptr(), std::make_pair(Ref::borrow(cls.ptr()), std::move(text))).first->second.second;
}

void refuse_unrun_torch_function(const ValuePtr& value, const std::string& what) {
  if (value->is_tensor() && value->cls) {
    const std::string& refusal = subclass_refusal(value->cls);
    if (!refusal.empty()) throw interp::Unsupported(refusal + " reaches " + what + ", where the trace does not run it");
  }
  if (value->is_sequence())
    for (const ValuePtr& item : value->items) refuse_unrun_torch_function(item, what);
}

bool is_tensor(Handle obj) {
  static Ref& tensor_type = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  int result = PyObject_IsInstance(obj.ptr(), tensor_type.ptr());
  check_status(result);
  return result;
}

}  // namespace

namespace {

enum SymbolicKind { kSymInt, kSymFloat, kSymBool, kNotSymbolic };

SymbolicKind symbolic_kind(PyObject* obj) {
  static PyObject* const kinds[] = {import_attr("torch", "SymInt").release(), import_attr("torch", "SymFloat").release(),
                                    import_attr("torch", "SymBool").release()};  // never freed: outlive the interpreter
  for (int k = kSymInt; k < kNotSymbolic; ++k)
    if (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(kinds[k])) return static_cast<SymbolicKind>(k);
  return kNotSymbolic;
}

}  // namespace

bool is_symbolic(PyObject* obj) { return symbolic_kind(obj) != kNotSymbolic; }

namespace {

// Calls fn on each symbolic value inside obj (itself, the parts of a slice, the items of tuples
// and lists at any depth) until fn returns true; returns whether one did.
bool find_symbolic(PyObject* obj, const std::function<bool(PyObject*)>& fn) {
  if (is_symbolic(obj)) return fn(obj);
  if (PySlice_Check(obj)) {
    auto* slice = reinterpret_cast<PySliceObject*>(obj);
    for (PyObject* part : {slice->start, slice->stop, slice->step})
      if (find_symbolic(part, fn)) return true;
    return false;
  }
  if (!PyTuple_Check(obj) && !PyList_Check(obj)) return false;
  Ref items = check(PySequence_Fast(obj, "sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
    if (find_symbolic(PySequence_Fast_GET_ITEM(items.ptr(), i), fn)) return true;
  return false;
}

}  // namespace

bool holds_symbolic(PyObject* obj) {
  return find_symbolic(obj, [](PyObject*) { return true; });
}

PyTypeObject* concrete_type(PyObject* symbolic) {
  switch (symbolic_kind(symbolic)) {
    case kSymInt: return &PyLong_Type;
    case kSymFloat: return &PyFloat_Type;
    case kSymBool: return &PyBool_Type;
    default: return Py_TYPE(symbolic);
  }
}

Ref specialize_all(Handle obj) {
  if (is_symbolic(obj.ptr())) return specialize(obj);
  if (!holds_symbolic(obj.ptr()) || !(PyTuple_Check(obj.ptr()) || PyList_Check(obj.ptr()))) return Ref::borrow(obj.ptr());
  Ref items = check(PySequence_List(obj.ptr()));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i) {
    Ref item = specialize_all(Handle(PyList_GET_ITEM(items.ptr(), i)));
    check_status(PyList_SetItem(items.ptr(), i, item.release()));
  }
  if (PyList_CheckExact(obj.ptr())) return items;
  Ref tuple = check(PyList_AsTuple(items.ptr()));
  if (PyTuple_CheckExact(obj.ptr())) return tuple;
  return check(PyObject_CallOneArg(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())), tuple.ptr()));  // torch.Size
}

Ref specialize(Handle symbolic) {
  try {
    SymbolicKind kind = symbolic_kind(symbolic.ptr());
    if (kind == kSymFloat) return check(PyNumber_Float(symbolic.ptr()));
    if (kind == kSymBool) {
      int truth = PyObject_IsTrue(symbolic.ptr());
      check_status(truth);
      return Ref::borrow(truth ? Py_True : Py_False);
    }
    return check(PyNumber_Index(symbolic.ptr()));
  } catch (const PythonError&) {
    rethrow_trace_error();
  }
}

[[noreturn]] void rethrow_trace_error() {
  // The pending error is taken out first: looking up the exception type with an error set
  // would be undefined (and in practice can clear it).
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (!type) throw InternalError("a Python call failed without setting an error");
  Ref owned_type = steal(type), owned_value = steal(value), owned_traceback = steal(traceback);
  Ref unsupported_type;
  try {
    unsupported_type = import_attr("cdynamo._trace_support", "TraceUnsupported");
  } catch (const PythonError&) {
    PyErr_Clear();
  }
  if (unsupported_type && PyErr_GivenExceptionMatches(type, unsupported_type.ptr())) {
    interp::Unsupported error(to_std_string(owned_value));
    // TraceOpError: what eager raises there, for the traced code's try/except.
    if (PyObject_HasAttrString(owned_value.ptr(), "error")) error.raised = check(PyObject_GetAttrString(owned_value.ptr(), "error"));
    throw error;
  }
  // A decision on a size or number only the data gives (`if mask.sum() > 0` over an unbacked
  // size): a graph break, as any branch on a tensor's value.
  static PyObject* const data_dependent_type =
      import_attr("torch.fx.experimental.symbolic_shapes", "GuardOnDataDependentSymNode").release();  // never freed
  if (PyErr_GivenExceptionMatches(type, data_dependent_type)) {
    std::string text = to_std_string(owned_value);
    interp::Unsupported error("a branch or Python number depends on a tensor's data (" + text.substr(0, text.find('\n')) +
                              "); keep the computation in tensors, or move it out of the compiled function");
    error.data_dependent = true;
    throw error;
  }
  static PyObject* const retrace_type = import_attr("cdynamo.shapes", "RetraceDynamic").release();  // never freed
  if (PyErr_GivenExceptionMatches(type, retrace_type)) {
    Ref data_dependent = check(PyObject_GetAttrString(owned_value.ptr(), "data_dependent"));
    throw interp::RetraceDynamic{to_std_string(owned_value), PyObject_IsTrue(data_dependent.ptr()) == 1};
  }
  PyErr_Restore(owned_type.release(), owned_value.release(), owned_traceback.release());
  throw PythonError();
}

GraphBuilder::GraphBuilder() {
  graph_ = check(PyObject_CallNoArgs(import_attr("torch.fx", "Graph").ptr()));
  root_ = check(PyDict_New());
}

void GraphBuilder::set_shape_trace(Ref shape_trace) {
  shape_trace_ = std::move(shape_trace);
  check_status(PyObject_SetAttrString(shape_trace_.ptr(), "graph", graph_.ptr()));
  Ref dynamic = check(PyObject_GetAttrString(shape_trace_.ptr(), "dynamic"));
  dynamic_ = PyObject_IsTrue(dynamic.ptr()) == 1;
}

void GraphBuilder::set_location(PyCodeObject* code, int line) {
  Ref where = check(PyUnicode_FromFormat("%U:%d", code->co_filename, line));
  check_status(PyObject_SetAttrString(shape_trace_.ptr(), "where", where.ptr()));
}

Handle GraphBuilder::fake_mode() {
  // Made on first use: many traced frames (helpers, wrappers) never touch a tensor, and a
  // FakeTensorMode costs a stack walk to build. A dynamic trace has its own, over its ShapeEnv.
  if (!fake_mode_) {
    fake_mode_ = dynamic_ ? check(PyObject_GetAttrString(shape_trace_.ptr(), "mode"))
                          : call_helper("cdynamo._trace_support", "new_fake_mode", {});
  }
  return fake_mode_;
}

void GraphBuilder::add_symbolic_outputs(Handle constant, std::vector<ValuePtr>& outputs) {
  if (!dynamic_ || !holds_symbolic(constant.ptr())) return;
  find_symbolic(constant.ptr(), [&](PyObject* symbolic) {
    for (const auto& seen : outputs)
      if (seen->obj.ptr() == symbolic) return false;
    auto output = interp::Value::constant(Ref::borrow(symbolic));
    try {
      output->node = call_method(shape_trace_, "to_fx", {Handle(symbolic)});
    } catch (const PythonError&) {
      rethrow_trace_error();
    }
    outputs.push_back(output);
    return false;  // every one of them
  });
}

std::string GraphBuilder::unique_name(const std::string& path) {
  std::string base;
  for (char c : path) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_" + base;
  std::string name = base;
  for (int n = 1; PyDict_GetItemString(root_.ptr(), name.c_str()); ++n) name = base + "_" + std::to_string(n);
  return name;
}

// A tensor fake tensors cannot stand in for (quantized, some subclasses) ends the trace there.
Ref GraphBuilder::fake_of(Handle tensor) {
  try {
    return call_helper("cdynamo._trace_support", "to_fake", {fake_mode(), tensor});
  } catch (const PythonError&) {
    rethrow_trace_error();
  }
}

ValuePtr GraphBuilder::add_input(Handle tensor, SourcePtr source) {
  std::string name = unique_name(source->str());
  Ref node = call_method(graph_, "placeholder", {str(name)});
  Ref fake;
  try {
    fake = call_method(shape_trace_, "fake_input", {tensor, str(source->str()), node});
  } catch (const PythonError&) {
    rethrow_trace_error();
  }
  Ref meta = check(PyObject_GetAttrString(node.ptr(), "meta"));
  check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake.ptr()));
  check_status(PyDict_SetItemString(meta.ptr(), "val", fake.ptr()));
  inputs_.push_back({source, Ref::borrow(tensor)});
  input_fakes_.emplace(fake.ptr(), fake);
  // Reserve the name so attributes never collide with placeholders.
  check_status(PyDict_SetItemString(root_.ptr(), name.c_str(), Py_None));
  return interp::Value::tensor(std::move(node), std::move(fake), std::move(source));
}

ValuePtr GraphBuilder::scalar_input(Handle number, SourcePtr source) {
  Ref name_text = str(source->str());
  Ref symbolic;
  try {
    Ref dynamic = call_method(shape_trace_, "scalar_is_dynamic", {number, name_text});
    if (dynamic.ptr() != Py_True) return nullptr;
    std::string name = unique_name(source->str());
    Ref node = call_method(graph_, "placeholder", {str(name)});
    symbolic = call_method(shape_trace_, "scalar_symbol", {number, name_text, node});
    Ref meta = check(PyObject_GetAttrString(node.ptr(), "meta"));
    check_status(PyDict_SetItemString(meta.ptr(), "example_value", symbolic.ptr()));
    check_status(PyDict_SetItemString(meta.ptr(), "val", symbolic.ptr()));
    check_status(PyDict_SetItemString(root_.ptr(), name.c_str(), Py_None));
  } catch (const PythonError&) {
    rethrow_trace_error();
  }
  inputs_.push_back({source, Ref::borrow(number)});
  return interp::Value::constant(std::move(symbolic), std::move(source));
}

ValuePtr GraphBuilder::add_attribute(Handle tensor, const std::string& path, SourcePtr source) {
  std::string name = unique_name(path);
  check_status(PyDict_SetItemString(root_.ptr(), name.c_str(), tensor.ptr()));
  Ref node = call_method(graph_, "get_attr", {str(name)});
  Ref fake = fake_of(tensor);
  input_fakes_.emplace(fake.ptr(), fake);
  Ref meta = check(PyObject_GetAttrString(node.ptr(), "meta"));
  check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake.ptr()));
  check_status(PyDict_SetItemString(meta.ptr(), "val", fake.ptr()));
  return interp::Value::tensor(std::move(node), std::move(fake), std::move(source));
}

std::string GraphBuilder::add_module(Handle module, const std::string& path) {
  // The same module called twice gets one attribute.
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(root_.ptr(), &pos, &key, &value))
    if (value == module.ptr()) return PyUnicode_AsUTF8(key);
  std::string name = unique_name(path);
  check_status(PyDict_SetItemString(root_.ptr(), name.c_str(), module.ptr()));
  return name;
}

bool GraphBuilder::holds_module(Handle module) const {
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(root_.ptr(), &pos, &key, &value))
    if (value == module.ptr()) return true;
  return false;
}

namespace {

// Callables fx writes into a graph's code by name (operators, higher-order operators, enum
// members); any other callable argument it would write as its repr.
bool is_fx_printable_callable(Handle obj) {
  static Ref& op_overload = *new Ref(import_attr("torch._ops", "OpOverload"));  // never freed: outlives the interpreter
  static Ref& higher_order = *new Ref(import_attr("torch._ops", "HigherOrderOperator"));  // likewise
  static Ref& enum_type = *new Ref(import_attr("enum", "Enum"));  // likewise
  for (const Ref* type : {&op_overload, &higher_order, &enum_type}) {
    int is = PyObject_IsInstance(obj.ptr(), type->ptr());
    check_status(is);
    if (is) return true;
  }
  return false;
}

std::string callable_repr(Handle obj) {
  Ref text = steal(PyObject_Repr(obj.ptr()));
  if (!text) {
    PyErr_Clear();
    return Py_TYPE(obj.ptr())->tp_name;
  }
  return to_std_string(text);
}

}  // namespace

Ref GraphBuilder::to_fx_arg(const ValuePtr& value, bool fake, const std::string& what) {
  interp::WalkPath path;
  return to_fx_arg(value, fake, what, path);
}

Ref GraphBuilder::to_fx_arg(const ValuePtr& value, bool fake, const std::string& what, interp::WalkPath& path) {
  using interp::ValueKind;
  if (value->is_sequence() || value->kind == ValueKind::Dict) {
    // An fx argument is a finite tree: a list that contains itself cannot be one.
    interp::PathStep step(path, value.get(), "an argument");
    if (step.cycle())
      throw interp::Unsupported(what + " received a " + value->describe() + " that contains itself");
    return to_fx_container(value, fake, what, path);
  }
  switch (value->kind) {
    case ValueKind::Tensor: return fake ? value->fake : value->node;
    case ValueKind::Constant:
      // A numpy scalar enters the graph as the Python number it holds (as torch reads it).
      if (interp::is_numpy_scalar(value->obj.ptr())) return check(PyObject_CallMethod(value->obj.ptr(), "item", nullptr));
      // Python's number types stand for dtypes in torch calls (torch.zeros(n, dtype=int)): the
      // graph holds the dtype torch reads them as (fx cannot write a class into its code).
      // A size of a dynamic trace: the nodes that compute it from the inputs' sizes.
      if (dynamic_ && !fake && holds_symbolic(value->obj.ptr())) {
        try {
          return call_method(shape_trace_, "to_fx", {value->obj});
        } catch (const PythonError&) {
          rethrow_trace_error();
        }
      }
      if (PyType_Check(value->obj.ptr())) {
        static const std::pair<PyObject*, const char*> kNumberDtypes[] = {
            {reinterpret_cast<PyObject*>(&PyLong_Type), "int64"}, {reinterpret_cast<PyObject*>(&PyFloat_Type), "float64"},
            {reinterpret_cast<PyObject*>(&PyBool_Type), "bool"}, {reinterpret_cast<PyObject*>(&PyComplex_Type), "complex128"}};
        for (const auto& [type, dtype] : kNumberDtypes)
          if (value->obj.ptr() == type) return import_attr("torch", dtype);
      }
      if (PyCallable_Check(value->obj.ptr()) && !is_fx_printable_callable(value->obj))
        // fx writes an argument by its repr: `<built-in method cos ...>` is not Python, and the
        // graph's code would not compile (torch.func.vjp(torch.cos, x) as one node).
        throw interp::Unsupported(what + " received the callable " + callable_repr(value->obj) +
                                  " as an argument, which a graph cannot hold");
      return value->obj;
    default:
      throw interp::Unsupported(what + " received a " + value->describe() +
                                ", which cannot be passed into a graph");
  }
}

Ref GraphBuilder::to_fx_container(const ValuePtr& value, bool fake, const std::string& what, interp::WalkPath& path) {
  using interp::ValueKind;
  switch (value->kind) {
    case ValueKind::Tuple:
    case ValueKind::List: {
      Ref list = check(PyList_New(static_cast<Py_ssize_t>(value->items.size())));
      for (size_t i = 0; i < value->items.size(); ++i)
        PyList_SET_ITEM(list.ptr(), i, to_fx_arg(value->items[i], fake, what, path).release());
      if (value->kind == ValueKind::List) return list;
      Ref tuple = check(PyList_AsTuple(list.ptr()));
      // A namedtuple (PackedSequence into an nn.LSTM) stays one: fx writes it by its class.
      if (value->obj && PyType_Check(value->obj.ptr()) && PyObject_HasAttrString(value->obj.ptr(), "_fields") &&
          PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(value->obj.ptr()), &PyTuple_Type)) {
        Ref make = check(PyObject_GetAttrString(value->obj.ptr(), "_make"));
        return check(PyObject_CallOneArg(make.ptr(), tuple.ptr()));
      }
      return tuple;
    }
    case ValueKind::Dict: {
      Ref dict = check(PyDict_New());
      for (size_t i = 0; i < value->items.size(); ++i)
        check_status(PyDict_SetItem(dict.ptr(), value->keys[i].ptr(), to_fx_arg(value->items[i], fake, what, path).ptr()));
      return dict;
    }
    default: throw InternalError("to_fx_container of a non-container");
  }
}

Ref GraphBuilder::fake_call(Handle fn, const std::vector<ValuePtr>& args, const KwArgs& kwargs,
                            const std::string& what) {
  Ref fake_args = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(fake_args.ptr(), i, to_fx_arg(args[i], true, what).release());
  Ref fake_kwargs = check(PyDict_New());
  for (const auto& [name, value] : kwargs)
    check_status(PyDict_SetItemString(fake_kwargs.ptr(), name.c_str(), to_fx_arg(value, true, what).ptr()));
  try {
    return call_helper("cdynamo._trace_support", "fake_run", {fake_mode(), str(what), fn, fake_args, fake_kwargs});
  } catch (const PythonError&) {
    rethrow_trace_error();
  }
}

ValuePtr GraphBuilder::call(const char* op, Handle target, const std::vector<ValuePtr>& args,
                            const KwArgs& kwargs, const std::string& what, bool keep_node) {
  if (subclass_results_) {
    for (const ValuePtr& arg : args) refuse_unrun_torch_function(arg, what);
    for (const auto& [name, value] : kwargs) refuse_unrun_torch_function(value, what);
  }
  // What runs on fake tensors: the callable itself, or for call_method the bound method.
  Ref fake_fn;
  std::vector<ValuePtr> fake_args = args;
  std::string op_name = op;
  if (op_name == "call_method") {
    Ref self_fake = to_fx_arg(args.at(0), true, what);
    fake_fn = check(PyObject_GetAttr(self_fake.ptr(), target.ptr()));
    fake_args.erase(fake_args.begin());
  } else if (op_name == "call_module") {
    // A twin of the layer holding fake parameters: the fake run never sees a real tensor.
    Ref module = check(PyObject_GetItem(root_.ptr(), target.ptr()));
    fake_fn = call_helper("cdynamo._trace_support", "fake_module", {fake_mode(), module});
  } else {
    fake_fn = Ref::borrow(target);
  }
  Ref fake_result = fake_call(fake_fn, fake_args, kwargs, what);

  Ref node_args = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(node_args.ptr(), i, to_fx_arg(args[i], false, what).release());
  Ref node_kwargs = check(PyDict_New());
  for (const auto& [name, value] : kwargs)
    check_status(PyDict_SetItemString(node_kwargs.ptr(), name.c_str(), to_fx_arg(value, false, what).ptr()));
  Ref node = call_method(graph_, "create_node", {str(op_name), target, node_args, node_kwargs});
  ValuePtr result = wrap_result(node, fake_result, keep_node);
  // A tensor subclass among the arguments: torch.Tensor.__torch_function__ gives results of the
  // most derived one (what type() and isinstance() see in the trace; the graph's outputs are
  // given their classes when it runs).
  if (!subclass_results_) return result;
  Handle subclass;
  for (const ValuePtr& arg : args) subclass = most_derived_subclass(arg, subclass);
  for (const auto& [name, value] : kwargs) subclass = most_derived_subclass(value, subclass);
  if (subclass) mark_subclass(result, subclass);
  return result;
}

bool GraphBuilder::wraps_results(Handle cls) {
  static std::unordered_map<PyObject*, std::pair<Ref, bool>>& answers = *new std::unordered_map<PyObject*, std::pair<Ref, bool>>();  // never freed: outlives the interpreter
  auto found = answers.find(cls.ptr());
  if (found != answers.end()) return found->second.second;
  static PyObject* const is_live = import_attr("cdynamo._tensor_subclasses", "has_live_torch_function").release();  // never freed: likewise
  bool live = Ref(check(PyObject_CallOneArg(is_live, cls.ptr()))).ptr() == Py_True;
  answers.emplace(cls.ptr(), std::make_pair(Ref::borrow(cls.ptr()), live));  // the class kept alive: its address stays its own
  return live;
}

// The most derived of `found` and the tensor subclasses in value (through tuples and lists).
Handle GraphBuilder::most_derived_subclass(const ValuePtr& value, Handle found) {
  if (!value) return found;
  if (value->is_tensor()) {
    if (!value->cls || !wraps_results(value->cls)) return found;
    if (!found || PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(value->cls.ptr()), reinterpret_cast<PyTypeObject*>(found.ptr())))
      return Handle(value->cls.ptr());
    return found;
  }
  if (value->is_sequence())
    for (const ValuePtr& item : value->items) found = most_derived_subclass(item, found);
  return found;
}

void GraphBuilder::mark_subclass(const ValuePtr& result, Handle subclass) {
  if (!result) return;
  if (result->is_tensor() && !result->source && !result->cls) result->cls = Ref::borrow(subclass.ptr());
  if (result->is_sequence())
    for (const ValuePtr& item : result->items) mark_subclass(item, subclass);
}

namespace {

// Whether a result holds a tensor at any depth of its tuples and lists (LSTM's (out, (h, c))).
bool holds_tensor(PyObject* obj) {
  if (is_tensor(Handle(obj))) return true;
  if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
    if (PyDict_Check(obj)) {
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      while (PyDict_Next(obj, &pos, &key, &value))
        if (holds_tensor(value)) return true;
    }
    return false;
  }
  Ref items = check(PySequence_Fast(obj, "sequence"));
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
    if (holds_tensor(PySequence_Fast_GET_ITEM(items.ptr(), i))) return true;
  return false;
}

}  // namespace

ValuePtr GraphBuilder::wrap_result(Handle node, Handle fake_result, bool keep_node) {
  Ref meta = check(PyObject_GetAttrString(node.ptr(), "meta"));
  // Sizes only the data gives (nonzero's, item()'s) are recorded on the node that makes them,
  // as backends retracing the graph (AOTAutograd) expect.
  if (dynamic_ && !keep_node) call_method(shape_trace_, "bind_unbacked", {fake_result, node});
  if (is_tensor(fake_result)) {
    ++op_count_;
    check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake_result.ptr()));
    check_status(PyDict_SetItemString(meta.ptr(), "val", fake_result.ptr()));
    ValuePtr tensor = interp::Value::tensor(Ref::borrow(node), Ref::borrow(fake_result));
    // An in-place op's result is its receiver's fake: the receiver (registered first) stays the
    // tensor that fake stands for.
    if (!computed_tensor(fake_result) && !input_fakes_.count(fake_result.ptr())) computed_[fake_result.ptr()] = tensor;
    return tensor;
  }
  const bool is_sequence = PyTuple_Check(fake_result.ptr()) || PyList_Check(fake_result.ptr());
  if (!holds_tensor(fake_result.ptr())) {
    if (dynamic_ && is_symbolic(fake_result.ptr())) {
      // A number computed from tensor data (Tensor.item() with config.capture_scalar_outputs):
      // an unbacked symbol that this node computes.
      ++op_count_;
      check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake_result.ptr()));
      check_status(PyDict_SetItemString(meta.ptr(), "val", fake_result.ptr()));
      call_method(shape_trace_, "bind_node", {fake_result, node});
      return interp::Value::constant(Ref::borrow(fake_result));
    }
    if (keep_node) {
      ++op_count_;
      return interp::Value::constant(Ref::borrow(fake_result));
    }
    // Metadata (sizes, dtypes, flags): a constant for the rest of the trace; guards on the
    // inputs' metadata keep it valid.
    call_method(graph_, "erase_node", {node});
    return interp::Value::constant(Ref::borrow(fake_result));
  }
  if (PyDict_CheckExact(fake_result.ptr())) {
    // A plain dict (torch.func's has_aux outputs): an item node per key holding tensors.
    ++op_count_;
    check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake_result.ptr()));
    Ref getitem = import_attr("operator", "getitem");
    std::vector<Ref> keys;
    std::vector<ValuePtr> values;
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(fake_result.ptr(), &pos, &key, &item)) {
      if (!PyUnicode_CheckExact(key) && !PyLong_CheckExact(key))  // what fx writes as a literal
        throw interp::Unsupported("a call returned a dict keyed by a " + std::string(Py_TYPE(key)->tp_name));
      keys.push_back(Ref::borrow(key));
      if (!holds_tensor(item)) {
        values.push_back(interp::Value::constant(Ref::borrow(item)));
        continue;
      }
      Ref item_args = check(PyTuple_Pack(2, node.ptr(), key));
      Ref item_node = call_method(graph_, "call_function", {getitem, item_args});
      --op_count_;  // the nested call counts its own getitem
      values.push_back(wrap_result(item_node, Handle(item), true));
    }
    return interp::Value::dict(std::move(keys), std::move(values));
  }
  // A fake tensor must never become a constant the program sees: a result holding tensors some
  // other way than in tuples, lists and dicts is not traced.
  if (!is_sequence)
    throw interp::Unsupported("a call returned a " + std::string(Py_TYPE(fake_result.ptr())->tp_name) +
                              " holding tensors, which the trace cannot take apart");
  ++op_count_;
  check_status(PyDict_SetItemString(meta.ptr(), "example_value", fake_result.ptr()));
  Ref getitem = import_attr("operator", "getitem");
  Ref items = check(PySequence_Fast(fake_result.ptr(), "sequence"));
  std::vector<ValuePtr> values;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(items.ptr(), i);
    if (!holds_tensor(item)) {
      values.push_back(interp::Value::constant(Ref::borrow(item)));
      continue;
    }
    Ref index = check(PyLong_FromSsize_t(i));
    Ref item_args = check(PyTuple_Pack(2, node.ptr(), index.ptr()));
    Ref item_node = call_method(graph_, "call_function", {getitem, item_args});
    --op_count_;  // the nested call counts its own getitem
    values.push_back(wrap_result(item_node, Handle(item), true));
  }
  auto result = interp::Value::sequence(PyList_Check(fake_result.ptr()) ? interp::ValueKind::List
                                                                        : interp::ValueKind::Tuple,
                                        std::move(values));
  // torch.return_types results (values, indices) keep their type for attribute access.
  if (PyTuple_Check(fake_result.ptr()) && !PyTuple_CheckExact(fake_result.ptr()))
    result->obj = Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(fake_result.ptr())));
  return result;
}

ValuePtr GraphBuilder::computed_tensor(Handle fake) const {
  auto found = computed_.find(fake.ptr());
  if (found == computed_.end()) return nullptr;
  ValuePtr value = found->second.lock();
  return value && value->fake.ptr() == fake.ptr() ? value : nullptr;
}

void GraphBuilder::set_output(const std::vector<ValuePtr>& tensors) {
  Ref outputs = check(PyTuple_New(static_cast<Py_ssize_t>(tensors.size())));
  for (size_t i = 0; i < tensors.size(); ++i)
    PyTuple_SET_ITEM(outputs.ptr(), i, Ref(tensors[i]->node).release());
  call_method(graph_, "output", {outputs});
}

Ref GraphBuilder::build_graph_module(const std::string& name) {
  // Drop the names reserved for placeholders: GraphModule copies only what nodes reference.
  Ref root = check(PyDict_New());
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(root_.ptr(), &pos, &key, &value))
    if (value != Py_None) check_status(PyDict_SetItem(root.ptr(), key, value));
  return call_helper("cdynamo._trace_support", "make_graph_module", {root, graph_, str(name)});
}

}  // namespace cdynamo::graph
