// Calls during tracing: torch functions and tensor methods become graph nodes, nn.Module layers
// call_module nodes, pure builtins fold on constants; anything else stops the trace.
#include <map>
#include <unordered_set>
#include <algorithm>
#include <string_view>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

bool is_sequential_class(Handle cls) {
  static Ref& sequential = *new Ref(import_attr("torch.nn", "Sequential"));  // never freed: outlives the interpreter
  int result = PyType_Check(cls.ptr()) ? PyObject_IsSubclass(cls.ptr(), sequential.ptr()) : 0;
  check_status(result);
  return result;
}

bool any_tensor(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  std::vector<ValuePtr> pending(args.begin(), args.end());
  for (const auto& [name, value] : kwargs) pending.push_back(value);
  while (!pending.empty()) {
    ValuePtr value = pending.back();
    pending.pop_back();
    if (value->is_tensor()) return true;
    if (value->is_sequence()) pending.insert(pending.end(), value->items.begin(), value->items.end());
  }
  return false;
}

// Tensor methods that only read metadata (static under the tensor guards): constants.
const std::unordered_set<std::string>& metadata_methods() {
  static const std::unordered_set<std::string> names = {
      "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "element_size",
      "is_floating_point", "is_complex", "storage_offset", "get_device", "is_signed", "type"};
  return names;
}

// Tensor methods that need real data or change state outside the graph.
const std::unordered_set<std::string>& unsupported_methods() {
  static const std::unordered_set<std::string> names = {
      "item", "tolist", "numpy", "backward", "register_hook", "retain_grad", "requires_grad_",
      "__bool__", "__int__", "__float__", "__index__", "data_ptr", "untyped_storage", "storage",
      "record_stream", "share_memory_", "set_", "resize_", "resize_as_", "__array__", "__len__",
      // Pickling and copying protocols (copy.copy traced into reaches them): not tensor operations.
      "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__deepcopy__", "__sizeof__",
      "__dlpack__", "__array_wrap__"};
  return names;
}

PyObject* builtin_named(const char* name) {
  return PyDict_GetItemString(PyEval_GetBuiltins(), name);  // borrowed; builtins live forever
}

bool is_torch_size(const ValuePtr& value) {
  static PyObject* const size_type = import_attr("torch", "Size").release();  // never freed: outlives the interpreter
  return value->is_constant() && Py_TYPE(value->obj.ptr()) == reinterpret_cast<PyTypeObject*>(size_type);
}

// Builtins (and torch.Size) that take every item of their first argument before returning (so a
// generator passed to them can be run to its end first).
bool consumes_its_iterable(Handle fn) {
  static const std::unordered_set<std::string> names = {"sum", "min", "max", "sorted"};
  static Ref& size_type = *new Ref(import_attr("torch", "Size"));  // never freed: outlives the interpreter
  if (fn.ptr() == size_type.ptr()) return true;  // torch.Size(s // 2 for s in x.shape)
  if (!PyCFunction_Check(fn.ptr())) return false;
  PyObject* self = PyCFunction_GET_SELF(fn.ptr());
  if (self && PyType_Check(self) && std::string(reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name) == "fromkeys")
    return true;  // dict.fromkeys(keys): an ordered set of names
  if (!self || !PyModule_Check(self) || std::string(PyModule_GetName(self)) != "builtins") return false;
  return names.count(reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name) > 0;
}

// Constants wrap() guards by identity besides classes and callables: None/True/False, enum
// members and type expressions (see wrap.cpp).
bool is_identity_guarded_constant(Handle obj) {
  PyObject* o = obj.ptr();
  return o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis || is_identity_constant(obj);
}

}  // namespace

bool all_constant(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  for (const auto& arg : args)
    if (!arg->is_fully_constant()) return false;
  for (const auto& [name, value] : kwargs)
    if (!value->is_fully_constant()) return false;
  return true;
}

void Tracer::call(int argc, Handle kw_names) {
  std::vector<ValuePtr> args = pop_n(argc);
  ValuePtr callable_or_self = pop();
  ValuePtr method_or_null = pop();
  ValuePtr callable = callable_or_self;
  if (method_or_null->kind != ValueKind::Null) {
    callable = method_or_null;
    args.insert(args.begin(), callable_or_self);
  }
  graph::KwArgs kwargs;
  if (kw_names) {
    Py_ssize_t count = PyTuple_GET_SIZE(kw_names.ptr());
    size_t first = args.size() - static_cast<size_t>(count);
    for (Py_ssize_t i = 0; i < count; ++i)
      kwargs.emplace_back(to_std_string(PyTuple_GET_ITEM(kw_names.ptr(), i)), args[first + i]);
    args.resize(first);
  }
  direct_call_ = true;
  push(call_value(callable, std::move(args), std::move(kwargs)));
}

// The trace binds a user function's code and default arguments: fn.__code__ = ...,
// fn.__defaults__ = (...) or fn.__kwdefaults__["k"] = v between calls retraces. (torch's
// functions, like its modules, are taken as fixed.)
void Tracer::guard_defaults(const ValuePtr& function) {
  PyObject* fn = function->obj.ptr();
  Ref module = steal(PyObject_GetAttrString(fn, "__module__"));
  if (!module) PyErr_Clear();
  if (module && PyUnicode_Check(module.ptr()) && to_std_string(module).starts_with("torch")) return;
  Source::attr(function->source, "__code__")->manager(*guards_).add_id_match(Handle(PyFunction_GET_CODE(fn)));
  if (!PyFunction_GET_DEFAULTS(fn) && !PyFunction_GET_KW_DEFAULTS(fn)) return;
  for (const char* defaults : {"__defaults__", "__kwdefaults__"}) {
    Ref current = check(PyObject_GetAttrString(fn, defaults));
    Source::attr(function->source, defaults)->manager(*guards_).add_id_match(current);
  }
  // The keyword defaults are a dict the program may change in place: each value is guarded.
  PyObject* kwdefaults = PyFunction_GET_KW_DEFAULTS(fn);
  if (!kwdefaults) return;
  SourcePtr dict_source = Source::attr(function->source, "__kwdefaults__");
  PyObject *key, *value;
  Py_ssize_t position = 0;
  std::vector<Ref> keys;
  while (PyDict_Next(kwdefaults, &position, &key, &value)) keys.push_back(Ref::borrow(key));
  dict_source->manager(*guards_).add_dict_key_order(keys);
  for (const Ref& name : keys) {
    PyObject* item = PyDict_GetItem(kwdefaults, name.ptr());
    guards::GuardManager& manager = Source::dict_item(dict_source, name)->manager(*guards_);
    bool plain = item == Py_None || PyBool_Check(item) || PyLong_CheckExact(item) || PyUnicode_CheckExact(item);
    if (plain) manager.add_equals_match(Handle(item));
    else manager.add_id_match(Handle(item));
  }
}

