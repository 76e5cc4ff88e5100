// Torch's global state in traced code: torch.manual_seed, and with-blocks the trace enters itself:
// no_grad/enable_grad/set_grad_enabled, torch.autocast, torch.inference_mode, torch.device and
// TorchFunctionModes (their state changes are graph nodes, set for the rest of the trace too) and context managers
// written in Python (their __enter__/__exit__ traced). Assumes _global_state's helpers.
#include <algorithm>
#include <string_view>

#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

void Tracer::set_grad_mode_in_graph(bool enabled) {
  changes_global_state_ = true;
  static Ref& set_grad = *new Ref(import_attr("torch._C", "_set_grad_enabled"));  // never freed: outlives the interpreter
  graph_.call("call_function", set_grad, {Value::constant(Ref::borrow(enabled ? Py_True : Py_False))}, {},
              "torch.set_grad_enabled", true);
}

void Tracer::set_autocast_state_in_graph(Handle state) {
  changes_global_state_ = true;
  static Ref& set_state = *new Ref(import_attr("cdynamo._global_state", "set_autocast_state"));  // never freed: outlives the interpreter
  std::vector<ValuePtr> args;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(state.ptr()); ++i) args.push_back(Value::constant(Ref::borrow(PyTuple_GET_ITEM(state.ptr(), i))));
  graph_.call("call_function", set_state, args, {}, "torch.autocast", true);  // also sets it for the rest of the trace
}

// torch.manual_seed(seed): a graph node (the graph's random operations after it draw as eager's
// do), also run by the trace's fake run: the generators' state from before the trace is put back
// when the trace ends (~Tracer). Returns the default generator, as torch.manual_seed does.
ValuePtr Tracer::seed_in_graph(const ValuePtr& seed) {
  Ref number = graph::specialize_all(seed->obj);
  if (!PyLong_Check(number.ptr())) unsupported("torch.manual_seed() of a " + seed->describe());
  if (!rng_state_before_trace_) rng_state_before_trace_ = call_helper("torch", "get_rng_state", {});
  static Ref& node = *new Ref(import_attr("cdynamo._global_state", "manual_seed"));  // never freed: outlives the interpreter
  graph_.call("call_function", node, {Value::constant(number)}, {}, "torch.manual_seed", true);
  return Value::constant(import_attr("torch", "default_generator"));
}

// torch.randn(..., generator=g) with a torch.Generator from the frame: a node drawing from g
// (_special_calls.generator_node), the generator guarded by identity. Null without one.
ValuePtr Tracer::random_with_generator(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs,
                                       const std::string& what) {
  static Ref& generator_type = *new Ref(import_attr("torch", "Generator"));  // never freed: outlives the interpreter
  auto found = std::find_if(kwargs.begin(), kwargs.end(), [](const auto& entry) { return entry.first == "generator"; });
  if (found == kwargs.end() || !found->second->obj) return nullptr;
  const ValuePtr& generator = found->second;
  int is_generator = PyObject_IsInstance(generator->obj.ptr(), generator_type.ptr());
  check_status(is_generator);
  if (!is_generator) return nullptr;
  if (generator->source) generator->source->manager(*guards_).add_id_match(generator->obj);
  else if (!made_generators_.count(generator->obj.ptr())) unsupported("a torch.Generator the compiled function did not make or read");
  Ref node = call_helper("cdynamo._special_calls", "generator_node", {fn, generator->obj});
  keep_alive_.push_back(node);
  graph::KwArgs rest;
  for (const auto& entry : kwargs)
    if (entry.first != "generator") rest.push_back(entry);
  return graph_.call("call_function", node, args, rest, what);
}

// torch.Generator(...) made inside the function: the compiled graph's own generator, made now
// (one per graph, not per call), to which a node gives a fresh generator's state at each call;
// its seeding and the draws from it are nodes too (_special_calls.made_generator).
ValuePtr Tracer::make_generator(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static Ref& made = *new Ref(import_attr("cdynamo._special_calls", "made_generator"));  // never freed: outlives the interpreter
  if (!all_constant(args, kwargs)) unsupported("a torch.Generator made from values the trace computes");
  Ref pair = fold(made, args, kwargs)->obj;
  Ref generator = Ref::borrow(PyTuple_GET_ITEM(pair.ptr(), 0)), fresh = Ref::borrow(PyTuple_GET_ITEM(pair.ptr(), 1));
  keep_alive_.push_back(generator);
  keep_alive_.push_back(fresh);
  made_generators_.insert(generator.ptr());
  graph_.call("call_function", fresh, {}, {}, "torch.Generator()", true);
  return Value::constant(generator);
}

