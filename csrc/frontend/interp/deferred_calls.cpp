// print(), warnings.warn() and calls of enabled loggers whose arguments the trace knows (strings,
// numbers, shapes): made after the graph, in order with the frame's other side effects, so the
// console shows what eager prints. Arguments the graph computes (a tensor's values) break it.
#include <unordered_set>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

// A logging.Logger object from the frame.
bool is_logger(const ValuePtr& value) {
  if (value->kind != ValueKind::Object || !value->obj) return false;
  static Ref& logger_type = *new Ref(import_attr("logging", "Logger"));  // never freed: outlives the interpreter
  int found = PyObject_IsInstance(value->obj.ptr(), logger_type.ptr());
  check_status(found);
  return found != 0;
}

}  // namespace

ValuePtr Tracer::defer_call(ValuePtr callable, std::vector<ValuePtr> args, graph::KwArgs kwargs, const std::string& what) {
  if (!all_constant(args, kwargs))
    unsupported(what + " of a value the graph computes (a tensor's data): print its shape, or move the call "
                       "out of the compiled function");
  std::vector<Ref> names;
  std::vector<ValuePtr> values;
  for (auto& [name, value] : kwargs) {
    if (name == "file") unsupported(what + " with file=, a stream the trace does not follow");
    names.push_back(check(PyUnicode_FromString(name.c_str())));
    values.push_back(value);
  }
  ValuePtr call = Value::sequence(ValueKind::Tuple, {callable, Value::sequence(ValueKind::Tuple, std::move(args)),
                                                     Value::dict(std::move(names), std::move(values))});
  side_effects_.push_back({callable, kDeferredCall, std::move(call)});
  return Value::constant(Ref::borrow(Py_None));
}

// _special_calls.after_graph(fn, *args), a stand-in's: fn(*args) made after the graph, its
// arguments constants, tensors or values read from the frame (rebuilt from their sources).
ValuePtr Tracer::defer_after_graph(std::vector<ValuePtr> args) {
  if (args.empty()) unsupported("after_graph() without a function");
  ValuePtr callable = args.front();
  args.erase(args.begin());
  for (const ValuePtr& arg : args)
    if (!arg->is_fully_constant() && !arg->source && !arg->is_tensor())
      unsupported("a call made after the graph with a " + arg->describe() + " the trace made");
  ValuePtr call = Value::sequence(ValueKind::Tuple, {callable, Value::sequence(ValueKind::Tuple, std::move(args)), Value::dict({}, {})});
  side_effects_.push_back({callable, kDeferredCall, std::move(call)});
  return Value::constant(Ref::borrow(Py_None));
}

// t.register_hook(hook) on a tensor passed in: registered after the graph (autograd reads a
// tensor's hooks when backward runs, after the call returns). The handle it returns is a stand-in
// whose remove() breaks the graph.
ValuePtr Tracer::defer_tensor_hook(const ValuePtr& tensor, const ValuePtr& hook) {
  static Ref& register_hook = *new Ref(check(PyObject_GetAttrString(import_attr("torch", "Tensor").ptr(), "register_hook")));  // never freed: outlives
  static Ref& handle = *new Ref(import_attr("cdynamo._polyfills.torch_calls", "DEFERRED_HOOK_HANDLE"));                      // the interpreter
  ValuePtr callable = Value::constant(register_hook);
  ValuePtr call = Value::sequence(ValueKind::Tuple, {callable, Value::sequence(ValueKind::Tuple, {tensor, hook}), Value::dict({}, {})});
  side_effects_.push_back({callable, kDeferredCall, std::move(call)});
  return Value::constant(handle);
}

// A stand-in object the trace made (_polyfills.classes: functools.partial, deque, SimpleNamespace)
// whose state is all constants, as the real object, made and filled as after a graph
// (_trace_objects.real_object); null for any other value.
Ref Tracer::constant_stand_in(const ValuePtr& value) {
  static Ref& real_object = *new Ref(import_attr("cdynamo._trace_objects", "real_object"));  // never freed: outlives the interpreter
  if (value->kind != ValueKind::NewObject || !value->cls || !PyType_Check(value->cls.ptr()) || value->items.empty()) return Ref();
  PyObject* stands_for = PyDict_GetItemString(as_type(value->cls)->tp_dict, "_cdynamo_stands_for");  // borrowed
  const ValuePtr& state = value->items[0];
  if (!stands_for || !state || !state->is_fully_constant()) return Ref();
  return check(PyObject_CallFunctionObjArgs(real_object.ptr(), stands_for, state->as_python_constant().ptr(), nullptr));
}

