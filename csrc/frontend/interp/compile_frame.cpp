// compile_frame: trace, build the GraphModule, call the backend, generate transformed code.
// Assumes the hook calls it with tracing-time frames disabled (BusyScope) and the GIL held.
#include "frontend/interp/compile_frame.h"
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/codegen/transformed_code.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

void collect_outputs(const ValuePtr& value, std::vector<ValuePtr>& outputs) {
  if (value->is_tensor()) {
    for (const auto& seen : outputs)
      if (seen->node.ptr() == value->node.ptr()) return;
    outputs.push_back(value);
  } else if (value->is_sequence() || value->kind == ValueKind::Dict) {
    for (const auto& item : value->items) collect_outputs(item, outputs);
  }
}

}  // namespace

int argument_slot_count(PyCodeObject* code) {
  int count = code->co_argcount + code->co_kwonlyargcount;
  if (code->co_flags & CO_VARARGS) ++count;
  if (code->co_flags & CO_VARKEYWORDS) ++count;
  return count;
}

CompiledFrame compile_frame(CdFrame* frame, PyObject* callback) {
  PyCodeObject* code = cd_frame_code(frame);
  Tracer tracer(frame);
  TraceResult result = tracer.run();
  std::vector<ValuePtr> outputs;
  collect_outputs(result.return_value, outputs);
  if (tracer.graph().op_count() == 0) {
    Unsupported nothing("the function runs no tensor operations (nothing to compile)");
    nothing.filename = to_std_string(code->co_filename);
    nothing.line = code->co_firstlineno;
    nothing.function = to_std_string(code->co_qualname);
    nothing.silent = true;
    throw nothing;
  }
  tracer.graph().set_output(outputs);
  Ref graph_module = tracer.graph().build_graph_module(to_std_string(code->co_qualname));

  Ref example_inputs = check(PyList_New(0));
  for (const auto& input : tracer.graph().inputs()) check_status(PyList_Append(example_inputs.ptr(), input.example.ptr()));
  Ref backend = Ref::borrow(PyTuple_GET_ITEM(callback, 0));
  Ref compiled = call_helper("cdynamo.backends.registry", "call_backend", {backend, graph_module, example_inputs});
  // The compiled graph runs with the hook off, as TorchDynamo's does: whatever Python the
  // backend's runtime executes (AOTAutograd wrappers, library code) is not user code to trace.
  Ref hook_off_type = import_attr("cdynamo._C", "OptimizedCallable");
  compiled = check(PyObject_CallFunctionObjArgs(hook_off_type.ptr(), compiled.ptr(), Py_None, nullptr));

  CompiledFrame compiled_frame;
  compiled_frame.transformed_code =
      codegen::transformed_code(code, compiled, tracer.graph().inputs(), result.return_value, outputs);
  compiled_frame.guards = tracer.take_guards();
  return compiled_frame;
}

}  // namespace cdynamo::interp