ValuePtr Tracer::call_value(ValuePtr callable, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  // Only the first call_value of a CALL is the instruction's own (calls it makes on the way,
  // hooks and __init__, are not).
  const bool direct = std::exchange(direct_call_, false);
  if (ValuePtr weak = weak_reference_call(callable, args, kwargs)) return weak;
  switch (callable->kind) {
    case ValueKind::Constant:
      if (Ref stand_in = polyfill_of(callable->obj)) return inline_call(stand_in, std::move(args), std::move(kwargs), nullptr, direct);
      if (callable->source && PyFunction_Check(callable->obj.ptr())) guard_defaults(callable);
      if (PyType_Check(callable->obj.ptr()))
        if (ValuePtr made = construct_object(callable, args, kwargs)) return made;
      if (!args.empty() && args[0]->kind == ValueKind::NNModule && is_module_call_function(callable->obj)) {
        ValuePtr module = args[0];  // nn.Module.__call__(layer, x)
        args.erase(args.begin());
        return call_nn_module(module, std::move(args), std::move(kwargs), false, direct);
      }
      if ((Py_TYPE(callable->obj.ptr()) == &PyMethodDescr_Type || Py_TYPE(callable->obj.ptr()) == &PyWrapperDescr_Type) &&
          !args.empty() && (args[0]->kind == ValueKind::Dict || args[0]->kind == ValueKind::List) && !args[0]->dict_type &&
          reinterpret_cast<PyDescrObject*>(callable->obj.ptr())->d_type ==
              (args[0]->kind == ValueKind::Dict ? &PyDict_Type : &PyList_Type)) {
        // dict.__setitem__(d, k, v), list.append(l, v): the method of the container the trace holds.
        ValuePtr self = args[0];
        args.erase(args.begin());
        Ref name = check(PyObject_GetAttrString(callable->obj.ptr(), "__name__"));
        return call_container_method(self, to_std_string(name), std::move(args), std::move(kwargs));
      }
      if ((Py_TYPE(callable->obj.ptr()) == &PyMethodDescr_Type || Py_TYPE(callable->obj.ptr()) == &PyWrapperDescr_Type) &&
          !args.empty() && args[0]->kind == ValueKind::NewObject) {
        // object.__setattr__(obj, ...), dict.__setitem__(obj, ...): the builtin base's own method.
        ValuePtr self = args[0];
        args.erase(args.begin());
        return call_native_method(callable->obj, self, std::move(args), std::move(kwargs));
      }
      if (is_graph_callable_object(callable->obj)) return call_constant(callable->obj, std::move(args), std::move(kwargs));
      if (Ref method = python_special_method(callable, "__call__")) {  // a callable object (identity-guarded)
        args.insert(args.begin(), callable);
        return inline_call(method, std::move(args), std::move(kwargs), nullptr, direct);
      }
      direct_call_ = direct;  // call_constant takes it
      return call_constant(callable->obj, std::move(args), std::move(kwargs));
    case ValueKind::TensorMethod: return call_tensor_method(callable, std::move(args), std::move(kwargs));
    case ValueKind::NNModule: return call_nn_module(callable, std::move(args), std::move(kwargs), true, direct);
    case ValueKind::List:
      if (callable->obj && is_sequential_class(callable->obj)) {  // a slice of an nn.Sequential (operators.cpp): its forward, child by child
        if (args.size() != 1 || !kwargs.empty()) unsupported("calling a slice of an nn.Sequential with other than one argument");
        ValuePtr value = args[0];
        for (const ValuePtr& child : callable->items) value = call_value(child, {value}, {});
        return value;
      }
      unsupported("calling a " + callable->describe());
    case ValueKind::GradModeExit:
      set_grad_mode_in_graph(callable->restores_enabled);
      return Value::constant(Ref::borrow(Py_None));
    case ValueKind::SubclassDispatchExit:
      set_subclass_dispatch(callable->restores_enabled);
      return Value::constant(Ref::borrow(Py_None));
    case ValueKind::StateExit: {
      Ref node = check(PyObject_CallMethod(callable->obj.ptr(), "graph_node", nullptr));  // (function, args)
      std::vector<ValuePtr> node_args;
      PyObject* state = PyTuple_GET_ITEM(node.ptr(), 1);
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(state); ++i) node_args.push_back(Value::constant(Ref::borrow(PyTuple_GET_ITEM(state, i))));
      // Kept, and run on the fakes too: the state is the restored one for the rest of the trace.
      graph_.call("call_function", Handle(PyTuple_GET_ITEM(node.ptr(), 0)), node_args, {}, "leaving a block", true);
      return Value::constant(Ref::borrow(Py_None));
    }
    case ValueKind::UserMethod: {
      if (callable->items.at(0)->kind == ValueKind::NNModule && is_module_call_function(callable->obj))
        return call_nn_module(callable->items[0], std::move(args), std::move(kwargs), false, direct);
      if (callable->items.at(0)->kind == ValueKind::NNModule && args.size() == 1 && kwargs.empty() &&
          args[0]->is_constant() && PyUnicode_Check(args[0]->obj.ptr())) {
        // nn.Module.__getattr__ (a subclass's __getattr__ calling super's): the module's tables,
        // else the AttributeError it raises, in the trace where a try block may catch it.
        static Ref& module_getattr = *new Ref(check(PyObject_GetAttrString(import_attr("torch.nn", "Module").ptr(), "__getattr__")));  // never freed: outlives the interpreter
        if (callable->obj.ptr() == module_getattr.ptr()) {
          const std::string attr = to_std_string(args[0]->obj);
          if (ValuePtr entry = module_table_attr(callable->items[0], attr)) return entry;
          raise(PyExc_AttributeError, "'" + std::string(Py_TYPE(callable->items[0]->obj.ptr())->tp_name) +
                                          "' object has no attribute '" + attr + "'");
        }
      }
      if (!PyFunction_Check(callable->obj.ptr()) && callable->items.at(0)->kind == ValueKind::NewObject)
        return call_native_method(callable->obj, callable->items[0], std::move(args), std::move(kwargs));
      if (ValuePtr skipped = silent_log_call(callable, args)) return skipped;
      if (is_logging_call(callable)) return defer_call(callable, std::move(args), std::move(kwargs), "logging." + callable->name + "()");
      if (callable->items.at(0)->kind == ValueKind::NNModule)
        if (ValuePtr done = module_method_now(callable->items[0], callable->obj, args, kwargs)) return done;
      args.insert(args.begin(), callable->items.at(0));
      return inline_call(callable->obj, std::move(args), std::move(kwargs), nullptr, direct);
    }
    case ValueKind::Function:
      return inline_call(callable->obj, std::move(args), std::move(kwargs), &callable->items, direct);
    case ValueKind::NewObject:
    case ValueKind::Object:
      if (callable->kind == ValueKind::Object && is_graph_callable_object(callable->obj)) {
        // An object marked allow_in_graph, or a @torch.library.custom_op, whose operator is the
        // node's target (what backends know).
        Ref target = steal(PyObject_GetAttrString(callable->obj.ptr(), "_opoverload"));
        if (!target) PyErr_Clear();
        return call_constant(target ? target : callable->obj, std::move(args), std::move(kwargs));
      }
      // A callable object whose class defines __call__ in Python.
      if (Ref method = python_special_method(callable, "__call__")) {
        args.insert(args.begin(), callable);
        return inline_call(method, std::move(args), std::move(kwargs), nullptr, direct);
      }
      unsupported("calling a " + callable->describe());
    default: unsupported("calling a " + callable->describe());
  }
}