// A method of a generator make_generator made: manual_seed(seed) a node (returning the
// generator, as eager's does); its other methods would read or change it now, not per call.
ValuePtr Tracer::made_generator_method(Handle generator, const std::string& name, const std::vector<ValuePtr>& args,
                                       const graph::KwArgs& kwargs) {
  if (name != "manual_seed" || args.size() != 1 || !kwargs.empty() || !args[0]->is_constant())
    unsupported("Generator." + name + "() of a torch.Generator made inside the compiled function");
  Ref seed = graph::is_symbolic(args[0]->obj.ptr()) ? graph::specialize(args[0]->obj) : args[0]->obj;
  Ref node = call_helper("cdynamo._special_calls", "seed_generator_node", {Ref::borrow(generator.ptr())});
  keep_alive_.push_back(node);
  graph_.call("call_function", node, {Value::constant(seed)}, {}, "Generator.manual_seed()", true);
  return Value::constant(Ref::borrow(generator.ptr()));
}

// `with torch.autocast(...)`: the state it sets is a node of the graph (and set for the rest of
// the trace, so that the fakes take autocast's dtypes); its __exit__ restores the state before.
void Tracer::enter_autocast(const ValuePtr& manager) {
  Ref entry = call_helper("cdynamo._global_state", "autocast_entry", {manager->obj});
  if (PyUnicode_Check(entry.ptr())) unsupported(to_std_string(entry));
  set_autocast_state_in_graph(Handle(PyTuple_GET_ITEM(entry.ptr(), 0)));
  auto exit = std::make_shared<Value>();
  exit->kind = ValueKind::StateExit;
  exit->obj = Ref::borrow(PyTuple_GET_ITEM(entry.ptr(), 1));
  push(exit);
  push(manager);  // autocast's __enter__ returns the object itself
}

// A block whose state is a context object of torch's (inference mode, a default device): entered
// by a graph node, also run on the fakes (what the block makes is made as eager makes it), left by
// the node its __exit__ (a ContextExit) makes.
void Tracer::enter_context_block(Handle enter, Ref argument, const char* what, ValuePtr entered) {
  changes_global_state_ = true;
  static Ref& context_exit = *new Ref(call_helper("cdynamo._global_state", "ContextExit", {}));  // never freed: outlives the interpreter
  std::vector<ValuePtr> args;
  if (argument) args.push_back(Value::constant(std::move(argument)));  // null: the node takes none
  graph_.call("call_function", enter, std::move(args), {}, what, true);
  auto exit = std::make_shared<Value>();
  exit->kind = ValueKind::StateExit;
  exit->obj = context_exit;
  push(exit);
  push(std::move(entered));  // what `as` binds
}

// `with mode:` on a TorchFunctionMode (made in the trace, or the program's own, guarded by
// identity): entered by a graph node, so torch's functions in the block go through its
// __torch_function__ when the graph runs. False when the manager is not one.
bool Tracer::enter_function_mode(const ValuePtr& manager) {
  static Ref& mode_type = *new Ref(import_attr("torch.overrides", "TorchFunctionMode"));  // never freed: outlives the interpreter
  if (!manager->obj || (manager->kind != ValueKind::Constant && manager->kind != ValueKind::Object)) return false;
  int is_mode = PyObject_IsInstance(manager->obj.ptr(), mode_type.ptr());
  check_status(is_mode);
  if (!is_mode) return false;
  Ref refusal = call_helper("cdynamo._global_state", "function_mode_refusal",
                            {Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(manager->obj.ptr())))});
  if (refusal.ptr() != Py_None) unsupported("a with-block on a TorchFunctionMode: " + to_std_string(refusal));
  if (manager->source) manager->source->manager(*guards_).add_id_match(manager->obj);
  Ref enter = call_helper("cdynamo._global_state", "function_mode_node", {manager->obj});
  enter_context_block(enter, Ref(), "a TorchFunctionMode block", manager);
  return true;
}

// `with torch._C.DisableTorchFunctionSubclass():` the trace runs no subclass's __torch_function__
// in the block, and the graph's operators give plain tensors (the graph runs with it off anyway).
void Tracer::enter_subclass_dispatch_block() {
  auto exit = std::make_shared<Value>();
  exit->kind = ValueKind::SubclassDispatchExit;
  exit->restores_enabled = subclass_dispatch_;
  set_subclass_dispatch(false);
  push(exit);
  push(Value::constant(Ref::borrow(Py_None)));
}

