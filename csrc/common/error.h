// Error types inside the extension and their translation to Python exceptions at the boundary.
// Assumes: C++ code throws, C entry points catch with CDYNAMO_BOUNDARY_BEGIN/END and return NULL/-1.
#pragma once
#include <Python.h>
#include <stdexcept>
#include <string>
#include "common/py_ref.h"

namespace cdynamo {

// A Python exception is already set (a CPython call failed); the boundary leaves it in place.
struct PythonError : std::exception {
  const char* what() const noexcept override { return "Python error set"; }
};

// The user's code or input is at fault; becomes a Python exception of the given type.
struct UserError : std::runtime_error {
  explicit UserError(const std::string& msg, PyObject* type = PyExc_RuntimeError)
      : std::runtime_error(msg), type(type) {}
  PyObject* type;
};

// A bug in cdynamo.
struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws PythonError if obj is NULL, else returns it as an owning reference.
inline Ref check(PyObject* obj) {
  if (!obj) throw PythonError();
  return Ref::steal(obj);
}
inline void check_status(int status) {
  if (status < 0) throw PythonError();
}

// Runs cleanup (a destructor's work) leaving the Python error pending before it as it was: an
// error the cleanup itself raises is dropped.
template <class Cleanup>
void keeping_pending_error(Cleanup&& cleanup) noexcept {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  try {
    cleanup();
  } catch (...) {
    PyErr_Clear();
  }
  PyErr_Restore(type, value, traceback);
}

// Sets the Python error matching the C++ exception currently being handled.
void set_python_error_from_current_exception();

}  // namespace cdynamo

#define CDYNAMO_BOUNDARY_BEGIN try {
#define CDYNAMO_BOUNDARY_END(error_value)                 \
  }                                                       \
  catch (...) {                                           \
    ::cdynamo::set_python_error_from_current_exception(); \
    return error_value;                                   \
  }
