// A call of the compiled program: the size symbols' values and symbolic layouts, inputs bound
// (copied into the planned layout where they may be), buffers allocated and reused, kernels run
// with the GIL released, extern aten ops through the dispatcher. Assumes the plan (executor_plan.h).
#include <ATen/Parallel.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/record_function.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/autograd/python_variable.h>
#include <dlfcn.h>
#include <typeinfo>
#include "backend/runtime/executor_plan.h"
#include "backend/runtime/extern_args.h"
#include "backend/runtime/gil.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::runtime::executor_detail {

std::vector<std::pair<const void*, int64_t>> Executor::stamp_of(const StepPlan& step, const std::vector<at::Tensor>& slots) const {
  std::vector<std::pair<const void*, int64_t>> stamp;
  stamp.reserve(step.stamp_slots.size());
  for (int s : step.stamp_slots) stamp.emplace_back(slots[s].data_ptr(), static_cast<int64_t>(slots[s]._version()));
  return stamp;
}

bool Executor::reuse_kept(size_t step_index, std::vector<at::Tensor>& slots) const {
  const StepPlan& step = steps_[step_index];
  auto stamp = stamp_of(step, slots);
  std::lock_guard<std::mutex> lock(kept_results_mutex_);
  const auto& kept = kept_results_[step_index];
  if (!kept || kept->stamp != stamp) return false;
  for (size_t k = 0; k < step.kept_slots.size(); ++k) slots[step.kept_slots[k]] = kept->outputs[k];
  return true;
}

void Executor::store_kept(size_t step_index, const std::vector<at::Tensor>& slots) const {
  const StepPlan& step = steps_[step_index];
  KeptResult result{stamp_of(step, slots), {}};
  for (int s : step.kept_slots) result.outputs.push_back(slots[s]);
  std::lock_guard<std::mutex> lock(kept_results_mutex_);
  kept_results_[step_index] = std::move(result);
}

namespace {

// t copied into the layout l of its own sizes. Where l broadcasts (stride 0) the traced value was
// an expand, whose elements along that dimension are one: that one is read.
at::Tensor relaid(const at::Tensor& t, const LayoutRef& l) {
  at::AutoDispatchBelowADInplaceOrView below_autograd;  // a copy nobody differentiates through
  at::Tensor base = t;
  bool broadcast = false;
  for (size_t d = 0; d < l.sizes.size(); ++d)
    if (l.strides[d] == 0 && l.sizes[d] > 1) {
      base = base.narrow(static_cast<int64_t>(d), 0, 1);
      broadcast = true;
    }
  at::Tensor copy = at::empty_strided(base.sizes(), l.strides, base.options());
  copy.copy_(base);
  return broadcast ? copy.expand(l.sizes) : copy;
}

}  // namespace

at::Tensor Executor::bind_input(const at::Tensor& t, size_t position, const CallState& call) const {
  const BufferInfo& b = buffers_[input_slots_[position]];
  const LayoutRef l = layout(input_slots_[position], call);
  bool same_shape = t.scalar_type() == b.dtype && t.device() == b.device && t.dim() == static_cast<int64_t>(l.sizes.size());
  bool same_strides = true;
  for (size_t d = 0; same_shape && d < l.sizes.size(); ++d) {
    same_shape = t.size(static_cast<int64_t>(d)) == l.sizes[d];
    if (same_shape && l.sizes[d] > 1 && t.numel() > 0) same_strides = same_strides && t.stride(static_cast<int64_t>(d)) == l.strides[d];
  }
  if (same_shape && same_strides) return t;
  // Laid out otherwise (a gradient autograd made in another layout, a saved expand that reached
  // the backward as a copy): kernels index by the planned layout, so they read a copy in it.
  if (same_shape && relayout_ok_[position]) return relaid(t, l);
  // A CPU scalar where the fake kernel said the device (flash attention's philox seed and offset,
  // saved for its backward): read only by aten calls, which take it as the op returned it.
  if (t.dim() == 0 && l.sizes.empty() && t.device().is_cpu() && t.scalar_type() == b.dtype &&
      !kernel_reads_.count(input_slots_[position]))
    return t;
  auto text = [](c10::IntArrayRef v) {
    std::string s = "[";
    for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
    return s + "]";
  };
  throw UserError("compiled program input " + std::to_string(position) + " (" + b.name + "): expected " +
                      std::string(c10::toString(b.dtype)) + " " + text(l.sizes) + " with strides " + text(l.strides) + " on " +
                      b.device.str() + ", got " + c10::toString(t.scalar_type()) + " " + text(t.sizes()) + " with strides " +
                      text(t.strides()) + " on " + t.device().str(),
                  PyExc_ValueError);
}

