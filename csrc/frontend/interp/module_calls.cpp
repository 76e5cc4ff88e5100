// nn.Module calls in the trace (leaf layers as call_module nodes, user forwards inline, __call__'s
// hooks traced) and containers of the frame's modules made inside. Assumes _trace_support.module_hooks.
#include <functional>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/traced_keys.h"
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
  PyObject* type_dict = as_type(module_type)->tp_dict;
  for (const char* name : kNames) {
    PyObject* found = PyDict_GetItemString(type_dict, name);  // borrowed
    if (found && found == fn.ptr()) return true;
  }
  return false;
}

// Hooks registered in the trace (the stand-ins of register_forward_hook/register_forward_pre_hook
// call these): kept beside the module's own tables, which stay as they are (and guarded so).
ValuePtr Tracer::module_hook_call(Handle fn, const std::vector<ValuePtr>& args) {
  static Ref& register_fn = *new Ref(import_attr("cdynamo._polyfills.nn_modules", "register_traced_hook"));  // never freed: outlives the interpreter
  if (fn.ptr() == register_fn.ptr()) {
    if (args.size() != 5 || args[0]->kind != ValueKind::NNModule || !args[1]->is_constant() || !args[3]->is_constant() ||
        !args[4]->is_constant())
      unsupported("registering a hook on a " + args.at(0)->describe());
    traced_hooks_.push_back({args[0], to_std_string(args[1]->obj) == "pre", args[2], PyObject_IsTrue(args[3]->obj.ptr()) == 1,
                             PyObject_IsTrue(args[4]->obj.ptr()) == 1, false});
    return Value::constant(check(PyLong_FromSize_t(traced_hooks_.size() - 1)));
  }
  if (args.size() != 1 || !args[0]->is_constant() || !PyLong_Check(args[0]->obj.ptr())) unsupported("removing a hook by a traced id");
  const size_t id = PyLong_AsSize_t(args[0]->obj.ptr());
  if (id < traced_hooks_.size()) traced_hooks_[id].removed = true;  // a second remove() does nothing, as torch's
  return Value::constant(Ref::borrow(Py_None));
}

bool Tracer::has_traced_hooks(const ValuePtr& module) const {
  for (const TracedHook& hook : traced_hooks_)
    if (!hook.removed && hook.module->obj.ptr() == module->obj.ptr()) return true;
  return false;
}

void Tracer::check_traced_hooks_removed() const {
  for (const TracedHook& hook : traced_hooks_)
    if (!hook.removed)
      unsupported("a hook registered on " + hook.module->describe() +
                  " inside the compiled function and not removed before the graph ends");
}

// What Module.__call__ runs: the module's own and torch.nn's global hooks (_trace_support.module_hooks),
// with those the trace registered (prepended ones first, as torch moves them to the front).
// A registered hook as the trace calls it: a method of a module (a model counting its calls in a
// hook) is wrapped as the bound method it is, reached through the hook, so its receiver is a
// traced module whose attribute writes are replayed after the graph; any other callable is a
// constant.
ValuePtr Tracer::hook_value(Handle hook) {
  static Ref& module_type = *new Ref(import_attr("torch.nn", "Module"));  // never freed: outlives the interpreter
  if (!PyMethod_Check(hook.ptr()) || !PyFunction_Check(PyMethod_GET_FUNCTION(hook.ptr()))) return Value::constant(Ref::borrow(hook.ptr()));
  int is_module = PyObject_IsInstance(PyMethod_GET_SELF(hook.ptr()), module_type.ptr());
  check_status(is_module);
  if (!is_module) return Value::constant(Ref::borrow(hook.ptr()));
  return wrap(hook, Source::fixed(Ref::borrow(hook.ptr()), "a hook"));
}

