// Python-visible functions of the guards part: _testing.GuardTree builds a guard tree from Python
// and checks it against a fake frame. Assumes registration happens once, from PyInit__C.
#include <chrono>
#include <vector>
#include "common/error.h"
#include "frontend/guards/guards.h"
#include "module.h"

namespace cdynamo {
namespace {

using guards::FrameView;
using guards::GuardManager;
using guards::RootGuardManager;

// Marks an unbound (NULL) slot in a fake frame's locals list: _testing.UNBOUND.
PyObject* unbound_sentinel = nullptr;

struct GuardTreeObject {
  PyObject_HEAD
  std::unique_ptr<RootGuardManager> root;  // constructed in tp_new, destroyed in tp_dealloc
};

RootGuardManager& root_of(PyObject* self) { return *reinterpret_cast<GuardTreeObject*>(self)->root; }

// ---- argument conversion (throws PythonError or UserError) ----

std::string as_string(PyObject* obj, const char* what) {
  if (!PyUnicode_Check(obj)) throw UserError(std::string(what) + " must be a str", PyExc_TypeError);
  const char* utf8 = PyUnicode_AsUTF8(obj);
  if (!utf8) throw PythonError();
  return utf8;
}

long as_long(PyObject* obj) {
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) throw PythonError();
  return v;
}

// Borrowed items of a list or tuple, valid while `seq` (kept alive by the caller) is unchanged.
std::vector<PyObject*> items_of(PyObject* obj, const char* what) {
  Ref seq = Ref::steal(PySequence_Fast(obj, what));
  if (!seq) throw PythonError();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  if (seq.ptr() != obj) throw UserError(std::string(what), PyExc_TypeError);  // only list/tuple
  return std::vector<PyObject*>(items, items + n);
}

// ("local", index, name) | ("global", name) | ("closure", index, name)
GuardManager& resolve_root(RootGuardManager& root, PyObject* spec) {
  const char* usage =
      "root must be ('local', index, name), ('global', name) or ('closure', index, name)";
  if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) throw UserError(usage, PyExc_TypeError);
  std::string kind = as_string(PyTuple_GET_ITEM(spec, 0), "root kind");
  Py_ssize_t n = PyTuple_GET_SIZE(spec);
  if (kind == "global" && n == 2) return root.global(as_string(PyTuple_GET_ITEM(spec, 1), "name"));
  if (n == 3 && (kind == "local" || kind == "closure")) {
    int index = static_cast<int>(as_long(PyTuple_GET_ITEM(spec, 1)));
    if (index < 0) throw UserError("negative index", PyExc_ValueError);
    std::string name = as_string(PyTuple_GET_ITEM(spec, 2), "name");
    return kind == "local" ? root.local(index, name) : root.closure_cell(index, name);
  }
  throw UserError(usage, PyExc_TypeError);
}

// A list of steps: ("attr", name) | ("item", index) | ("dict_item", key) | ("cell_contents",)
GuardManager& resolve_path(GuardManager& start, PyObject* path) {
  GuardManager* m = &start;
  for (PyObject* step : items_of(path, "path must be a list of steps")) {
    if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 1) {
      throw UserError("a path step must be a tuple like ('attr', name)", PyExc_TypeError);
    }
    std::string kind = as_string(PyTuple_GET_ITEM(step, 0), "step kind");
    Py_ssize_t n = PyTuple_GET_SIZE(step);
    if (kind == "attr" && n == 2) {
      m = &m->attr(as_string(PyTuple_GET_ITEM(step, 1), "attribute name"));
    } else if (kind == "item" && n == 2) {
      m = &m->item(as_long(PyTuple_GET_ITEM(step, 1)));
    } else if (kind == "dict_item" && n == 2) {
      m = &m->dict_item(PyTuple_GET_ITEM(step, 1));
    } else if (kind == "cell_contents" && n == 1) {
      m = &m->cell_contents();
    } else {
      throw UserError("unknown path step '" + kind + "'", PyExc_ValueError);
    }
  }
  return *m;
}

void add_leaf(GuardManager& m, const std::string& kind, PyObject* value) {
  if (kind == "type_match") {
    if (!PyType_Check(value)) throw UserError("type_match needs a type", PyExc_TypeError);
    m.add_type_match(reinterpret_cast<PyTypeObject*>(value));
  } else if (kind == "id_match") {
    m.add_id_match(value);
  } else if (kind == "equals_match") {
    m.add_equals_match(value);
  } else if (kind == "length_check") {
    m.add_length_check(as_long(value));
  } else if (kind == "tensor_match") {
    m.add_tensor_match(value);
  } else {
    throw UserError("unknown guard kind '" + kind + "'", PyExc_ValueError);
  }
}

// A fake frame built from (locals, globals, builtins[, closure]); owns its slots so a guard's
// Python callout that mutates the caller's list cannot free a value under the check.
struct FakeFrame {
  std::vector<Ref> owned;
  std::vector<PyObject*> slots;
  Ref globals, builtins, closure;
  FrameView view;

