// Registration of the extension's parts: each part adds its functions to cdynamo._C and, for
// stage tests, to cdynamo._C._testing. Assumes it is called once from PyInit__C.
#pragma once
#include <Python.h>

namespace cdynamo {

// Each throws PythonError on failure.
void init_bytecode(PyObject* module, PyObject* testing);
void init_guards(PyObject* module, PyObject* testing);
void init_hook(PyObject* module, PyObject* testing);
void init_interp(PyObject* module, PyObject* testing);
void init_lower(PyObject* module, PyObject* testing);
void init_backend_runtime(PyObject* module, PyObject* testing);
void init_inductor(PyObject* module, PyObject* testing);

// Adds a NULL-terminated PyMethodDef table to a module.
void add_functions(PyObject* module, PyMethodDef* methods);

}  // namespace cdynamo