// torch.ops.aten.add (an object whose class defines __call__ in Python) and objects marked
// allow_in_graph: a call is one graph node, never a trace of their __call__.
bool Tracer::is_graph_callable_object(Handle obj) {
  if (PyFunction_Check(obj.ptr()) || PyMethod_Check(obj.ptr()) || PyType_Check(obj.ptr()) || PyCFunction_Check(obj.ptr()))
    return false;
  return callable_policy(obj) == "graph";
}

std::string Tracer::callable_policy(Handle fn) {
  auto cached = policy_cache_.find(fn.ptr());
  if (cached != policy_cache_.end()) return cached->second;
  std::string policy;
  static Ref& graph_break = *new Ref(import_attr("cdynamo.eval_frame", "graph_break"));  // never freed: outlives the interpreter
  if (fn.ptr() == graph_break.ptr()) {
    policy = "unsupported:cdynamo.graph_break() was called";
  } else {
    policy = to_std_string(call_helper("cdynamo._trace_support", "classify_callable", {fn}));
  }
  keep_alive_.push_back(Ref::borrow(fn));
  policy_cache_.emplace(fn.ptr(), policy);
  return policy;
}

Ref Tracer::polyfill_of(Handle fn) {
  auto cached = polyfill_cache_.find(fn.ptr());
  if (cached != polyfill_cache_.end()) return cached->second;
  Ref found = call_helper("cdynamo._polyfills", "replacement_for", {fn});
  if (found.ptr() == Py_None) found = Ref();
  keep_alive_.push_back(Ref::borrow(fn));
  polyfill_cache_.emplace(fn.ptr(), found);
  return found;
}

namespace {

// Builtins that turn numbers into text or hashes: a symbolic number is shown by its value
// (specialised, so guarded), not by its symbol's name.
bool shows_values(Handle fn) {
  static PyObject* const builtins = PyEval_GetBuiltins();  // borrowed; lives forever
  for (const char* name : {"str", "repr", "format", "ascii", "hash", "bin", "hex", "oct", "chr"})
    if (PyDict_GetItemString(builtins, name) == fn.ptr()) return true;
  PyObject* receiver = PyCFunction_Check(fn.ptr()) ? PyCFunction_GET_SELF(fn.ptr()) : nullptr;
  return receiver && (PyUnicode_Check(receiver) || PyBytes_Check(receiver));  // "{:03d}".format(n)
}

}  // namespace

ValuePtr Tracer::fold(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  const bool concrete = shows_values(fn);
  auto argument = [&](const ValuePtr& value) {
    Ref object = value->as_python_constant();
    return concrete ? graph::specialize_all(object) : object;
  };
  Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) PyTuple_SET_ITEM(tuple.ptr(), i, argument(args[i]).release());
  Ref dict = check(PyDict_New());
  for (const auto& [name, value] : kwargs)
    check_status(PyDict_SetItemString(dict.ptr(), name.c_str(), argument(value).ptr()));
  auto symbolic_keywords = [&] {
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict.ptr(), &pos, &key, &item))
      if (graph::holds_symbolic(item)) return true;
    return false;
  };
  PyObject* result = PyObject_Call(fn.ptr(), tuple.ptr(), dict.ptr());
  // A TypeError (a builtin that takes no SymInt), or a RuntimeError from torch's kernels that
  // take concrete sizes only ("SymIntArrayRef expected to contain only concrete integers").
  if (!result && !concrete && (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_RuntimeError))) {
    // Asking whether the arguments hold symbols calls Python: with the error set aside.
    bool symbolic = false;
    keeping_pending_error([&] { symbolic = graph::holds_symbolic(tuple.ptr()) || symbolic_keywords(); });
    if (!symbolic) return Value::constant(checked(result));
    // A builtin that takes no symbols (divmod(n, 2)): the numbers' values instead (guarded).
    PyErr_Clear();
    Ref values = graph::specialize_all(tuple);
    Ref keywords = check(PyDict_New());
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict.ptr(), &pos, &key, &item))
      check_status(PyDict_SetItem(keywords.ptr(), key, graph::specialize_all(Handle(item)).ptr()));
    result = PyObject_Call(fn.ptr(), values.ptr(), keywords.ptr());
  }
  return Value::constant(checked(result));
}