void Executor::allocate(std::vector<at::Tensor>& slots, int s, const CallState& call) const {
  const BufferInfo& b = buffers_[s];
  const LayoutRef l = layout(s, call);
  if (b.reuses >= 0) {
    const BufferInfo& base_info = buffers_[b.reuses];
    at::Tensor base = slots[b.reuses];
    if (!base.defined()) throw InternalError(b.name + " reuses " + base_info.name + ", whose storage is gone");
    const int64_t offset = base.storage_offset() - layout(b.reuses, call).offset + l.offset;
    if (b.owns_reused_storage) {  // same item size, as the planner guarantees
      slots[s] = at::empty({0}, base.options().dtype(b.dtype)).set_(base.storage(), offset, l.sizes, l.strides);
      return;
    }
    if (base.scalar_type() != b.dtype) base = base.view(b.dtype);  // same item size, as the planner guarantees
    slots[s] = base.as_strided(l.sizes, l.strides, offset);
    return;
  }
  auto options = at::TensorOptions().dtype(b.dtype).device(b.device);
  if (reusable_[s]) {
    c10::Storage kept;
    {
      std::lock_guard<std::mutex> lock(reuse_mutex_);
      kept = std::move(kept_[s]);
    }
    // Only ours: the caller dropped the tensor (and every view of it) that last used it.
    if (kept && kept.use_count() == 1) {
      slots[s] = at::empty({0}, options).set_(kept, 0, l.sizes, l.strides);
      return;
    }
  }
  if (l.offset == 0) {
    slots[s] = at::empty_strided(l.sizes, l.strides, options);
    return;
  }
  int64_t span = 1;
  for (size_t d = 0; d < l.sizes.size(); ++d) span += (l.sizes[d] - 1) * l.strides[d];
  // A tensor of its own at that offset (as_strided would make it a view of the whole).
  slots[s] = at::empty({0}, options).set_(at::empty({l.offset + span}, options).storage(), l.offset, l.sizes, l.strides);
}

void Executor::keep(int s, const at::Tensor& t) const {
  if (!reusable_[s] || !t.defined()) return;
  std::lock_guard<std::mutex> lock(reuse_mutex_);
  kept_[s] = t.storage();
}

void Executor::run_extern(const StepPlan& step, std::vector<at::Tensor>& slots, const CallState& call) const {
  torch::jit::Stack stack;
  stack.reserve(step.args.size());
  for (const ArgSource& a : step.args) {
    switch (a.kind) {
      case ArgSource::Tensor: stack.emplace_back(slots[a.slots[0]]); break;
      case ArgSource::TensorList: {
        c10::List<at::Tensor> list;
        for (int s : a.slots) list.push_back(slots[s]);
        stack.emplace_back(std::move(list));
        break;
      }
      case ArgSource::OptionalTensorList: {
        c10::List<std::optional<at::Tensor>> list;
        for (int s : a.slots) list.push_back(s < 0 ? std::optional<at::Tensor>() : std::optional<at::Tensor>(slots[s]));
        stack.emplace_back(std::move(list));
        break;
      }
      case ArgSource::Constant: stack.push_back(a.value); break;
      case ArgSource::SymbolicInts: {
        std::vector<int64_t> values;
        for (const SizeExpr& e : a.ints) values.push_back(e(call.symbol_values()));
        if (a.int_list) stack.emplace_back(std::move(values));
        else stack.emplace_back(values.at(0));
        break;
      }
    }
  }
  step.op->callBoxed(stack);
  std::vector<at::Tensor> results;
  for (c10::IValue& v : stack) {
    if (v.isTensor()) results.push_back(v.toTensor());
    else if (v.isNone()) results.emplace_back();  // keeps later returns in their positions
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList()) results.push_back(t);
  }
  if (results.size() < step.outputs.size())
    throw InternalError(step.name + " returned " + std::to_string(results.size()) + " tensors for " +
                        std::to_string(step.outputs.size()) + " outputs");
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int s = step.outputs[k];
    if (s < 0) continue;
    const BufferInfo& b = buffers_[s];
    at::Tensor t = std::move(results[k]);
    if (!t.defined()) {
      // An output the op leaves undefined at run time (mkldnn_rnn_layer's workspace outside
      // training) that its fake kernel describes: the planned buffer stands in for it, unwritten.
      allocate(slots, s, call);
      continue;
    }
    const LayoutRef l = layout(s, call);
    bool layout_ok = t.scalar_type() == b.dtype && t.dim() == static_cast<int64_t>(l.sizes.size());
    for (size_t d = 0; layout_ok && d < l.sizes.size(); ++d) {
      if (t.size(static_cast<int64_t>(d)) != l.sizes[d])
        throw InternalError(step.name + " returned a tensor of another shape than buffer " + b.name);
      if (l.sizes[d] > 1 && t.stride(static_cast<int64_t>(d)) != l.strides[d]) layout_ok = false;
    }
    if (!layout_ok) {
      // Kernels index buffers by the planned layout: copy what the op returned into it.
      allocate(slots, s, call);
      slots[s].copy_(t);
    } else {
      slots[s] = std::move(t);
    }
  }
}