Tracer::ModuleHooks Tracer::module_hooks_of(const ValuePtr& module) {
  ModuleHooks hooks;
  Ref real = call_helper("cdynamo._trace_support", "module_hooks", {module->obj});
  if (real.ptr() != Py_None) {
    hooks.backward = PyObject_IsTrue(Ref(check(PyObject_GetAttrString(real.ptr(), "backward"))).ptr()) == 1;
    for (auto [name, list] : {std::pair{"pre", &hooks.pre}, std::pair{"forward", &hooks.forward}}) {
      Ref entries = check(PyObject_GetAttrString(real.ptr(), name));
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries.ptr()); ++i) {
        PyObject* entry = PyList_GET_ITEM(entries.ptr(), i);  // (hook, with_kwargs)
        list->emplace_back(hook_value(Handle(PyTuple_GET_ITEM(entry, 0))), PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1)) == 1);
      }
    }
  }
  for (const TracedHook& hook : traced_hooks_) {
    if (hook.removed || hook.module->obj.ptr() != module->obj.ptr()) continue;
    auto& list = hook.pre ? hooks.pre : hooks.forward;
    if (hook.prepend && global_hooks_present_)
      unsupported("a hook prepended inside the compiled function while torch.nn has global hooks");
    if (hook.prepend) list.insert(list.begin(), {hook.hook, hook.with_kwargs});
    else list.emplace_back(hook.hook, hook.with_kwargs);
  }
  return hooks;
}

// A method of nn.Module itself (module.py, library code the trace does not enter: add_module,
// register_module, train, ...) called on a module the trace made (stateless, made once per compiled
// code, seen by nothing but the trace): it runs now on the real module, when every argument is a
// constant, a module the trace made, or a function the trace made that closes over nothing. A
// trace that fails later makes its module again. Null where this does not apply.
ValuePtr Tracer::module_method_now(const ValuePtr& module, Handle function, const std::vector<ValuePtr>& args,
                                   const graph::KwArgs& kwargs) {
  if (module->source || !module->obj || !PyFunction_Check(function.ptr())) return nullptr;
  static Ref& module_type = *new Ref(import_attr("torch.nn", "Module"));  // never freed: outlives the interpreter
  Ref name = check(PyObject_GetAttrString(function.ptr(), "__name__"));
  PyObject* own = PyDict_GetItemWithError(as_type(module_type)->tp_dict, name.ptr());
  if (!own && PyErr_Occurred()) throw PythonError();
  if (own != function.ptr()) return nullptr;
  auto real = [&](const ValuePtr& value) -> Ref {
    if (value->kind == ValueKind::NNModule && !value->source) return value->obj;
    if (value->kind == ValueKind::Function && value->items.empty()) return value->obj;
    if (value->is_fully_constant()) return value->as_python_constant();
    return Ref();
  };
  Ref positional = check(PyTuple_New(static_cast<Py_ssize_t>(args.size() + 1)));
  PyTuple_SET_ITEM(positional.ptr(), 0, Ref(module->obj).release());
  for (size_t i = 0; i < args.size(); ++i) {
    Ref arg = real(args[i]);
    if (!arg) return nullptr;
    PyTuple_SET_ITEM(positional.ptr(), i + 1, arg.release());
  }
  Ref keywords = check(PyDict_New());
  for (const auto& [key, value] : kwargs) {
    Ref arg = real(value);
    if (!arg) return nullptr;
    check_status(PyDict_SetItemString(keywords.ptr(), key.c_str(), arg.ptr()));
  }
  if (made_with_state_.contains(module->obj.ptr())) {
    // A module made for this call (serve_one_call_with): changed now, before the graph reads it
    // (its calls are graph nodes, run later: one the graph already calls would see the change).
    Ref parts = check(PyObject_CallMethod(module->obj.ptr(), "modules", nullptr));
    Ref iterator = check(PyObject_GetIter(parts.ptr()));
    while (Ref part = steal(PyIter_Next(iterator.ptr())))
      if (graph_.holds_module(part)) unsupported("Module." + to_std_string(name) + "() on a module made in the function after the graph called it");
    if (PyErr_Occurred()) throw PythonError();
    Ref ran = at_trace_time(function);
    Ref result = checked(PyObject_Call(ran.ptr(), positional.ptr(), keywords.ptr()));
    follow_generator(Ref(check(PyObject_GetAttrString(ran.ptr(), "rng_after"))));
    if (result.ptr() == module->obj.ptr()) return module;
    if (result.ptr() == Py_None) return Value::constant(std::move(result));
    unsupported("Module." + to_std_string(name) + "() on a module made in the function returns a " + Py_TYPE(result.ptr())->tp_name);
  }
  Ref result = checked(PyObject_Call(function.ptr(), positional.ptr(), keywords.ptr()));
  // Made once per compiled code, a module made in the function stays stateless (as construct_module requires).
  if (PyObject_IsTrue(call_helper("cdynamo._trace_support", "module_has_state", {module->obj}).ptr()))
    unsupported("Module." + to_std_string(name) + "() gave a module made in the function parameters or buffers");
  if (result.ptr() == module->obj.ptr()) return module;  // m.train() and the like return the module
  if (result.ptr() == Py_None) return Value::constant(std::move(result));
  unsupported("Module." + to_std_string(name) + "() on a module made in the function returns a " + Py_TYPE(result.ptr())->tp_name);
}

