// compile_frame: trace (retracing once to end in a graph break where the first trace stopped),
// build the GraphModule, call the backend, generate transformed code (and resume functions).
// Assumes the hook calls it with tracing-time frames disabled (BusyScope) and the GIL held.
#include "frontend/interp/compile_frame.h"

#include <optional>
#include <utility>

#include "common/error.h"
#include "common/py_import.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/codegen/code_builder.h"
#include "frontend/codegen/resume.h"
#include "frontend/codegen/transformed_code.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

void collect_outputs(const ValuePtr& value, std::vector<ValuePtr>& outputs) {
  codegen::visit_values(value, [&](const ValuePtr& v) {
    if (!v->is_tensor()) return;
    for (const auto& seen : outputs)
      if (seen->node.ptr() == v->node.ptr()) return;
    outputs.push_back(v);
  });
}

// Sizes of a dynamic trace inside the value (returned, or kept across a graph break): graph outputs.
void collect_symbolic_outputs(graph::GraphBuilder& graph, const ValuePtr& value, std::vector<ValuePtr>& outputs) {
  if (!graph.dynamic() || !value) return;
  codegen::visit_values(value, [&](const ValuePtr& v) {
    if (v->is_constant() && v->obj) graph.add_symbolic_outputs(v->obj, outputs);
  });
}

// A float passed as an argument (a default left as it is does not count: eps=1e-5 never changes).
bool has_float_argument(CdFrame* frame) {
  PyCodeObject* code = cd_frame_code(frame);
  PyObject* const* locals = cd_frame_localsplus(frame);
  PyObject* function = cd_frame_function(frame);
  auto is_default = [&](int slot, PyObject* value) {
    if (!function || !PyFunction_Check(function)) return false;
    PyObject* defaults = PyFunction_GET_DEFAULTS(function);
    if (defaults && slot < code->co_argcount) {
      Py_ssize_t first = code->co_argcount - PyTuple_GET_SIZE(defaults);
      if (slot >= first && PyTuple_GET_ITEM(defaults, slot - first) == value) return true;
    }
    PyObject* kwdefaults = PyFunction_GET_KW_DEFAULTS(function);
    if (kwdefaults && slot >= code->co_argcount) {
      PyObject* found = PyDict_GetItemWithError(kwdefaults, PyTuple_GET_ITEM(code->co_localsplusnames, slot));
      if (!found && PyErr_Occurred()) PyErr_Clear();
      return found == value;
    }
    return false;
  };
  int count = code->co_argcount + code->co_kwonlyargcount;
  for (int i = 0; i < count; ++i)
    if (locals[i] && PyFloat_CheckExact(locals[i]) && !is_default(i, locals[i])) return true;
  return false;
}

bool fullgraph_requested(PyObject* callback) {
  Ref flag = check(PyObject_GetAttrString(PyTuple_GET_ITEM(callback, 1), "nopython"));
  int truth = PyObject_IsTrue(flag.ptr());
  check_status(truth);
  return truth;
}

// A Python context manager (a `with` block of torch's state) entered for the scope's life and
// left also when the scope ends by an exception, which stays the pending one.
struct ContextBlockScope {
  Ref block;
  explicit ContextBlockScope(Ref entered) : block(std::move(entered)) {
    Ref(check(PyObject_CallMethod(block.ptr(), "__enter__", nullptr)));
  }
  ~ContextBlockScope() {
    keeping_pending_error([&] { check(PyObject_CallMethod(block.ptr(), "__exit__", "OOO", Py_None, Py_None, Py_None)); });
  }
  ContextBlockScope(const ContextBlockScope&) = delete;
  ContextBlockScope& operator=(const ContextBlockScope&) = delete;
};

// Whether __torch_function__ dispatch was on when the frame being compiled was entered (the
// backend compiles under it: torch's own passes, such as AOTAutograd's MetaProxy tracing, rely
// on it).
thread_local bool torch_function_on_at_entry = true;

// A refusal of the whole frame, reported at its first line (no instruction of it is to blame).
Unsupported frame_refusal(PyCodeObject* code, const std::string& reason, bool silent = false) {
  Unsupported refused(reason);
  refused.filename = to_std_string(code->co_filename);
  refused.line = code->co_firstlineno;
  refused.function = to_std_string(code->co_qualname);
  refused.silent = silent;
  return refused;
}

