// Calls of nn.Module objects during tracing: leaf layers as call_module nodes, user modules' forward
// inline, and Module.__call__'s hooks traced like any Python. Assumes _trace_support.module_hooks.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

// Whether the module's own __dict__ holds a "forward" (which self.forward then finds first).
bool instance_forward(PyObject* module) {
  PyObject** dict = _PyObject_GetDictPtr(module);
  return dict && *dict && PyDict_GetItemString(*dict, "forward");
}

// The hook tables of one module that a call reads, guarded so that registering or removing a hook
// after compiling recompiles (eager would run it from the next call on).
constexpr const char* kModuleHookTables[] = {"_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                                             "_backward_hooks"};
// Read only when hooks are present: which hooks take keyword arguments.
constexpr const char* kKwargsTables[] = {"_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs"};
// torch.nn.modules.module's tables of hooks every module runs.
constexpr const char* kGlobalHookTables[] = {"_global_forward_pre_hooks", "_global_forward_hooks",
                                             "_global_backward_pre_hooks", "_global_backward_hooks"};

bool is_none(const ValuePtr& v) { return v->kind == ValueKind::Constant && v->obj.ptr() == Py_None; }

// len(table) and, entry by entry, the same hook objects under the same handles.
void guard_hook_table(guards::GuardManager& table_manager, Handle table) {
  if (!PyDict_Check(table.ptr())) return;
  table_manager.add_length_check(PyDict_GET_SIZE(table.ptr()));
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(table.ptr(), &pos, &key, &value)) table_manager.dict_item(Handle(key)).add_id_match(Handle(value));
}

}  // namespace

bool Tracer::is_module_call_function(Handle fn) {
  static Ref& module_type = *new Ref(import_attr("torch.nn", "Module"));  // never freed: outlives the interpreter
  static const char* const kNames[] = {"__call__", "_wrapped_call_impl", "_call_impl"};
  PyObject* type_dict = reinterpret_cast<PyTypeObject*>(module_type.ptr())->tp_dict;
  for (const char* name : kNames) {
    PyObject* found = PyDict_GetItemString(type_dict, name);  // borrowed
    if (found && found == fn.ptr()) return true;
  }
  return false;
}

// Whether calling the module runs hooks (its own or torch.nn's global ones); guards that the
// tables stay as they are (once per module and trace).
bool Tracer::guard_module_hooks(const ValuePtr& module) {
  if (!global_hooks_guarded_) {
    global_hooks_guarded_ = true;
    Ref impl = import_attr("torch.nn.modules", "module");
    for (const char* name : kGlobalHookTables) {
      Ref table = steal(PyObject_GetAttrString(impl.ptr(), name));
      if (!table) {
        PyErr_Clear();
        continue;
      }
      global_hooks_present_ = global_hooks_present_ || (PyDict_Check(table.ptr()) && PyDict_GET_SIZE(table.ptr()) > 0);
      guard_hook_table(guards_->fixed(table, std::string("torch.nn.modules.module.") + name), table);
    }
  }
  const bool guard = module->source && hook_guarded_modules_.insert(module->obj.ptr()).second;
  bool own = false;
  for (const char* name : kModuleHookTables) {
    Ref table = steal(PyObject_GetAttrString(module->obj.ptr(), name));
    if (!table) {
      PyErr_Clear();
      continue;
    }
    own = own || (PyDict_Check(table.ptr()) && PyDict_GET_SIZE(table.ptr()) > 0);
    if (guard) guard_hook_table(module->source->manager(*guards_).attr(name), table);
  }
  if (own && guard)
    for (const char* name : kKwargsTables) {
      Ref table = steal(PyObject_GetAttrString(module->obj.ptr(), name));
      if (table) guard_hook_table(module->source->manager(*guards_).attr(name), table);
      else PyErr_Clear();
    }
  return own || global_hooks_present_;
}