// A module made inside the function (transformers' ACT2FN[name], nn.ReLU()(x)): made now,
// once, from constant arguments, when it holds no parameters or buffers; eager makes a new one
// per call, which no stateless module can tell apart. One with parameters (a head built on the
// first call), or whose construction drew random numbers, is made now too, for this call only
// (serve_one_call_with). A container of the frame's modules (nn.Sequential(*list(m.children())[:-1]))
// holds no state of its own: its children are the frame's, called as they are; a container of
// modules made for this call is made for it too.
ValuePtr Tracer::construct_module(Handle cls, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs,
                                  const std::string& name) {
  ValuePtr made;
  std::vector<Ref> children;
  Ref rng_after = Ref::borrow(Py_None);
  const bool from_constants = all_constant(args, kwargs);
  if (from_constants) {
    Ref construction = at_trace_time(cls);
    made = fold(construction, args, kwargs);
    rng_after = check(PyObject_GetAttrString(construction.ptr(), "rng_after"));
  } else if (Ref arguments = module_container_arguments(args, kwargs, children)) {
    made = Value::constant(check(PyObject_Call(cls.ptr(), PyTuple_GET_ITEM(arguments.ptr(), 0), PyTuple_GET_ITEM(arguments.ptr(), 1))));
  } else if (Ref stand_in = call_helper("cdynamo._polyfills", "loss_made_from_tensors", {cls}); stand_in.ptr() != Py_None) {
    return inline_call(stand_in, args, kwargs);  // nn.CrossEntropyLoss(weight=w): its functional, w bound
  } else {
    unsupported("constructing an nn.Module from traced values inside a compiled function");
  }
  Ref listed = check(PyList_New(0));
  for (const Ref& child : children) check_status(PyList_Append(listed.ptr(), child.ptr()));
  const bool has_state = PyObject_IsTrue(call_helper("cdynamo._trace_support", "module_has_state", {made->obj, listed}).ptr());
  if (has_state && !from_constants)
    unsupported("constructing an nn.Module with parameters or buffers from traced values inside a compiled function");
  if (has_state || rng_after.ptr() != Py_None) serve_one_call_with(made, rng_after);
  for (const Ref& child : children)
    if (made_with_state_.contains(child.ptr())) made_with_state_.insert(made->obj.ptr());
  made->kind = ValueKind::NNModule;
  made->module_path = std::string(made_with_state_.contains(made->obj.ptr()) ? kMadeWithState : "made_") +
                      std::to_string(++modules_made_) + "_" + name;
  keep_alive_.push_back(made->obj);
  return made;
}

// A torch.nn module made with parameters or buffers at trace time, from constants: it serves
// the call whose trace made it, which also leaves the global generator where eager's
// construction leaves it (_made_modules.AtTraceTime drew the weights and put it back). The
// entry's guard (an empty token, filled after that call) then fails: the next call traces again,
// and makes the module again where eager would (or takes the branch a stored module leads to).
void Tracer::serve_one_call_with(const ValuePtr& made, Handle rng_after) {
  Ref refusal = call_helper("cdynamo._made_modules", "refusal", {made->obj});
  if (refusal.ptr() != Py_None) unsupported(to_std_string(refusal));
  follow_generator(rng_after);
  made_with_state_.insert(made->obj.ptr());
  if (one_call_token_) return;
  one_call_token_ = check(PyDict_New());
  guards_->fixed(one_call_token_, "a module with parameters the trace made (its compile serves one call)").add_length_check(0);
  defer_call(Value::constant(call_helper("cdynamo._made_modules", "spender", {one_call_token_})), {}, {},
             "the end of a compile that serves one call");
}