void Tracer::before_with(ValuePtr manager) {
  static Ref& no_grad = *new Ref(import_attr("torch", "no_grad"));  // never freed: outlives the interpreter
  static Ref& autocast_type = *new Ref(import_attr("torch.amp.autocast_mode", "autocast"));  // never freed: outlives the interpreter
  static Ref& enable_grad = *new Ref(import_attr("torch", "enable_grad"));  // never freed: outlives the interpreter
  PyObject* type = manager->obj ? reinterpret_cast<PyObject*>(Py_TYPE(manager->obj.ptr())) : nullptr;
  if (enter_function_mode(manager)) return;
  static Ref& disable_subclass_type = *new Ref(import_attr("torch._C", "DisableTorchFunctionSubclass"));  // never freed: outlive
  static Ref& disable_all_type = *new Ref(import_attr("torch._C", "DisableTorchFunction"));                // the interpreter
  if (manager->is_constant() && (type == disable_subclass_type.ptr() || type == disable_all_type.ptr())) {
    enter_subclass_dispatch_block();
    return;
  }
  Ref enter = python_special_method(manager, "__enter__");
  Ref exit_method = python_special_method(manager, "__exit__");
  if (enter && exit_method && (manager->kind == ValueKind::NewObject || manager->kind == ValueKind::Object)) {
    // A context manager written in Python: its __enter__ runs now, its bound __exit__ waits on
    // the stack (called at the block's end, or by WITH_EXCEPT_START when an exception leaves it).
    auto exit = std::make_shared<Value>();
    exit->kind = ValueKind::UserMethod;
    exit->obj = exit_method;
    exit->name = "__exit__";
    exit->items = {manager};
    ValuePtr entered = inline_call(enter, {manager}, {});
    push(exit);
    push(entered);
    return;
  }
  if (manager->is_constant() && PyObject_IsInstance(manager->obj.ptr(), autocast_type.ptr()) == 1) {
    enter_autocast(manager);
    return;
  }
  static Ref& inference_mode_type = *new Ref(import_attr("torch", "inference_mode"));  // never freed: outlives the interpreter
  if (manager->is_constant() && type == inference_mode_type.ptr()) {
    static Ref& enter = *new Ref(import_attr("cdynamo._global_state", "enter_inference_mode"));  // never freed: outlives the interpreter
    Ref mode = check(PyObject_GetAttrString(manager->obj.ptr(), "mode"));
    if (!PyBool_Check(mode.ptr())) unsupported("torch.inference_mode(mode) with a mode that is not a bool");
    enter_context_block(enter, std::move(mode), "torch.inference_mode", Value::constant(Ref::borrow(Py_None)));
    return;
  }
  static Ref& device_type = *new Ref(import_attr("torch", "device"));  // never freed: outlives the interpreter
  if (manager->is_constant() && type == device_type.ptr()) {
    static Ref& enter = *new Ref(import_attr("cdynamo._global_state", "enter_device"));  // never freed: outlives the interpreter
    enter_context_block(enter, check(PyObject_Str(manager->obj.ptr())), "with torch.device", manager);
    return;
  }
  if (manager->is_constant() && std::string_view(Py_TYPE(manager->obj.ptr())->tp_name) == "_GeneratorContextManager") {
    Ref entry = call_helper("cdynamo._global_state", "sdpa_kernel_entry", {manager->obj});
    if (entry.ptr() != Py_None) {  // torch.nn.attention.sdpa_kernel(backends): set by a node, as eager sets it
      static Ref& enter = *new Ref(import_attr("cdynamo._global_state", "enter_sdpa_kernel"));  // never freed: outlives the interpreter
      enter_context_block(enter, std::move(entry), "torch.nn.attention.sdpa_kernel", Value::dict({}, {}));
      return;
    }
  }
  static Ref& set_grad_enabled_type = *new Ref(import_attr("torch", "set_grad_enabled"));  // never freed: outlives the interpreter
  if (manager->is_constant() && type == set_grad_enabled_type.ptr()) {
    // The mode was set when the object was made; the block's end restores the one before.
    Ref previous = check(PyObject_GetAttrString(manager->obj.ptr(), "prev"));
    auto exit = std::make_shared<Value>();
    exit->kind = ValueKind::GradModeExit;
    exit->restores_enabled = PyObject_IsTrue(previous.ptr()) == 1;
    push(exit);
    push(Value::constant(Ref::borrow(Py_None)));
    return;
  }
  if (!manager->is_constant() || (type != no_grad.ptr() && type != enable_grad.ptr()))
    unsupported("a with-block on a " + manager->describe() +
                " (torch.no_grad(), torch.enable_grad(), torch.autocast(), torch.inference_mode(), torch.device, TorchFunctionModes and context managers written in Python are supported)");
  bool previous = PyObject_IsTrue(call_helper("torch", "is_grad_enabled", {}).ptr()) == 1;
  set_grad_mode_in_graph(type == enable_grad.ptr());
  auto exit = std::make_shared<Value>();
  exit->kind = ValueKind::GradModeExit;
  exit->restores_enabled = previous;
  push(exit);
  push(Value::constant(Ref::borrow(Py_None)));
}

}  // namespace cdynamo::interp
