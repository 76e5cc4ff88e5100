// The tensor match guard: Python type, dispatch keys, dtype, device, requires_grad and shape of a
// tensor, read through libtorch. The only guard file with torch headers (they compile slowly).
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <limits>
#include <vector>
#include "common/error.h"
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {
namespace {

// A dimension whose size or stride was symbolic when the guard was built: not checked.
constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

// As PyTorch's own guards do: the keys a dispatch on this tensor would see, so a change of the
// thread-local include/exclude sets (inference mode, functorch transforms) is caught as well.
// The dispatch states of the frames being traced on this thread, innermost last.
thread_local std::vector<c10::impl::LocalDispatchKeySet> entry_dispatch_states;

c10::DispatchKeySet effective_keys(const c10::TensorImpl& impl) {
  c10::impl::LocalDispatchKeySet local = c10::impl::tls_local_dispatch_key_set();
  return (impl.key_set() | local.included_) - local.excluded_;
}

// What effective_keys will read at the frame's entry, for a guard built during its trace.
c10::DispatchKeySet keys_at_entry(const c10::TensorImpl& impl) {
  if (entry_dispatch_states.empty()) return effective_keys(impl);
  const c10::impl::LocalDispatchKeySet& local = entry_dispatch_states.back();
  return (impl.key_set() | local.included_) - local.excluded_;
}

int64_t concrete_or_dynamic(const c10::SymInt& v) {
  auto maybe = v.maybe_as_int();
  return maybe ? *maybe : kDynamic;
}

std::string dtype_name(c10::ScalarType dtype) {
  // torch's own dtype object prints as users know it ("torch.float32").
  return safe_repr(reinterpret_cast<PyObject*>(torch::getTHPDtype(dtype)));
}

std::string bool_name(bool b) { return b ? "True" : "False"; }

// What one of the expected dimensions looked like in a failing tensor, for the message.
struct DimMismatch {
  const char* what;  // "size" or "stride"
  size_t dim;
  int64_t expected, got;
};

class TensorMatch final : public LeafGuard {
 public:
  TensorMatch(PyObject* tensor, PyObject* shape_from)
      : type_ref_(Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(tensor)))),
        type_(Py_TYPE(tensor)) {
    const at::Tensor& t = THPVariable_Unpack(tensor);
    if (!t.defined()) throw UserError("tensor match on an undefined tensor", PyExc_ValueError);
    const c10::TensorImpl& impl = *t.unsafeGetTensorImpl();
    keys_ = keys_at_entry(impl);
    dtype_ = impl.dtype();
    device_ = impl.device();
    requires_grad_ = impl.requires_grad();
    // A tensor subclass may compute sizes in Python; reading them is then a callout.
    python_keyed_ = impl.key_set().has(c10::DispatchKey::Python);
    ndim_ = impl.dim();
    const c10::TensorImpl& shape = shape_from ? *THPVariable_Unpack(shape_from).unsafeGetTensorImpl() : impl;
    for (const c10::SymInt& s : shape.sym_sizes()) sizes_.push_back(concrete_or_dynamic(s));
    // Sparse and other non-strided layouts have no strides to read.
    if (impl.layout() == c10::kStrided) {
      for (const c10::SymInt& s : shape.sym_strides()) strides_.push_back(concrete_or_dynamic(s));
    }
  }

  bool check(PyObject* value) const override {
    if (Py_TYPE(value) != type_) return false;
    // Every tensor type is a subclass of torch._C.TensorBase, so the pointer compare above is
    // what makes the unchecked unpack below safe.
    try {
      if (python_keyed_) {
        PythonCallout callout;
        return matches(*THPVariable_Unpack(value).unsafeGetTensorImpl(), nullptr);
      }
      return matches(*THPVariable_Unpack(value).unsafeGetTensorImpl(), nullptr);
    } catch (...) {
      if (PyErr_Occurred()) PyErr_Clear();
      return false;
    }
  }

  std::string describe(PyObject* value, const std::string& source) const override {
    if (Py_TYPE(value) != type_) {
      return "type of " + source + " changed: expected " + type_name(type_) + ", got " +
             type_name(Py_TYPE(value));
    }
    try {
      const c10::TensorImpl& impl = *THPVariable_Unpack(value).unsafeGetTensorImpl();
      // Ordered by what users changed, not by cost: a device change also changes the keys.
      if (impl.dtype() != dtype_) {
        return source + " changed dtype: expected " + dtype_name(dtype_.toScalarType()) +
               ", got " + dtype_name(impl.dtype().toScalarType());
      }
      if (impl.device() != device_) {
        return source + " changed device: expected " + device_.str() + ", got " +
               impl.device().str();
      }
      if (impl.requires_grad() != requires_grad_) {
        return source + " changed requires_grad: expected " + bool_name(requires_grad_) +
               ", got " + bool_name(impl.requires_grad());
      }
      DimMismatch dim{};
      if (!matches_shape(impl, &dim)) {
        if (dim.what == nullptr) {
          return source + " changed number of dimensions: expected " + std::to_string(ndim_) +
                 ", got " + std::to_string(impl.dim());
        }
        return source + " changed " + dim.what + " at dim " + std::to_string(dim.dim) +
               ": expected " + std::to_string(dim.expected) + ", got " + std::to_string(dim.got);
      }
      c10::DispatchKeySet got = effective_keys(impl);
      if (got != keys_) {
        return source + " changed dispatch keys: gained " + c10::toString(got - keys_) +
               ", lost " + c10::toString(keys_ - got);
      }
    } catch (const std::exception& e) {
      if (PyErr_Occurred()) PyErr_Clear();
      return source + ": tensor metadata could not be read (" + e.what() + ")";
    }
    // check() failed on something describe() did not find (an exception inside it).
    return source + " no longer matches its tensor guard";
  }

  std::string repr() const override {
    std::string shape;
    for (int64_t s : sizes_) {
      shape += (shape.empty() ? "" : ", ") + (s == kDynamic ? std::string("?") : std::to_string(s));
    }
    return "TENSOR_MATCH " + type_name(type_) + " " + dtype_name(dtype_.toScalarType()) + " " +
           device_.str() + " [" + shape + "] requires_grad=" + bool_name(requires_grad_);
  }

 private:
  // Cheapest and most discriminating fields first.
  bool matches(const c10::TensorImpl& impl, DimMismatch* mismatch) const {
    if (impl.dtype() != dtype_) return false;
    if (impl.device() != device_) return false;
    if (effective_keys(impl) != keys_) return false;
    if (impl.requires_grad() != requires_grad_) return false;
    return matches_shape(impl, mismatch);
  }

  bool matches_shape(const c10::TensorImpl& impl, DimMismatch* mismatch) const {
    if (impl.dim() != ndim_) return false;
    if (!matches_dims("size", sizes_, impl.sym_sizes(), mismatch)) return false;
    if (strides_.empty()) return true;
    return matches_dims("stride", strides_, impl.sym_strides(), mismatch);
  }

  static bool matches_dims(const char* what, const std::vector<int64_t>& expected,
                           c10::SymIntArrayRef got, DimMismatch* mismatch) {
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i] == kDynamic) continue;
      const c10::SymInt& g = got[i];
      // A symbolic size in a real call cannot be compared; treat it as a change.
      int64_t value = g.is_heap_allocated() ? kDynamic : g.as_int_unchecked();
      if (value != expected[i]) {
        if (mismatch) *mismatch = DimMismatch{what, i, expected[i], value};
        return false;
      }
    }
    return true;
  }

  Ref type_ref_;  // keeps the type alive, so its address cannot be reused
  PyTypeObject* type_;
  c10::DispatchKeySet keys_;
  caffe2::TypeMeta dtype_;
  c10::Device device_{c10::kCPU};
  bool requires_grad_ = false;
  bool python_keyed_ = false;
  int64_t ndim_ = 0;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;  // empty for non-strided layouts
};

}  // namespace

std::unique_ptr<LeafGuard> make_tensor_match(Handle tensor, Handle shape_from) {
  bool is_tensor;
  try {
    is_tensor = tensor && THPVariable_Check(tensor.ptr());
  } catch (...) {
    throw PythonError();  // isinstance raised; its error is still set
  }
  if (!is_tensor) {
    throw UserError("tensor match on a non-tensor value of type " +
                        (tensor ? type_name(Py_TYPE(tensor.ptr())) : std::string("NULL")),
                    PyExc_TypeError);
  }
  try {
    if (shape_from && !THPVariable_Check(shape_from.ptr()))
      throw UserError("tensor match: shape_from must be a tensor", PyExc_TypeError);
    return std::make_unique<TensorMatch>(tensor.ptr(), shape_from.ptr());
  } catch (const c10::Error& e) {
    throw UserError(std::string("tensor match: cannot read tensor metadata: ") +
                        e.what_without_backtrace(),
                    PyExc_ValueError);
  }
}

EntryDispatchState::EntryDispatchState() { entry_dispatch_states.push_back(c10::impl::tls_local_dispatch_key_set()); }
EntryDispatchState::~EntryDispatchState() { entry_dispatch_states.pop_back(); }

}  // namespace cdynamo::guards
