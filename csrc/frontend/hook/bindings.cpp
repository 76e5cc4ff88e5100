// Python-visible functions of the frame hook: entering and leaving hook modes, reset, the skip
// list, and cache inspection for tests. Assumes registration once, from PyInit__C.
#include <string>
#include <vector>
#include "common/error.h"
#include "frontend/hook/callback.h"
#include "frontend/hook/code_state.h"
#include "frontend/hook/optimized_callable.h"
#include "module.h"

namespace cdynamo {
namespace {

PyCodeObject* code_of(PyObject* obj) {
  if (PyCode_Check(obj)) return reinterpret_cast<PyCodeObject*>(obj);
  Ref code = steal(PyObject_GetAttrString(obj, "__code__"));
  if (!code || !PyCode_Check(code.ptr())) {
    PyErr_Clear();
    throw UserError("expected a function or code object", PyExc_TypeError);
  }
  return reinterpret_cast<PyCodeObject*>(code.ptr());  // kept alive by obj
}

// Ownership contract: borrows callback; the thread keeps borrowing it until the matching
// _leave, so the caller keeps it alive. Returns a new reference to the previous callback.
PyObject* py_enter(PyObject*, PyObject* callback) {
  PyObject* stored = callback == Py_None ? nullptr : callback;
  PyObject* previous = hook::enter_callback(stored);
  return Py_NewRef(previous ? previous : Py_None);
}

// Ownership contract: borrows previous (returned by _enter, kept alive by the caller).
PyObject* py_leave(PyObject*, PyObject* previous) {
  hook::leave_callback(previous == Py_None ? nullptr : previous);
  Py_RETURN_NONE;
}

// Ownership contract: no arguments; returns None.
PyObject* py_reset(PyObject*, PyObject*) {
  CDYNAMO_BOUNDARY_BEGIN
  hook::reset_all_code_states();
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: borrows a function or code object; returns None.
PyObject* py_skip_code(PyObject*, PyObject* fn) {
  CDYNAMO_BOUNDARY_BEGIN
  hook::mark_skip_permanently(code_of(fn));
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: borrows a function or code object; returns a new dict describing its
// cache: {"strategy": str, "entries": int, "fallback_reason": str}.
PyObject* py_cache_info(PyObject*, PyObject* fn) {
  CDYNAMO_BOUNDARY_BEGIN
  hook::CodeState* state = hook::existing_code_state(code_of(fn));
  const char* strategy = "unseen";
  size_t entries = 0;
  std::string reason;
  if (state) {
    strategy = state->strategy == hook::Strategy::Skip       ? "skip"
               : state->strategy == hook::Strategy::Fallback ? "fallback"
                                                             : "default";
    entries = state->entries.size();
    reason = state->fallback_reason;
  }
  return Py_BuildValue("{s:s,s:n,s:s}", "strategy", strategy, "entries",
                       static_cast<Py_ssize_t>(entries), "fallback_reason", reason.c_str());
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef hook_methods[] = {
    {"_enter", py_enter, METH_O, "Set this thread's hook callback; returns the previous one"},
    {"_leave", py_leave, METH_O, "Restore the callback returned by _enter"},
    {"reset", py_reset, METH_NOARGS, "Drop every compiled entry of every code object"},
    {"skip_code", py_skip_code, METH_O, "Never trace frames of this function's code"},
    {"cache_info", py_cache_info, METH_O, "Cache state of a function's code object"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_hook(PyObject* module, PyObject* testing) {
  (void)testing;
  add_functions(module, hook_methods);
  hook::add_optimized_callable_type(module);
}

}  // namespace cdynamo
