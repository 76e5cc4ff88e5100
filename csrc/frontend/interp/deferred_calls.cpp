// print(), warnings.warn() and calls of enabled loggers whose arguments the trace knows (strings,
// numbers, shapes): made after the graph, in order with the frame's other side effects, so the
// console shows what eager prints. Arguments the graph computes (a tensor's values) break it.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

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

}  // namespace cdynamo::interp