  FakeFrame(PyObject* args, int locals_needed) {
    PyObject *locals, *g, *b, *c = Py_None;
    if (!PyArg_ParseTuple(args, "OO!O!|O", &locals, &PyDict_Type, &g, &PyDict_Type, &b, &c)) {
      throw PythonError();
    }
    init(locals, g, b, c, locals_needed);
  }
  FakeFrame(PyObject* locals, PyObject* g, PyObject* b, PyObject* c, int locals_needed) {
    init(locals, g, b, c, locals_needed);
  }

 private:
  void init(PyObject* locals, PyObject* g, PyObject* b, PyObject* c, int locals_needed) {
    if (!PyDict_Check(g) || !PyDict_Check(b)) {
      throw UserError("globals and builtins must be dicts", PyExc_TypeError);
    }
    for (PyObject* v : items_of(locals, "locals must be a list or tuple")) {
      owned.push_back(Ref::borrow(v));
      slots.push_back(v == unbound_sentinel ? nullptr : v);
    }
    // Slots a guard reads but the caller left out are unbound, as in a real frame.
    if (slots.size() < static_cast<size_t>(locals_needed)) slots.resize(locals_needed, nullptr);
    if (c != Py_None && !PyTuple_Check(c)) {
      throw UserError("closure must be a tuple of cells or None", PyExc_TypeError);
    }
    globals = Ref::borrow(g);
    builtins = Ref::borrow(b);
    closure = Ref::borrow(c == Py_None ? nullptr : c);
    view.localsplus = slots.data();
    view.globals = globals.ptr();
    view.builtins = builtins.ptr();
    view.closure = closure.ptr();
  }
};

// ---- GuardTree methods. Ownership contract (all): `self` and `args` are borrowed; each returns
// a new reference, or NULL with an exception set. ----

