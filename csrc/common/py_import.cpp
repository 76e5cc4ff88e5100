// Imports and attribute lookups of cdynamo's Python helpers from C++.
// Assumes the GIL is held; modules are cached for the life of the process.
#include "common/py_import.h"
#include <time.h>
#include <chrono>
#include <map>
#include <string>
#include <vector>
#include "common/error.h"

namespace cdynamo {
namespace {
std::map<std::string, Ref>& module_cache() {
  static auto* cache = new std::map<std::string, Ref>();  // leaked on purpose: outlives finalization
  return *cache;
}
Handle import_module(const char* name) {
  auto& cache = module_cache();
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Ref module = check(PyImport_ImportModule(name));
  return cache.emplace(name, std::move(module)).first->second;
}
}  // namespace

Ref import_attr(const char* module, const char* attr) {
  return check(PyObject_GetAttrString(import_module(module).ptr(), attr));
}

Ref config_value(const char* name) { return import_attr("cdynamo.config", name); }

long config_long(const char* name) {
  Ref value = config_value(name);
  long result = PyLong_AsLong(value.ptr());
  if (result == -1 && PyErr_Occurred()) throw PythonError();
  return result;
}

bool config_bool(const char* name) {
  Ref value = config_value(name);
  int truth = PyObject_IsTrue(value.ptr());
  check_status(truth);
  return truth != 0;
}

Ref call_helper(const char* module, const char* function, std::initializer_list<Handle> args) {
  Ref fn = import_attr(module, function);
  std::vector<PyObject*> argv;
  for (Handle h : args) argv.push_back(h.ptr());
  return check(PyObject_Vectorcall(fn.ptr(), argv.data(), argv.size(), nullptr));
}

std::string to_std_string(Handle obj) {
  PyObject* str = PyObject_Str(obj.ptr());
  if (!str) {
    PyErr_Clear();
    return "";
  }
  Ref owned = steal(str);
  const char* utf8 = PyUnicode_AsUTF8(str);
  if (!utf8) {
    PyErr_Clear();
    return "";
  }
  return utf8;
}

void record_time(const char* phase, double seconds) {
  Ref name = check(PyUnicode_FromString(phase));
  Ref value = check(PyFloat_FromDouble(seconds));
  call_helper("cdynamo.utils", "add_time", {name, value});
}

namespace {
long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
long long thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
}  // namespace

Stopwatch::Stopwatch() : start_ns_(now_ns()), start_cpu_ns_(thread_cpu_ns()) {}
double Stopwatch::seconds() const { return static_cast<double>(now_ns() - start_ns_) * 1e-9; }
double Stopwatch::cpu_seconds() const { return static_cast<double>(thread_cpu_ns() - start_cpu_ns_) * 1e-9; }
void Stopwatch::lap(const char* phase) {
  long long now = now_ns();
  record_time(phase, static_cast<double>(now - start_ns_) * 1e-9);
  start_ns_ = now;
  start_cpu_ns_ = thread_cpu_ns();
}

}  // namespace cdynamo
