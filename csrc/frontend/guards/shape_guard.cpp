// The shape guard of a dynamic trace: integer programs over the input tensors' sizes, strides
// and storage offsets (cdynamo/shapes.py writes them), evaluated with overflow checks.
#include <torch/csrc/autograd/python_variable.h>
#include <algorithm>
#include "common/error.h"
#include "common/int_math.h"
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {
namespace {

// Opcodes of a program; cdynamo/shapes.py holds the same numbers.
enum Op : int64_t {
  kConst = 0, kSize = 1, kStride = 2, kOffset = 3, kScalar = 4,
  kAdd = 10, kMul = 11, kFloorDiv = 12, kMod = 13, kPow = 14, kMax = 15, kMin = 16,
  kEq = 20, kNe = 21, kLt = 22, kLe = 23, kGt = 24, kGe = 25,
  kAnd = 30, kOr = 31, kNot = 32,
};


// The guard's inputs, fetched once per check: tensors (impl set) and scalar ints or floats
// (impl null); `ok` is false when one is gone or is neither.
struct Inputs {
  Inputs(const std::vector<ObjectFetcher>& fetchers, const FrameView& frame) {
    for (const ObjectFetcher& fetch : fetchers) {
      Ref object = Ref::steal(fetch(frame));
      if (PyErr_Occurred()) PyErr_Clear();
      if (object && THPVariable_Check(object.ptr())) {
        impls.push_back(THPVariable_Unpack(object.ptr()).unsafeGetTensorImpl());
      } else if (object && (PyLong_CheckExact(object.ptr()) || PyFloat_CheckExact(object.ptr()))) {
        impls.push_back(nullptr);
      } else {
        ok = false;
        return;
      }
      owned.push_back(std::move(object));
    }
  }
  std::vector<Ref> owned;
  std::vector<const c10::TensorImpl*> impls;
  bool ok = true;
};

// Evaluates a program; false on anything it cannot answer (overflow, division by zero, a
// malformed program): the guard then fails and the frame recompiles, which is always safe.
bool evaluate(const std::vector<int64_t>& program, const Inputs& inputs, int64_t& out) {
  const std::vector<const c10::TensorImpl*>& tensors = inputs.impls;
  std::vector<int64_t> stack;
  stack.reserve(8);
  auto operand = [&](size_t& pc) -> int64_t { return pc < program.size() ? program[pc++] : -1; };
  auto tensor_dim = [&](int64_t t, int64_t d, bool stride, int64_t& value) {
    if (t < 0 || static_cast<size_t>(t) >= tensors.size() || !tensors[t]) return false;
    const c10::TensorImpl& impl = *tensors[t];
    if (d < 0 || d >= impl.dim()) return false;
    value = stride ? impl.strides()[d] : impl.sizes()[d];
    return true;
  };
  for (size_t pc = 0; pc < program.size();) {
    int64_t op = program[pc++];
    switch (op) {
      case kConst: stack.push_back(operand(pc)); break;
      case kSize:
      case kStride: {
        int64_t t = operand(pc), d = operand(pc), value = 0;
        if (!tensor_dim(t, d, op == kStride, value)) return false;
        stack.push_back(value);
        break;
      }
      case kOffset: {
        int64_t t = operand(pc);
        if (t < 0 || static_cast<size_t>(t) >= tensors.size() || !tensors[t]) return false;
        stack.push_back(tensors[t]->storage_offset());
        break;
      }
      case kScalar: {
        int64_t t = operand(pc);
        if (t < 0 || static_cast<size_t>(t) >= tensors.size() || tensors[t]) return false;
        PyObject* number = inputs.owned[t].ptr();
        if (!PyLong_CheckExact(number)) return false;
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
        if (overflow || (value == -1 && PyErr_Occurred())) {
          PyErr_Clear();
          return false;
        }
        stack.push_back(value);
        break;
      }
      case kAdd: case kMul: case kMax: case kMin: case kAnd: case kOr: {
        int64_t n = operand(pc);
        if (n < 1 || static_cast<size_t>(n) > stack.size()) return false;
        int64_t acc = stack[stack.size() - n];
        for (size_t i = stack.size() - n + 1; i < stack.size(); ++i) {
          int64_t v = stack[i];
          bool overflow = false;
          if (op == kAdd) overflow = __builtin_add_overflow(acc, v, &acc);
          else if (op == kMul) overflow = __builtin_mul_overflow(acc, v, &acc);
          else if (op == kMax) acc = std::max(acc, v);
          else if (op == kMin) acc = std::min(acc, v);
          else if (op == kAnd) acc = acc && v;
          else acc = acc || v;
          if (overflow) return false;
        }
        stack.resize(stack.size() - n);
        stack.push_back(acc);
        break;
      }
      case kNot:
        if (stack.empty()) return false;
        stack.back() = !stack.back();
        break;
      default: {
        if (stack.size() < 2) return false;
        int64_t b = stack.back();
        stack.pop_back();
        int64_t a = stack.back();
        int64_t r = 0;
        switch (op) {
          case kFloorDiv: if (b == 0) return false; r = floor_div(a, b); break;
          case kMod: if (b == 0) return false; r = python_mod(a, b); break;
          case kPow: {
            if (b < 0) return false;
            r = 1;
            for (int64_t i = 0; i < b; ++i)
              if (__builtin_mul_overflow(r, a, &r)) return false;
            break;
          }
          case kEq: r = a == b; break;
          case kNe: r = a != b; break;
          case kLt: r = a < b; break;
          case kLe: r = a <= b; break;
          case kGt: r = a > b; break;
          case kGe: r = a >= b; break;
          default: return false;
        }
        stack.back() = r;
      }
    }
  }
  if (stack.size() != 1) return false;
  out = stack.back();
  return true;
}

class ShapeGuard final : public RootGuard {
 public:
  ShapeGuard(std::vector<ObjectFetcher> tensors, std::vector<std::string> sources, std::vector<ShapeCheck> checks)
      : tensors_(std::move(tensors)), sources_(std::move(sources)), checks_(std::move(checks)) {}

  bool check(const FrameView& frame) const override { return first_failure(frame) < 0; }

  std::string describe(const FrameView& frame) const override {
    int failed = first_failure(frame);
    if (failed < 0) return "";
    if (failed >= static_cast<int>(checks_.size())) return "an input of the symbolic sizes is no longer a tensor or number";
    std::string sizes;
    Inputs inputs(tensors_, frame);
    for (size_t i = 0; i < inputs.impls.size(); ++i) {
      std::string now;
      if (inputs.impls[i]) {
        try {
          for (int64_t s : inputs.impls[i]->sizes()) now += (now.empty() ? "" : ", ") + std::to_string(s);
        } catch (const c10::Error&) {
          now = "?";
        }
        now = "[" + now + "]";
      } else {
        now = safe_repr(inputs.owned[i].ptr());
      }
      sizes += (sizes.empty() ? "" : ", ") + sources_[i] + " is " + now;
    }
    return "the sizes no longer satisfy " + checks_[failed].text + " (" + sizes + ")";
  }

  std::string repr() const override {
    std::string out = "SHAPES";
    for (const ShapeCheck& c : checks_) out += " | " + c.text;
    return out;
  }

 private:
  // Index of the first failing check, checks_.size() when the inputs cannot be read, -1 if all pass.
  int first_failure(const FrameView& frame) const {
    Inputs inputs(tensors_, frame);
    if (!inputs.ok) return static_cast<int>(checks_.size());
    for (size_t i = 0; i < checks_.size(); ++i) {
      const ShapeCheck& c = checks_[i];
      bool passed = false;
      if (c.predicate) {
        passed = call_predicate(c.predicate, inputs.owned);
      } else {
        int64_t value = 0;
        try {
          passed = evaluate(c.program, inputs, value) && value != 0;
        } catch (const c10::Error&) {
          passed = false;  // sizes of a tensor that cannot have them (sparse): recompile
        }
      }
      if (!passed) return static_cast<int>(i);
    }
    return -1;
  }

  static bool call_predicate(const Ref& predicate, const std::vector<Ref>& tensors) {
    PythonCallout callout;
    Ref list = Ref::steal(PyList_New(static_cast<Py_ssize_t>(tensors.size())));
    if (!list) {
      PyErr_Clear();
      return false;
    }
    for (size_t i = 0; i < tensors.size(); ++i) PyList_SET_ITEM(list.ptr(), i, Ref(tensors[i]).release());
    Ref result = Ref::steal(PyObject_CallOneArg(predicate.ptr(), list.ptr()));
    int truth = result ? PyObject_IsTrue(result.ptr()) : -1;
    if (truth < 0) PyErr_Clear();
    return truth == 1;
  }

  std::vector<ObjectFetcher> tensors_;
  std::vector<std::string> sources_;
  std::vector<ShapeCheck> checks_;
};

}  // namespace

std::unique_ptr<RootGuard> make_shape_guard(std::vector<ObjectFetcher> tensors, std::vector<std::string> sources,
                                            std::vector<ShapeCheck> checks) {
  return std::make_unique<ShapeGuard>(std::move(tensors), std::move(sources), std::move(checks));
}

}  // namespace cdynamo::guards
