// Per-code-object state kept in co_extra: what the hook does with the code, and its cache of
// compiled entries (guards + transformed code), most recently hit first.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "common/cpython_compat.h"
#include "common/py_ref.h"
#include "frontend/guards/guards.h"

namespace cdynamo::hook {

// What the hook does with frames of one code object.
enum class Strategy {
  Default,   // look up the cache, compile on a miss
  Skip,      // never traced: generators, skip-listed files, transformed code, disable()
  Fallback,  // tracing failed (reason recorded): run eagerly, but cached entries may still hit
};

struct CacheEntry {
  std::unique_ptr<guards::RootGuardManager> guards;
  Ref transformed_code;  // takes all of the original's arguments positionally
  Ref backend;           // the backend it was compiled for (lookup matches by identity)
  // The function object last built around transformed_code, with the globals and closure it
  // was built for (held alive by the function, so pointer equality means identity).
  Ref function;
  PyObject* function_globals = nullptr;
  PyObject* function_closure = nullptr;
  std::vector<std::pair<int, PyObject*>> identities;  // see interp::CompiledFrame::identities
};

struct CodeState {
  PyCodeObject* code = nullptr;  // borrowed: the state lives inside the code object
  Strategy strategy = Strategy::Default;
  bool strategy_is_permanent = false;  // survives reset(): transformed code, generators
  bool cache_limit_warned = false;
  int raises_before_operations = 0;  // traced calls that raised before any operation (eval_frame)
  // Fallback because its whole trace ran no tensor operation (the functions it calls included,
  // traced inline): it runs as it is, and so do the frames it calls, compiled in its trace.
  bool runs_no_operations = false;
  // A resume function: how many resume functions before it in its chain continued a loop at a
  // break inside it, this one included (one per compiled iteration of a loop that breaks).
  long loop_resume_depth = 0;
  std::string fallback_reason;
  std::list<CacheEntry> entries;
};

// The state of `code`, created on first sight (deciding Skip for generators and for files
// cdynamo.utils.is_skipped_file rejects). Never NULL; throws PythonError if co_extra cannot be set.
CodeState& code_state(PyCodeObject* code);
// The state if the code was seen before, else NULL.
CodeState* existing_code_state(PyCodeObject* code);

// Frames of `code` always run with CPython's evaluator, also after reset() (transformed code,
// disable(recursive=False)).
void mark_skip_permanently(PyCodeObject* code);

// Drops every cache entry and non-permanent strategy of every code object.
void reset_all_code_states();

}  // namespace cdynamo::hook
