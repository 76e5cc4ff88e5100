// The inductor pipeline as one C++ call: lower an aten graph to loop IR, schedule (fuse, plan
// memory), generate and compile the target's kernels, and wrap them in the runtime's callable.
// Assumes the aten graph comes from cdynamo.inductor.compile_fx.aten_graph.
#include "backend/cache/kernel_cache.h"
#include "backend/lower/lower.h"
#include "backend/runtime/compiled_program.h"
#include "backend/runtime/gil.h"
#include "backend/sched/schedule.h"
#include "backend/target/target.h"
#include "common/error.h"
#include "common/py_import.h"
#include "module.h"

namespace cdynamo {
namespace {

// _inductor_compile(aten_gm, eager_fallback, want_blob=False, target="cpp", device_type="cpu",
// build_behind=False): the compiled callable, or with want_blob the pair (callable, blob) where
// blob is the program as bytes for the compiled-graph cache (python/cdynamo/inductor/graph_cache.py),
// or None when it cannot be stored. target: "cpp" or "triton"; device_type: where the graph's
// tensors live. build_behind: return once the kernels are generated, their build going on in the
// background; the first call waits for it (runtime::compile_program).
//
// The pipeline: lower (aten graph -> loop IR) -> schedule (fusion, kernel I/O, reuse, memory
// plan; verified under config.verify_ir) -> target.prepare (code generation) -> compile and
// cache (the target's job) -> runtime executor.
// Ownership contract: borrows the arguments; returns a new reference, or NULL with an error set.
PyObject* py_inductor_compile(PyObject*, PyObject* args) {
  PyObject *aten_graph_module, *eager_fallback;
  int want_blob = 0;
  const char* target_name = "cpp";
  const char* device_type = "cpu";
  int build_behind = 0;
  if (!PyArg_ParseTuple(args, "OO|pssp", &aten_graph_module, &eager_fallback, &want_blob, &target_name, &device_type,
                        &build_behind))
    return nullptr;
  CDYNAMO_BOUNDARY_BEGIN
  Stopwatch watch;
  const target::Capabilities capabilities = target::target_named(target_name).capabilities();
  lower::LowerOptions lower_options;
  lower_options.indirect_loads = capabilities.indirect_loads;
  lower_options.device_type = device_type;
  sched::ScheduleOptions schedule_options;
  schedule_options.full_pointwise_in_reductions = capabilities.full_pointwise_in_reductions;
  schedule_options.split_long_reductions = capabilities.split_long_reductions;
  schedule_options.cache_constant_kernels = config_bool("freeze_constants");
  lower::LoweredGraph lowered = lower::lower_graph(aten_graph_module, lower_options);
  std::vector<std::pair<std::string, Ref>> constants = lowered.constants;
  watch.lap("lower");
  ir::Program program = sched::schedule(std::move(lowered), nullptr, schedule_options);
  if (config_bool("verify_ir")) ir::verify(program);
  watch.lap("schedule");
  Ref text;
  if (PyObject_IsTrue(call_helper("cdynamo.utils", "is_debug_enabled", {Ref(check(PyUnicode_FromString("ir")))}).ptr()) == 1) {
    text = check(PyUnicode_FromString(ir::to_string(program).c_str()));
    call_helper("cdynamo.utils", "log", {Ref(check(PyUnicode_FromString("ir"))), text});
  }
  const runtime::BuildMode mode = build_behind ? runtime::BuildMode::WaitOnFirstCall : runtime::BuildMode::FromConfig;
  if (!want_blob)
    return runtime::compile_program(std::move(program), std::move(constants), eager_fallback, nullptr, target_name, mode)
        .release();
  std::string blob;
  Ref compiled = runtime::compile_program(std::move(program), std::move(constants), eager_fallback, &blob, target_name, mode);
  Ref bytes = blob.empty() ? Ref::borrow(Py_None) : check(PyBytes_FromStringAndSize(blob.data(), static_cast<Py_ssize_t>(blob.size())));
  return check(PyTuple_Pack(2, compiled.ptr(), bytes.ptr())).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// _inductor_load(blob, constants, eager_fallback=None) -> callable or None: the program stored by
// _inductor_compile, constants = [(buffer name, tensor), ...]; None when a kernel library is
// missing from the cache. eager_fallback: the graph as captured, for a symbolic program's calls
// past its kernels' 32-bit limits. Raises ValueError for a malformed blob.
// Ownership contract: borrows the arguments; returns a new reference, or NULL with an error set.
PyObject* py_inductor_load(PyObject*, PyObject* args) {
  Py_buffer blob;
  PyObject* constant_list;
  PyObject* eager_fallback = Py_None;
  if (!PyArg_ParseTuple(args, "y*O|O", &blob, &constant_list, &eager_fallback)) return nullptr;
  CDYNAMO_BOUNDARY_BEGIN
  struct Release {
    Py_buffer* b;
    ~Release() { PyBuffer_Release(b); }
  } release{&blob};
  Ref items = check(PySequence_Fast(constant_list, "constants must be a sequence of (name, tensor) pairs"));
  std::vector<std::pair<std::string, Ref>> constants;
  for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(items.ptr()); ++k) {
    PyObject* pair = PySequence_Fast_GET_ITEM(items.ptr(), k);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)))
      throw UserError("constants must be (name, tensor) pairs", PyExc_TypeError);
    constants.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0)), Ref::borrow(PyTuple_GET_ITEM(pair, 1)));
  }
  Ref compiled = runtime::load_program(std::string_view(static_cast<const char*>(blob.buf), static_cast<size_t>(blob.len)), constants,
                                         Handle(eager_fallback));
  if (!compiled) Py_RETURN_NONE;
  return compiled.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// _inductor_toolchain_key() -> str: what the kernels' cache keys share (compiler, CPU, flags, prelude).
