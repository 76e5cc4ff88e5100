// NumPy arrays made from traced tensors (cdynamo/_numpy_arrays.py's TracedArray): numpy functions
// called on them, Tensor.numpy(), and torch's conversions back to a tensor, traced in Python.
#include <algorithm>
#include <string_view>

#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

bool is_traced_array(const ValuePtr& value) {
  static Ref& traced_array = *new Ref(import_attr("cdynamo._numpy_arrays", "TracedArray"));  // never freed: outlives the interpreter
  return value && value->kind == ValueKind::NewObject && value->cls.ptr() == traced_array.ptr();
}

ValuePtr traced_array_tensor(const ValuePtr& array) {
  const ValuePtr& state = array->items.at(0);
  int index = state->dict_index(interned("tensor"));
  if (index < 0) throw InternalError("a TracedArray without its tensor");
  return state->items[index];
}

ValuePtr Tracer::call_with_arrays(Handle fn, const std::string& policy, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (policy == "fold_numpy") {
    if (all_constant(args, kwargs)) return nullptr;  // numpy on constant arrays: folded (calls.cpp)
    Ref replacement = call_helper("cdynamo._numpy_arrays", "replacement", {fn});
    if (replacement.ptr() == Py_None) return nullptr;
    return inline_call(replacement, std::move(args), std::move(kwargs));
  }
  if (args.empty()) return nullptr;
  if (is_constant_array(args[0])) {  // torch.from_numpy(array) of a constant array: its values
    static Ref& traced_array = *new Ref(import_attr("cdynamo._numpy_arrays", "TracedArray"));  // never freed: outlives the interpreter
    ValuePtr made = call_value(Value::constant(traced_array), {array_tensor(args[0])}, {});
    std::vector<ValuePtr> with_array = args;
    with_array[0] = made;
    if (ValuePtr converted = call_with_arrays(fn, policy, with_array, kwargs)) return converted;
    return nullptr;
  }
  if (!is_traced_array(args[0])) return nullptr;
  static Ref& conversions = *new Ref(check(Py_BuildValue("(OOOO)", import_attr("torch", "from_numpy").ptr(),  // never freed: outlives the interpreter
                                                          import_attr("torch", "as_tensor").ptr(), import_attr("torch", "asarray").ptr(),
                                                          import_attr("torch", "tensor").ptr())));
  int found = PySequence_Contains(conversions.ptr(), fn.ptr());
  check_status(found);
  if (!found) return nullptr;
  static Ref& to_tensor = *new Ref(import_attr("cdynamo._numpy_arrays", "to_tensor"));  // never freed: outlives the interpreter
  args.insert(args.begin(), Value::constant(Ref::borrow(fn.ptr())));
  return inline_call(to_tensor, std::move(args), std::move(kwargs));
}

bool is_constant_array(const ValuePtr& value) {
  static PyObject* const check_array = import_attr("cdynamo._numpy_arrays", "is_constant_array").release();  // never freed: outlives the interpreter
  if (!value->is_constant() || std::string_view(Py_TYPE(value->obj.ptr())->tp_name) != "numpy.ndarray") return false;
  return Ref(check(PyObject_CallOneArg(check_array, value->obj.ptr()))).ptr() == Py_True;
}

// A NumPy array read from the frame (a global, a module's attribute): a constant whose dtype,
// shape and contents are guarded (a change recompiles), or null for others.
ValuePtr Tracer::constant_array_input(Handle array, const SourcePtr& source) {
  ValuePtr value = Value::constant(Ref::borrow(array.ptr()), source);
  if (!source || !is_constant_array(value)) return nullptr;
  static Ref& state = *new Ref(import_attr("cdynamo._numpy_arrays", "array_state"));  // never freed: outlives the interpreter
  Source::converted(source, state, "array_state")->manager(*guards_).add_equals_match(check(PyObject_CallOneArg(state.ptr(), array.ptr())));
  return value;
}

// A constant array given to a torch operation: the tensor of its values, made by the graph.
ValuePtr Tracer::array_tensor(const ValuePtr& array) {
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "array_tensor"));  // never freed: outlives the interpreter
  Ref values = check(PyObject_CallMethod(array->obj.ptr(), "tolist", nullptr));
  Ref dtype = check(PyObject_GetAttrString(Ref(check(PyObject_GetAttrString(array->obj.ptr(), "dtype"))).ptr(), "name"));
  return inline_call(made, {Value::constant(values), Value::constant(dtype)}, {});
}

// Constant arrays among a torch operation's arguments (and in its list arguments) as tensors.
void Tracer::arrays_as_tensors(std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  // A TracedArray (an array numpy made from a traced tensor): the tensor it holds.
  auto as_tensor = [&](ValuePtr& value) {
    if (is_constant_array(value)) value = array_tensor(value);
    else if (is_traced_array(value)) value = traced_array_tensor(value);
  };
  auto convert = [&](ValuePtr& value) {
    if (value->is_sequence() && !value->is_fully_constant()) {
      auto is_array = [](const ValuePtr& item) { return is_constant_array(item) || is_traced_array(item); };
      if (std::none_of(value->items.begin(), value->items.end(), is_array)) return;
      std::vector<ValuePtr> items = value->items;  // a copy: the sequence may be the program's own list
      for (ValuePtr& item : items) as_tensor(item);
      value = Value::sequence(value->kind, std::move(items));
    } else {
      as_tensor(value);
    }
  };
  for (ValuePtr& arg : args) convert(arg);
  for (auto& [name, value] : kwargs) convert(value);
}

ValuePtr Tracer::tensor_numpy(const ValuePtr& tensor, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "tensor_numpy"));  // never freed: outlives the interpreter
  args.insert(args.begin(), tensor);
  return inline_call(made, std::move(args), std::move(kwargs));
}

}  // namespace cdynamo::interp