Ref Tracer::at_trace_time(Handle fn) {
  static Ref& wrapper_type = *new Ref(import_attr("cdynamo._made_modules", "AtTraceTime"));  // never freed: outlives the interpreter
  return check(PyObject_CallFunctionObjArgs(wrapper_type.ptr(), fn.ptr(), generator_state_ ? generator_state_.ptr() : Py_None, nullptr));
}

void Tracer::follow_generator(Handle rng_after) {
  if (rng_after.ptr() == Py_None) return;
  generator_state_ = Ref::borrow(rng_after.ptr());
  defer_call(Value::constant(call_helper("cdynamo._made_modules", "rng_advance", {rng_after})), {}, {},
             "the global generator's advance by a module made in the trace");
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
ValuePtr Tracer::call_module_with_hooks(ValuePtr module, const ModuleHooks& hooks, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  const std::string what = "the module " + module->module_path;
  if (hooks.backward)
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
  for (const auto& [hook, with_kwargs] : hooks.pre) {
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
  for (const auto& [hook, with_kwargs] : hooks.forward) {
    ValuePtr positional = Value::sequence(ValueKind::Tuple, args);
    ValuePtr replaced = with_kwargs
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
  if (Py_TYPE(obj) == as_type(compiled_module) &&
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
  if (hooked || has_traced_hooks(module)) {
    ModuleHooks hooks = module_hooks_of(module);
    if (hooks.backward || !hooks.pre.empty() || !hooks.forward.empty())
      return call_module_with_hooks(module, hooks, std::move(args), std::move(kwargs));
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

// The (args, kwargs) a module constructor is called with when they hold only constants and
// modules of the frame (or ones made by the trace), also in lists, tuples and dicts of them;
// children: those modules. Null when another value is among them.
Ref Tracer::module_container_arguments(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs, std::vector<Ref>& children) {
  std::function<Ref(const ValuePtr&)> real = [&](const ValuePtr& value) -> Ref {
    if (value->is_fully_constant()) return value->as_python_constant();
    if (value->kind == ValueKind::NNModule && value->obj && !has_pending_writes(value)) {
      children.push_back(value->obj);
      return value->obj;
    }
    if (value->kind == ValueKind::List || value->kind == ValueKind::Tuple) {
      Ref list = check(PyList_New(0));
      for (const ValuePtr& item : value->items) {
        Ref object = real(item);
        if (!object) return Ref();
        check_status(PyList_Append(list.ptr(), object.ptr()));
      }
      return value->kind == ValueKind::List ? list : check(PyList_AsTuple(list.ptr()));
    }
    if (value->kind == ValueKind::Dict && !value->dict_type && traced_keys_of(*value).empty()) {
      Ref dict = check(PyDict_New());
      std::vector<Ref> keys = held_keys(*value);
      for (size_t i = 0; i < keys.size(); ++i) {
        Ref object = real(value->items[i]);
        if (!object) return Ref();
        check_status(PyDict_SetItem(dict.ptr(), keys[i].ptr(), object.ptr()));
      }
      return dict;
    }
    return Ref();
  };
  Ref positional = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    Ref object = real(args[i]);
    if (!object) return Ref();
    PyTuple_SET_ITEM(positional.ptr(), static_cast<Py_ssize_t>(i), object.release());
  }
  Ref keywords = check(PyDict_New());
  for (const auto& [name, value] : kwargs) {
    Ref object = real(value);
    if (!object) return Ref();
    check_status(PyDict_SetItemString(keywords.ptr(), name.c_str(), object.ptr()));
  }
  return check(PyTuple_Pack(2, positional.ptr(), keywords.ptr()));
}

}  // namespace cdynamo::interp
