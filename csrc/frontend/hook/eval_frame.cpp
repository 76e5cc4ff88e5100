// The PEP 523 frame-evaluation hook: cache lookup with C++ guards, compile on a miss, and
// running transformed code in a shadow frame. Assumes the GIL is held (CPython calls it so).
#include <string>
#include <variant>
#include <vector>
#include "common/cpython_compat.h"
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/hook/callback.h"
#include "frontend/hook/code_state.h"
#include "frontend/interp/compile_frame.h"

namespace cdynamo::hook {
namespace {

// Calls of one code object that raise before any operation and are still traced again at the
// next call; past it the frame runs eagerly from then on (as for a frame with nothing to compile).
constexpr int kRaisingCallsRetraced = 3;

// compile_frame, its time added to utils.timings["compile_frame"] whether it succeeds or throws
// (a frame that falls back cost the same tracing).
interp::CompiledFrame timed_compile_frame(CdFrame* frame, PyObject* callback) {
  struct Timer {
    Stopwatch watch;
    ~Timer() {
      keeping_pending_error([&] {  // a pending error must survive the report
        record_time("compile_frame", watch.seconds());
        record_time("compile_frame_cpu", watch.cpu_seconds());
      });
    }
  } timer;
  return interp::compile_frame(frame, callback);
}

PyObject* function_closure(CdFrame* frame) {
  PyObject* func = cd_frame_function(frame);
  if (!func || !PyFunction_Check(func)) return nullptr;
  return PyFunction_GET_CLOSURE(func);
}

guards::FrameView frame_view(CdFrame* frame) {
  return {cd_frame_localsplus(frame), cd_frame_globals(frame), cd_frame_builtins(frame),
          function_closure(frame)};
}

// The backend a callback compiles for; NULL for run-only (any entry may run).
PyObject* callback_backend(PyObject* callback) {
  return PyTuple_Check(callback) ? PyTuple_GET_ITEM(callback, 0) : nullptr;
}

// Entries that can never match again (an object they were traced with was freed) move to
// `expired`, which the caller frees once it no longer uses the hit: freeing runs finalizers.
CacheEntry* lookup(CodeState& state, const guards::FrameView& view, PyObject* backend,
                   std::list<CacheEntry>& expired) {
  BusyScope busy;
  CacheEntry* hit = nullptr;
  for (auto it = state.entries.begin(); it != state.entries.end();) {
    auto current = it++;
    if (backend && current->backend.ptr() != backend) continue;
    if (current->guards->check(view)) {
      // Most recently hit first: a loop over a few input shapes finds its entry at once.
      state.entries.splice(state.entries.begin(), state.entries, current);
      hit = &state.entries.front();
      break;
    }
    if (current->guards->expired()) expired.splice(expired.end(), state.entries, current);
  }
  return hit;
}

// A function object around the transformed code with the frame's globals and closure, reused
// while the frame keeps coming with the same ones.
Ref function_for(CacheEntry& entry, CdFrame* frame) {
  PyObject* globals = cd_frame_globals(frame);
  PyObject* closure = function_closure(frame);
  if (entry.function && entry.function_globals == globals && entry.function_closure == closure)
    return entry.function;
  Ref function = check(PyFunction_New(entry.transformed_code.ptr(), globals));
  if (closure) check_status(PyFunction_SetClosure(function.ptr(), closure));
  PyObject* original = cd_frame_function(frame);
  if (original && PyFunction_Check(original)) {
    auto* source = reinterpret_cast<PyFunctionObject*>(original);
    Py_XSETREF(reinterpret_cast<PyFunctionObject*>(function.ptr())->func_qualname,
               Py_XNewRef(source->func_qualname));
  }
  entry.function = function;
  entry.function_globals = globals;
  entry.function_closure = closure;
  return function;
}

// Runs the entry's transformed code in a new frame (the shadow frame) with the original
// frame's arguments, then disposes of the original frame, which was never evaluated.
PyObject* run_entry(PyThreadState* tstate, CdFrame* frame, CacheEntry& entry) {
  PyObject* result = nullptr;
  try {
    Ref function = function_for(entry, frame);
    int nargs = interp::argument_slot_count(cd_frame_code(frame));
    result = PyObject_Vectorcall(function.ptr(), cd_frame_localsplus(frame), nargs, nullptr);
  } catch (...) {
    set_python_error_from_current_exception();
  }
  cd_frame_clear_and_pop_unevaluated(tstate, frame);
  return result;
}

// Raises the error currently set from the frame without evaluating it.
PyObject* fail_frame(PyThreadState* tstate, CdFrame* frame) {
  cd_frame_clear_and_pop_unevaluated(tstate, frame);
  return nullptr;
}

std::string code_location(PyCodeObject* code) {
  return to_std_string(code->co_qualname) + " (" + to_std_string(code->co_filename) + ":" +
         std::to_string(code->co_firstlineno) + ")";
}

// Calls cdynamo.utils.<what>(...) with strings and ints (its reporting entry points).
// Runs with the hook busy: the reporting code is never traced, whatever config.skip_dirs says.
void report(const char* what, std::initializer_list<std::variant<std::string, long>> args) {
  BusyScope busy;
  std::vector<Ref> owned;
  std::vector<Handle> handles;
  for (const auto& arg : args) {
    if (const auto* text = std::get_if<std::string>(&arg)) owned.push_back(check(PyUnicode_FromString(text->c_str())));
    else owned.push_back(check(PyLong_FromLong(std::get<long>(arg))));
    handles.push_back(owned.back());
  }
  Ref fn = import_attr("cdynamo.utils", what);
  std::vector<PyObject*> argv;
  for (Handle h : handles) argv.push_back(h.ptr());
  check(PyObject_Vectorcall(fn.ptr(), argv.data(), argv.size(), nullptr));
}

// The name reports give a frame: its function's qualified name, or for compile(model)'s entry
// function (every compiled module is called through it) the module's class.
std::string frame_name(CdFrame* frame) {
  PyCodeObject* code = cd_frame_code(frame);
  static PyObject* const entry_code =  // never freed: outlives the interpreter
      check(PyObject_GetAttrString(import_attr("cdynamo._entry", "call_module").ptr(), "__code__")).release();
  PyObject* module = code->co_argcount > 0 ? cd_frame_localsplus(frame)[0] : nullptr;
  if (reinterpret_cast<PyObject*>(code) == entry_code && module)
    return std::string(Py_TYPE(module)->tp_name) + " (compiled module)";
  return to_std_string(code->co_qualname);
}

bool options_flag(PyObject* callback, const char* name) {
  Ref value = check(PyObject_GetAttrString(PyTuple_GET_ITEM(callback, 1), name));
  int truth = PyObject_IsTrue(value.ptr());
  check_status(truth);
  return truth;
}

// Raises cdynamo.exc.Unsupported for fullgraph=True, naming the construct and the user's line.
void raise_unsupported(const interp::Unsupported& error, PyCodeObject* code) {
  std::string where = error.filename.empty()
                          ? code_location(code)
                          : error.function + " (" + error.filename + ":" + std::to_string(error.line) + ")";
  std::string message = std::string(error.what()) + "\n  in " + where +
                        "\nfullgraph=True (nopython=True) needs the whole function in one graph: "
                        "change this construct, or drop fullgraph to let cdynamo run it eagerly.";
  Ref type = import_attr("cdynamo.exc", "Unsupported");
  PyErr_SetString(type.ptr(), message.c_str());
}

// Inside torch.vmap or torch.func.grad (functorch's interpreter stack is not empty) a frame sees
// batched or wrapped tensors, which graphs cannot hold: it runs as written, as the transform's
// own Python does. Asked on cache misses only.
bool inside_functorch_transform() {
  static Ref* peek = nullptr;  // never freed: outlives the interpreter
  if (!peek) {
    try {
      peek = new Ref(import_attr("torch._C._functorch", "peek_interpreter_stack"));
    } catch (const PythonError&) {
      PyErr_Clear();
      peek = new Ref();
    }
  }
  if (!*peek) return false;
  Ref top = steal(PyObject_CallNoArgs(peek->ptr()));
  if (!top) {
    PyErr_Clear();
    return false;
  }
  return top.ptr() != Py_None;
}

// Finders and loaders written in Python (pytest's assertion rewriter, editable installs) are
// called by the import system: they and everything they call run as written, never compiled.
bool called_by_import_system(PyThreadState* tstate) {
  PyCodeObject* caller = cd_caller_code(tstate);
  if (!caller || !PyUnicode_Check(caller->co_filename)) return false;
  for (const char* machinery : {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
                                "<frozen zipimport>"})
    if (PyUnicode_CompareWithASCIIString(caller->co_filename, machinery) == 0) return true;
  return false;
}

// A loop whose body breaks the graph makes a resume function per iteration (each continues
// from the break of the one before). Past config.cache_size_limit such iterations in one chain,
// the next resume function runs eagerly, with the rest of its loop; the frames it calls are
// still compiled on their own (TorchDynamo runs the whole frame of such a loop eagerly). Where
// the chain is an inlined function's (its continuation called first by the root's), the root's
// continuation runs eagerly too: compiled, its trace would inline the next link again.
void bound_loop_resumes(CdFrame* frame, const std::vector<codegen::MadeResume>& made) {
  if (made.empty()) return;
  const long limit = config_long("cache_size_limit");
  bool past_limit = false, inner_past_limit = false;
  for (const codegen::MadeResume& resume : made) {
    const CodeState* parent = existing_code_state(reinterpret_cast<PyCodeObject*>(resume.continues.ptr()));
    CodeState& resume_state = code_state(reinterpret_cast<PyCodeObject*>(resume.code.ptr()));
    resume_state.loop_resume_depth = (parent ? parent->loop_resume_depth : 0) + (resume.in_loop ? 1 : 0);
    if (resume_state.loop_resume_depth <= limit) continue;
    mark_skip_permanently(reinterpret_cast<PyCodeObject*>(resume.code.ptr()));
    past_limit = true;
    inner_past_limit = inner_past_limit || !resume.continues_root;
  }
  if (inner_past_limit)
    for (const codegen::MadeResume& resume : made)
      if (resume.continues_root) mark_skip_permanently(reinterpret_cast<PyCodeObject*>(resume.code.ptr()));
  PyCodeObject* code = cd_frame_code(frame);
  if (past_limit)
    report("record_loop_break_limit", {frame_name(frame), to_std_string(code->co_filename),
                                       static_cast<long>(code->co_firstlineno)});
}

PyObject* compile_and_run(PyThreadState* tstate, CdFrame* frame, CodeState& state,
                          PyObject* callback, const guards::FrameView& view) {
  PyCodeObject* code = cd_frame_code(frame);
  std::string recompile_reason;
  bool over_limit = false;
  try {
    BusyScope busy;
    long limit = config_long("cache_size_limit");
    if (!state.entries.empty()) recompile_reason = state.entries.front().guards->failure_reason(view);
    // Entries count against the limit per identity of the modules they are specialised to
    // (twelve layers of one class each get their own budget); a global cap bounds the list.
    long comparable = 0;
    for (const CacheEntry& entry : state.entries) {
      bool same = true;
      for (const auto& [slot, object] : entry.identities) same &= view.localsplus[slot] == object;
      comparable += same;
    }
    constexpr long kAccumulatedLimit = 64;
    over_limit = comparable >= limit || static_cast<long>(state.entries.size()) >= kAccumulatedLimit;
    if (over_limit && !state.cache_limit_warned) {
      state.cache_limit_warned = true;
      report("warn_cache_size_limit", {frame_name(frame), to_std_string(code->co_filename),
                                       static_cast<long>(code->co_firstlineno), recompile_reason});
    }
  } catch (...) {
    set_python_error_from_current_exception();
    return fail_frame(tstate, frame);
  }
  if (over_limit) return cd_eval_frame_default(tstate, frame, 0);

  interp::CompiledFrame compiled;
  try {
    BusyScope busy;
    compiled = timed_compile_frame(frame, callback);
  } catch (const interp::Unsupported& error) {
    bool nopython = false;
    try {
      if (error.raised_before_operations) {
        // This call raises before any operation: it runs as it is and raises for real; the
        // next call may take another path, so the frame is traced again then (a few times, or
        // always under fullgraph=True, which must not turn into running without a graph).
        if (options_flag(callback, "nopython") || ++state.raises_before_operations <= kRaisingCallsRetraced)
          return cd_eval_frame_default(tstate, frame, 0);
      }
      nopython = !error.silent && options_flag(callback, "nopython");
      if (!nopython) {
        if (!error.silent) {
          std::string where = error.filename.empty() ? code_location(code)
                                                     : error.filename + ":" + std::to_string(error.line);
          report("record_frame_fallback", {frame_name(frame), std::string(error.what()) + " (" + where + ")"});
        }
        state.strategy = Strategy::Fallback;
        state.fallback_reason = error.what();
        state.runs_no_operations = error.silent && !error.raised_before_operations;
      }
    } catch (...) {
      set_python_error_from_current_exception();
      return fail_frame(tstate, frame);
    }
    if (!nopython && state.runs_no_operations) {
      BusyScope as_traced;  // the frames it calls are not intercepted either: their trace found nothing
      return cd_eval_frame_default(tstate, frame, 0);
    }
    if (!nopython) return cd_eval_frame_default(tstate, frame, 0);
    raise_unsupported(error, code);
    return fail_frame(tstate, frame);
  } catch (...) {
    // A backend failure or a bug of ours: eager fallback with a warning, or the error itself.
    set_python_error_from_current_exception();
    // fullgraph=True promised one graph: the error itself, as torch.compile raises it.
    bool suppress = false;
    keeping_pending_error([&] { suppress = config_bool("suppress_errors") && !options_flag(callback, "nopython"); });
    if (!suppress) return fail_frame(tstate, frame);
    try {
      PyObject *type, *value, *traceback;
      PyErr_Fetch(&type, &value, &traceback);
      PyErr_NormalizeException(&type, &value, &traceback);
      Ref owned_type = steal(type), error = steal(value), owned_traceback = steal(traceback);
      std::string reason = to_std_string(Ref(check(PyObject_Repr(error.ptr()))));
      report("warn_fallback", {frame_name(frame), to_std_string(code->co_filename),
                               static_cast<long>(code->co_firstlineno), reason});
      report("record_frame_fallback", {frame_name(frame), reason});
      state.strategy = Strategy::Fallback;
      state.fallback_reason = reason;
    } catch (...) {
      set_python_error_from_current_exception();
      return fail_frame(tstate, frame);
    }
    return cd_eval_frame_default(tstate, frame, 0);
  }

  CacheEntry entry;
  entry.guards = std::move(compiled.guards);
  entry.transformed_code = std::move(compiled.transformed_code);
  entry.backend = Ref::borrow(callback_backend(callback));
  entry.identities = std::move(compiled.identities);
  try {
    mark_skip_permanently(reinterpret_cast<PyCodeObject*>(entry.transformed_code.ptr()));
    bound_loop_resumes(frame, compiled.resume_codes);
    report("record_frame_compiled", {frame_name(frame)});
    if (!recompile_reason.empty()) report("record_recompile", {frame_name(frame), recompile_reason});
  } catch (...) {
    set_python_error_from_current_exception();
    return fail_frame(tstate, frame);
  }
  state.entries.push_front(std::move(entry));
  return run_entry(tstate, frame, state.entries.front());
}

}  // namespace

// Ownership contract: CPython passes a frame it owns (3.11) or hands over (3.12: the evaluator
// clears and pops it). Returns a new reference to the frame's result, or NULL with an error set;
// every path either evaluates the frame with CPython's evaluator or calls
// cd_frame_clear_and_pop_unevaluated on it exactly once.
PyObject* eval_frame_hook(PyThreadState* tstate, CdFrame* frame, int throwflag) {
  PyObject* callback = current_callback();
  if (!callback || throwflag || hook_is_busy()) return cd_eval_frame_default(tstate, frame, throwflag);
  PyCodeObject* code = cd_frame_code(frame);
  CodeState* state = existing_code_state(code);
  if (!state) {
    try {
      state = &code_state(code);
    } catch (...) {
      PyErr_Clear();
      return cd_eval_frame_default(tstate, frame, throwflag);
    }
  }
  // Frames with a frame object already (a tracer or profiler asked for it) keep their default
  // evaluation: the hook may only dispose of frames nobody else can see.
  if (state->strategy == Strategy::Skip || !cd_frame_is_private(frame) ||
      cd_frame_owned_by_generator(frame))
    return cd_eval_frame_default(tstate, frame, throwflag);

  guards::FrameView view = frame_view(frame);
  if (!state->entries.empty()) {
    std::list<CacheEntry> expired;
    if (CacheEntry* hit = lookup(*state, view, callback_backend(callback), expired))
      return run_entry(tstate, frame, *hit);
  }
  if (state->strategy == Strategy::Fallback && state->runs_no_operations && callback != Py_False) {
    BusyScope as_traced;  // see CodeState::runs_no_operations
    return cd_eval_frame_default(tstate, frame, throwflag);
  }
  if (callback == Py_False || state->strategy == Strategy::Fallback || inside_functorch_transform())
    return cd_eval_frame_default(tstate, frame, throwflag);
  if (called_by_import_system(tstate)) {
    BusyScope as_written;  // the frames this one calls are not intercepted either
    return cd_eval_frame_default(tstate, frame, throwflag);
  }
  return compile_and_run(tstate, frame, *state, callback, view);
}

}  // namespace cdynamo::hook
