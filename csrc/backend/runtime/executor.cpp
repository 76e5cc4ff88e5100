// The compiled program's executor: buffer slots, allocation through torch, kernel calls with the
// GIL released, extern aten calls through the dispatcher. The runtime's only torch-including file.
#include <ATen/Parallel.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/autograd/python_variable.h>
#include <dlfcn.h>
#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include "backend/runtime/executor.h"
#include "backend/runtime/extern_args.h"
#include "backend/runtime/size_expr.h"
#include "backend/runtime/gil.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::runtime {
namespace {

using ir::DType;

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
  void check_input(const at::Tensor& t, size_t position, const CallState& call) const;
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

Executor::Executor(ir::Program program, const std::vector<std::pair<std::string, Ref>>& constants,
                   std::vector<Launcher> kernels, ExecutorOptions options) {
  for (const ir::Buffer& b : program.buffers) {
    BufferInfo info;
    info.name = b.name;
    info.kind = b.kind;
    info.dtype = scalar_type_of(b.dtype);
    info.itemsize = ir::dtype_size(b.dtype);
    if (b.strides.size() != b.sizes.size()) throw InternalError("buffer " + b.name + ": sizes and strides differ in rank");
    info.size_exprs = size_exprs(b.sizes, program.symbols, "buffer " + b.name);
    info.stride_exprs = size_exprs(b.strides, program.symbols, "buffer " + b.name);
    info.offset_expr = SizeExpr(b.offset, program.symbols, "buffer " + b.name);
    info.symbolic = !info.offset_expr.is_const();
    for (const auto* list : {&info.size_exprs, &info.stride_exprs})
      for (const SizeExpr& e : *list) info.symbolic = info.symbolic || !e.is_const();
    if (info.symbolic) {
      symbolic_slots_.push_back(static_cast<int>(buffers_.size()));
      symbolic_values_ += 2 * info.size_exprs.size();
    } else {
      for (const SizeExpr& e : info.size_exprs) info.fixed.sizes.push_back(e.const_value());
      for (const SizeExpr& e : info.stride_exprs) info.fixed.strides.push_back(e.const_value());
      info.fixed.offset = info.offset_expr.const_value();
    }
    info.device = c10::Device(b.device);
    slot_of_[b.name] = static_cast<int>(buffers_.size());
    buffers_.push_back(std::move(info));
  }
  for (size_t k = 0; k < program.buffers.size(); ++k)
    if (!program.buffers[k].reuses.empty()) buffers_[k].reuses = slot(program.buffers[k].reuses);
  std::vector<int> outputs_over(buffers_.size(), 0);
  for (const BufferInfo& b : buffers_)
    if (b.reuses >= 0 && b.kind == ir::Buffer::Kind::Output) ++outputs_over[b.reuses];
  for (BufferInfo& b : buffers_)
    b.owns_reused_storage = b.reuses >= 0 && b.kind == ir::Buffer::Kind::Output &&
                            buffers_[b.reuses].kind == ir::Buffer::Kind::Intermediate && outputs_over[b.reuses] == 1;
  for (const std::string& name : program.inputs) input_slots_.push_back(slot(name));
  symbols_ = program.symbols;
  arguments_ = program.arguments >= 0 ? static_cast<size_t>(program.arguments) : program.inputs.size();
  input_arguments_ = program.input_arguments;
  if (input_arguments_.empty())
    for (size_t k = 0; k < program.inputs.size(); ++k) input_arguments_.push_back(static_cast<int>(k));
  if (input_arguments_.size() != program.inputs.size()) throw InternalError("compiled program: an argument position per input expected");
  for (const std::string& name : program.outputs) {
    output_slots_.push_back(slot(name));
    auto it = std::find(program.inputs.begin(), program.inputs.end(), name);
    output_input_position_.push_back(it == program.inputs.end() ? -1 : input_arguments_[it - program.inputs.begin()]);
  }
  std::set<int> defined(input_slots_.begin(), input_slots_.end());
  for (const auto& [name, obj] : constants) {
    if (!THPVariable_Check(obj.ptr())) throw UserError("constant " + name + " is not a tensor", PyExc_TypeError);
    constants_.emplace_back(slot(name), THPVariable_Unpack(obj.ptr()));
    defined.insert(slot(name));
  }
  for (size_t s = 0; s < buffers_.size(); ++s)
    if (buffers_[s].kind == ir::Buffer::Kind::Constant && !defined.count(static_cast<int>(s)))
      throw UserError("compiled program: no tensor given for constant " + buffers_[s].name, PyExc_ValueError);

  // Steps, with what each must allocate first (in order, so a reused base exists before its view).
  auto need = [&](int s, const std::string& step, std::vector<int>& allocate) {
    if (defined.count(s)) return;
    if (buffers_[s].kind == ir::Buffer::Kind::Input || buffers_[s].kind == ir::Buffer::Kind::Constant)
      throw InternalError(step + " uses " + buffers_[s].name + " before it is bound");
    if (buffers_[s].reuses >= 0 && !defined.count(buffers_[s].reuses))
      throw InternalError(step + ": " + buffers_[s].name + " reuses " + buffers_[buffers_[s].reuses].name + ", which does not exist yet");
    allocate.push_back(s);
    defined.insert(s);
  };
  // A read of a view nobody writes (it reuses a written base): the view is made on first use.
  auto read = [&](int s, const std::string& step, std::vector<int>& allocate) {
    if (defined.count(s)) return;
    if (buffers_[s].reuses < 0 || !defined.count(buffers_[s].reuses))
      throw InternalError(step + " reads " + buffers_[s].name + " before it is written");
    allocate.push_back(s);
    defined.insert(s);
  };
  size_t next_kernel = 0;
  for (const ir::Step& step : program.steps) {
    StepPlan plan;
    if (const auto* k = std::get_if<ir::Kernel>(&step)) {
      if (next_kernel >= kernels.size()) throw InternalError("compiled program: fewer kernels than kernel steps");
      plan.name = k->name;
      plan.profile_name = "cdynamo::" + k->name;
      plan.kernel = kernels[next_kernel++];
      int device = plan.kernel->cuda_device();
      if (device >= 0 && std::find(cuda_devices_.begin(), cuda_devices_.end(), device) == cuda_devices_.end())
        cuda_devices_.push_back(device);
      for (const std::string& name : k->inputs) {
        read(slot(name), k->name, plan.allocate);
        kernel_reads_.insert(slot(name));
        plan.kernel_args.push_back(slot(name));
      }
      for (const auto* list : {&k->outputs, &k->locals})
        for (const std::string& name : *list) {
          need(slot(name), k->name, plan.allocate);
          plan.kernel_args.push_back(slot(name));
        }
    } else {
      const ir::Extern& x = std::get<ir::Extern>(step);
      plan.name = x.op + "." + x.overload;
      const std::string overload = x.overload == "default" ? "" : x.overload;
      try {
        plan.op = c10::Dispatcher::singleton().findSchemaOrThrow(x.op.c_str(), overload.c_str());
      } catch (const c10::Error&) {
        throw UserError("extern call of an unknown aten op " + plan.name);
      }
      const c10::FunctionSchema& schema = plan.op->schema();
      const auto& formals = schema.arguments();
      std::vector<std::optional<ArgSource>> bound(formals.size());
      size_t positional = 0;
      for (const ir::ExternArg& a : x.args) {
        size_t index = positional;
        if (!a.name.empty()) {
          auto it = std::find_if(formals.begin(), formals.end(), [&](const c10::Argument& f) { return f.name() == a.name; });
          if (it == formals.end()) throw UserError(plan.name + " has no argument named " + a.name);
          index = static_cast<size_t>(it - formals.begin());
        } else {
          ++positional;
        }
        if (index >= formals.size()) throw UserError(plan.name + " takes " + std::to_string(formals.size()) + " arguments, more were given");
        const c10::Argument& formal = formals[index];
        ArgSource src;
        if (const auto* buffer = std::get_if<std::string>(&a.tensor)) {
          src.kind = ArgSource::Tensor;
          src.slots = {slot(*buffer)};
        } else if (const auto* list = std::get_if<std::vector<std::string>>(&a.tensor)) {
          bool optional_elems = formal.type()->kind() == c10::TypeKind::ListType &&
                                formal.type()->expectRef<c10::ListType>().getElementType()->kind() == c10::TypeKind::OptionalType;
          src.kind = optional_elems ? ArgSource::OptionalTensorList : ArgSource::TensorList;
          for (const std::string& name : *list) src.slots.push_back(name.empty() ? -1 : slot(name));
        } else if (auto ints = symbols_.empty() ? std::nullopt : symbolic_ints(a.constant, formal.real_type(), src.int_list)) {
          src.kind = ArgSource::SymbolicInts;
          src.ints = size_exprs(*ints, symbols_, plan.name + " argument " + formal.name());
        } else {
          try {
            src.value = parse_constant(a.constant, formal.real_type(), formal.N());
          } catch (const std::exception& e) {
            throw UserError(plan.name + ": cannot read \"" + a.constant + "\" as argument " + formal.name() + " of type " +
                            formal.real_type()->str());
          }
        }
        for (int s : src.slots) {
          if (s < 0) continue;
          bool mutable_arg = formal.alias_info() && formal.alias_info()->isWrite();
          if (mutable_arg) need(s, plan.name, plan.allocate);  // an out= buffer is allocated here
          else read(s, plan.name, plan.allocate);
        }
        bound[index] = std::move(src);
      }
      for (size_t k = 0; k < formals.size(); ++k) {
        if (bound[k]) {
          plan.args.push_back(std::move(*bound[k]));
        } else if (formals[k].default_value()) {
          ArgSource src;
          src.value = *formals[k].default_value();
          plan.args.push_back(std::move(src));
        } else {
          throw UserError(plan.name + ": missing argument " + formals[k].name());
        }
      }
      for (const std::string& name : x.outputs) {
        if (name.empty()) {  // a return the graph never reads (None, or a gradient not asked for)
          plan.outputs.push_back(-1);
          continue;
        }
        plan.outputs.push_back(slot(name));
        defined.insert(slot(name));
      }
    }
    steps_.push_back(std::move(plan));
  }
  if (next_kernel != kernels.size()) throw InternalError("compiled program: more kernels than kernel steps");
  for (const StepPlan& step : steps_)
    if (step.kernel && step.kernel->narrow_limits())
      for (const SizeExpr& limit : *step.kernel->narrow_limits()) narrow_limits_.emplace_back(limit, step.name);
  oversize_fallback_ = options.oversize_fallback;
  if (!cuda_devices_.empty()) raw_stream_getter_ = import_attr("torch._C", "_cuda_getCurrentRawStream");
  // Outputs that are views of other buffers (and not written themselves) are made at the end.
  for (int s : output_slots_) read(s, "the program's return", final_views_);

  plan_kept_steps(program);
  reusable_.assign(buffers_.size(), false);
  kept_.resize(buffers_.size());
  if (options.reuse_min_bytes > 0) {
    for (const StepPlan& step : steps_)
      for (int s : step.allocate) {
        const BufferInfo& b = buffers_[s];
        int64_t bytes = b.itemsize;
        for (int64_t size : b.fixed.sizes) bytes *= size;
        reusable_[s] = !b.symbolic && b.reuses < 0 && b.fixed.offset == 0 && bytes >= options.reuse_min_bytes && !step.keep &&
                       b.device.is_cpu();
      }
  }

  // Frees: never an output; a freed buffer whose storage a later buffer reuses lives until then.
  std::set<int> outputs(output_slots_.begin(), output_slots_.end());
  for (int s : final_views_)
    for (int base = buffers_[s].reuses; base >= 0; base = buffers_[base].reuses) outputs.insert(base);
  std::map<int, size_t> last_reuse;  // slot -> last step allocating a buffer that aliases it
  for (size_t k = 0; k < steps_.size(); ++k)
    for (int s : steps_[k].allocate)
      for (int base = buffers_[s].reuses; base >= 0; base = buffers_[base].reuses) last_reuse[base] = k;
  for (size_t k = 0; k < program.frees.size() && k < steps_.size(); ++k) {
    for (const std::string& name : program.frees[k]) {
      int s = slot(name);
      if (outputs.count(s)) continue;
      size_t at = k;
      auto it = last_reuse.find(s);
      if (it != last_reuse.end()) at = std::max(at, it->second);
      steps_[at].free.push_back(s);
    }
  }
}

void Executor::plan_kept_steps(const ir::Program& program) {
  kept_results_.resize(steps_.size());
  std::map<int, size_t> producer;  // slot -> step writing it
  for (size_t k = 0; k < steps_.size(); ++k) {
    StepPlan& step = steps_[k];
    if (const auto* kernel = std::get_if<ir::Kernel>(&program.steps[k])) {
      bool keep = !kernel->outputs.empty();
      for (const std::string& name : kernel->outputs) keep = keep && program.buffer(name).cached;
      std::set<int> made;
      for (const auto* list : {&kernel->outputs, &kernel->locals})
        for (const std::string& name : *list) made.insert(slot(name));
      for (int s : step.allocate) keep = keep && made.count(s);
      std::set<int> roots;
      for (const std::string& name : kernel->inputs) {
        int s = slot(name);
        if (buffers_[s].kind == ir::Buffer::Kind::Constant) {
          auto it = std::find_if(constants_.begin(), constants_.end(), [&](const auto& c) { return c.first == s; });
          // Inference tensors have no version counter: their changes cannot be seen.
          keep = keep && it != constants_.end() && !it->second.is_inference();
          roots.insert(s);
        } else if (auto p = producer.find(s); p != producer.end() && steps_[p->second].keep) {
          roots.insert(steps_[p->second].stamp_slots.begin(), steps_[p->second].stamp_slots.end());
        } else {
          keep = false;
        }
      }
      step.keep = keep;
      if (keep) {
        step.stamp_slots.assign(roots.begin(), roots.end());
        for (const std::string& name : kernel->outputs) step.kept_slots.push_back(slot(name));
      }
      for (int s : made) producer[s] = k;
    } else {
      // An op returning a view of its input would hand out a kept tensor: its producer keeps nothing.
      bool returns_alias = false;
      for (const c10::Argument& r : step.op->schema().returns()) returns_alias = returns_alias || r.alias_info() != nullptr;
      if (returns_alias)
        for (const ArgSource& a : step.args)
          for (int s : a.slots) {
            if (s < 0) continue;
            while (buffers_[s].reuses >= 0) s = buffers_[s].reuses;  // a view reads its root's storage
            if (auto p = producer.find(s); p != producer.end()) steps_[p->second].keep = false;
          }
      for (int s : step.outputs) producer[s] = k;
    }
  }
}

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

void Executor::check_input(const at::Tensor& t, size_t position, const CallState& call) const {
  const BufferInfo& b = buffers_[input_slots_[position]];
  const LayoutRef l = layout(input_slots_[position], call);
  bool ok = t.scalar_type() == b.dtype && t.device() == b.device && t.dim() == static_cast<int64_t>(l.sizes.size());
  for (size_t d = 0; ok && d < l.sizes.size(); ++d) {
    ok = t.size(static_cast<int64_t>(d)) == l.sizes[d];
    if (ok && l.sizes[d] > 1 && t.numel() > 0) ok = t.stride(static_cast<int64_t>(d)) == l.strides[d];
  }
  if (ok) return;
  // A CPU scalar where the fake kernel said the device (flash attention's philox seed and offset,
  // saved for its backward): read only by aten calls, which take it as the op returned it.
  if (t.dim() == 0 && l.sizes.empty() && t.device().is_cpu() && t.scalar_type() == b.dtype &&
      !kernel_reads_.count(input_slots_[position]))
    return;
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
void match_thread_count() {
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
    const at::Tensor& t = THPVariable_Unpack(args[input_arguments_[k]]);
    check_input(t, k, call);
    slots[input_slots_[k]] = t;
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
  try {
    GilRelease nogil;
    at::AutoDispatchBelowADInplaceOrView below_autograd;  // compiled code records no autograd graph
    match_thread_count();
    std::vector<char*> pointers;
    for (size_t k = 0; k < steps_.size(); ++k) {
      const StepPlan& step = steps_[k];
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

// ---------------------------------------------------------------------------------------------
// The Python type.

struct ExecutorObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Executor* impl;
};

// Ownership contract: args are borrowed; returns a new reference (a tuple) or NULL with an error.
PyObject* executor_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  CDYNAMO_BOUNDARY_BEGIN
  if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) throw UserError("compiled program takes no keyword arguments", PyExc_TypeError);
  return reinterpret_cast<ExecutorObject*>(self)->impl->call(args, PyVectorcall_NARGS(nargsf));
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: self is the last reference; frees the plan and the constants' references.
void executor_dealloc(PyObject* self) {
  delete reinterpret_cast<ExecutorObject*>(self)->impl;
  Py_TYPE(self)->tp_free(self);
}

// Ownership contract: returns a new reference to a str.
PyObject* executor_repr(PyObject* self) {
  const auto& steps = reinterpret_cast<ExecutorObject*>(self)->impl->steps();
  std::string text = "<cdynamo compiled program:";
  for (const StepPlan& s : steps) text += " " + s.name;
  return PyUnicode_FromString((text + ">").c_str());
}

PyTypeObject* executor_type() {
  static PyTypeObject* type = [] {
    static PyTypeObject t = {PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "cdynamo._C.CompiledProgram";
    t.tp_basicsize = sizeof(ExecutorObject);
    t.tp_dealloc = executor_dealloc;
    t.tp_repr = executor_repr;
    t.tp_call = PyVectorcall_Call;
    t.tp_vectorcall_offset = offsetof(ExecutorObject, vectorcall);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_doc = "A compiled inductor program: call it with the graph's input tensors.";
    if (PyType_Ready(&t) < 0) throw PythonError();
    return &t;
  }();
  return type;
}

}  // namespace

Ref make_executor(ir::Program program, const std::vector<std::pair<std::string, Ref>>& constants,
                  std::vector<Launcher> kernels, ExecutorOptions options) {
  std::unique_ptr<Executor> impl;
  try {
    impl = std::make_unique<Executor>(std::move(program), constants, std::move(kernels), options);
  } catch (const c10::Error& e) {
    throw UserError(std::string("compiled program: ") + e.what_without_backtrace());
  }
  PyTypeObject* type = executor_type();
  Ref obj = check(type->tp_alloc(type, 0));
  auto* self = reinterpret_cast<ExecutorObject*>(obj.ptr());
  self->vectorcall = executor_vectorcall;
  self->impl = impl.release();
  return obj;
}

bool is_executor(Handle obj) { return Py_TYPE(obj.ptr()) == executor_type(); }

}  // namespace cdynamo::runtime
