// The inductor pipeline as one C++ call: lower an aten graph to loop IR, schedule (fuse, plan
// memory), generate and compile C++ kernels, and wrap them in the runtime's callable.
// Assumes the aten graph comes from cdynamo.inductor.compile_fx.aten_graph.
#include "backend/lower/lower.h"
#include "backend/runtime/compiled_program.h"
#include "backend/sched/schedule.h"
#include "common/error.h"
#include "common/py_import.h"
#include "module.h"

namespace cdynamo {
namespace {

// Ownership contract: borrows (aten_graph_module, eager_fallback); returns a new reference to
// a callable that runs the compiled program, or NULL with an error set.
PyObject* py_inductor_compile(PyObject*, PyObject* args) {
  PyObject *aten_graph_module, *eager_fallback;
  if (!PyArg_ParseTuple(args, "OO", &aten_graph_module, &eager_fallback)) return nullptr;
  CDYNAMO_BOUNDARY_BEGIN
  lower::LowerOptions lower_options;
  lower_options.indirect_loads = runtime::supports_indirect_loads();
  sched::ScheduleOptions schedule_options;
  schedule_options.full_pointwise_in_reductions = runtime::supports_full_pointwise_in_reductions();
  schedule_options.cache_constant_kernels = config_bool("freeze_constants");
  lower::LoweredGraph lowered = lower::lower_graph(aten_graph_module, lower_options);
  std::vector<std::pair<std::string, Ref>> constants = lowered.constants;
  ir::Program program = sched::schedule(std::move(lowered), nullptr, schedule_options);
  if (config_bool("verify_ir")) ir::verify(program);
  Ref text;
  if (PyObject_IsTrue(call_helper("cdynamo.utils", "is_debug_enabled", {Ref(check(PyUnicode_FromString("ir")))}).ptr()) == 1) {
    text = check(PyUnicode_FromString(ir::to_string(program).c_str()));
    call_helper("cdynamo.utils", "log", {Ref(check(PyUnicode_FromString("ir"))), text});
  }
  return runtime::compile_program(std::move(program), std::move(constants), eager_fallback).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef inductor_methods[] = {
    {"_inductor_compile", py_inductor_compile, METH_VARARGS,
     "_inductor_compile(aten_gm, eager_fallback) -> callable running the compiled program"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_inductor(PyObject* module, PyObject* testing) {
  (void)testing;
  add_functions(module, inductor_methods);
}

}  // namespace cdynamo
