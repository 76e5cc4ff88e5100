// Python-visible stage entry points of lowering and scheduling, for tests: _testing.lower,
// _testing.schedule and _testing.schedule_summary. Assumes registration once, from PyInit__C.
#include "backend/ir/ir.h"
#include "backend/lower/lower.h"
#include "backend/sched/schedule.h"
#include "common/error.h"
#include "module.h"

namespace cdynamo {
namespace {

Ref text(const std::string& s) { return check(PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()))); }

bool option(PyObject* options, const char* name, bool fallback) {
  if (!options || options == Py_None) return fallback;
  PyObject* value = PyDict_GetItemString(options, name);  // borrowed
  if (!value) return fallback;
  int truth = PyObject_IsTrue(value);
  check_status(truth);
  return truth == 1;
}

}  // namespace

// The stage switches from an optional dict: indirect_loads, full_pointwise_in_reductions,
// reuse_buffers (all default True).
void read_options(PyObject* options, lower::LowerOptions& lower_options, sched::ScheduleOptions& schedule_options) {
  if (options && options != Py_None && !PyDict_Check(options)) throw UserError("options must be a dict", PyExc_TypeError);
  lower_options.indirect_loads = option(options, "indirect_loads", true);
  schedule_options.full_pointwise_in_reductions = option(options, "full_pointwise_in_reductions", true);
  schedule_options.reuse_buffers = option(options, "reuse_buffers", true);
  schedule_options.cache_constant_kernels = option(options, "cache_constant_kernels", false);
  schedule_options.split_long_reductions = option(options, "split_long_reductions", false);
}

namespace {

struct StageArgs {
  PyObject* graph_module = nullptr;
  lower::LowerOptions lower_options;
  sched::ScheduleOptions schedule_options;
};

StageArgs parse_stage_args(PyObject* args) {
  StageArgs out;
  PyObject* options = nullptr;
  if (!PyArg_ParseTuple(args, "O|O", &out.graph_module, &options)) throw PythonError();
  read_options(options, out.lower_options, out.schedule_options);
  return out;
}

// Lowers and verifies the lowering stage on its own (one step per node).
lower::LoweredGraph lowered_and_verified(const StageArgs& a) {
  lower::LoweredGraph graph = lower::lower_graph(a.graph_module, a.lower_options);
  ir::verify(sched::unfused_program(graph));
  return graph;
}

// Ownership contract: borrows its arguments; returns a new reference or NULL with an error set.
PyObject* testing_lower(PyObject*, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  return text(lower::to_string(lowered_and_verified(parse_stage_args(args)))).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: borrows its arguments; returns a new reference or NULL with an error set.
PyObject* testing_schedule(PyObject*, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  StageArgs a = parse_stage_args(args);
  ir::Program program = sched::schedule(lowered_and_verified(a), nullptr, a.schedule_options);
  ir::verify(program);
  return text(ir::to_string(program)).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

void set_int(PyObject* dict, const char* key, long value) {
  Ref v = check(PyLong_FromLong(value));
  check_status(PyDict_SetItemString(dict, key, v.ptr()));
}

// Ownership contract: borrows its arguments; returns a new dict or NULL with an error set.
PyObject* testing_schedule_summary(PyObject*, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  StageArgs a = parse_stage_args(args);
  sched::ScheduleStats stats;
  ir::Program program = sched::schedule(lowered_and_verified(a), &stats, a.schedule_options);
  ir::verify(program);
  long kernels = 0, externs = 0, allocated = 0, reduction_kernels = 0, frees = 0;
  for (const ir::Step& step : program.steps) {
    if (auto* k = std::get_if<ir::Kernel>(&step)) {
      ++kernels;
      reduction_kernels += !k->reduction_ranges.empty();
    } else {
      ++externs;
    }
  }
  for (const ir::Buffer& b : program.buffers)
    allocated += (b.kind == ir::Buffer::Kind::Intermediate || b.kind == ir::Buffer::Kind::Output) && b.reuses.empty();
  for (const auto& f : program.frees) frees += static_cast<long>(f.size());
  Ref dict = check(PyDict_New());
  set_int(dict.ptr(), "kernels", kernels);
  set_int(dict.ptr(), "reduction_kernels", reduction_kernels);
  set_int(dict.ptr(), "externs", externs);
  set_int(dict.ptr(), "buffers", static_cast<long>(program.buffers.size()));
  set_int(dict.ptr(), "allocated", allocated);
  set_int(dict.ptr(), "reused", stats.reused);
  set_int(dict.ptr(), "fused_nodes", stats.fused_nodes);
  set_int(dict.ptr(), "dead_nodes", stats.dead_nodes);
  set_int(dict.ptr(), "frees", frees);
  return dict.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef testing_methods[] = {
    {"lower", testing_lower, METH_VARARGS, "lower(aten_gm, options=None) -> str: the lowered IR text (verified)"},
    {"schedule", testing_schedule, METH_VARARGS,
     "schedule(aten_gm, options=None) -> str: the scheduled Program text (verified)"},
    {"schedule_summary", testing_schedule_summary, METH_VARARGS,
     "schedule_summary(aten_gm, options=None) -> dict: kernels, reduction_kernels, externs, buffers, allocated, "
     "reused, fused_nodes, dead_nodes, frees. options: {'indirect_loads', 'full_pointwise_in_reductions', "
     "'reuse_buffers'} -> bool"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void init_lower_eval(PyObject* testing);  // testing_eval.cpp

void init_lower(PyObject* module, PyObject* testing) {
  (void)module;
  add_functions(testing, testing_methods);
  init_lower_eval(testing);
}

}  // namespace cdynamo
