// Accessors: how a child value is read from its parent (attribute, tuple/list item, dict item,
// cell contents). Assumes the GIL is held; get() never leaves a Python error set.
#include "common/error.h"
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {
namespace {

Ref intern(const std::string& s) {
  PyObject* str = PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
  if (!str) throw PythonError();
  PyUnicode_InternInPlace(&str);
  return Ref::steal(str);
}

// Borrowed value of `dict[key]` for a str key (hash cached, so no Python code runs), or NULL.
PyObject* dict_lookup_str(PyObject* dict, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(dict, key);
  if (!v && PyErr_Occurred()) PyErr_Clear();
  return v;
}

bool may_have_instance_dict(PyTypeObject* type) {
  return type->tp_dictoffset != 0 || (type->tp_flags & Py_TPFLAGS_MANAGED_DICT) != 0;
}

// ---- getattr ----
// nn.Module keeps parameters, buffers and submodules in three dicts and finds them in a Python
// __getattr__; reading those dicts directly is what makes module attribute guards cheap. A
// module is recognised by its instance __dict__ holding `_modules` as a dict, not by isinstance,
// so no torch import is needed here and no Python code runs.
class AttrAccessor final : public Accessor {
 public:
  AttrAccessor(const std::string& parent_source, const std::string& name)
      : Accessor(parent_source + "." + name),
        parent_source_(parent_source),
        name_str_(name),
        name_(intern(name)),
        modules_key_(intern("_modules")),
        parameters_key_(intern("_parameters")),
        buffers_key_(intern("_buffers")) {}

  PyObject* get(PyObject* parent) const override {
    PyTypeObject* type = Py_TYPE(parent);
    if (may_have_instance_dict(type) && !PyType_Check(parent)) {
      Ref dict = Ref::steal(PyObject_GenericGetDict(parent, nullptr));
      if (!dict) {
        PyErr_Clear();
      } else if (PyDict_Check(dict.ptr())) {
        PyObject* modules = dict_lookup_str(dict.ptr(), modules_key_.ptr());
        if (modules && PyDict_Check(modules)) {
          if (PyObject* v = from_module_dicts(dict.ptr(), modules)) return Py_NewRef(v);
        }
      }
    }
    // Not a module, or a class-level attribute of one (method, property, constant).
    PythonCallout callout;
    PyObject* v = PyObject_GetAttr(parent, name_.ptr());
    if (!v) PyErr_Clear();  // AttributeError means missing; any other error fails the guard too
    return v;
  }

  bool same_as(const Accessor& other) const override {
    auto* o = dynamic_cast<const AttrAccessor*>(&other);
    return o && o->name_str_ == name_str_;
  }

  std::string describe_missing(PyObject* /*parent*/) const override {
    return parent_source_ + " has no attribute '" + name_str_ + "'";
  }

 private:
  // Module.__getattr__'s order, after the instance dict: parameters, buffers, submodules.
  PyObject* from_module_dicts(PyObject* dict, PyObject* modules) const {
    if (PyObject* v = dict_lookup_str(dict, name_.ptr())) return v;
    for (PyObject* key : {parameters_key_.ptr(), buffers_key_.ptr()}) {
      PyObject* sub = dict_lookup_str(dict, key);
      if (sub && PyDict_Check(sub)) {
        if (PyObject* v = dict_lookup_str(sub, name_.ptr())) return v;
      }
    }
    return dict_lookup_str(modules, name_.ptr());
  }

  std::string parent_source_;
  std::string name_str_;
  Ref name_;
  Ref modules_key_, parameters_key_, buffers_key_;
};

// ---- tuple/list item ----
// Reads the container's storage directly: a list subclass's __getitem__ is not consulted, which
// matches what the interpreter saw when it unpacked the container at trace time.
class ItemAccessor final : public Accessor {
 public:
  ItemAccessor(const std::string& parent_source, Py_ssize_t index)
      : Accessor(parent_source + "[" + std::to_string(index) + "]"),
        parent_source_(parent_source),
        index_(index) {}

  PyObject* get(PyObject* parent) const override {
    Py_ssize_t size;
    PyObject* const* items;
    if (PyTuple_Check(parent)) {
      size = PyTuple_GET_SIZE(parent);
      items = reinterpret_cast<PyTupleObject*>(parent)->ob_item;
    } else if (PyList_Check(parent)) {
      size = PyList_GET_SIZE(parent);
      items = reinterpret_cast<PyListObject*>(parent)->ob_item;
    } else {
      return nullptr;
    }
    Py_ssize_t i = index_ < 0 ? index_ + size : index_;
    if (i < 0 || i >= size) return nullptr;
    return Py_NewRef(items[i]);
  }

  bool same_as(const Accessor& other) const override {
    auto* o = dynamic_cast<const ItemAccessor*>(&other);
    return o && o->index_ == index_;
  }

  std::string describe_missing(PyObject* parent) const override {
    if (!PyTuple_Check(parent) && !PyList_Check(parent)) {
      return parent_source_ + " is no longer a tuple or list (got " + type_name(Py_TYPE(parent)) +
             ")";
    }
    return parent_source_ + " has no item " + std::to_string(index_) + " (length " +
           std::to_string(Py_SIZE(parent)) + ")";
  }

 private:
  std::string parent_source_;
  Py_ssize_t index_;
};

// ---- dict item ----
class DictItemAccessor final : public Accessor {
 public:
  DictItemAccessor(const std::string& parent_source, Handle key)
      : Accessor(parent_source + "[" + safe_repr(key.ptr()) + "]"),
        parent_source_(parent_source),
        key_(Ref::borrow(key)),
        key_hash_is_free_(PyUnicode_CheckExact(key.ptr()) || PyLong_CheckExact(key.ptr())) {
    // Hash now so a str key's hash is cached before the first check.
    if (PyObject_Hash(key.ptr()) == -1) throw PythonError();
  }

  PyObject* get(PyObject* parent) const override {
    if (!PyDict_Check(parent)) return nullptr;
    PyObject* v;
    if (key_hash_is_free_) {
      v = PyDict_GetItemWithError(parent, key_.ptr());
    } else {
      PythonCallout callout;  // a user key's __hash__/__eq__ may run
      v = PyDict_GetItemWithError(parent, key_.ptr());
    }
    if (!v) {
      if (PyErr_Occurred()) PyErr_Clear();
      return nullptr;
    }
    return Py_NewRef(v);
  }

  bool same_as(const Accessor& other) const override {
    auto* o = dynamic_cast<const DictItemAccessor*>(&other);
    if (!o) return false;
    if (o->key_.is(key_)) return true;
    if (Py_TYPE(o->key_.ptr()) != Py_TYPE(key_.ptr())) return false;
    int eq = PyObject_RichCompareBool(o->key_.ptr(), key_.ptr(), Py_EQ);
    if (eq < 0) PyErr_Clear();
    return eq == 1;
  }

  std::string describe_missing(PyObject* parent) const override {
    if (!PyDict_Check(parent)) {
      return parent_source_ + " is no longer a dict (got " + type_name(Py_TYPE(parent)) + ")";
    }
    return parent_source_ + " has no key " + safe_repr(key_.ptr());
  }

 private:
  std::string parent_source_;
  Ref key_;
  bool key_hash_is_free_;
};

// ---- cell contents ----
class CellContentsAccessor final : public Accessor {
 public:
  explicit CellContentsAccessor(const std::string& parent_source)
      : Accessor(parent_source + ".cell_contents"), parent_source_(parent_source) {}

  PyObject* get(PyObject* parent) const override {
    if (!PyCell_Check(parent)) return nullptr;
    return Py_XNewRef(PyCell_GET(parent));
  }

  bool same_as(const Accessor& other) const override {
    return dynamic_cast<const CellContentsAccessor*>(&other) != nullptr;
  }

  std::string describe_missing(PyObject* parent) const override {
    if (!PyCell_Check(parent)) return parent_source_ + " is no longer a cell";
    return parent_source_ + " is an empty cell";
  }

 private:
  std::string parent_source_;
};

// ---- function(value): a NumPy array read as the tensor over its memory (torch.from_numpy) ----
class ConvertedAccessor final : public Accessor {
 public:
  ConvertedAccessor(const std::string& parent_source, Handle function, const std::string& function_name)
      : Accessor(function_name + "(" + parent_source + ")"),
        parent_source_(parent_source),
        function_name_(function_name),
        function_(Ref::borrow(function.ptr())) {}

  PyObject* get(PyObject* parent) const override {
    PyObject* result = PyObject_CallOneArg(function_.ptr(), parent);
    if (!result) PyErr_Clear();  // not convertible any more: the guard fails
    return result;
  }

  bool same_as(const Accessor& other) const override {
    auto* o = dynamic_cast<const ConvertedAccessor*>(&other);
    return o && o->function_.ptr() == function_.ptr();
  }

  std::string describe_missing(PyObject*) const override {
    return parent_source_ + " can no longer be converted by " + function_name_;
  }

 private:
  std::string parent_source_, function_name_;
  Ref function_;
};

}  // namespace

std::unique_ptr<Accessor> make_converted_accessor(const std::string& parent_source, Handle function,
                                                  const std::string& function_name) {
  return std::make_unique<ConvertedAccessor>(parent_source, function, function_name);
}

std::unique_ptr<Accessor> make_attr_accessor(const std::string& parent_source,
                                             const std::string& name) {
  return std::make_unique<AttrAccessor>(parent_source, name);
}
std::unique_ptr<Accessor> make_item_accessor(const std::string& parent_source, Py_ssize_t index) {
  return std::make_unique<ItemAccessor>(parent_source, index);
}
std::unique_ptr<Accessor> make_dict_item_accessor(const std::string& parent_source, Handle key) {
  return std::make_unique<DictItemAccessor>(parent_source, key);
}
std::unique_ptr<Accessor> make_cell_contents_accessor(const std::string& parent_source) {
  return std::make_unique<CellContentsAccessor>(parent_source);
}

}  // namespace cdynamo::guards