// The backend's callable for the traced graph, run with the hook off (as TorchDynamo's is:
// whatever Python the backend's runtime executes is not user code to trace).
// A graph with tensor-subclass inputs or results runs on plain tensors, its outputs given the
// classes the trace gave them (_tensor_subclasses.running_plain).
Ref compile_graph(Tracer& tracer, PyCodeObject* code, PyObject* callback, const std::vector<ValuePtr>& outputs) {
  Ref graph_module = tracer.graph().build_graph_module(to_std_string(code->co_qualname));
  if (tracer.made_modules_with_state()) {
    Ref reason = call_helper("cdynamo._made_modules", "random_draws_in", {graph_module});
    if (reason.ptr() != Py_None) throw frame_refusal(code, to_std_string(reason));
  }
  Ref example_inputs = check(PyList_New(0));
  for (const auto& input : tracer.graph().inputs()) check_status(PyList_Append(example_inputs.ptr(), input.example.ptr()));
  Ref output_classes = check(PyList_New(0));
  bool any_class = false;
  for (const ValuePtr& output : outputs) {
    const bool has_class = output->is_tensor() && output->cls && !output->source;
    any_class = any_class || has_class;
    check_status(PyList_Append(output_classes.ptr(), has_class ? output->cls.ptr() : Py_None));
  }
  Ref backend_examples = call_helper("cdynamo._tensor_subclasses", "plain_examples", {example_inputs});
  const bool runs_plain = any_class || backend_examples.ptr() != Py_None;
  if (backend_examples.ptr() == Py_None) backend_examples = example_inputs;
  Ref backend = Ref::borrow(PyTuple_GET_ITEM(callback, 0));
  // The trace ends with the global state (grad mode, autocast) its code left: the tracer sets it
  // as the graph does. The backend compiles under the state the graph starts in, as its calls will.
  Ref final_state = call_helper("cdynamo._global_state", "global_state", {});
  call_helper("cdynamo._global_state", "set_global_state", {tracer.initial_state()});
  Ref compiled;
  {
    std::optional<ContextBlockScope> dispatch_as_at_entry;
    if (torch_function_on_at_entry) dispatch_as_at_entry.emplace(call_helper("torch._C", "_EnableTorchFunction", {}));
    compiled = call_helper("cdynamo.backends.registry", "call_backend", {backend, graph_module, backend_examples});
  }
  if (runs_plain) compiled = call_helper("cdynamo._tensor_subclasses", "running_plain", {compiled, example_inputs, output_classes});
  int unchanged = PyObject_RichCompareBool(final_state.ptr(), tracer.initial_state().ptr(), Py_EQ);
  check_status(unchanged);
  if (!unchanged) compiled = call_helper("cdynamo._global_state", "leaving_global_state", {compiled, final_state});
  if (tracer.changes_global_state())
    compiled = call_helper("cdynamo._global_state", "restoring_state_on_error", {compiled, tracer.initial_state()});
  Ref hook_off_type = import_attr("cdynamo._C", "OptimizedCallable");
  return check(PyObject_CallFunctionObjArgs(hook_off_type.ptr(), compiled.ptr(), Py_None, nullptr));
}

void report_graph_break(PyCodeObject* code, const Unsupported& error) {
  std::string reason = std::string(error.what()) + " (" + error.filename + ":" + std::to_string(error.line) + ")";
  Ref text = check(PyUnicode_FromString(reason.c_str()));
  call_helper("cdynamo.utils", "record_graph_break", {text});
  (void)code;
}

}  // namespace

int argument_slot_count(PyCodeObject* code) {
  int count = code->co_argcount + code->co_kwonlyargcount;
  if (code->co_flags & CO_VARARGS) ++count;
  if (code->co_flags & CO_VARKEYWORDS) ++count;
  return count;
}

// How a retrace ends after the first trace stopped at an unsupported construct.
enum class BreakPlan {
  None,    // the first trace: to the end
  Nested,  // inside the inlined functions, at the step that failed (config.nested_graph_breaks)
  Root,    // at the root-frame instruction that led there
};

bool nested_breaks_enabled() {
  Ref flag = import_attr("cdynamo.config", "nested_graph_breaks");
  int truth = PyObject_IsTrue(flag.ptr());
  check_status(truth);
  return truth;
}