// The OpenMP runtime the kernels use is torch's (same soname, loaded first); its thread count is
// per calling thread, so match torch's setting on each thread that runs kernels.
static void match_thread_count() {
  thread_local int applied = -1;
  int wanted = at::get_num_threads();
  if (wanted == applied) return;
  using SetFn = void (*)(int);
  static SetFn set = [] {
    void* lib = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void* sym = lib ? dlsym(lib, "omp_set_num_threads") : dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    return reinterpret_cast<SetFn>(sym);
  }();
  if (set) set(wanted);
  applied = wanted;
}

CallState Executor::begin_call(PyObject* const* args) const {
  CallState call;
  if (symbols_.empty()) return call;
  call.symbols.reserve(symbols_.size());
  for (const ir::Symbol& symbol : symbols_) {
    PyObject* arg = args[symbol.argument];
    if (symbol.source == ir::Symbol::Source::Scalar) {
      int64_t v = PyLong_AsLongLong(arg);
      if (v == -1 && PyErr_Occurred()) throw PythonError();
      call.symbols.push_back(v);
      continue;
    }
    const at::Tensor& t = THPVariable_Unpack(arg);
    if (symbol.dim >= t.dim()) throw UserError("compiled program argument " + std::to_string(symbol.argument) + " has too few dimensions", PyExc_ValueError);
    call.symbols.push_back(symbol.source == ir::Symbol::Source::Size     ? t.size(symbol.dim)
                           : symbol.source == ir::Symbol::Source::Stride ? t.stride(symbol.dim)
                                                                         : t.storage_offset());
  }
  for (const auto& [limit, kernel] : narrow_limits_)
    if (limit(call.symbols.data()) >= (int64_t{1} << 31)) throw OversizeCall{kernel};
  call.layouts.resize(buffers_.size());
  call.values.resize(symbolic_values_);  // never reallocated below: the views stay valid
  const int64_t* symbols = call.symbols.data();
  int64_t* next = call.values.data();
  for (int s : symbolic_slots_) {
    const BufferInfo& b = buffers_[s];
    const size_t rank = b.size_exprs.size();
    for (size_t d = 0; d < rank; ++d) next[d] = b.size_exprs[d](symbols);
    for (size_t d = 0; d < rank; ++d) next[rank + d] = b.stride_exprs[d](symbols);
    call.layouts[s] = {c10::IntArrayRef(next, rank), c10::IntArrayRef(next + rank, rank), b.offset_expr(symbols)};
    next += 2 * rank;
  }
  return call;
}

