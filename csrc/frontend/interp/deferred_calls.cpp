// print(), warnings.warn() and calls of enabled loggers whose arguments the trace knows (strings,
// numbers, shapes): made after the graph, in order with the frame's other side effects, so the
// console shows what eager prints. Arguments the graph computes (a tensor's values) break it.
#include <unordered_set>
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

// A logging.Logger object from the frame.
bool is_logger(const ValuePtr& value) {
  if (value->kind != ValueKind::Object || !value->obj) return false;
  static Ref& logger_type = *new Ref(import_attr("logging", "Logger"));  // never freed: outlives the interpreter
  int found = PyObject_IsInstance(value->obj.ptr(), logger_type.ptr());
  check_status(found);
  return found != 0;
}

}  // namespace

ValuePtr Tracer::defer_call(ValuePtr callable, std::vector<ValuePtr> args, graph::KwArgs kwargs, const std::string& what) {
  if (!all_constant(args, kwargs))
    unsupported(what + " of a value the graph computes (a tensor's data): print its shape, or move the call "
                       "out of the compiled function");
  std::vector<Ref> names;
  std::vector<ValuePtr> values;
  for (auto& [name, value] : kwargs) {
    if (name == "file") unsupported(what + " with file=, a stream the trace does not follow");
    names.push_back(check(PyUnicode_FromString(name.c_str())));
    values.push_back(value);
  }
  ValuePtr call = Value::sequence(ValueKind::Tuple, {callable, Value::sequence(ValueKind::Tuple, std::move(args)),
                                                     Value::dict(std::move(names), std::move(values))});
  side_effects_.push_back({callable, kDeferredCall, std::move(call)});
  return Value::constant(Ref::borrow(Py_None));
}

// logger.debug(...) (any logging.Logger method that logs) at a level the logger does not emit
// now: a call that does nothing, skipped, with a guard that the logger still does not emit at
// that level (a change of level recompiles). Null when the call would log (is_logging_call).
ValuePtr Tracer::silent_log_call(const ValuePtr& method, const std::vector<ValuePtr>& args) {
  const ValuePtr& logger = method->items.at(0);
  if (method->name.empty() || !is_logger(logger)) return nullptr;  // every method call of an object passes here
  Ref first = !args.empty() && args[0]->is_constant() ? args[0]->obj : Ref::borrow(Py_None);
  Ref level = call_helper("cdynamo._trace_support", "silent_log_level",
                          {logger->obj, check(PyUnicode_FromString(method->name.c_str())), first});
  if (level.ptr() == Py_None) return nullptr;
  Ref target = logger->obj;
  guards_->add_same_object_guard(
      [target, level](const guards::FrameView&) -> PyObject* {
        return PyObject_CallMethod(target.ptr(), "isEnabledFor", "O", level.ptr());
      },
      "the logger's isEnabledFor(" + to_std_string(Ref(check(PyObject_Str(level.ptr())))) + ")",
      [](const guards::FrameView&) -> PyObject* { return Py_NewRef(Py_False); }, "False (it logged nothing when traced)");
  keep_alive_.push_back(target);
  return Value::constant(Ref::borrow(Py_None));
}

// A call of a logging.Logger method that logs, on a logger read from the frame's globals (rebuilt
// after the graph from there): deferred, as print is.
bool Tracer::is_logging_call(const ValuePtr& method) const {
  static const std::unordered_set<std::string> names = {"debug", "info", "warning", "warn", "error", "critical", "log"};
  const ValuePtr& logger = method->items.at(0);
  return logger->source && names.count(method->name) && is_logger(logger);
}

}  // namespace cdynamo::interp