// Ownership contract: returns a new reference, or NULL with an error set.
PyObject* py_inductor_toolchain_key(PyObject*, PyObject*) {
  CDYNAMO_BOUNDARY_BEGIN
  cache::CacheOptions options = runtime::cache_options_from_config();
  std::string key;
  {
    runtime::GilRelease nogil;  // the first use of a compiler runs it (--version)
    key = cache::toolchain_key(options);
  }
  return check(PyUnicode_FromString(key.c_str())).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// _inductor_dtypes() -> tuple of str: the torch dtypes the loop IR computes in ("torch.float32", ...).
// Ownership contract: returns a new reference, or NULL with an error set.
PyObject* py_inductor_dtypes(PyObject*, PyObject*) {
  CDYNAMO_BOUNDARY_BEGIN
  std::vector<const char*> names;
#define CDYNAMO_DTYPE_NAME(name, ctype, torch_name) names.push_back(torch_name);
  CDYNAMO_DTYPES(CDYNAMO_DTYPE_NAME)
#undef CDYNAMO_DTYPE_NAME
  Ref out = check(PyTuple_New(static_cast<Py_ssize_t>(names.size())));
  for (size_t k = 0; k < names.size(); ++k) PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), check(PyUnicode_FromString(names[k])).release());
  return out.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef inductor_methods[] = {
    {"_inductor_dtypes", py_inductor_dtypes, METH_NOARGS, "_inductor_dtypes() -> tuple of the torch dtype names the loop IR supports"},
    {"_inductor_compile", py_inductor_compile, METH_VARARGS,
     "_inductor_compile(aten_gm, eager_fallback, want_blob=False, target='cpp', device_type='cpu', build_behind=False) "
     "-> callable, or (callable, blob or None)"},
    {"_inductor_load", py_inductor_load, METH_VARARGS,
     "_inductor_load(blob, [(name, tensor), ...], eager_fallback=None) -> callable, or None if a kernel is missing"},
    {"_inductor_toolchain_key", py_inductor_toolchain_key, METH_NOARGS,
     "_inductor_toolchain_key() -> str: the compiler/CPU/flags/prelude hash in every kernel key"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_inductor(PyObject* module, PyObject* testing) {
  (void)testing;
  add_functions(module, inductor_methods);
}

}  // namespace cdynamo
