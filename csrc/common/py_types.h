// Type objects and interned attribute names, as most of the interpreter's files need them.
// Assumes the GIL is held.
#pragma once
#include <string>
#include "common/error.h"
#include "common/py_ref.h"

namespace cdynamo {

// obj is known to be a type object (PyType_Check, or a class a Value carries).
inline PyTypeObject* as_type(Handle obj) { return reinterpret_cast<PyTypeObject*>(obj.ptr()); }

// The interned string for an attribute name: what _PyType_Lookup and dict lookups compare fastest.
inline Ref interned(const std::string& name) { return check(PyUnicode_InternFromString(name.c_str())); }

}  // namespace cdynamo
