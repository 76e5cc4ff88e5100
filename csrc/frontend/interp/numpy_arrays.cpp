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

// A NumPy array read from the frame (a global, a module's attribute): a TracedArray over a graph
// input, torch.from_numpy of it at each call (its memory: writes reach the array, and its values
// are read when the graph runs). One per array object. Null for arrays torch cannot take so.
ValuePtr Tracer::numpy_array_input(Handle array, const SourcePtr& source) {
  static PyObject* const ndarray = [] {  // never freed: outlives the interpreter
    Ref numpy = steal(PyImport_ImportModule("numpy"));
    if (!numpy) PyErr_Clear();
    return numpy ? check(PyObject_GetAttrString(numpy.ptr(), "ndarray")).release() : nullptr;
  }();
  if (!ndarray || Py_TYPE(array.ptr()) != reinterpret_cast<PyTypeObject*>(ndarray)) return nullptr;
  if (auto seen = array_inputs_.find(array.ptr()); seen != array_inputs_.end()) return seen->second;
  static PyObject* const convertible = import_attr("cdynamo._numpy_arrays", "is_input_array").release();  // never freed: likewise
  if (Ref(check(PyObject_CallOneArg(convertible, array.ptr()))).ptr() != Py_True) return nullptr;
  static Ref& from_numpy = *new Ref(import_attr("torch", "from_numpy"));  // never freed: likewise
  ValuePtr tensor = wrap(check(PyObject_CallOneArg(from_numpy.ptr(), array.ptr())), Source::converted(source, from_numpy, "torch.from_numpy"));
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "TracedArray"));  // never freed: likewise
  ValuePtr traced = call_value(Value::constant(made), {tensor}, {});
  keep_alive_.push_back(Ref::borrow(array.ptr()));
  array_inputs_.emplace(array.ptr(), traced);
  return traced;
}

// An ndarray numpy made from constants: a TracedArray of a tensor the graph makes from its
// values (_numpy_arrays.constant_array), or null for arrays of other dtypes or too large.
ValuePtr Tracer::constant_numpy_array(Handle array) {
  static Ref& ndarray = *new Ref(import_attr("numpy", "ndarray"));  // never freed: outlives the interpreter
  static Ref& limit = *new Ref(import_attr("cdynamo._numpy_arrays", "CONSTANT_ARRAY_LIMIT"));  // likewise
  static Ref& dtypes = *new Ref(import_attr("cdynamo._numpy_arrays", "_TORCH_DTYPE"));         // likewise
  if (Py_TYPE(array.ptr()) != reinterpret_cast<PyTypeObject*>(ndarray.ptr())) return nullptr;
  Ref size = check(PyObject_GetAttrString(array.ptr(), "size"));
  if (PyObject_RichCompareBool(size.ptr(), limit.ptr(), Py_GT) != 0) return nullptr;
  Ref dtype_name = check(PyObject_GetAttrString(Ref(check(PyObject_GetAttrString(array.ptr(), "dtype"))).ptr(), "name"));
  if (!PyDict_GetItemWithError(dtypes.ptr(), dtype_name.ptr())) {
    if (PyErr_Occurred()) throw PythonError();
    return nullptr;
  }
  Ref values = check(PyObject_CallMethod(array.ptr(), "tolist", nullptr));
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "constant_array"));  // never freed: outlives the interpreter
  return inline_call(made, {Value::constant(values), Value::constant(dtype_name)}, {});
}

ValuePtr Tracer::tensor_numpy(const ValuePtr& tensor, std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  static Ref& made = *new Ref(import_attr("cdynamo._numpy_arrays", "tensor_numpy"));  // never freed: outlives the interpreter
  args.insert(args.begin(), tensor);
  return inline_call(made, std::move(args), std::move(kwargs));
}

}  // namespace cdynamo::interp
