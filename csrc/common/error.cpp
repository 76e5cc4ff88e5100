// Translation of C++ exceptions into Python exceptions at the extension's boundary.
// Assumes it is called from inside a catch block with the GIL held.
#include "common/error.h"

namespace cdynamo {

void set_python_error_from_current_exception() {
  try {
    throw;
  } catch (const PythonError&) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "cdynamo: Python error lost");
  } catch (const UserError& e) {
    PyErr_SetString(e.type, e.what());
  } catch (const InternalError& e) {
    PyErr_Format(PyExc_SystemError, "cdynamo internal error: %s", e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_Format(PyExc_SystemError, "cdynamo internal error: %s", e.what());
  } catch (...) {
    PyErr_SetString(PyExc_SystemError, "cdynamo internal error: unknown C++ exception");
  }
}

}  // namespace cdynamo
