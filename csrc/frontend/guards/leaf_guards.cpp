// Leaf guards on plain Python values: type match, identity, equality of immutables, length.
// Assumes the GIL is held; check() never leaves a Python error set.
#include <cmath>
#include <cstring>
#include "common/error.h"
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {

std::string type_name(PyTypeObject* type) {
  // Static types spell their module in tp_name ("collections.OrderedDict"); users know the name.
  const char* name = type->tp_name;
  const char* dot = std::strrchr(name, '.');
  return dot ? dot + 1 : name;
}

std::string safe_repr(PyObject* obj) {
  constexpr size_t kMaxLength = 200;
  std::string out;
  PythonCallout callout;
  Ref repr = Ref::steal(PyObject_Repr(obj));
  const char* utf8 = repr ? PyUnicode_AsUTF8(repr.ptr()) : nullptr;
  if (utf8) {
    out = utf8;
  } else {
    PyErr_Clear();
    out = "<unprintable " + type_name(Py_TYPE(obj)) + ">";
  }
  if (out.size() > kMaxLength) out = out.substr(0, kMaxLength) + "...";
  return out;
}

namespace {

std::string type_changed(const std::string& source, PyTypeObject* expected, PyTypeObject* got) {
  return "type of " + source + " changed: expected " + type_name(expected) + ", got " +
         type_name(got);
}

class TypeMatch final : public LeafGuard {
 public:
  explicit TypeMatch(PyTypeObject* type)
      : type_(Ref::borrow(reinterpret_cast<PyObject*>(type))), raw_(type) {}
  bool check(PyObject* value) const override { return Py_TYPE(value) == raw_; }
  std::string describe(PyObject* value, const std::string& source) const override {
    return type_changed(source, raw_, Py_TYPE(value));
  }
  std::string repr() const override { return "TYPE_MATCH " + type_name(raw_); }

 private:
  Ref type_;  // keeps the type alive, so its address cannot be reused by another type
  PyTypeObject* raw_;
};

// A float a graph takes as a symbolic input: finite and not -0.0 (shapes._float_without_symbol
// keeps those constants; a symbolic float cannot tell -0.0 from 0.0).
class SymbolicFloatMatch final : public LeafGuard {
 public:
  bool check(PyObject* value) const override {
    if (Py_TYPE(value) != &PyFloat_Type) return false;
    double v = PyFloat_AS_DOUBLE(value);
    return std::isfinite(v) && !(v == 0.0 && std::signbit(v));
  }
  std::string describe(PyObject* value, const std::string& source) const override {
    if (Py_TYPE(value) != &PyFloat_Type) return type_changed(source, &PyFloat_Type, Py_TYPE(value));
    return source + " is " + safe_repr(value) + ", which the graph takes as a constant, not as its float input";
  }
  std::string repr() const override { return "SYMBOLIC_FLOAT_MATCH"; }
};

class IdMatch final : public LeafGuard {
 public:
  explicit IdMatch(Handle obj) : raw_(obj.ptr()) {
    // A weak reference where the type allows one: a cache entry must not keep the user's
    // modules and functions alive. A dead referent reads as None, so a new object at the
    // same address never matches.
    if (PyType_SUPPORTS_WEAKREFS(Py_TYPE(obj.ptr()))) {
      weak_ = Ref::steal(PyWeakref_NewRef(obj.ptr(), nullptr));
      if (!weak_) PyErr_Clear();
    }
    if (!weak_) strong_ = Ref::borrow(obj);
  }
  bool check(PyObject* value) const override {
    if (value != raw_) return false;
    return strong_ || PyWeakref_GET_OBJECT(weak_.ptr()) == value;
  }
  bool expired() const override { return weak_ && PyWeakref_GET_OBJECT(weak_.ptr()) == Py_None; }
  std::string describe(PyObject* /*value*/, const std::string& source) const override {
    return source + " is no longer the same object";
  }
  std::string repr() const override {
    if (expired()) return "ID_MATCH <freed object>";
    return "ID_MATCH " + safe_repr(raw_);
  }

 private:
  PyObject* raw_;  // compared only; alive as long as weak_ says so, or held by strong_
  Ref weak_;
  Ref strong_;
};

// Builtin immutables whose == runs no Python code (for the callout bookkeeping).
bool has_native_eq(PyTypeObject* type) {
  return type == &PyLong_Type || type == &PyFloat_Type || type == &PyUnicode_Type ||
         type == &PyBool_Type || type == &PyBytes_Type || type == &PyComplex_Type ||
         type == Py_TYPE(Py_None) || type == &PyRange_Type;
}

class EqualsMatch final : public LeafGuard {
 public:
  explicit EqualsMatch(Handle obj)
      : obj_(Ref::borrow(obj)), type_(Py_TYPE(obj.ptr())), native_eq_(has_native_eq(type_)) {}

  bool check(PyObject* value) const override {
    if (value == obj_.ptr()) return true;
    if (Py_TYPE(value) != type_) return false;  // also keeps True from matching 1
    if (type_ == &PyFloat_Type) {
      // By bits: -0.0 is not 0.0 (str, copysign, 1/x tell them apart), and a NaN matches itself.
      double a = PyFloat_AS_DOUBLE(value), b = PyFloat_AS_DOUBLE(obj_.ptr());
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    int eq;
    if (native_eq_) {
      eq = PyObject_RichCompareBool(value, obj_.ptr(), Py_EQ);
    } else {
      PythonCallout callout;
      eq = PyObject_RichCompareBool(value, obj_.ptr(), Py_EQ);
    }
    if (eq < 0) {
      PyErr_Clear();
      return false;
    }
    return eq == 1;
  }

  std::string describe(PyObject* value, const std::string& source) const override {
    if (Py_TYPE(value) != type_) return type_changed(source, type_, Py_TYPE(value));
    return source + " == " + safe_repr(obj_.ptr()) + " expected, got " + safe_repr(value);
  }
  std::string repr() const override { return "EQUALS_MATCH " + safe_repr(obj_.ptr()); }

 private:
  Ref obj_;  // also keeps type_ alive
  PyTypeObject* type_;
  bool native_eq_;
};

// The length of a builtin container, read from its struct (no __len__ call), or -1.
Py_ssize_t native_length(PyObject* value) {
  if (PyTuple_Check(value)) return PyTuple_GET_SIZE(value);
  if (PyList_Check(value)) return PyList_GET_SIZE(value);
  if (PyDict_Check(value)) return PyDict_GET_SIZE(value);
  if (PyAnySet_Check(value)) return PySet_GET_SIZE(value);
  return -1;
}

class LengthCheck final : public LeafGuard {
 public:
  explicit LengthCheck(Py_ssize_t length) : length_(length) {}
  bool check(PyObject* value) const override { return native_length(value) == length_; }
  std::string describe(PyObject* value, const std::string& source) const override {
    Py_ssize_t got = native_length(value);
    if (got < 0) {
      return source + " is no longer a tuple, list, dict or set (got " +
             type_name(Py_TYPE(value)) + ")";
    }
    return "len(" + source + ") == " + std::to_string(length_) + " expected, got " +
           std::to_string(got);
  }
  std::string repr() const override { return "LENGTH_CHECK " + std::to_string(length_); }

 private:
  Py_ssize_t length_;
};

// hasattr(value, name) is false: a trace that took getattr's default or an AttributeError
// handler stays valid only while the attribute stays absent.
class NoAttr final : public LeafGuard {
 public:
  explicit NoAttr(const std::string& name)
      : name_(name), interned_(Ref::steal(PyUnicode_InternFromString(name.c_str()))) {
    if (!interned_) throw PythonError();
  }
  bool check(PyObject* value) const override {
    PyObject* found = nullptr;
    int status;
    {
      PythonCallout callout;  // __getattr__/__getattribute__ may be Python code
      status = _PyObject_LookupAttr(value, interned_.ptr(), &found);
    }
    Py_XDECREF(found);
    if (status < 0) PyErr_Clear();
    return status == 0;
  }
  std::string describe(PyObject* /*value*/, const std::string& source) const override {
    return source + " now has an attribute '" + name_ + "' (it had none)";
  }
  std::string repr() const override { return "NO_ATTR " + name_; }

 private:
  std::string name_;
  Ref interned_;
};

// The dict's keys are these, in this order (dict iteration, keys(), values() and items() follow
// it). Keys are compared by identity first: interned strings and small ints almost always match so.
class DictKeyOrder final : public LeafGuard {
 public:
  explicit DictKeyOrder(std::vector<Ref> keys) : keys_(std::move(keys)) {}
  bool check(PyObject* value) const override {
    if (!PyDict_Check(value) || PyDict_GET_SIZE(value) != static_cast<Py_ssize_t>(keys_.size())) return false;
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    for (const Ref& expected : keys_) {
      if (!PyDict_Next(value, &pos, &key, &item)) return false;
      if (key == expected.ptr()) continue;
      int equal;
      {
        PythonCallout callout;  // a key's __eq__ may be Python code
        equal = PyObject_RichCompareBool(key, expected.ptr(), Py_EQ);
      }
      if (equal != 1) {
        if (equal < 0) PyErr_Clear();
        return false;
      }
    }
    return true;
  }
  std::string describe(PyObject* /*value*/, const std::string& source) const override {
    return "the keys of " + source + " are no longer in the order the trace iterated them";
  }
  std::string repr() const override { return "DICT_KEY_ORDER " + std::to_string(keys_.size()); }

 private:
  std::vector<Ref> keys_;
};

// tensor.requires_grad is as it was (a parameter's flag, which its identity guard does not cover).
class RequiresGradMatch final : public LeafGuard {
 public:
  explicit RequiresGradMatch(bool requires_grad) : requires_grad_(requires_grad) {}
  bool check(PyObject* value) const override {
    PyObject* flag = PyObject_GetAttrString(value, "requires_grad");
    if (!flag) {
      PyErr_Clear();
      return false;
    }
    bool matches = (flag == Py_True) == requires_grad_;
    Py_DECREF(flag);
    return matches;
  }
  std::string describe(PyObject* /*value*/, const std::string& source) const override {
    return source + ".requires_grad is no longer " + (requires_grad_ ? "True" : "False");
  }
  std::string repr() const override { return std::string("REQUIRES_GRAD ") + (requires_grad_ ? "True" : "False"); }

 private:
  bool requires_grad_;
};

}  // namespace

std::unique_ptr<LeafGuard> make_dict_key_order(std::vector<Ref> keys) { return std::make_unique<DictKeyOrder>(std::move(keys)); }
std::unique_ptr<LeafGuard> make_requires_grad_match(bool requires_grad) {
  return std::make_unique<RequiresGradMatch>(requires_grad);
}
std::unique_ptr<LeafGuard> make_no_attr(const std::string& name) { return std::make_unique<NoAttr>(name); }
std::unique_ptr<LeafGuard> make_type_match(PyTypeObject* type) {
  if (!type) throw InternalError("type match on a NULL type");
  return std::make_unique<TypeMatch>(type);
}
std::unique_ptr<LeafGuard> make_id_match(Handle obj) {
  if (!obj) throw InternalError("id match on NULL");
  return std::make_unique<IdMatch>(obj);
}
std::unique_ptr<LeafGuard> make_symbolic_float_match() { return std::make_unique<SymbolicFloatMatch>(); }

std::unique_ptr<LeafGuard> make_equals_match(Handle obj) {
  if (!obj) throw InternalError("equals match on NULL");
  return std::make_unique<EqualsMatch>(obj);
}
std::unique_ptr<LeafGuard> make_length_check(Py_ssize_t length) {
  if (length < 0) throw UserError("length check on a negative length", PyExc_ValueError);
  return std::make_unique<LengthCheck>(length);
}

}  // namespace cdynamo::guards
