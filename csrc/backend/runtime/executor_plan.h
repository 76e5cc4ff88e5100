// The executor's plan (buffer slots, steps with resolved kernels and ops) and the Executor class,
// shared by executor.cpp (building the plan; the Python type) and executor_call.cpp (a call).
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include "backend/runtime/executor.h"
#include "backend/runtime/size_expr.h"
#include "common/error.h"

namespace cdynamo::runtime::executor_detail {

// ---------------------------------------------------------------------------------------------
// The plan: slots for buffers, steps with resolved kernels and ops.

struct Layout {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

// A layout as views of values held elsewhere (a static buffer's Layout, or a call's flat array).
struct LayoutRef {
  c10::IntArrayRef sizes, strides;
  int64_t offset = 0;
};

struct BufferInfo {
  std::string name;
  ir::Buffer::Kind kind;
  at::ScalarType dtype;
  Layout fixed;  // a static buffer's layout
  // A buffer of symbolic sizes: its layout, evaluated on each call (CallState::layouts).
  bool symbolic = false;
  std::vector<SizeExpr> size_exprs, stride_exprs;
  SizeExpr offset_expr;
  int64_t itemsize = 0;
  int reuses = -1;
  // An output placed in an intermediate's memory, the only output there: a tensor of its own
  // over that storage, not a view (autograd and users would see a _base eager's result lacks).
  bool owns_reused_storage = false;
  c10::Device device = c10::Device(c10::kCPU);
};

// A call whose sizes outgrow a kernel's 32-bit indices (found before any step runs).
struct OversizeCall {
  std::string kernel;
};

// What one call computes before running its steps: the size symbols' values and the layouts of
// the buffers whose sizes are symbolic (views into one flat array: three allocations a call).
struct CallState {
  std::vector<int64_t> symbols;
  std::vector<int64_t> values;     // every symbolic buffer's sizes, then strides, back to back
  std::vector<LayoutRef> layouts;  // by slot; set for symbolic buffers only
  const int64_t* symbol_values() const { return symbols.empty() ? nullptr : symbols.data(); }
};

struct ArgSource {
  enum Kind { Tensor, TensorList, OptionalTensorList, Constant, SymbolicInts } kind = Constant;
  std::vector<int> slots;  // -1: None in an optional list
  c10::IValue value;
  std::vector<SizeExpr> ints;  // SymbolicInts: an int (one) or an int list, evaluated per call
  bool int_list = false;
};

struct StepPlan {
  std::string name;
  std::string profile_name;  // "cdynamo::kernel3": the kernel's name in torch.profiler tables
  Launcher kernel;
  std::vector<int> kernel_args;
  std::optional<c10::OperatorHandle> op;
  std::vector<ArgSource> args;
  std::vector<int> outputs;
  std::vector<int> allocate, free;
  // A kernel whose outputs are ir::Buffer::cached: its results are kept across calls and reused
  // while the constants they derive from (stamp_slots) keep their storage and version.
  bool keep = false;
  std::vector<int> stamp_slots;
  std::vector<int> kept_slots;
};

// What a kept step computed, and from which state of its constants.
struct KeptResult {
  std::vector<std::pair<const void*, int64_t>> stamp;  // per constant: data pointer, version
  std::vector<at::Tensor> outputs;
};

class Executor {
 public:
  Executor(ir::Program program, const std::vector<std::pair<std::string, Ref>>& constants, std::vector<Launcher> kernels,
           ExecutorOptions options);
  PyObject* call(PyObject* const* args, size_t nargs);
  const std::vector<StepPlan>& steps() const { return steps_; }

 private:
  int slot(const std::string& name) const {
    auto it = slot_of_.find(name);
    if (it == slot_of_.end()) throw InternalError("compiled program: no buffer named " + name);
    return it->second;
  }
  // The tensor bound to input `position`: the argument, or a copy of it in the planned layout
  // (relayout_ok_). Throws a ValueError naming the input when it cannot serve.
  at::Tensor bind_input(const at::Tensor& t, size_t position, const CallState& call) const;
  void allocate(std::vector<at::Tensor>& slots, int s, const CallState& call) const;
  void run_extern(const StepPlan& step, std::vector<at::Tensor>& slots, const CallState& call) const;
  LayoutRef layout(int s, const CallState& call) const {
    if (buffers_[s].symbolic) return call.layouts[s];
    const Layout& l = buffers_[s].fixed;
    return {l.sizes, l.strides, l.offset};
  }
  // The symbols' values from the call's arguments, then the symbolic buffers' layouts.
  CallState begin_call(PyObject* const* args) const;
  // A call past a kernel's 32-bit limit: the fallback (warned once), else an error.
  PyObject* call_oversize(PyObject* const* args, size_t nargs, const std::string& kernel);
  std::vector<std::pair<SizeExpr, std::string>> narrow_limits_;  // (limit, kernel) of every kernel
  Ref oversize_fallback_;
  bool oversize_warned_ = false;
  char* pointer(const at::Tensor& t, int s, const CallState& call) const {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(t.data_ptr()) - layout(s, call).offset * buffers_[s].itemsize);
  }

  std::vector<BufferInfo> buffers_;
  std::map<std::string, int> slot_of_;
  std::vector<ir::Symbol> symbols_;
  size_t arguments_ = 0;           // call arguments: the inputs, and numbers that give symbols
  std::vector<int> input_arguments_;  // per input: its call argument
  std::vector<int> symbolic_slots_;   // buffers whose layout is evaluated per call
  size_t symbolic_values_ = 0;        // their sizes and strides, all together
  std::vector<int> input_slots_, output_slots_;
  std::vector<int> output_input_position_;  // for outputs that are inputs: the argument to return
  std::set<int> kernel_reads_;               // slots some generated kernel reads (not only externs)
  // Per input: met with other strides than planned, it may be read from a copy in the planned
  // layout (no step writes it and no output is a view of it, so nobody sees the copy).
  std::vector<bool> relayout_ok_;
  std::vector<std::pair<int, at::Tensor>> constants_;
  std::vector<StepPlan> steps_;
  std::vector<int> final_views_;
  // CUDA devices the kernels launch on: the current torch stream of each is read per call.
  std::vector<int> cuda_devices_;
  Ref raw_stream_getter_;  // torch._C._cuda_getCurrentRawStream
  void* current_stream(int device, const std::vector<std::pair<int, void*>>& streams) const {
    for (const auto& [d, s] : streams)
      if (d == device) return s;
    return nullptr;
  }
  // Storage reuse across calls (ExecutorOptions::reuse_min_bytes): per slot, whether allocate()
  // makes it and it is large enough, and the storage kept from an earlier call.
  std::vector<bool> reusable_;
  mutable std::mutex reuse_mutex_;
  mutable std::vector<c10::Storage> kept_;
  void keep(int s, const at::Tensor& t) const;
  // Results of kept steps (StepPlan::keep), one per step index.
  void plan_kept_steps(const ir::Program& program);
  bool reuse_kept(size_t step_index, std::vector<at::Tensor>& slots) const;
  void store_kept(size_t step_index, const std::vector<at::Tensor>& slots) const;
  std::vector<std::pair<const void*, int64_t>> stamp_of(const StepPlan& step, const std::vector<at::Tensor>& slots) const;
  mutable std::mutex kept_results_mutex_;
  mutable std::vector<std::optional<KeptResult>> kept_results_;
};

}  // namespace cdynamo::runtime::executor_detail
