// A scope without the GIL, for kernel runs and compiles that let other Python threads progress.
// Assumes it is created by a thread holding the GIL; the GIL is back on every exit path.
#pragma once
#include <Python.h>

namespace cdynamo::runtime {

class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() { PyEval_RestoreThread(state_); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace cdynamo::runtime