namespace {

// While alive, operations whose output size only the data gives break the graph
// (_trace_support.data_dependent_ops_break) instead of being captured with unbacked sizes.
struct DataDependentOpsBreak {
  DataDependentOpsBreak() { set(true); }
  ~DataDependentOpsBreak() {
    keeping_pending_error([] { set(false); });
  }
  static void set(bool on) {
    Ref module = import_attr("cdynamo", "_trace_support");
    check_status(PyObject_SetAttrString(module.ptr(), "data_dependent_ops_break", on ? Py_True : Py_False));
  }
};

// While a trace runs: whether its Tensor.item() values stay in the graph
// (_trace_support.scalar_outputs_captured), read by _fake_runs.fake_run: an operation that reads
// a tensor's value as a number (torch.arange(t.max()), torch.ones(2, n)) then retraces over a
// ShapeEnv, where the number is an unbacked symbol, instead of breaking the graph.
struct ScalarOutputsCapturedScope {
  Ref module = import_attr("cdynamo", "_trace_support");
  Ref previous = check(PyObject_GetAttrString(module.ptr(), "scalar_outputs_captured"));
  explicit ScalarOutputsCapturedScope(bool on) {
    check_status(PyObject_SetAttrString(module.ptr(), "scalar_outputs_captured", on ? Py_True : Py_False));
  }
  ~ScalarOutputsCapturedScope() {
    keeping_pending_error([&] { check_status(PyObject_SetAttrString(module.ptr(), "scalar_outputs_captured", previous.ptr())); });
  }
};

// While one frame compiles: torch's setting for how symbolic sizes treat 0 and 1 is cdynamo's
// (cdynamo.shapes.begin_compile), and the user's again after, also when the compile throws.
struct ZeroOneSizesScope {
  Ref previous = call_helper("cdynamo.shapes", "begin_compile", {});
  ~ZeroOneSizesScope() {
    keeping_pending_error([&] { call_helper("cdynamo.shapes", "end_compile", {previous}); });
  }
};

// Tensor subclasses' __torch_function__ off while a frame is traced: the trace runs it itself
// (tensor_subclasses.cpp), and its own work on input tensors (their fakes, their guards) is not
// the program's to log or change.
struct SubclassDispatchOffScope {
  // Members are initialised in order: the entry state is recorded before `off` changes it.
  bool on_before = std::exchange(torch_function_on_at_entry,
                                 call_helper("torch._C", "_is_torch_function_enabled", {}).ptr() == Py_True);
  ContextBlockScope off{call_helper("torch._C", "DisableTorchFunctionSubclass", {})};
  ~SubclassDispatchOffScope() { torch_function_on_at_entry = on_before; }
};

// One attempt; *captured_data_dependent says whether a trace captured an operation with a
// data-dependent output size (a retrace over a ShapeEnv for it).
CompiledFrame compile_frame_attempt(CdFrame* frame, PyObject* callback, bool* captured_data_dependent);

}  // namespace

// Operations with data-dependent sizes are captured (unbacked sizes); where the code then needs
// such a size as a Python value (a loop over nonzero's rows, a branch on it), or the frame
// cannot be compiled otherwise, it is compiled again with those operations breaking the graph:
// the code after them then traces with their real sizes.
CompiledFrame compile_frame(CdFrame* frame, PyObject* callback) {
  ZeroOneSizesScope zero_one_sizes;
  SubclassDispatchOffScope subclass_dispatch_off;
  bool captured_data_dependent = false;
  try {
    return compile_frame_attempt(frame, callback, &captured_data_dependent);
  } catch (const Unsupported& error) {
    if (!captured_data_dependent || error.silent || fullgraph_requested(callback)) throw;
  }
  DataDependentOpsBreak scope;
  bool unused = false;
  return compile_frame_attempt(frame, callback, &unused);
}

