// NumPy arrays made from traced tensors (cdynamo/_numpy_arrays.py's TracedArray): numpy functions
// called on them, Tensor.numpy(), and torch's conversions back to a tensor, traced in Python.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

bool is_traced_array(const ValuePtr& value) {
  static Ref& traced_array = *new Ref(import_attr("cdynamo._numpy_arrays", "TracedArray"));  // never freed: outlives the interpreter
  return value && value->kind == ValueKind::NewObject && value->cls.ptr() == traced_array.ptr();
}

ValuePtr traced_array_tensor(const ValuePtr& array) {
  const ValuePtr& state = array->items.at(0);
  int index = state->dict_index(Ref(check(PyUnicode_InternFromString("tensor"))));
  if (index < 0) throw InternalError("a TracedArray without its tensor");
  return state->items[index];
}

ValuePtr Tracer::call_with_arrays(Handle fn, const std::string& policy, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (policy == "fold_numpy") {
    Ref replacement = call_helper("cdynamo._numpy_arrays", "replacement", {fn});
    if (replacement.ptr() == Py_None) return nullptr;
    return inline_call(replacement, std::move(args), std::move(kwargs));
  }
  if (args.empty() || !is_traced_array(args[0])) return nullptr;
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

ValuePtr Tracer::tensor_numpy(const ValuePtr& tensor, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "tensor_numpy"));  // never freed: outlives the interpreter
  args.insert(args.begin(), tensor);
  return inline_call(made, std::move(args), std::move(kwargs));
}

}  // namespace cdynamo::interp