std::string callable_name(Handle fn) {
  Ref name = steal(PyObject_GetAttrString(fn.ptr(), "__qualname__"));
  if (!name) {
    PyErr_Clear();
    name = steal(PyObject_GetAttrString(fn.ptr(), "__name__"));
  }
  if (!name) {
    PyErr_Clear();
    return Py_TYPE(fn.ptr())->tp_name;
  }
  return to_std_string(name);
}

// ContextVar.get(): the value in the current context, guarded to be the same object on later
// calls (a different context, or a set() since, fails the guard and retraces).
ValuePtr Tracer::context_var_get(Ref var, Ref default_value) {
  PyObject* found = nullptr;
  if (PyContextVar_Get(var.ptr(), default_value.ptr(), &found) < 0) raise_python_error();
  if (!found) raise(PyExc_LookupError, var);
  Ref value = Ref::steal(found);
  Ref name = steal(PyObject_GetAttrString(var.ptr(), "name"));
  if (!name) PyErr_Clear();
  std::string what = "ContextVar " + (name ? to_std_string(name) : std::string("?")) + ".get()";
  guards_->add_same_object_guard(
      [var, default_value](const guards::FrameView&) -> PyObject* {
        PyObject* current = nullptr;
        if (PyContextVar_Get(var.ptr(), default_value.ptr(), &current) < 0) return nullptr;
        return current;
      },
      what,
      [value](const guards::FrameView&) -> PyObject* { return Py_NewRef(value.ptr()); }, "its value when traced");
  keep_alive_.push_back(value);
  return Value::constant(std::move(value));
}

// sorted(items, key=fn[, reverse=...]) with a key the trace runs (a lambda, a method): each key
// computed by the trace, then the items ordered by them as sorted() orders (stable). Null when
// fn is not sorted or no key function is given (sorted folds then, as other builtins do).
ValuePtr Tracer::context_var_call(PyObject* var, const std::string& method, const std::vector<ValuePtr>& args) {
  std::vector<ValuePtr>& sets = context_sets_[var];
  if (method == "get" && args.size() <= 1 && (args.empty() || args[0]->is_constant())) {
    if (!sets.empty()) return sets.back();
    return context_var_get(Ref::borrow(var), args.empty() ? Ref() : args[0]->obj);
  }
  if (method == "set" && args.size() == 1) {
    keep_alive_.push_back(Ref::borrow(var));
    sets.push_back(args[0]);
    Ref depth = check(PyLong_FromSize_t(sets.size() - 1));
    Ref token = call_helper("cdynamo._trace_support", "TracedContextToken", {var, depth});
    keep_alive_.push_back(token);
    return Value::constant(std::move(token));
  }
  if (method == "reset" && args.size() == 1) {
    static Ref& token_type = *new Ref(import_attr("cdynamo._trace_support", "TracedContextToken"));  // never freed: outlives the interpreter
    const ValuePtr& token = args[0];
    if (!token->is_constant() || Py_TYPE(token->obj.ptr()) != as_type(token_type))
      unsupported("ContextVar.reset() of a token from outside the compiled function");
    Ref token_var = check(PyObject_GetAttrString(token->obj.ptr(), "var"));
    Ref depth = check(PyObject_GetAttrString(token->obj.ptr(), "depth"));
    if (token_var.ptr() != var || sets.empty() || PyLong_AsSsize_t(depth.ptr()) != static_cast<Py_ssize_t>(sets.size()) - 1)
      unsupported("ContextVar.reset() out of the order of its set() calls");
    sets.pop_back();
    return Value::constant(Ref::borrow(Py_None));
  }
  return nullptr;
}

void Tracer::check_context_vars_reset() const {
  for (const auto& [var, sets] : context_sets_) {
    if (sets.empty()) continue;
    Ref name = steal(PyObject_GetAttrString(var, "name"));
    if (!name) PyErr_Clear();
    unsupported("ContextVar " + (name ? to_std_string(name) : std::string("?")) +
                ".set() is not reset() before the graph ends (a compiled function must leave the context as it found it)");
  }
}

// id(value). An object the call was given: its id, with a guard that later calls get the same
// object (as torch._dynamo's ID_MATCH). An object the trace made (a dict, a list, a tensor
// computed here): a number unique among this trace's values (the value's own address, kept
// alive), since a new object is made on every call; memo tables keyed by id (copy.deepcopy) work.
ValuePtr Tracer::identity_of(const ValuePtr& value) {
  PyObject* real = nullptr;
  if (value->is_tensor()) {
    for (const auto& [object, input] : tensor_inputs_)
      if (input == value) real = object;
  } else if (value->source && value->obj) {
    real = value->obj.ptr();
  } else if (value->source) {  // a list or dict read from the frame (copy.deepcopy's memo keys)
    for (const auto& [object, input] : container_inputs_)
      if (input == value) real = object;
  }
  if (real && value->source) {
    value->source->manager(*guards_).add_id_match(Handle(real));
    return Value::constant(check(PyLong_FromVoidPtr(real)));
  }
  const bool fixed_object = value->kind == ValueKind::Constant || value->kind == ValueKind::PyModule ||
                            value->kind == ValueKind::NNModule;
  if (!value->source && fixed_object && value->obj)  // a constant the code holds: the same object on every call
    return Value::constant(check(PyLong_FromVoidPtr(value->obj.ptr())));
  if (value->source) unsupported("id() of a " + value->describe() + " read from the caller's data");
  keep_alive_values_.push_back(value);
  return Value::constant(check(PyLong_FromVoidPtr(value.get())));
}

