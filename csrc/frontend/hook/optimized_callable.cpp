// OptimizedCallable: wraps a function so that every call runs with a given hook callback in
// this thread (compile, run-only, or off). What optimize(), run() and disable() return.
// Assumes the GIL is held; the wrapped object may be any callable.
#include "frontend/hook/optimized_callable.h"
#include "common/error.h"
#include "frontend/hook/callback.h"

namespace cdynamo::hook {
namespace {

struct OptimizedCallable {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* fn;        // owned
  PyObject* callback;  // owned: None (off), False (run-only) or (backend, options)
  PyObject* dict;      // owned, lazily created: functools.wraps stores __wrapped__ etc. here
  PyObject* weakrefs;
};

PyObject* optimized_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* wrapper = reinterpret_cast<OptimizedCallable*>(self);
  PyObject* callback = wrapper->callback == Py_None ? nullptr : wrapper->callback;
  PyObject* previous = enter_callback(callback);
  PyObject* result = PyObject_Vectorcall(wrapper->fn, args, nargsf, kwnames);
  leave_callback(previous);
  return result;
}

// Ownership contract: borrows fn and callback, stores new references to both.
PyObject* optimized_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *fn, *callback;
  static const char* keywords[] = {"fn", "callback", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", const_cast<char**>(keywords), &fn, &callback))
    return nullptr;
  if (!PyCallable_Check(fn)) {
    PyErr_Format(PyExc_TypeError, "cdynamo can only optimize callables, got %R", fn);
    return nullptr;
  }
  if (callback != Py_None && callback != Py_False &&
      !(PyTuple_Check(callback) && PyTuple_GET_SIZE(callback) == 2)) {
    PyErr_SetString(PyExc_TypeError, "callback must be None, False or a (backend, options) tuple");
    return nullptr;
  }
  auto* self = reinterpret_cast<OptimizedCallable*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = optimized_call;
  self->fn = Py_NewRef(fn);
  self->callback = Py_NewRef(callback);
  return reinterpret_cast<PyObject*>(self);
}

int optimized_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* wrapper = reinterpret_cast<OptimizedCallable*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(wrapper->fn);
  Py_VISIT(wrapper->callback);
  Py_VISIT(wrapper->dict);
  return 0;
}

int optimized_clear(PyObject* self) {
  auto* wrapper = reinterpret_cast<OptimizedCallable*>(self);
  Py_CLEAR(wrapper->fn);
  Py_CLEAR(wrapper->callback);
  Py_CLEAR(wrapper->dict);
  return 0;
}

void optimized_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  auto* wrapper = reinterpret_cast<OptimizedCallable*>(self);
  if (wrapper->weakrefs) PyObject_ClearWeakRefs(self);
  optimized_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// Binds like a function, so a decorated method receives self.
PyObject* optimized_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* optimized_get_fn(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<OptimizedCallable*>(self)->fn);
}
PyObject* optimized_get_callback(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<OptimizedCallable*>(self)->callback);
}

PyGetSetDef optimized_getset[] = {
    {"_fn", optimized_get_fn, nullptr, "the wrapped callable", nullptr},
    {"_callback", optimized_get_callback, nullptr, "the hook callback used for calls", nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr}};

PyMemberDef optimized_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(OptimizedCallable, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(OptimizedCallable, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(OptimizedCallable, weakrefs), READONLY, nullptr},
    {nullptr}};

PyType_Slot optimized_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(optimized_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(optimized_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(optimized_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(optimized_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(optimized_descr_get)},
    {Py_tp_getset, optimized_getset},
    {Py_tp_members, optimized_members},
    {Py_tp_doc, const_cast<char*>("OptimizedCallable(fn, callback): calls fn with the frame hook in the given mode")},
    {0, nullptr}};

PyType_Spec optimized_spec = {
    "cdynamo._C.OptimizedCallable", sizeof(OptimizedCallable), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    optimized_slots};

}  // namespace

void add_optimized_callable_type(PyObject* module) {
  Ref type = check(PyType_FromSpec(&optimized_spec));
  check_status(PyModule_AddObjectRef(module, "OptimizedCallable", type.ptr()));
}

}  // namespace cdynamo::hook
