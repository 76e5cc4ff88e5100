// Builtins whose arguments the trace cannot hand to Python as they are: sorted/min/max with a
// key= the trace runs or over objects that compare in Python, and min/max of one-element tensors.
#include <algorithm>
#include <functional>
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

// The builtins min and max, which three handlers below answer for.
PyObject* min_builtin() {
  static PyObject* const found = import_attr("builtins", "min").release();  // never freed: outlives the interpreter
  return found;
}
PyObject* max_builtin() {
  static PyObject* const found = import_attr("builtins", "max").release();  // never freed: outlives the interpreter
  return found;
}
bool is_min_or_max(Handle fn) { return fn.ptr() == min_builtin() || fn.ptr() == max_builtin(); }

}  // namespace

ValuePtr Tracer::sorted_with_key(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static Ref& sorted_builtin = *new Ref(import_attr("builtins", "sorted"));  // never freed: outlives the interpreter
  const bool sorting = fn.ptr() == sorted_builtin.ptr();
  const bool extreme = is_min_or_max(fn);
  if (!(sorting && args.size() == 1) && !(extreme && !args.empty())) return nullptr;
  ValuePtr key, fallback;
  Ref reverse = Ref::borrow(fn.ptr() == max_builtin() ? Py_True : Py_False);
  for (const auto& [name, value] : kwargs) {
    if (name == "key") key = value;
    else if (name == "reverse" && sorting && value->is_constant()) reverse = value->obj;
    else if (name == "default" && extreme && args.size() == 1) fallback = value;
    else return nullptr;
  }
  if (!key || (key->is_constant() && key->obj.ptr() == Py_None)) {
    // min(items, default=sentinel) with a default the trace made (heapq's object()): the
    // default only answers an empty iterable; otherwise the call without it.
    if (!fallback || fallback->is_fully_constant()) return nullptr;
    std::vector<ValuePtr> items = iterate(args[0]);
    if (items.empty()) return fallback;
    graph::KwArgs without_default;
    for (const auto& [name, value] : kwargs)
      if (name != "default") without_default.emplace_back(name, value);
    return call_value(Value::constant(Ref::borrow(fn.ptr())), {Value::sequence(ValueKind::List, std::move(items))},
                      std::move(without_default));
  }
  // The keys are computed now (they must be constants); Python's stable sort orders the items,
  // and min/max take the first of equal keys as the builtins do.
  std::vector<ValuePtr> items = args.size() == 1 ? iterate(args[0]) : args;
  const std::string name = callable_name(fn) + "()";
  std::vector<ValuePtr> keys;
  for (const ValuePtr& item : items) keys.push_back(call_value(key, {item}, {}));
  const bool object_keys = std::any_of(keys.begin(), keys.end(), [](const ValuePtr& k) {
    return k->kind == ValueKind::NewObject || k->kind == ValueKind::Object;
  });
  if (object_keys) {
    // Keys whose classes compare in Python (functools.cmp_to_key's): the stand-ins order the
    // items by the keys computed above, each computed once as the builtins do.
    const char* by_keys = sorting ? "sorted_by_keys_" : fn.ptr() == min_builtin() ? "min_by_keys_" : "max_by_keys_";
    std::vector<ValuePtr> call_args = {Value::sequence(ValueKind::List, items), Value::sequence(ValueKind::List, keys)};
    if (sorting) call_args.push_back(Value::constant(reverse));
    else if (fallback) call_args.push_back(fallback);
    return inline_call(import_attr("cdynamo._polyfills", by_keys), std::move(call_args), {});
  }
  Ref keyed = check(PyList_New(0));
  for (size_t i = 0; i < items.size(); ++i) {
    const ValuePtr& computed = keys[i];
    if (!computed->is_fully_constant()) unsupported(name + " with a key that returns a " + computed->describe());
    Ref pair = check(PyTuple_Pack(2, computed->as_python_constant().ptr(), Ref(check(PyLong_FromSize_t(i))).ptr()));
    check_status(PyList_Append(keyed.ptr(), pair.ptr()));
  }
  Ref by_key = check(PyObject_CallFunction(import_attr("operator", "itemgetter").ptr(), "i", 0));
  Ref call_kwargs = check(Py_BuildValue("{s:O,s:O}", "key", by_key.ptr(), "reverse", reverse.ptr()));
  Ref call_args = check(PyTuple_Pack(1, keyed.ptr()));
  Ref order = checked(PyObject_Call(sorted_builtin.ptr(), call_args.ptr(), call_kwargs.ptr()));  // keys that do not compare raise, as in eager
  std::vector<ValuePtr> result;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order.ptr()); ++i)
    result.push_back(items[PyLong_AsSize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(order.ptr(), i), 1))]);
  if (sorting) return Value::sequence(ValueKind::List, std::move(result));
  if (!result.empty()) return result.front();
  if (fallback) return fallback;
  raise(PyExc_ValueError, name.substr(0, name.size() - 2) + "() iterable argument is empty");
}