// Module.__call__ with hooks, as eager runs it: forward pre-hooks (each may replace the arguments),
// the forward (a leaf layer's too: inline, so that its call_module node never runs the hooks a
// second time), then forward hooks (each may replace the result). The hooks are traced as Python.
ValuePtr Tracer::call_module_with_hooks(ValuePtr module, Handle hooks, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  const std::string what = "the module " + module->module_path;
  Ref backward = check(PyObject_GetAttrString(hooks.ptr(), "backward"));
  if (PyObject_IsTrue(backward.ptr()))
    unsupported("calling " + what + ", which has backward hooks (they wrap its inputs and outputs in autograd Functions)");
  auto kwargs_value = [&] {
    std::vector<Ref> keys;
    std::vector<ValuePtr> values;
    for (const auto& [name, value] : kwargs) {
      keys.push_back(check(PyUnicode_FromString(name.c_str())));
      values.push_back(value);
    }
    return Value::dict(std::move(keys), std::move(values));
  };
  Ref pre_hooks = check(PyObject_GetAttrString(hooks.ptr(), "pre"));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pre_hooks.ptr()); ++i) {
    PyObject* entry = PyList_GET_ITEM(pre_hooks.ptr(), i);  // (hook, with_kwargs)
    ValuePtr hook = Value::constant(Ref::borrow(PyTuple_GET_ITEM(entry, 0)));
    const bool with_kwargs = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
    ValuePtr positional = Value::sequence(ValueKind::Tuple, args);
    if (with_kwargs) {
      ValuePtr result = call_value(hook, {module, positional, kwargs_value()}, {});
      if (is_none(result)) continue;
      if (result->kind != ValueKind::Tuple || result->items.size() != 2 || result->items[1]->kind != ValueKind::Dict)
        unsupported("a forward pre-hook with kwargs of " + what + " returned other than (args, kwargs)");
      args = iterate(result->items[0]);
      kwargs.clear();
      for (size_t k = 0; k < result->items[1]->items.size(); ++k)
        kwargs.emplace_back(to_std_string(result->items[1]->keys.at(k)), result->items[1]->items[k]);
    } else {
      ValuePtr result = call_value(hook, {module, positional}, {});
      if (is_none(result)) continue;
      args = result->kind == ValueKind::Tuple ? result->items : std::vector<ValuePtr>{result};
    }
  }
  ValuePtr result = call_forward(module, args, kwargs, false);
  Ref forward_hooks = check(PyObject_GetAttrString(hooks.ptr(), "forward"));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(forward_hooks.ptr()); ++i) {
    PyObject* entry = PyList_GET_ITEM(forward_hooks.ptr(), i);
    ValuePtr hook = Value::constant(Ref::borrow(PyTuple_GET_ITEM(entry, 0)));
    ValuePtr positional = Value::sequence(ValueKind::Tuple, args);
    ValuePtr replaced = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1))
                            ? call_value(hook, {module, positional, kwargs_value(), result}, {})
                            : call_value(hook, {module, positional, result}, {});
    if (!is_none(replaced)) result = replaced;
  }
  return result;
}

