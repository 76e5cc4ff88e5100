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

// Lowers and verifies the lowering stage on its own (one step per node).
lower::LoweredGraph lowered_and_verified(PyObject* graph_module) {
  lower::LoweredGraph graph = lower::lower_graph(graph_module);
  ir::verify(sched::unfused_program(graph));
  return graph;
}

// Ownership contract: borrows `graph_module`; returns a new reference or NULL with an error set.
PyObject* testing_lower(PyObject*, PyObject* graph_module) {
  CDYNAMO_BOUNDARY_BEGIN
  return text(lower::to_string(lowered_and_verified(graph_module))).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: borrows `graph_module`; returns a new reference or NULL with an error set.
PyObject* testing_schedule(PyObject*, PyObject* graph_module) {
  CDYNAMO_BOUNDARY_BEGIN
  ir::Program program = sched::schedule(lowered_and_verified(graph_module));
  ir::verify(program);
  return text(ir::to_string(program)).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

void set_int(PyObject* dict, const char* key, long value) {
  Ref v = check(PyLong_FromLong(value));
  check_status(PyDict_SetItemString(dict, key, v.ptr()));
}

// Ownership contract: borrows `graph_module`; returns a new dict or NULL with an error set.
PyObject* testing_schedule_summary(PyObject*, PyObject* graph_module) {
  CDYNAMO_BOUNDARY_BEGIN
  sched::ScheduleStats stats;
  ir::Program program = sched::schedule(lowered_and_verified(graph_module), &stats);
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
    {"lower", testing_lower, METH_O, "lower(aten_gm) -> str: the lowered IR text (verified)"},
    {"schedule", testing_schedule, METH_O, "schedule(aten_gm) -> str: the scheduled Program text (verified)"},
    {"schedule_summary", testing_schedule_summary, METH_O,
     "schedule_summary(aten_gm) -> dict: kernels, reduction_kernels, externs, buffers, allocated, reused, "
     "fused_nodes, dead_nodes, frees"},
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
