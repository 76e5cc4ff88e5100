// compile_program: code generation, the kernel cache, and the executor, synchronously or with a
// background compile behind an eager fallback. Assumes the GIL is held on entry and in calls.
#include "backend/runtime/compiled_program.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include "backend/cache/kernel_cache.h"
#include "backend/runtime/executor.h"
#include "backend/runtime/gil.h"
#include "backend/runtime/program_blob.h"
#include "backend/target/target.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::runtime {
namespace {

ExecutorOptions executor_options_from_config() {
  ExecutorOptions options;
  if (!config_bool("reuse_large_buffers")) options.reuse_min_bytes = 0;
  return options;
}

}  // namespace

cache::CacheOptions cache_options_from_config() {
  cache::CacheOptions options;
  Ref cxx = config_value("cxx");  // None or "": the default (g++)
  if (cxx.ptr() != Py_None) options.compiler = to_std_string(cxx);
  if (options.compiler.empty()) options.compiler = "g++";
  Ref flags = config_value("cxx_flags");
  if (flags.ptr() != Py_None) {
    Ref items = check(PySequence_Fast(flags.ptr(), "cdynamo.config.cxx_flags must be a list of strings"));
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(items.ptr()); ++k) {
      PyObject* flag = PySequence_Fast_GET_ITEM(items.ptr(), k);
      if (!PyUnicode_Check(flag)) throw UserError("cdynamo.config.cxx_flags must be a list of strings", PyExc_TypeError);
      options.extra_flags.push_back(PyUnicode_AsUTF8(flag));
    }
  }
  Ref dir = config_value("cache_dir");
  if (dir.ptr() != Py_None) {
    Ref path = check(PyOS_FSPath(dir.ptr()));
    Ref expanded = call_helper("os.path", "expanduser", {path});  // "~/cache" as users write it
    options.cache_dir = to_std_string(expanded);
  }
  if (options.cache_dir.empty()) {
    const char* env = std::getenv("CDYNAMO_CACHE_DIR");
    const char* home = std::getenv("HOME");
    options.cache_dir = env && *env ? env : std::string(home ? home : "/tmp") + "/.cache/cdynamo";
  }
  return options;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Background compile.

struct AsyncJob {
  enum State { Pending, Ready, Failed };
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<int> state{Pending};
  std::vector<Launcher> kernels;
  std::string error;
};

struct AsyncState {
  std::shared_ptr<AsyncJob> job;
  ir::Program program;
  std::vector<std::pair<std::string, Ref>> constants;
  ExecutorOptions executor_options;
  Ref fallback;
  Ref compiled;  // the executor, once built
  bool warned = false;
  bool wait_on_call = false;  // BuildMode::WaitOnFirstCall
};

struct AsyncObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  AsyncState* state;
};

AsyncState& state_of(PyObject* self) { return *reinterpret_cast<AsyncObject*>(self)->state; }

// The executor if the kernels are ready (building it on first sight), else null. A failed
// compile warns once, on the first call that has to fall back because of it.
Handle compiled_or_null(AsyncState& s, bool calling) {
  if (s.compiled) return s.compiled;
  int state = s.job->state.load();
  if (state == AsyncJob::Ready) {
    try {
      s.compiled = make_executor(std::move(s.program), s.constants, s.job->kernels, s.executor_options);
      s.constants.clear();
      s.fallback.reset();  // it may hold a whole module's parameters; never needed again
      return s.compiled;
    } catch (const PythonError&) {
      throw;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(s.job->mutex);
      s.job->error = e.what();
      s.job->state = AsyncJob::Failed;
      state = AsyncJob::Failed;
    }
  }
  if (state == AsyncJob::Failed && calling && !s.warned) {
    s.warned = true;
    std::string message = "cdynamo: the background compile failed; the graph keeps running eagerly: " + s.job->error;
    check_status(PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1));
  }
  return Handle();
}

// Blocks, the GIL released, until the job ends or timeout seconds pass (forever when negative).
void wait_for(const std::shared_ptr<AsyncJob>& job, double timeout) {
  GilRelease nogil;
  std::unique_lock<std::mutex> lock(job->mutex);
  auto finished = [&] { return job->state.load() != AsyncJob::Pending; };
  if (timeout < 0) job->cv.wait(lock, finished);
  else job->cv.wait_for(lock, std::chrono::duration<double>(timeout), finished);
}

// Ownership contract: args are borrowed; returns the new reference the target returns, or NULL.
PyObject* async_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  CDYNAMO_BOUNDARY_BEGIN
  AsyncState& s = state_of(self);
  if (s.wait_on_call && !s.compiled) wait_for(s.job, -1);
  Handle target = compiled_or_null(s, true);
  if (!target) target = s.fallback;
  return PyObject_Vectorcall(target.ptr(), args, nargsf, kwnames);
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: self is the last reference; the job lives on while its thread runs.
void async_dealloc(PyObject* self) {
  delete reinterpret_cast<AsyncObject*>(self)->state;
  Py_TYPE(self)->tp_free(self);
}

// Ownership contract: returns a new reference to a bool.
PyObject* async_ready(PyObject* self, void*) {
  CDYNAMO_BOUNDARY_BEGIN
  return PyBool_FromLong(compiled_or_null(state_of(self), false) ? 1 : 0);
  CDYNAMO_BOUNDARY_END(nullptr)
}

