// co_extra storage of CodeState: creation with the skip decision, the registry used by reset(),
// and release when CPython frees the code object.
// Assumes the GIL is held for every call.
#include "frontend/hook/code_state.h"
#include <string_view>
#include <unordered_set>
#include <vector>
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/hook/callback.h"

namespace cdynamo::hook {
namespace {

Py_ssize_t g_extra_index = -1;
std::unordered_set<CodeState*> g_all_states;
Ref& g_is_skipped_file = *new Ref();  // never freed: outlives the interpreter

void free_code_state(void* extra) {
  auto* state = static_cast<CodeState*>(extra);
  g_all_states.erase(state);
  delete state;
}

Py_ssize_t extra_index() {
  if (g_extra_index < 0) {
    g_extra_index = cd_request_code_extra_index(free_code_state);
    if (g_extra_index < 0) throw PythonError();
  }
  return g_extra_index;
}

// collections.namedtuple's __new__, made by eval() ("<string>", a lambda calling _tuple_new):
// library code wherever its class comes from (torch's printing makes them); traced code that
// constructs a namedtuple does so without it.
bool is_namedtuple_new(PyCodeObject* code) {
  if (PyUnicode_CompareWithASCIIString(code->co_filename, "<string>") != 0 ||
      PyUnicode_CompareWithASCIIString(code->co_name, "<lambda>") != 0)
    return false;
  Ref tuple_new = check(PyUnicode_InternFromString("_tuple_new"));
  return PySequence_Contains(code->co_names, tuple_new.ptr()) == 1;
}

bool is_skipped_file(PyCodeObject* code) {
  const char* filename = PyUnicode_AsUTF8(code->co_filename);
  if (!filename) {
    PyErr_Clear();
    return true;
  }
  std::string_view name(filename);
  // Frozen modules (the import system) are never user code; other pseudo-files are: exec'd
  // strings, the REPL, IPython cells, doctests, fx GraphModules' forward()s (a backend's own
  // graphs run with the hook off, so only the user's reach here).
  if (name.empty()) return true;
  if (name.front() == '<') return name.starts_with("<frozen ") || is_namedtuple_new(code);
  // The policy (config.skip_dirs / trace_dirs, longest prefix wins) lives in Python; it runs
  // once per code object, with the hook off so its own frames are not intercepted.
  BusyScope busy;
  PyObject* fn = g_is_skipped_file.ptr();
  if (!fn) {
    try {
      g_is_skipped_file = import_attr("cdynamo.utils", "is_skipped_file");
    } catch (const PythonError&) {
      PyErr_Clear();
      return true;
    }
    fn = g_is_skipped_file.ptr();
  }
  Ref result = steal(PyObject_CallOneArg(fn, code->co_filename));
  int truth = result ? PyObject_IsTrue(result.ptr()) : -1;
  if (truth < 0) {
    PyErr_Clear();
    return true;
  }
  return truth;
}

bool is_untraceable_code(PyCodeObject* code) {
  constexpr int kGeneratorLike = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;
  if (code->co_flags & kGeneratorLike) return true;
  // Code without fast locals (a class body, exec'd code) names its variables in a dict.
  if (!(code->co_flags & CO_OPTIMIZED)) return true;
  // Module and class bodies and comprehension functions hold no graph worth capturing alone.
  const char* name = PyUnicode_AsUTF8(code->co_name);
  if (!name) {
    PyErr_Clear();
    return true;
  }
  std::string_view view(name);
  // A lambda's resume functions ("<lambda>_resume_at_line_N") are the rest of a lambda.
  if (name[0] == '<') return !view.starts_with("<lambda>");
  // Attribute hooks and finalizers run inside attribute reads the compiled code itself makes
  // (rebuilding values, guards): compiling them would recurse into themselves.
  // A tensor subclass's __torch_function__ runs alone only where torch dispatches one operator
  // (the trace runs it inline, and compiled graphs run with it off): one call, nothing to gain.
  return view == "__getattribute__" || view == "__getattr__" || view == "__setattr__" || view == "__delattr__" ||
         view == "__del__" || view == "__torch_function__";
}

Strategy initial_strategy(const CodeState& state) {
  if (state.strategy_is_permanent || is_skipped_file(state.code)) return Strategy::Skip;
  return Strategy::Default;
}

}  // namespace

CodeState* existing_code_state(PyCodeObject* code) {
  void* extra = nullptr;
  if (g_extra_index < 0) return nullptr;
  if (cd_code_get_extra(reinterpret_cast<PyObject*>(code), g_extra_index, &extra) < 0) {
    PyErr_Clear();
    return nullptr;
  }
  return static_cast<CodeState*>(extra);
}

CodeState& code_state(PyCodeObject* code) {
  if (CodeState* state = existing_code_state(code)) return *state;
  auto state = std::make_unique<CodeState>();
  state->code = code;
  state->strategy_is_permanent = is_untraceable_code(code);
  state->strategy = initial_strategy(*state);
  // initial_strategy runs Python (is_skipped_file), so another thread may have created the
  // state meanwhile; setting ours would free that one (co_extra frees what it replaces) under
  // the thread still using it.
  if (CodeState* raced = existing_code_state(code)) return *raced;
  if (cd_code_set_extra(reinterpret_cast<PyObject*>(code), extra_index(), state.get()) < 0)
    throw PythonError();
  g_all_states.insert(state.get());
  return *state.release();
}

void reset_all_code_states() {
  // Entries are destroyed after the walk: destroying one can free code objects, and with them
  // states in the registry being walked.
  std::list<CacheEntry> doomed;
  for (CodeState* state : g_all_states) {
    doomed.splice(doomed.end(), state->entries);
    state->cache_limit_warned = false;
    state->fallback_reason.clear();
    state->runs_no_operations = false;
    state->strategy = initial_strategy(*state);
  }
}

void mark_skip_permanently(PyCodeObject* code) {
  CodeState& state = code_state(code);
  state.strategy = Strategy::Skip;
  state.strategy_is_permanent = true;
}

}  // namespace cdynamo::hook
