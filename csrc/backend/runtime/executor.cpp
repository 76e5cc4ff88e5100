// The compiled program's executor, built: the plan of buffer slots and steps (kernels, extern aten
// ops resolved through the dispatcher) from an ir::Program, and its Python type. Calls: executor_call.cpp.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/python_variable.h>
#include <algorithm>
#include <map>
#include <set>
#include "backend/runtime/executor.h"
#include "backend/runtime/executor_plan.h"
#include "backend/runtime/extern_args.h"
#include "backend/runtime/size_expr.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::runtime {
namespace executor_detail {

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
  std::set<int> written;  // slots a step writes: kernel outputs and locals, out= arguments
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
          written.insert(slot(name));
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
          if (mutable_arg) written.insert(s);
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
  // An input may be read from a copy in its planned layout when nothing writes it, itself or
  // through a buffer placed over it, and no output is a view of it.
  std::set<int> keep_layout;
  for (int s : written)
    for (int base = s; base >= 0; base = buffers_[base].reuses) keep_layout.insert(base);
  for (int s : output_slots_)
    for (int base = buffers_[s].reuses; base >= 0; base = buffers_[base].reuses) keep_layout.insert(base);
  // The layout must follow from the sizes: strides read from an input's own strides describe
  // that tensor, not a layout another one can be copied into.
  auto reads_strides = [&](const BufferInfo& b) {
    for (size_t k = 0; k < symbols_.size(); ++k) {
      if (symbols_[k].source != ir::Symbol::Source::Stride && symbols_[k].source != ir::Symbol::Source::StorageOffset) continue;
      if (b.offset_expr.reads_symbol(k)) return true;
      for (const SizeExpr& e : b.stride_exprs)
        if (e.reads_symbol(k)) return true;
    }
    return false;
  };
  for (int s : input_slots_) relayout_ok_.push_back(!keep_layout.count(s) && !reads_strides(buffers_[s]));

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

}  // namespace executor_detail

namespace {

using executor_detail::Executor;
using executor_detail::StepPlan;

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