// sorted(), min(), max() over objects of Python classes (their __lt__/__gt__ must run in the
// trace): the stand-ins in _polyfills that compare as the builtins do. Null otherwise.
ValuePtr Tracer::compare_objects_in_trace(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static PyObject* const builtins = PyEval_GetBuiltins();  // borrowed; lives forever
  const char* stand_in = fn.ptr() == PyDict_GetItemString(builtins, "sorted") ? "sorted_"
                         : fn.ptr() == PyDict_GetItemString(builtins, "min")  ? "min_"
                         : fn.ptr() == PyDict_GetItemString(builtins, "max")  ? "max_"
                                                                              : nullptr;
  if (!stand_in || args.empty()) return nullptr;
  if (args.size() == 1 && (args[0]->kind == ValueKind::Generator || args[0]->kind == ValueKind::Iterator)) {
    // min(_Match(*m) for m in matches) (torch.distributions' KL lookup): the items, then as a list.
    std::vector<ValuePtr> pulled = iterate(args[0]);
    std::vector<ValuePtr> listed = {Value::sequence(ValueKind::List, std::move(pulled))};
    if (ValuePtr compared = compare_objects_in_trace(fn, listed, kwargs)) return compared;
    return call_constant(fn, std::move(listed), kwargs);
  }
  const std::vector<ValuePtr>& items = args.size() == 1 && args[0]->is_sequence() ? args[0]->items : args;
  // Objects, or tuples holding objects or modules (sorted(layers.items()): names first, so the
  // modules are compared only where two names are equal, as in eager).
  std::function<bool(const ValuePtr&)> object = [&](const ValuePtr& item) {
    if (item->kind == ValueKind::Tuple) return std::any_of(item->items.begin(), item->items.end(), object);
    return item->kind == ValueKind::NewObject || item->kind == ValueKind::Object || item->kind == ValueKind::NNModule;
  };
  const bool objects = std::any_of(items.begin(), items.end(), [&](const ValuePtr& item) {
    return item->kind != ValueKind::NNModule && object(item);  // modules alone: compared as before
  });
  if (!objects) return nullptr;
  return inline_call(import_attr("cdynamo._polyfills", stand_in), args, kwargs);
}

// max(a, b) / min(a, b) of two one-element tensors: torch.maximum/minimum (a comparison of
// their values would need the data; the result holds the same value). Null otherwise.
ValuePtr Tracer::max_of_scalar_tensors(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  if (!is_min_or_max(fn) || args.size() != 2 || !kwargs.empty()) return nullptr;
  for (const auto& arg : args) {
    if (!arg->is_tensor()) return nullptr;
    Ref numel = check(PyObject_CallMethod(arg->fake.ptr(), "numel", nullptr));
    if (!PyLong_Check(numel.ptr()) || PyLong_AsLong(numel.ptr()) != 1) return nullptr;
  }
  const bool maximum = fn.ptr() == max_builtin();
  Ref op = import_attr("torch", maximum ? "maximum" : "minimum");
  return graph_.call("call_function", op, args, {}, maximum ? "max() of tensors" : "min() of tensors");
}

// min(k, t.size(0)), max(float(t.sum()), 1.0) of numbers one of which only the data gives (an
// unbacked size, an item()):
// torch.sym_min/sym_max, a number of the graph, where comparing them would need the data
// (torchvision's _topk_min after a boolean mask). Null otherwise.
ValuePtr Tracer::extreme_of_unbacked_numbers(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  if (!is_min_or_max(fn) || !kwargs.empty()) return nullptr;
  const std::vector<ValuePtr>& items = args.size() == 1 && args[0]->is_sequence() ? args[0]->items : args;
  if (items.size() < 2) return nullptr;
  Ref numbers = check(PyList_New(0));
  for (const ValuePtr& item : items) {
    if (!item->is_constant() ||
        !(PyLong_Check(item->obj.ptr()) || PyFloat_Check(item->obj.ptr()) || graph::is_symbolic(item->obj.ptr())))
      return nullptr;
    check_status(PyList_Append(numbers.ptr(), item->obj.ptr()));
  }
  Ref extreme = call_helper("cdynamo.shapes", "unbacked_extreme", {numbers, Ref::borrow(fn.ptr() == max_builtin() ? Py_True : Py_False)});
  return extreme.ptr() == Py_None ? nullptr : Value::constant(extreme);
}

}  // namespace cdynamo::interp