namespace {

CompiledFrame compile_frame_attempt(CdFrame* frame, PyObject* callback, bool* captured_data_dependent) {
  PyCodeObject* code = cd_frame_code(frame);
  BreakPlan plan = BreakPlan::None;
  int break_at = -1;          // BreakPlan::Root
  size_t break_step = 0;      // BreakPlan::Nested
  bool root_break_possible = false;
  std::optional<Unsupported> first_error;
  // A nested break that cannot be carried out after all ends at the root instead.
  auto fall_back_to_root = [&]() {
    if (plan != BreakPlan::Nested || !root_break_possible) return false;
    plan = BreakPlan::Root;
    break_step = 0;
    return true;
  };
  Ref dynamic_option = check(PyObject_GetAttrString(PyTuple_GET_ITEM(callback, 1), "dynamic"));
  // dynamic=True, or a float argument (as in torch.compile, floats are graph inputs from the
  // first compile: a float that changes per call must not recompile).
  bool dynamic = dynamic_option.ptr() == Py_True ||
                 (dynamic_option.ptr() == Py_None && has_float_argument(frame));
  for (;;) {
    PyObject* first_argument = code->co_argcount > 0 && cd_frame_localsplus(frame)[0] ? cd_frame_localsplus(frame)[0] : Py_None;
    Ref shape_trace = call_helper("cdynamo.shapes", "ShapeTrace",
                                  {Handle(reinterpret_cast<PyObject*>(code)), dynamic_option, dynamic ? Py_True : Py_False,
                                   first_argument});
    Tracer tracer(frame, shape_trace, plan == BreakPlan::Root ? break_at : -1, break_step);
    tracer.one_graph = fullgraph_requested(callback);
    tracer.capture_scalar_outputs = config_bool("capture_scalar_outputs") || tracer.one_graph;
    ScalarOutputsCapturedScope scalar_outputs_captured(tracer.capture_scalar_outputs);
    TraceResult result;
    try {
      result = tracer.run();
    } catch (const RetraceDynamic& retrace) {
      // Sizes that must be symbolic: the same trace again over a ShapeEnv (once: a dynamic
      // trace never asks for this).
      if (dynamic) throw InternalError("a dynamic trace asked to be retraced as dynamic");
      dynamic = true;
      if (retrace.data_dependent) *captured_data_dependent = true;
      continue;
    } catch (const Unsupported& error) {
      // The first trace stopped at an unsupported construct: retrace up to it and end the graph
      // there (a partial graph), inside the inlined functions that reached it when they allow,
      // else at the root-frame instruction that called them; unless the user asked for one
      // full graph or the frame's state there cannot be carried over.
      if (fall_back_to_root()) continue;
      if (plan != BreakPlan::None || error.silent || fullgraph_requested(callback)) throw;
      // The code needs, as a Python value, a size that an operation the trace captured gives
      // (its loop over nonzero's rows): compile_frame breaks at that operation instead.
      if (error.data_dependent && *captured_data_dependent) throw;
      first_error = error;
      break_at = tracer.failing_root_instruction();
      root_break_possible = tracer.can_break_at(break_at);
      if (tracer.can_break_nested() && nested_breaks_enabled()) {
        plan = BreakPlan::Nested;
        break_step = tracer.failing_step();
      } else if (root_break_possible) {
        plan = BreakPlan::Root;
      } else {
        throw;
      }
      continue;
    }

    CompiledFrame compiled_frame;
    if (!result.break_state) {
      std::vector<ValuePtr> outputs;
      for (const auto& effect : result.side_effects) {
        collect_outputs(effect.value, outputs);
        if (effect.object && effect.object->is_tensor()) collect_outputs(effect.object, outputs);  // t.tag = ...
      }
      collect_outputs(result.return_value, outputs);
      for (const auto& effect : result.side_effects) collect_symbolic_outputs(tracer.graph(), effect.value, outputs);
      collect_symbolic_outputs(tracer.graph(), result.return_value, outputs);
      if (tracer.graph().op_count() == 0)
        throw frame_refusal(code, "the function runs no tensor operations (nothing to compile)", true);
      tracer.graph().set_output(outputs);
      Ref compiled = compile_graph(tracer, code, callback, outputs);
      compiled_frame.transformed_code = codegen::transformed_code(code, compiled, tracer.graph().inputs(),
                                                                  result.return_value, outputs, result.side_effects);
    } else {
      const BreakState& state = *result.break_state;
      std::vector<ValuePtr> outputs = codegen::break_outputs(state, result.side_effects);
      for (const auto& effect : result.side_effects) collect_symbolic_outputs(tracer.graph(), effect.value, outputs);
      for (const auto& value : codegen::break_values(state)) collect_symbolic_outputs(tracer.graph(), value, outputs);
      Ref compiled;
      bool has_graph = tracer.graph().op_count() > 0 || !outputs.empty();
      try {
        bytecode::InstructionList instructions = bytecode::decode(code);
        codegen::check_break_state(code, instructions, state);  // before the backend sees a graph
        if (has_graph) {
          tracer.graph().set_output(outputs);
          compiled = compile_graph(tracer, code, callback, outputs);
        }
        compiled_frame.transformed_code = codegen::transformed_code_at_break(
            code, instructions, compiled, tracer.graph().inputs(), state, outputs, result.side_effects,
            compiled_frame.resume_codes);
      } catch (const Unsupported&) {
        if (fall_back_to_root()) continue;
        // No partial graph after all: report the construct that stopped the first trace.
        Unsupported error = *first_error;
        throw error;
      }
      report_graph_break(code, *first_error);
    }
    compiled_frame.guards = tracer.take_guards();
    compiled_frame.identities = tracer.identities();
    return compiled_frame;
  }
}

}  // namespace

}  // namespace cdynamo::interp