// A generator or iterator argument of a graph node (clip_grad_norm_(model.parameters())): the
// operator would consume it; the node takes the list of what it yields, and it is left
// exhausted. An nn.ParameterList (torch.autograd.grad(loss, self.vars)): its parameters.
void Tracer::iterables_as_lists(std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  static Ref& parameter_list = *new Ref(import_attr("torch.nn", "ParameterList"));  // never freed: outlives the interpreter
  auto as_list = [&](ValuePtr& arg) {
    if (arg->kind == ValueKind::Generator || arg->kind == ValueKind::Iterator ||
        (arg->kind == ValueKind::NNModule && PyObject_TypeCheck(arg->obj.ptr(), as_type(parameter_list))))
      arg = Value::sequence(ValueKind::List, iterate(arg));
  };
  for (ValuePtr& arg : args) as_list(arg);
  for (auto& [name, value] : kwargs) as_list(value);
}

// What an inspection function (inspect.signature, dataclasses.fields) may look at for a value:
// its class or function, never state the trace changes. Null when there is none.
Ref Tracer::inspected_object(const ValuePtr& value) {
  switch (value->kind) {
    case ValueKind::Constant:
    case ValueKind::Object:
    case ValueKind::NNModule:
    case ValueKind::PyModule:
    case ValueKind::Function: return value->obj;
    case ValueKind::NewObject: return value->cls;  // dataclasses.fields()/is_dataclass() read the class only
    case ValueKind::UserMethod:
      if (value->items.empty() || !value->obj) return Ref();
      if (Ref self = inspected_object(value->items[0])) return check(PyMethod_New(value->obj.ptr(), self.ptr()));
      return Ref();
    default: return Ref();
  }
}

