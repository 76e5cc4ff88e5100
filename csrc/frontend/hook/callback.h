// The thread-local callback that tells the frame hook what to do in this thread, and the
// reference-counted installation of the hook in the interpreter.
#pragma once
#include <Python.h>

namespace cdynamo::hook {

// The current thread's callback (borrowed): NULL = off, Py_False = run cached code only,
// otherwise a tuple (backend, options) = compile on a cache miss.
PyObject* current_callback();
// Sets the thread's callback and counts one more active user of the hook (installing it when
// the first arrives). Returns the previous callback, to pass to leave_callback.
PyObject* enter_callback(PyObject* callback);
void leave_callback(PyObject* previous);

// While a thread traces a frame or checks guards, frames it runs are never intercepted.
bool hook_is_busy();
class BusyScope {
 public:
  BusyScope();
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  bool previous_;
};

}  // namespace cdynamo::hook
