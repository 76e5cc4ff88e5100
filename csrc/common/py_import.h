// Cached lookups of Python-level helpers (cdynamo.config, cdynamo.utils, ...) from C++.
// Assumes the GIL is held; the cache lives for the process (module objects are never unloaded).
#pragma once
#include <string>
#include "common/py_ref.h"

namespace cdynamo {

// module.attr as a new reference, importing the module on first use. Throws PythonError.
Ref import_attr(const char* module, const char* attr);
// The current value of a cdynamo.config knob. Throws PythonError.
Ref config_value(const char* name);
long config_long(const char* name);
bool config_bool(const char* name);
// Calls module.function(args...) with owned results; throws PythonError.
Ref call_helper(const char* module, const char* function, std::initializer_list<Handle> args);

std::string to_std_string(Handle obj);

// Adds seconds to cdynamo.utils.timings[phase] (where compile time goes; bench/warm_start.py).
// Throws PythonError.
void record_time(const char* phase, double seconds);

// Seconds since construction, for record_time: wall time, and the calling thread's CPU time
// (what a loaded machine distorts least).
class Stopwatch {
 public:
  Stopwatch();
  double seconds() const;
  double cpu_seconds() const;
  // Records the time since construction (or the last lap) under phase and restarts.
  void lap(const char* phase);

 private:
  long long start_ns_;
  long long start_cpu_ns_;
};  // str(obj) as UTF-8; "" on failure (error cleared)

}  // namespace cdynamo