ValuePtr Tracer::call_constant(Handle fn, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  const bool direct = std::exchange(direct_call_, false);  // set by call_value for a CALL's own call
  if (ValuePtr compared = compare_objects_in_trace(fn, args, kwargs)) return compared;
  if (ValuePtr sorted = sorted_with_key(fn, args, kwargs)) return sorted;
  if (ValuePtr result = call_special_method_builtin(fn, args, kwargs)) return result;
  if (ValuePtr result = call_tensor_getter(fn, args, kwargs)) return result;
  if (ValuePtr result = handled_exception_query(fn, args, kwargs)) return result;
  // Methods bound to an immutable constant ("a".join, size.numel): pure, computed now.
  if (PyCFunction_Check(fn.ptr())) {
    PyObject* self = PyCFunction_GET_SELF(fn.ptr());
    if (self && PyUnicode_Check(self) && args.size() == 1 &&
        (args[0]->kind == ValueKind::Generator || args[0]->kind == ValueKind::Iterator))
      args[0] = Value::sequence(ValueKind::List, iterate(args[0]));  // ",".join(str(i) for i in ...): taken whole
    if (self && !PyModule_Check(self) && all_constant(args, kwargs) &&
        (PyUnicode_Check(self) || PyTuple_Check(self) || PyLong_Check(self) || PyFloat_Check(self) ||
         PyBytes_Check(self)))
      return fold(fn, args, kwargs);
  }
  PyObject* bound_self = PyCFunction_Check(fn.ptr()) ? PyCFunction_GET_SELF(fn.ptr()) : nullptr;
  if (bound_self && bound_self == reinterpret_cast<PyObject*>(&PyBaseObject_Type) && args.size() == 1 && kwargs.empty() &&
      args[0]->is_constant() && PyType_Check(args[0]->obj.ptr()) &&
      std::string(reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name) == "__new__")
    // object.__new__(cls) (copy's reconstruction, __new__ overrides calling super().__new__): the object before __init__.
    if (ValuePtr made = new_object(args[0], true)) return made;
  if (bound_self && PyType_Check(bound_self) && args.empty() && kwargs.empty()) {
    // cls.__subclasses__(), cls.mro(): about classes, which the guards fix by identity.
    const std::string method = reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name;
    if (method == "__subclasses__" || method == "mro") return Value::constant(checked(PyObject_CallNoArgs(fn.ptr())));
  }
  if (bound_self && made_generators_.count(bound_self))
    return made_generator_method(bound_self, reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name, args, kwargs);
  if (bound_self && PyContextVar_CheckExact(bound_self) && kwargs.empty())
    if (ValuePtr result = context_var_call(bound_self, reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml->ml_name, args))
      return result;
  if (std::string_view(Py_TYPE(fn.ptr())->tp_name) == "method-wrapper" && kwargs.empty() && !args.empty() &&
      args.size() <= 2) {
    // function.__get__(obj, cls) (functools.partialmethod binds its function so): the method
    // bound to the traced object, as attribute lookup binds it.
    Ref name = check(PyObject_GetAttrString(fn.ptr(), "__name__"));
    Ref self = check(PyObject_GetAttrString(fn.ptr(), "__self__"));
    const bool unbound = args[0]->is_constant() && args[0]->obj.ptr() == Py_None;
    if (to_std_string(name) == "__get__" && PyFunction_Check(self.ptr()) && !unbound) {
      auto method = std::make_shared<Value>();
      method->kind = ValueKind::UserMethod;
      method->obj = std::move(self);
      method->items = {args[0]};
      return method;
    }
  }
  static Ref& no_grad = *new Ref(import_attr("torch", "no_grad"));  // never freed: outlives the interpreter
  static Ref& enable_grad = *new Ref(import_attr("torch", "enable_grad"));  // never freed: outlives the interpreter
  static Ref& inference_mode = *new Ref(import_attr("torch", "inference_mode"));  // never freed: outlives the interpreter
  if ((fn.ptr() == no_grad.ptr() || fn.ptr() == enable_grad.ptr()) && args.empty() && kwargs.empty())
    return Value::constant(check(PyObject_CallNoArgs(fn.ptr())));  // an inert object until entered
  if (fn.ptr() == inference_mode.ptr() && all_constant(args, kwargs))
    return fold(fn, args, kwargs);  // likewise: it keeps its mode until entered
  static Ref& set_grad_enabled = *new Ref(import_attr("torch._C", "_set_grad_enabled"));  // never freed: outlives the interpreter
  if (fn.ptr() == set_grad_enabled.ptr() && args.size() == 1 && kwargs.empty() && args[0]->is_constant() &&
      PyBool_Check(args[0]->obj.ptr())) {
    set_grad_mode_in_graph(args[0]->obj.ptr() == Py_True);  // a node, kept: it returns None
    return Value::constant(Ref::borrow(Py_None));
  }
  // torch.manual_seed: read again each time, as importing torch._dynamo replaces it by a wrapper.
  static Ref& random_manual_seed = *new Ref(import_attr("torch.random", "manual_seed"));  // never freed: outlives the interpreter
  if ((fn.ptr() == random_manual_seed.ptr() || fn.ptr() == import_attr("torch", "manual_seed").ptr()) && args.size() == 1 &&
      kwargs.empty() && args[0]->is_constant())
    return seed_in_graph(args[0]);
  if (ValuePtr extreme = max_of_scalar_tensors(fn, args, kwargs)) return extreme;
  if (ValuePtr extreme = extreme_of_unbacked_numbers(fn, args, kwargs)) return extreme;
  std::string policy = callable_policy(fn);
  std::string name = callable_name(fn);
  if (!all_constant(args, kwargs) || (!args.empty() && is_constant_array(args[0])))
    if (ValuePtr result = call_with_arrays(fn, policy, args, kwargs)) return result;
  if (ValuePtr result = call_builtin(fn, args, kwargs)) return result;
  if (policy == "true") return Value::constant(Ref::borrow(Py_True));
  if (policy == "inspect") {
    // Their answers depend only on the class or function, which the guards fix.
    Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i]->kind == ValueKind::NewObject && name != "fields" && name != "is_dataclass")
        unsupported(name + "() of a " + args[i]->describe());
      Ref object = inspected_object(args[i]);
      if (!object) {
        // inspect's is*() predicates are isinstance checks: any value whose type the trace knows
        // (a tensor, a container, an instance it made) answers by that type.
        if (ValuePtr answer = type_predicate(fn, name, args)) return answer;
        unsupported(name + "() of a " + args[i]->describe());
      }
      PyTuple_SET_ITEM(tuple.ptr(), i, object.release());
    }
    if (!kwargs.empty() || !all_constant({}, kwargs)) unsupported(name + "() with keyword arguments");
    return Value::constant(checked(PyObject_Call(fn.ptr(), tuple.ptr(), nullptr)));
  }
  if (policy == "fold_identity") {
    static Ref& id_builtin = *new Ref(import_attr("builtins", "id"));  // never freed: outlives the interpreter
    if (fn.ptr() == id_builtin.ptr() && args.size() == 1 && kwargs.empty()) return identity_of(args[0]);
    // typing.get_origin(): answers about which object it is, fixed by an identity guard
    // for classes, functions, modules and enum members; anything else has no fixed identity.
    for (const ValuePtr& arg : args) {
      const bool fixed = arg->kind == ValueKind::PyModule || arg->kind == ValueKind::NNModule ||
                         (arg->kind == ValueKind::Constant && (PyType_Check(arg->obj.ptr()) || PyCallable_Check(arg->obj.ptr()) ||
                                                               is_identity_guarded_constant(arg->obj)));
      if (!fixed) unsupported(name + "() of a " + arg->describe() + ", whose identity the trace does not fix");
    }
    if (!kwargs.empty()) unsupported(name + "() with keyword arguments");
    Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
    for (size_t i = 0; i < args.size(); ++i) PyTuple_SET_ITEM(tuple.ptr(), i, Py_NewRef(args[i]->obj.ptr()));
    return Value::constant(checked(PyObject_Call(fn.ptr(), tuple.ptr(), nullptr)));
  }
  if (policy == "fold_numpy") {
    // numpy on constants (np.sqrt(d_k), np.prod(shape), np.zeros(k)): computed now; numbers and
    // arrays (is_constant_array: new ones, which only the trace holds) come back as constants.
    if (!all_constant(args, kwargs)) unsupported("numpy." + name + "() of a traced value (use the torch function)");
    ValuePtr result = fold(fn, args, kwargs);
    PyObject* r = result->obj.ptr();
    if (is_numpy_scalar(r) || PyLong_Check(r) || PyFloat_Check(r) || PyComplex_Check(r) || r == Py_None) return result;
    if (is_constant_array(result)) return result;
    unsupported("numpy." + name + "() returned a " + std::string(Py_TYPE(r)->tp_name) + ", not a number");
  }
  static Ref& reversed = *new Ref(import_attr("builtins", "reversed"));  // never freed: outlives the interpreter
  static Ref& module_list = *new Ref(import_attr("torch.nn", "ModuleList"));  // never freed: outlives the interpreter
  static Ref& sequential = *new Ref(import_attr("torch.nn", "Sequential"));  // never freed: outlives the interpreter
  auto is_module_sequence = [&](const ValuePtr& v) {
    if (v->kind != ValueKind::NNModule) return false;
    int found = PyObject_IsInstance(v->obj.ptr(), module_list.ptr());
    if (found == 0) found = PyObject_IsInstance(v->obj.ptr(), sequential.ptr());
    check_status(found);
    return found != 0;
  };
  if (fn.ptr() == reversed.ptr() && args.size() == 1 && kwargs.empty()) {
    const ValuePtr& arg = args[0];
    const bool object = arg->kind == ValueKind::Object || arg->kind == ValueKind::NewObject;
    if (object)
      if (Ref method = python_special_method(arg, "__reversed__")) return inline_call(method, {arg}, {});
    // reversed(self.blocks), reversed(list of tensors), reversed(d.values()), an object with
    // __len__ and __getitem__: the items the trace holds, last first, as an iterator it owns.
    if (is_module_sequence(arg) || arg->is_sequence() || arg->kind == ValueKind::Dict ||
        (object && python_special_method(arg, "__getitem__") && python_special_method(arg, "__len__"))) {
      std::vector<ValuePtr> items = iterate(arg);
      std::reverse(items.begin(), items.end());
      return Value::sequence(ValueKind::Iterator, std::move(items));
    }
  }
  if (policy == "fold") {
    if ((fn.ptr() == builtin_named("repr") || fn.ptr() == builtin_named("str")) && args.size() == 1 && kwargs.empty() &&
        args[0]->kind == ValueKind::NNModule) {
      // repr(layer) of torch's own layers (a log line): the text torch writes now.
      Ref shown = call_helper("cdynamo._module_calls", "shown_as_torch_shows_it", {args[0]->obj, fn});
      if (shown.ptr() != Py_None) return Value::constant(shown);
    }
    // Taken whole, as the builtin does; a dict gives its keys, so sorted(ops) of a dict of
    // functions folds on the (constant) keys without the values ever reaching Python.
    if (consumes_its_iterable(fn) && !args.empty() &&
        (args[0]->kind == ValueKind::Generator || args[0]->kind == ValueKind::Iterator ||
         (args[0]->kind == ValueKind::Dict && !args[0]->is_fully_constant())))
      args[0] = Value::sequence(ValueKind::List, iterate(args[0]));
    if (all_constant(args, kwargs)) {
      ValuePtr folded = fold(fn, args, kwargs);
      if (!PyDict_CheckExact(folded->obj.ptr())) return folded;
      // dict.fromkeys: a new dict the traced code owns (iterated in its order, changed in place).
      // A list or dict value (dict.fromkeys(names, [])) is one object every key shares, changed in place.
      std::vector<Ref> keys;
      std::vector<ValuePtr> items;
      std::map<PyObject*, ValuePtr> shared;
      PyObject *key, *item;
      Py_ssize_t pos = 0;
      while (PyDict_Next(folded->obj.ptr(), &pos, &key, &item)) {
        keys.push_back(Ref::borrow(key));
        ValuePtr& value = shared[item];
        if (!value && PyList_CheckExact(item)) value = Value::sequence(ValueKind::List, iterate(Value::constant(Ref::borrow(item))));
        else if (!value && PyDict_CheckExact(item) && PyDict_GET_SIZE(item) == 0) value = Value::dict({}, {});
        else if (!value) value = Value::constant(Ref::borrow(item));
        items.push_back(value);
      }
      return Value::dict(std::move(keys), std::move(items));
    }
    return graph_.call("call_function", fn, args, kwargs, name + "()");
  }
  if (policy == "fold_constant") {
    if (!all_constant(args, kwargs)) unsupported("constructing a " + name + " from values the trace computes");
    return fold(fn, args, kwargs);
  }
  if (policy == "tensor_torch_function") return tensor_torch_function(Handle(PyMethod_GET_SELF(fn.ptr())), std::move(args), std::move(kwargs), true);
  if (policy == "disabled_torch_function") return tensor_torch_function(import_attr("torch", "Tensor"), std::move(args), std::move(kwargs), false);
  if (policy == "graph") {
    static Ref& as_subclass = *new Ref(check(PyObject_GetAttrString(import_attr("torch", "Tensor").ptr(), "as_subclass")));  // never freed: outlives the interpreter
    if (fn.ptr() == as_subclass.ptr() && !args.empty() && args[0]->is_tensor())
      return tensor_as_subclass(args[0], std::vector<ValuePtr>(args.begin() + 1, args.end()), kwargs);
    if (ValuePtr overridden = torch_function_override(fn, args, kwargs)) return overridden;
    if (ValuePtr drawn = random_with_generator(fn, args, kwargs, name + "()")) return drawn;
    arrays_as_tensors(args, kwargs);  // torch.where(mask, x, table): the array's values
    iterables_as_lists(args, kwargs);
    static Ref& tensor_fn = *new Ref(import_attr("torch", "tensor"));        // never freed: outlive
    static Ref& as_tensor_fn = *new Ref(import_attr("torch", "as_tensor"));  // the interpreter
    if (fn.ptr() == tensor_fn.ptr() || fn.ptr() == as_tensor_fn.ptr())
      if (ValuePtr stacked = tensor_of_unbacked_numbers(nullptr, args, kwargs)) return stacked;
    if (all_constant(args, kwargs)) {
      Ref module = steal(PyObject_GetAttrString(fn.ptr(), "__module__"));
      PyErr_Clear();
      if (module && PyUnicode_Check(module.ptr()) && (to_std_string(module) == "_operator" || to_std_string(module) == "operator"))
        return fold(fn, args, kwargs);
    }
    // An operator writing an argument stays in the graph when it returns nothing. (Asked only of
    // torch.ops objects: most graph calls are torch's functions, asked nothing.)
    static PyObject* const writes = import_attr("cdynamo._call_policy", "op_writes_arguments").release();  // never freed: outlive
    static PyObject* const overload = import_attr("torch._ops", "OpOverload").release();               // the interpreter
    static PyObject* const packet = import_attr("torch._ops", "OpOverloadPacket").release();
    const bool is_op = PyObject_TypeCheck(fn.ptr(), as_type(overload)) ||
                       PyObject_TypeCheck(fn.ptr(), as_type(packet));
    static Ref& tensor_setitem = *new Ref(check(PyObject_GetAttrString(import_attr("torch", "Tensor").ptr(), "__setitem__")));  // likewise
    const bool keep = (is_op && Ref(check(PyObject_CallOneArg(writes, fn.ptr()))).ptr() == Py_True) || fn.ptr() == tensor_setitem.ptr();
    return graph_.call("call_function", fn, args, kwargs, name + "()", keep);
  }
  if (policy == "construct_module") return construct_module(fn, args, kwargs, name);
  if (policy == "graph_autograd_function") {
    Ref node = call_helper("cdynamo._special_calls", "autograd_function_node", {fn});
    keep_alive_.push_back(node);
    return graph_.call("call_function", node, args, kwargs, callable_name(node) + "()");
  }
  if (policy == "graph_transform") return call_transformed(std::move(args), std::move(kwargs));
  if (policy == "autograd_grad") {
    iterables_as_lists(args, kwargs);
    return autograd_grad_in_graph(fn, args, kwargs);
  }
  if (policy == "make_generator") return make_generator(args, kwargs);
  if (policy == "after_graph") return defer_after_graph(std::move(args));
  if (policy == "deferred_call") return defer_call(Value::constant(Ref::borrow(fn.ptr())), std::move(args), std::move(kwargs), name + "()");
  if (policy == "module_hook") return module_hook_call(fn, args);
  if (policy == "refuse") unsupported(args.size() == 1 && args[0]->is_constant() ? to_std_string(args[0]->obj) : "refused by a stand-in");
  if (policy == "user_function") {
    if (PyMethod_Check(fn.ptr())) {
      args.insert(args.begin(), Value::constant(Ref::borrow(PyMethod_GET_SELF(fn.ptr()))));
      return inline_call(PyMethod_GET_FUNCTION(fn.ptr()), std::move(args), std::move(kwargs), nullptr, direct);
    }
    return inline_call(fn, std::move(args), std::move(kwargs), nullptr, direct);
  }
  if (policy.starts_with("unsupported:")) unsupported(policy.substr(12));
  unsupported("calling " + name);
}

