// Thread-local hook state and the interpreter-wide installation count of the evaluator.
// Assumes the GIL is held (the installation count is protected by it).
#include "frontend/hook/callback.h"
#include "common/cpython_compat.h"

namespace cdynamo::hook {

PyObject* eval_frame_hook(PyThreadState* tstate, CdFrame* frame, int throwflag);

namespace {

thread_local PyObject* t_callback = nullptr;
thread_local bool t_busy = false;
// Threads (and nested scopes) currently inside an optimize() context. The evaluator is only
// installed while this is positive: an installed evaluator slows every Python call (3.11
// stops inlining Python-to-Python calls).
long g_active_users = 0;

}  // namespace

PyObject* current_callback() { return t_callback; }

PyObject* enter_callback(PyObject* callback) {
  PyObject* previous = t_callback;
  t_callback = callback;
  if (g_active_users++ == 0) cd_set_eval_frame(eval_frame_hook);
  return previous;
}

void leave_callback(PyObject* previous) {
  t_callback = previous;
  if (--g_active_users == 0) cd_set_eval_frame(nullptr);
}

bool hook_is_busy() { return t_busy; }
BusyScope::BusyScope() : previous_(t_busy) { t_busy = true; }
BusyScope::~BusyScope() { t_busy = previous_; }

}  // namespace cdynamo::hook
