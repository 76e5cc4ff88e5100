// Owning (Ref) and borrowed (Handle) Python references: every PyObject* in C++ code is one of these.
// Assumes the GIL is held wherever a Ref is copied, reset or destroyed.
#pragma once
#include <Python.h>
#include <utility>

namespace cdynamo {

// A borrowed reference: never changes a reference count.
class Handle {
 public:
  Handle() = default;
  Handle(PyObject* obj) : obj_(obj) {}  // NOLINT: borrowing is the implicit, cheap direction
  PyObject* ptr() const { return obj_; }
  explicit operator bool() const { return obj_ != nullptr; }
  bool is(Handle other) const { return obj_ == other.obj_; }

 protected:
  PyObject* obj_ = nullptr;
};

// An owning reference. Build it with steal() for a new reference or borrow() for a borrowed one.
class Ref : public Handle {
 public:
  Ref() = default;
  static Ref steal(PyObject* obj) { return Ref(obj); }
  static Ref borrow(PyObject* obj) {
    Py_XINCREF(obj);
    return Ref(obj);
  }
  static Ref borrow(Handle h) { return borrow(h.ptr()); }
  Ref(const Ref& other) : Handle(other.obj_) { Py_XINCREF(obj_); }
  Ref(Ref&& other) noexcept : Handle(other.obj_) { other.obj_ = nullptr; }
  Ref& operator=(const Ref& other) {
    if (this != &other) {
      PyObject* old = obj_;
      obj_ = other.obj_;
      Py_XINCREF(obj_);
      Py_XDECREF(old);
    }
    return *this;
  }
  Ref& operator=(Ref&& other) noexcept {
    if (this != &other) {
      PyObject* old = obj_;
      obj_ = other.obj_;
      other.obj_ = nullptr;
      Py_XDECREF(old);
    }
    return *this;
  }
  ~Ref() { Py_XDECREF(obj_); }

  // Gives the reference away (to a CPython API that steals it).
  PyObject* release() { return std::exchange(obj_, nullptr); }
  void reset() { Py_CLEAR(obj_); }

 private:
  explicit Ref(PyObject* obj) : Handle(obj) {}
};

inline Ref steal(PyObject* obj) { return Ref::steal(obj); }
inline Ref borrow(PyObject* obj) { return Ref::borrow(obj); }

}  // namespace cdynamo