// wait(timeout=None) -> bool: blocks (GIL released) until the background compile ends.
// Ownership contract: args borrowed; returns a new reference to a bool, or NULL with an error.
PyObject* async_wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  double timeout = -1;
  if (nargs > 1) throw UserError("wait() takes at most one argument", PyExc_TypeError);
  if (nargs == 1 && args[0] != Py_None) {
    timeout = PyFloat_AsDouble(args[0]);
    if (timeout == -1 && PyErr_Occurred()) throw PythonError();
  }
  AsyncState& s = state_of(self);
  wait_for(s.job, timeout);
  return PyBool_FromLong(compiled_or_null(s, false) ? 1 : 0);
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyTypeObject* async_type() {
  static PyTypeObject* type = [] {
    static PyGetSetDef getset[] = {
        {"ready", async_ready, nullptr, "True once the compiled kernels run the calls", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    static PyMethodDef methods[] = {
        {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(async_wait)), METH_FASTCALL,
         "wait(timeout=None) -> bool: block until the background compile ends; True if compiled code runs now"},
        {nullptr, nullptr, 0, nullptr}};
    static PyTypeObject t = {PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "cdynamo._C.AsyncCompiledProgram";
    t.tp_basicsize = sizeof(AsyncObject);
    t.tp_dealloc = async_dealloc;
    t.tp_call = PyVectorcall_Call;
    t.tp_vectorcall_offset = offsetof(AsyncObject, vectorcall);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_getset = getset;
    t.tp_methods = methods;
    t.tp_doc = "A program compiling in the background: runs the eager fallback until its kernels are ready.";
    if (PyType_Ready(&t) < 0) throw PythonError();
    return &t;
  }();
  return type;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> generate_sources(const ir::Program& program, const std::string& target) {
  return target::target_named(target).generate(program);
}

Ref compile_program(ir::Program program, std::vector<std::pair<std::string, Ref>> constants, Handle eager_fallback,
                    std::string* blob, const std::string& target_name, BuildMode mode) {
  Stopwatch watch;
  const target::Target& target = target::target_named(target_name);
  target::Target::CompileJob job = target.prepare(program, blob);
  watch.lap("codegen");
  bool has_fallback = eager_fallback && eager_fallback.ptr() != Py_None;
  if (has_fallback && !PyCallable_Check(eager_fallback.ptr())) throw UserError("eager_fallback must be callable", PyExc_TypeError);
  const bool wait_on_call = mode == BuildMode::WaitOnFirstCall;
  if (!has_fallback || !(wait_on_call || config_bool("async_compile"))) {
    std::vector<Launcher> kernels;
    {
      GilRelease nogil;
      kernels = job();
    }
    watch.lap("kernels");
    ExecutorOptions options = executor_options_from_config();
    if (has_fallback && !program.symbols.empty()) options.oversize_fallback = Ref::borrow(eager_fallback.ptr());
    Ref executor = make_executor(std::move(program), constants, std::move(kernels), options);
    watch.lap("executor");
    return executor;
  }
  auto state = std::make_shared<AsyncJob>();
  std::thread([state, job = std::move(job)] {
    std::vector<Launcher> kernels;
    std::string error;
    try {
      kernels = job();
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->kernels = std::move(kernels);
    state->error = error;
    state->state = error.empty() ? AsyncJob::Ready : AsyncJob::Failed;
    state->cv.notify_all();
  }).detach();
  PyTypeObject* type = async_type();
  Ref obj = check(type->tp_alloc(type, 0));
  auto* self = reinterpret_cast<AsyncObject*>(obj.ptr());
  self->vectorcall = async_vectorcall;
  ExecutorOptions options = executor_options_from_config();
  if (!program.symbols.empty()) options.oversize_fallback = Ref::borrow(eager_fallback.ptr());
  self->state = new AsyncState{state, std::move(program), std::move(constants), std::move(options), Ref::borrow(eager_fallback),
                               Ref(), false, wait_on_call};
  return obj;
}

Ref load_program(std::string_view blob, const std::vector<std::pair<std::string, Ref>>& constants, Handle eager_fallback) {
  Stopwatch watch;
  ProgramBlob stored = deserialize_program(blob);
  ExecutorOptions options = executor_options_from_config();
  // A symbolic program runs calls past its kernels' 32-bit limits through the graph as captured.
  if (!stored.program.symbols.empty() && eager_fallback && eager_fallback.ptr() != Py_None)
    options.oversize_fallback = Ref::borrow(eager_fallback.ptr());
  if (!stored.kernel_keys.empty() && target::is_triton_blob_key(stored.kernel_keys.front())) {
    std::vector<Launcher> launchers = target::triton_launchers_from_blob(stored.program, stored.kernel_keys);
    watch.lap("kernels");
    return make_executor(std::move(stored.program), constants, std::move(launchers), options);
  }
  cache::CacheOptions cache_options = cache_options_from_config();
  std::vector<cache::KernelFn> kernels;
  {
    GilRelease nogil;
    kernels = cache::load_kernels(stored.kernel_keys, stored.kernel_symbols, cache_options);
  }
  watch.lap("kernels");
  if (kernels.size() != stored.kernel_keys.size()) return Ref();
  std::vector<Launcher> launchers;
  for (cache::KernelFn fn : kernels) launchers.push_back(cpu_launcher(fn));
  Ref executor = make_executor(std::move(stored.program), constants, std::move(launchers), options);
  watch.lap("executor");
  return executor;
}


}  // namespace cdynamo::runtime
