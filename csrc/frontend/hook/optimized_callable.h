// The OptimizedCallable type (calls a function with the hook in a given mode).
// Assumes registration once, from the hook part's init.
#pragma once
#include <Python.h>
#include <structmember.h>

namespace cdynamo::hook {
void add_optimized_callable_type(PyObject* module);
}