ValuePtr Tracer::call_tensor_method(ValuePtr method, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  ValuePtr self = method->items.at(0);
  const std::string& name = method->name;
  if (self->kind == ValueKind::Dict || self->kind == ValueKind::List || self->kind == ValueKind::Tuple ||
      self->kind == ValueKind::Set)
    return call_container_method(self, name, std::move(args), std::move(kwargs));
  if (self->kind == ValueKind::Generator) return call_generator_method(self, name, std::move(args));
  if (!self->is_tensor()) unsupported("method " + name + " of a " + self->describe());
  if (name == "as_subclass") return tensor_as_subclass(self, args, kwargs);
  if (subclass_dispatch_ && holds_subclass_tensor(self, args, kwargs)) {
    static Ref& tensor_type = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
    if (Ref method = steal(PyObject_GetAttrString(tensor_type.ptr(), name.c_str()))) {
      std::vector<ValuePtr> all_args{self};
      all_args.insert(all_args.end(), args.begin(), args.end());
      if (ValuePtr overridden = torch_function_override(method, all_args, kwargs)) return overridden;
    }
    PyErr_Clear();
  }
  if (name == "item" && args.empty() && kwargs.empty() && capture_scalar_outputs) {
    // The number stays in the graph as an unbacked symbol of a dynamic trace.
    if (!graph_.dynamic()) throw RetraceDynamic{"Tensor.item()"};
    Ref method_name = check(PyUnicode_FromString("item"));
    return graph_.call("call_method", method_name, {self}, {}, "Tensor.item()");
  }
  if (name == "tolist" && args.empty() && kwargs.empty() && capture_scalar_outputs) return tensor_tolist(self);
  if (name == "requires_grad_" && !self->source) {
    // Without grad mode, a tensor the graph makes becomes a leaf that requires grad (transformers'
    // placeholder outputs): a node (backends set it on the outputs). With it, the graph breaks
    // there: the next graph takes the leaf as an input autograd sees (a gradient penalty), unless
    // fullgraph=True asks for one graph: then a node too, and the graph runs as captured.
    static Ref& grad_enabled = *new Ref(import_attr("torch", "is_grad_enabled"));  // never freed: outlives the interpreter
    if (!one_graph && Ref(check(PyObject_CallNoArgs(grad_enabled.ptr()))).ptr() == Py_True)
      unsupported("Tensor.requires_grad_() with gradients on starts a new autograd leaf: the graph ends before it and "
                  "the next one takes the leaf as an input");
    Ref method_name = check(PyUnicode_FromString(name.c_str()));
    std::vector<ValuePtr> all_args{self};
    all_args.insert(all_args.end(), args.begin(), args.end());
    return graph_.call("call_method", method_name, all_args, kwargs, "Tensor.requires_grad_()");
  }
  if (name == "numpy") return tensor_numpy(self, std::move(args), std::move(kwargs));
  if (name == "__len__" && args.empty() && kwargs.empty()) {  // x.__len__(): len(x), the size of dimension 0
    static PyObject* const len = PyDict_GetItemString(PyEval_GetBuiltins(), "len");  // borrowed; lives forever
    return call_value(Value::constant(Ref::borrow(len)), {self}, {});
  }
  if (name == "register_hook" && args.size() == 1 && kwargs.empty())
    return self->source ? defer_tensor_hook(self, args[0]) : hook_in_graph(self, args[0]);
  if (unsupported_methods().count(name))
    unsupported("Tensor." + name + "() needs the tensor's data or changes state outside the graph; "
                "keep the value as a tensor, or move this call out of the compiled function");
  Ref method_name = check(PyUnicode_FromString(name.c_str()));
  // x.type() names the type (metadata); x.type(dtype) converts, as x.to(dtype) does.
  const bool converts = name == "type" && !(args.empty() && kwargs.empty());
  if (converts && args.size() == 1 && args[0]->is_constant() && PyType_Check(args[0]->obj.ptr())) {
    // x.type(torch.FloatTensor): the same conversion by the type's name, which a graph can print.
    Ref module = check(PyObject_GetAttrString(args[0]->obj.ptr(), "__module__"));
    Ref type_name = check(PyObject_GetAttrString(args[0]->obj.ptr(), "__name__"));
    args[0] = Value::constant(check(PyUnicode_FromString((to_std_string(module) + "." + to_std_string(type_name)).c_str())));
  }
  if (metadata_methods().count(name) && !converts) {
    Ref bound = check(PyObject_GetAttr(self->fake.ptr(), method_name.ptr()));
    return Value::constant(graph_.fake_call(bound, args, kwargs, "Tensor." + name + "()"));
  }
  if (name == "new_tensor" && !args.empty() && is_constant_array(args[0]))  // its values, in self's dtype
    args[0] = Value::constant(check(PyObject_CallMethod(args[0]->obj.ptr(), "tolist", nullptr)));
  if (name == "new" && args.size() == 1 && is_torch_size(args[0])) {
    // t.new(t.size()): a torch.Size is the new tensor's size (any other sequence its data), which
    // the graph's code would write as a plain tuple: new_empty, what it makes.
    method_name = check(PyUnicode_FromString("new_empty"));
    return graph_.call("call_method", method_name, {self, args[0]}, kwargs, "Tensor.new()");
  }
  if (name == "new_tensor" || name == "new")
    if (ValuePtr stacked = tensor_of_unbacked_numbers(self, args, kwargs)) return stacked;
  arrays_as_tensors(args, kwargs);
  std::vector<ValuePtr> all_args{self};
  all_args.insert(all_args.end(), args.begin(), args.end());
  return graph_.call("call_method", method_name, all_args, kwargs, "Tensor." + name + "()");
}

}  // namespace cdynamo::interp