// t.register_hook(hook) on a tensor the graph computes: an identity node whose backward runs the
// hook (_special_calls.tensor_hook_node), which the tensor's later uses read through. Eager's hook
// sees the gradient from every use, so a tensor already used is refused.
ValuePtr Tracer::hook_in_graph(const ValuePtr& tensor, const ValuePtr& hook) {
  static Ref& handle = *new Ref(import_attr("cdynamo._polyfills.torch_calls", "DEFERRED_HOOK_HANDLE"));  // never freed: outlives the interpreter
  Ref function;
  std::vector<ValuePtr> captured;  // tensors of the trace a hook's closure holds: the node's arguments
  if (hook->is_constant() && PyCallable_Check(hook->obj.ptr())) {
    function = hook->obj;
  } else if (hook->kind == ValueKind::Function && hook->items.empty()) {
    function = hook->obj;
  } else if (Ref real = constant_stand_in(hook); real && PyCallable_Check(real.ptr())) {
    function = std::move(real);  // a functools.partial of constants
  } else if (hook->kind == ValueKind::UserMethod && hook->items.at(0)->source && hook->items[0]->obj &&
             !has_pending_writes(hook->items[0])) {
    function = check(PyMethod_New(hook->obj.ptr(), hook->items[0]->obj.ptr()));  // a method of an object from the frame
  } else if (hook->kind == ValueKind::Function) {
    // A closure (over tensors the function computes, constants, functions): made again at each
    // backward with the node's tensors in its cells. A module's parameters are graph inputs
    // that only hold while a node runs: refused.
    function = transformed_function(hook, "Tensor.register_hook()", captured);
    Ref holds_module = call_helper("cdynamo._special_calls", "closes_over_module", {function});
    if (holds_module.ptr() == Py_True) unsupported("Tensor.register_hook() with a hook that closes over a module");
  } else {
    unsupported("Tensor.register_hook() with a hook that closes over values of the compiled function");
  }
  Ref requires_grad = check(PyObject_GetAttrString(tensor->fake.ptr(), "requires_grad"));
  if (requires_grad.ptr() != Py_True) raise(PyExc_RuntimeError, "cannot register a hook on a tensor that doesn't require gradient");
  if (PyObject_Length(Ref(check(PyObject_GetAttrString(tensor->node.ptr(), "users"))).ptr()) != 0)
    unsupported("Tensor.register_hook() on a tensor already used in the compiled function (the hook would miss those uses' gradients)");
  Ref target = check(PyObject_GetAttrString(tensor->node.ptr(), "target"));
  if (PyObject_HasAttrString(target.ptr(), "hooks") && PyObject_HasAttrString(target.ptr(), "_cdynamo_runs_as_captured")) {
    // A second hook on the tensor: the node's, after the first (autograd runs them in order).
    if (!captured.empty()) unsupported("a second Tensor.register_hook() on a tensor, closing over tensors the function computes");
    Ref hooks = check(PyObject_GetAttrString(target.ptr(), "hooks"));
    check_status(PyList_Append(hooks.ptr(), function.ptr()));
    return Value::constant(handle);
  }
  target = call_helper("cdynamo._special_calls", "tensor_hook_node", {function, steal(PyLong_FromSize_t(captured.size()))});
  keep_alive_.push_back(target);
  std::vector<ValuePtr> node_args{tensor};
  node_args.insert(node_args.end(), captured.begin(), captured.end());
  ValuePtr hooked = graph_.call("call_function", target, std::move(node_args), {}, "Tensor.register_hook()");
  tensor->node = hooked->node;  // every later use of the tensor reads it through the hook
  tensor->fake = hooked->fake;
  return Value::constant(handle);
}

// logger.debug(...) (any logging.Logger method that logs) at a level the logger does not emit
// now: a call that does nothing, skipped, with a guard that the logger still does not emit at
// that level (a change of level recompiles). Null when the call would log (is_logging_call).
ValuePtr Tracer::silent_log_call(const ValuePtr& method, const std::vector<ValuePtr>& args) {
  const ValuePtr& logger = method->items.at(0);
  if (method->name.empty() || !is_logger(logger)) return nullptr;  // every method call of an object passes here
  Ref first = !args.empty() && args[0]->is_constant() ? args[0]->obj : Ref::borrow(Py_None);
  Ref level = call_helper("cdynamo._trace_support", "silent_log_level",
                          {logger->obj, check(PyUnicode_FromString(method->name.c_str())), first});
  if (level.ptr() == Py_None) return nullptr;
  Ref target = logger->obj;
  guards_->add_same_object_guard(
      [target, level](const guards::FrameView&) -> PyObject* {
        return PyObject_CallMethod(target.ptr(), "isEnabledFor", "O", level.ptr());
      },
      "the logger's isEnabledFor(" + to_std_string(Ref(check(PyObject_Str(level.ptr())))) + ")",
      [](const guards::FrameView&) -> PyObject* { return Py_NewRef(Py_False); }, "False (it logged nothing when traced)");
  keep_alive_.push_back(target);
  return Value::constant(Ref::borrow(Py_None));
}

// A call of a logging.Logger method that logs, on a logger read from the frame's globals (rebuilt
// after the graph from there): deferred, as print is.
bool Tracer::is_logging_call(const ValuePtr& method) const {
  static const std::unordered_set<std::string> names = {"debug", "info", "warning", "warn", "error", "critical", "log"};
  const ValuePtr& logger = method->items.at(0);
  return logger->source && names.count(method->name) && is_logger(logger);
}

}  // namespace cdynamo::interp