PyObject* Executor::call(PyObject* const* args, size_t nargs) {
  if (nargs != arguments_)
    throw UserError("compiled program takes " + std::to_string(arguments_) + (arguments_ == 1 ? " argument, " : " arguments, ") +
                        std::to_string(nargs) + " given",
                    PyExc_TypeError);
  for (size_t k = 0; k < input_slots_.size(); ++k)
    if (!THPVariable_Check(args[input_arguments_[k]]))
      throw UserError("compiled program argument " + std::to_string(input_arguments_[k]) + " is not a tensor", PyExc_TypeError);
  for (const ir::Symbol& symbol : symbols_)
    if (symbol.source == ir::Symbol::Source::Scalar && !PyLong_Check(args[symbol.argument]))
      throw UserError("compiled program argument " + std::to_string(symbol.argument) + " is not an int", PyExc_TypeError);
  CallState call;
  try {
    call = begin_call(args);
  } catch (const OversizeCall& oversize) {
    return call_oversize(args, nargs, oversize.kernel);
  }
  std::vector<at::Tensor> slots(buffers_.size());
  for (size_t k = 0; k < input_slots_.size(); ++k) {
    slots[input_slots_[k]] = bind_input(THPVariable_Unpack(args[input_arguments_[k]]), k, call);
  }
  for (const auto& [s, t] : constants_) slots[s] = t;
  // Triton kernels launch on torch's current stream of their device (as eager kernels do).
  std::vector<std::pair<int, void*>> streams;
  for (int device : cuda_devices_) {
    Ref index = check(PyLong_FromLong(device));
    Ref stream = check(PyObject_CallOneArg(raw_stream_getter_.ptr(), index.ptr()));
    void* raw = PyLong_AsVoidPtr(stream.ptr());
    if (!raw && PyErr_Occurred()) throw PythonError();
    streams.emplace_back(device, raw);
  }
  const StepPlan* running = nullptr;  // for an error's message
  try {
    GilRelease nogil;
    at::AutoDispatchBelowADInplaceOrView below_autograd;  // compiled code records no autograd graph
    match_thread_count();
    std::vector<char*> pointers;
    for (size_t k = 0; k < steps_.size(); ++k) {
      const StepPlan& step = steps_[k];
      running = &step;
      if (step.keep && reuse_kept(k, slots)) {
        for (int s : step.free) slots[s].reset();
        continue;
      }
      for (int s : step.allocate) allocate(slots, s, call);
      if (step.kernel) {
        // Named in torch.profiler traces (extern ops appear there through the dispatcher).
        RECORD_FUNCTION(step.profile_name.c_str(), std::vector<c10::IValue>());
        pointers.clear();
        for (int s : step.kernel_args) pointers.push_back(pointer(slots[s], s, call));
        void* stream = streams.empty() ? nullptr : current_stream(step.kernel->cuda_device(), streams);
        if (step.kernel->launch(pointers.data(), call.symbol_values(), stream) != 0)
          throw UserError("compiled program: an index is out of bounds (an indirect load in " + step.name + ")", PyExc_IndexError);
        if (step.keep) store_kept(k, slots);
      } else {
        run_extern(step, slots, call);
      }
      for (int s : step.free) {
        keep(s, slots[s]);
        slots[s].reset();
      }
    }
  } catch (const c10::Error& e) {
    throw UserError(std::string("compiled program: ") + e.what_without_backtrace());
  } catch (const PythonError&) {
    throw;
  } catch (const UserError&) {
    throw;
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception& e) {  // a library's own exception type, from an extern op
    throw InternalError("compiled program, step " + (running ? running->name : std::string("?")) + ": " + typeid(e).name() +
                        ": " + e.what());
  }
  // Returned views (final_views_, and views a step already used) are made here, above the
  // autograd keys: as eager's, they share their base's version counter (a write through one is
  // seen by autograd's checks on the other).
  for (int s : output_slots_)
    if (buffers_[s].reuses >= 0) allocate(slots, s, call);
  for (size_t s = 0; s < slots.size(); ++s) keep(static_cast<int>(s), slots[s]);
  Ref result = check(PyTuple_New(static_cast<Py_ssize_t>(output_slots_.size())));
  for (size_t k = 0; k < output_slots_.size(); ++k) {
    PyObject* item = output_input_position_[k] >= 0 ? Py_NewRef(args[output_input_position_[k]]) : THPVariable_Wrap(slots[output_slots_[k]]);
    if (!item) throw PythonError();
    PyTuple_SET_ITEM(result.ptr(), static_cast<Py_ssize_t>(k), item);
  }
  return result.release();
}

PyObject* Executor::call_oversize(PyObject* const* args, size_t nargs, const std::string& kernel) {
  const std::string what = "kernel " + kernel + " was compiled with 32-bit indices for the sizes met while compiling, and this "
                           "call's sizes reach 2^31 elements";
  if (!oversize_fallback_) throw UserError(what + " (mark the growing dimension static, or call it at that size first)");
  if (!oversize_warned_) {
    oversize_warned_ = true;
    check_status(PyErr_WarnEx(PyExc_RuntimeWarning, ("cdynamo: " + what + "; such calls run the graph as captured").c_str(), 1));
  }
  return check(PyObject_Vectorcall(oversize_fallback_.ptr(), args, nargs, nullptr)).release();
}

}  // namespace cdynamo::runtime::executor_detail