ValuePtr Tracer::call_nn_module(ValuePtr module, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool own_call,
                                bool direct) {
  PyObject* obj = module->obj.ptr();
  std::string type_name = Py_TYPE(obj)->tp_name;
  static Ref& compiled_module = *new Ref(import_attr("cdynamo.eval_frame", "OptimizedModule"));  // never freed: outlives the interpreter
  if (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(compiled_module.ptr()) &&
      PyObject_IsTrue(call_helper("cdynamo._trace_support", "is_compiled_module", {obj}).ptr()))
    return call_nn_module(nn_module_attr(module, "_orig_mod"), std::move(args), std::move(kwargs), true,
                          direct);  // compile(m) inside compiled code
  static Ref& lazy_mixin = *new Ref(import_attr("torch.nn.modules.lazy", "LazyModuleMixin"));  // never freed: outlives the interpreter
  int lazy = PyObject_IsInstance(obj, lazy_mixin.ptr());
  check_status(lazy);
  if (lazy && PyObject_IsTrue(Ref(check(PyObject_CallMethod(obj, "has_uninitialized_params", nullptr))).ptr())) {
    // nn.LazyLinear's first call: its parameters are made now, from the arguments' shapes; then it
    // is the layer it becomes (its pre-hook removed), traced as such.
    Ref initialize = call_helper("cdynamo._special_calls", "lazy_module_initializer", {obj});
    graph_.fake_call(initialize, args, kwargs, type_name + " (initialising its lazy parameters)");
    type_name = Py_TYPE(obj)->tp_name;
  }
  const bool hooked = guard_module_hooks(module);
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  static Ref& default_call = *new Ref(check(PyObject_GetAttrString(import_attr("torch.nn", "Module").ptr(), "__call__")));  // never freed: outlives the interpreter
  Ref class_call = check(PyObject_GetAttrString(type, "__call__"));
  if (own_call && class_call.ptr() != default_call.ptr()) {
    // A layer class with its own __call__ (transformers' GradientCheckpointingLayer): it is
    // Python like any other, and its super().__call__ comes back here (hooks, then forward).
    if (!PyFunction_Check(class_call.ptr())) unsupported(type_name + " overrides __call__ with a " + Py_TYPE(class_call.ptr())->tp_name);
    args.insert(args.begin(), module);
    return inline_call(class_call, std::move(args), std::move(kwargs), nullptr, direct);
  }
  if (hooked) {
    Ref hooks = call_helper("cdynamo._trace_support", "module_hooks", {obj});
    if (hooks.ptr() != Py_None) return call_module_with_hooks(module, hooks, std::move(args), std::move(kwargs));
  }
  int is_leaf = PyObject_IsTrue(call_helper("cdynamo._trace_support", "is_leaf_module", {obj}).ptr());
  check_status(is_leaf);
  // A layer whose attributes the trace changed (bn.eval() earlier in forward) runs inline: the
  // graph replays attribute writes only after it runs, and a call_module node would read the
  // old `training` flag.
  if (is_leaf && !has_pending_writes(module)) {
    std::string target = graph_.add_module(obj, module->module_path);
    Ref target_name = check(PyUnicode_FromString(target.c_str()));
    return graph_.call("call_module", target_name, args, kwargs, type_name + " (" + module->module_path + ")");
  }
  // nn.Sequential's own forward, child by child (a subclass may define a forward of its own).
  Ref forward = check(PyObject_GetAttrString(type, "forward"));
  static Ref& sequential_forward = *new Ref(check(PyObject_GetAttrString(import_attr("torch.nn", "Sequential").ptr(), "forward")));  // never freed: outlives the interpreter
  if (forward.ptr() == sequential_forward.ptr() && !instance_forward(obj) && args.size() == 1 && kwargs.empty()) {
    ValuePtr x = args[0];
    DepthCount level(value_recursion_);
    enter_value_recursion("nn.Sequential modules");  // a Sequential inside itself recurses forever in eager too
    for (auto& child : iterate(module)) x = call_nn_module(child, {x}, {});
    return x;
  }
  // A user-defined module: run its forward() inline, as Module.__call__ does without hooks.
  return call_forward(module, std::move(args), std::move(kwargs), direct);
}

// Module.__call__ calls self.forward: a forward stored on the instance (timm's FasterNet picks
// one of its methods in __init__) wins over the class's.
ValuePtr Tracer::call_forward(const ValuePtr& module, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool direct) {
  if (instance_forward(module->obj.ptr())) return call_value(load_attr(module, "forward"), std::move(args), std::move(kwargs));
  Ref forward = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(module->obj.ptr())), "forward"));
  args.insert(args.begin(), module);
  return inline_call(forward, std::move(args), std::move(kwargs), nullptr, direct);
}

}  // namespace cdynamo::interp