PyObject* tree_guard(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  PyObject *root_spec, *path, *value = Py_None;
  const char* kind;
  if (!PyArg_ParseTuple(args, "OOs|O", &root_spec, &path, &kind, &value)) return nullptr;
  GuardManager& m = resolve_path(resolve_root(root_of(self), root_spec), path);
  add_leaf(m, kind, value);
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_local_tensor_match(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  int index;
  const char* name;
  PyObject* tensor;
  if (!PyArg_ParseTuple(args, "isO", &index, &name, &tensor)) return nullptr;
  if (index < 0) throw UserError("negative index", PyExc_ValueError);
  root_of(self).local(index, name).add_tensor_match(tensor);
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_local_equals(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  int index;
  const char* name;
  PyObject* value;
  if (!PyArg_ParseTuple(args, "isO", &index, &name, &value)) return nullptr;
  if (index < 0) throw UserError("negative index", PyExc_ValueError);
  root_of(self).local(index, name).add_equals_match(value);
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_global_id_match(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  const char* name;
  PyObject* obj;
  if (!PyArg_ParseTuple(args, "sO", &name, &obj)) return nullptr;
  root_of(self).global(name).add_id_match(obj);
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_local_attr_id_match(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  int index;
  const char* name;
  PyObject *attrs, *obj;
  if (!PyArg_ParseTuple(args, "isOO", &index, &name, &attrs, &obj)) return nullptr;
  if (index < 0) throw UserError("negative index", PyExc_ValueError);
  GuardManager* m = &root_of(self).local(index, name);
  for (PyObject* attr : items_of(attrs, "attrs must be a list of names")) {
    m = &m->attr(as_string(attr, "attribute name"));
  }
  m->add_id_match(obj);
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_grad_mode(PyObject* self, PyObject* /*unused*/) {
  CDYNAMO_BOUNDARY_BEGIN
  root_of(self).add_grad_mode_guard();
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_no_aliasing(PyObject* self, PyObject* arg) {
  CDYNAMO_BOUNDARY_BEGIN
  std::vector<std::pair<int, std::string>> locals;
  for (PyObject* pair : items_of(arg, "no_aliasing takes a list of (index, name)")) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      throw UserError("no_aliasing takes a list of (index, name)", PyExc_TypeError);
    }
    long index = as_long(PyTuple_GET_ITEM(pair, 0));
    if (index < 0) throw UserError("negative index", PyExc_ValueError);
    locals.emplace_back(static_cast<int>(index), as_string(PyTuple_GET_ITEM(pair, 1), "name"));
  }
  root_of(self).add_no_aliasing_guard(std::move(locals));
  Py_RETURN_NONE;
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_check(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  FakeFrame frame(args, root_of(self).locals_needed());
  bool ok = root_of(self).check(frame.view);
  if (PyErr_Occurred()) throw InternalError("guard check left a Python error set");
  return PyBool_FromLong(ok);
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_failure_reason(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  FakeFrame frame(args, root_of(self).locals_needed());
  std::string reason = root_of(self).failure_reason(frame.view);
  if (PyErr_Occurred()) throw InternalError("failure_reason left a Python error set");
  return PyUnicode_FromStringAndSize(reason.data(), static_cast<Py_ssize_t>(reason.size()));
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Mean nanoseconds per root check over n checks, for benchmarks (the result of the checks is
// not reported; measure a passing frame to time the full walk).
PyObject* tree_time_check(PyObject* self, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  long n;
  PyObject *locals, *g, *b, *c = Py_None;
  if (!PyArg_ParseTuple(args, "lOO!O!|O", &n, &locals, &PyDict_Type, &g, &PyDict_Type, &b, &c)) {
    return nullptr;
  }
  if (n <= 0) throw UserError("n must be positive", PyExc_ValueError);
  RootGuardManager& root = root_of(self);
  FakeFrame frame(locals, g, b, c, root.locals_needed());
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) root.check(frame.view);
  auto stop = std::chrono::steady_clock::now();
  double ns = std::chrono::duration<double, std::nano>(stop - start).count();
  return PyFloat_FromDouble(ns / static_cast<double>(n));
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_size(PyObject* self, PyObject* /*unused*/) {
  CDYNAMO_BOUNDARY_BEGIN
  return PyLong_FromSize_t(root_of(self).size());
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyObject* tree_dump(PyObject* self, PyObject* /*unused*/) {
  CDYNAMO_BOUNDARY_BEGIN
  std::string text = root_of(self).dump();
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: `type` and `args` borrowed; returns a new GuardTree, or NULL with an
// exception set.
PyObject* tree_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) != 0 || (kwargs && PyDict_GET_SIZE(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "GuardTree() takes no arguments");
    return nullptr;
  }
  Ref self = Ref::steal(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  auto* obj = reinterpret_cast<GuardTreeObject*>(self.ptr());
  new (&obj->root) std::unique_ptr<RootGuardManager>();
  CDYNAMO_BOUNDARY_BEGIN
  obj->root = std::make_unique<RootGuardManager>();
  return self.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: steals the last reference to `self`.
void tree_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<GuardTreeObject*>(self)->root.~unique_ptr();
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

PyMethodDef tree_methods[] = {
    {"guard", tree_guard, METH_VARARGS,
     "guard(root, path, kind, value): add a leaf guard at root + path.\n"
     "root: ('local', index, name) | ('global', name) | ('closure', index, name)\n"
     "path: [('attr', name) | ('item', i) | ('dict_item', key) | ('cell_contents',)]\n"
     "kind: type_match | id_match | equals_match | length_check | tensor_match"},
    {"local_tensor_match", tree_local_tensor_match, METH_VARARGS,
     "local_tensor_match(index, name, tensor)"},
    {"local_equals", tree_local_equals, METH_VARARGS, "local_equals(index, name, value)"},
    {"global_id_match", tree_global_id_match, METH_VARARGS, "global_id_match(name, obj)"},
    {"local_attr_id_match", tree_local_attr_id_match, METH_VARARGS,
     "local_attr_id_match(index, name, [attr, ...], obj)"},
    {"grad_mode", tree_grad_mode, METH_NOARGS, "Guard on the current grad mode."},
    {"no_aliasing", tree_no_aliasing, METH_O, "no_aliasing([(index, name), ...])"},
    {"check", tree_check, METH_VARARGS, "check(locals, globals, builtins, closure=None) -> bool"},
    {"failure_reason", tree_failure_reason, METH_VARARGS,
     "failure_reason(locals, globals, builtins, closure=None) -> str ('' if all pass)"},
    {"time_check", tree_time_check, METH_VARARGS,
     "time_check(n, locals, globals, builtins, closure=None) -> mean ns per check"},
    {"size", tree_size, METH_NOARGS, "Number of leaf guards."},
    {"dump", tree_dump, METH_NOARGS, "The tree in check order, with fail counts."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot tree_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(tree_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(tree_dealloc)},
    {Py_tp_methods, tree_methods},
    {Py_tp_doc, const_cast<char*>("A guard tree built from Python, checked against a fake frame.")},
    {0, nullptr},
};

PyType_Spec tree_spec = {"cdynamo._C._testing.GuardTree", sizeof(GuardTreeObject), 0,
                         Py_TPFLAGS_DEFAULT, tree_slots};

}  // namespace

void init_guards(PyObject* module, PyObject* testing) {
  (void)module;
  Ref type = check(PyType_FromSpec(&tree_spec));
  check_status(PyModule_AddObject(testing, "GuardTree", type.release()));
  Ref sentinel = check(PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type)));
  unbound_sentinel = sentinel.ptr();  // the module's reference keeps it alive
  check_status(PyModule_AddObject(testing, "UNBOUND", sentinel.release()));
}

}  // namespace cdynamo
