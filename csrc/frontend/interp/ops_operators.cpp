// Opcode handlers for operators (binary, comparison, unary, is, in), intrinsics and string
// formatting. Assumes CPython 3.11/3.12 bytecode (oparg encodings from kOparg).
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

// CALL_INTRINSIC_1's operands (3.12's Include/internal/pycore_intrinsics.h).
constexpr int kIntrinsicStopIterationError = 3;
constexpr int kIntrinsicUnaryPositive = 5;
constexpr int kIntrinsicListToTuple = 6;

}  // namespace

bool Tracer::op_binary_op(const bytecode::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  static Ref& ops = *new Ref(call_helper("cdynamo._trace_support", "binary_operators", {}));  // never freed: outlives the interpreter
  if (inst.arg < 0 || inst.arg >= PyTuple_GET_SIZE(ops.ptr())) unsupported("unknown binary operator");
  binary_op(PyTuple_GET_ITEM(ops.ptr(), inst.arg), "binary operator", lhs, rhs);
  return true;
}

bool Tracer::op_compare_op(const bytecode::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  compare_op(inst.arg >> kOparg.compare_op_shift, lhs, rhs);
  return true;
}

bool Tracer::op_unary_negative(const bytecode::Instruction&) {
  unary_op("neg", pop());
  return true;
}

bool Tracer::op_unary_invert(const bytecode::Instruction&) {
  unary_op("invert", pop());
  return true;
}

bool Tracer::op_unary_positive(const bytecode::Instruction&) {
  unary_op("pos", pop());
  return true;
}

bool Tracer::op_unary_not(const bytecode::Instruction&) {
  push(Value::boolean(!truth_value(pop())));
  return true;
}

bool Tracer::op_call_intrinsic_1(const bytecode::Instruction& inst) {
  switch (inst.arg) {
    case kIntrinsicUnaryPositive: return op_unary_positive(inst);
    case kIntrinsicListToTuple: return op_list_to_tuple(inst);
    case kIntrinsicStopIterationError: {  // a generator's StopIteration becomes RuntimeError
      ValuePtr exception = pop();
      if (exception->obj && PyObject_TypeCheck(exception->obj.ptr(), as_type(PyExc_StopIteration)))
        exception = Value::constant(check(PyObject_CallFunction(PyExc_RuntimeError, "s", "generator raised StopIteration")));
      push(exception);
      return true;
    }
    default: unsupported("intrinsic function " + std::to_string(inst.arg));
  }
}

namespace {

bool is_container(const ValuePtr& value) {
  return value->kind == ValueKind::List || value->kind == ValueKind::Dict || value->kind == ValueKind::Set ||
         value->kind == ValueKind::Tuple;
}

// A list, dict, set or tuple the trace made (no source, no real object behind it).
bool made_by_trace(const ValuePtr& value) { return is_container(value) && !value->source && !value->obj; }

// container: a list, dict, set or tuple the trace holds; other: a real object of another type.
bool container_and_other_type(const ValuePtr& container, const ValuePtr& other) {
  if (!is_container(container) || !other->obj || is_container(other)) return false;
  PyObject* o = other->obj.ptr();
  return !PyList_Check(o) && !PyDict_Check(o) && !PyAnySet_Check(o) && !PyTuple_Check(o);
}

}  // namespace

bool Tracer::op_is_op(const bytecode::Instruction& inst) {
  ValuePtr rhs = pop();
  ValuePtr lhs = pop();
  bool same;
  if (lhs->is_constant() && rhs->is_constant()) same = lhs->obj.ptr() == rhs->obj.ptr();
  else if (lhs->is_tensor() && rhs->is_tensor())
    // One fake per tensor object: an in-place method's result, or x.contiguous() of a contiguous
    // x, is the very tensor it was called on (its own graph node, the same fake), as in eager.
    same = lhs->fake && rhs->fake ? lhs->fake.ptr() == rhs->fake.ptr() : lhs->node.ptr() == rhs->node.ptr();
  else if (lhs->is_tensor() || rhs->is_tensor()) same = false;  // every tensor the trace holds is a Tensor value
  else if (lhs->kind == ValueKind::NewObject || rhs->kind == ValueKind::NewObject) same = lhs == rhs;
  else if (lhs->kind == ValueKind::UserMethod || rhs->kind == ValueKind::UserMethod ||
           lhs->kind == ValueKind::TensorMethod || rhs->kind == ValueKind::TensorMethod)
    // A bound method is a new object per attribute read (its obj is the function it binds, never
    // the function itself): only the one Value is itself.
    same = lhs == rhs;
  else if (lhs->obj && rhs->obj) same = lhs->obj.ptr() == rhs->obj.ptr();
  else if (!lhs->source && !rhs->source && lhs->kind == rhs->kind &&
           (lhs->kind == ValueKind::List || lhs->kind == ValueKind::Dict || lhs->kind == ValueKind::Set))
    same = lhs == rhs;  // containers made by the trace: one Value per object
  else if ((lhs->kind == ValueKind::List || lhs->kind == ValueKind::Dict) &&
           (rhs->kind == ValueKind::List || rhs->kind == ValueKind::Dict) && !lhs->obj && !rhs->obj)
    same = lhs == rhs;  // lists and dicts read from the frame have one Value per object too (container_inputs_)
  else if (lhs->is_constant() || rhs->is_constant()) same = false;  // a constant is not a traced value
  else if ((lhs->is_sequence() && !lhs->source) || (rhs->is_sequence() && !rhs->source))
    same = lhs == rhs;  // a tuple or list the trace made is itself, no object from elsewhere (a sentinel)
  else if ((lhs->kind == ValueKind::Generator || lhs->kind == ValueKind::Iterator) &&
           (rhs->kind == ValueKind::Generator || rhs->kind == ValueKind::Iterator))
    same = lhs == rhs;  // one Value per generator or iterator (iter(g) is g)
  else if ((made_by_trace(lhs) && rhs->obj) || (made_by_trace(rhs) && lhs->obj))
    same = false;  // a container the trace made is a new object, never one from elsewhere (a dataclass's sentinel)
  else if (container_and_other_type(lhs, rhs) || container_and_other_type(rhs, lhs))
    same = false;  // a list or dict is never an object of another type
  else unsupported("'is' between a " + lhs->describe() + " and a " + rhs->describe());
  push(Value::boolean(same != (inst.arg == 1)));
  return true;
}

bool Tracer::op_contains_op(const bytecode::Instruction& inst) {
  ValuePtr container = pop();
  ValuePtr item = pop();
  if (container->is_tensor() && (item->is_tensor() || item->is_constant())) {
    push(tensor_contains(container, item, inst.arg == 1));
    return true;
  }
  push(Value::boolean(contains(std::move(container), item) != (inst.arg == 1)));
  return true;
}

// `item in t` is bool((item == t).any()) (Tensor.__contains__): an unbacked bool in the graph
// where item() stays there (config.capture_scalar_outputs, fullgraph); its values decide else.
ValuePtr Tracer::tensor_contains(const ValuePtr& tensor, const ValuePtr& item, bool negated) {
  const bool number = item->is_constant() && (PyLong_Check(item->obj.ptr()) || PyFloat_Check(item->obj.ptr()) ||
                                              PyComplex_Check(item->obj.ptr()) || graph::is_symbolic(item->obj.ptr()));
  if (!item->is_tensor() && !number)
    raise(PyExc_RuntimeError, "Tensor.__contains__ only supports Tensor or scalar, but you passed in a " +
                                  std::string(Py_TYPE(item->obj.ptr())->tp_name) + ".");
  if (!capture_scalar_outputs)
    unsupported("'in' on a tensor depends on its values (set config.capture_scalar_outputs = True to keep it in the graph)");
  compare_op(Py_EQ, item, tensor);
  ValuePtr found = call_value(load_attr(pop(), "any"), {}, {});
  if (negated) found = call_value(load_attr(found, "logical_not"), {}, {});  // in the tensor: no op on a bool symbol
  return tensor_truth(found);
}

// True only where lhs and rhs are one object for certain (one Value, one constant, one tensor).
static bool certainly_identical(const ValuePtr& lhs, const ValuePtr& rhs) {
  if (lhs == rhs) return true;
  if (lhs->is_constant() && rhs->is_constant()) return lhs->obj.ptr() == rhs->obj.ptr();
  if (lhs->is_tensor() && rhs->is_tensor()) return lhs->fake && lhs->fake.ptr() == rhs->fake.ptr();
  return false;
}

bool Tracer::contains(ValuePtr container, const ValuePtr& item) {
  refresh_view(*container);
  if (is_frame_globals(container) && item->is_constant() && PyUnicode_CheckExact(item->obj.ptr())) {
    // `name in globals()`: whether the module defines it, guarded as a global read is.
    if (written_globals_.count({frame().globals, to_std_string(item->obj)})) return true;
    PyObject* found = PyDict_GetItemWithError(frame().globals, item->obj.ptr());
    if (!found && PyErr_Occurred()) throw PythonError();
    if (!found) unsupported("'name' in globals() for a name the module does not define");
    globals_item(item);
    return true;
  }
  if (container->kind == ValueKind::Set) {
    int found = PySet_Contains(container->obj.ptr(), set_member(container, item).ptr());
    if (found < 0) raise_python_error();
    return found;
  }
  if (container->kind == ValueKind::NewObject && container->items.size() > 1 && container->items[1] &&
      !python_special_method(container, "__contains__")) {
    container = container->items[1];  // a dict subclass's own items
  } else if (container->kind == ValueKind::Object && !python_special_method(container, "__contains__")) {
    if (ValuePtr contents = dict_contents(container)) container = contents;
  }
  if (container->kind == ValueKind::NNModule && item->is_constant() && container->obj) {
    // "key" in a ModuleDict (or any container module): its children, which the trace takes as
    // fixed by the module's identity (guarded), as it does when it reads them.
    int found = PySequence_Contains(container->obj.ptr(), item->obj.ptr());
    if (found < 0) raise_python_error();
    return found;
  }
  if (Ref method = own_module_method(container, "__contains__"))  // a layer stack's own: traced
    return truth_value(inline_call(method, {container, item}, {}));
  if (container->kind == ValueKind::Dict) return dict_find(container, item) >= 0;
  if (Ref method = python_special_method(container, "__contains__"))
    return truth_value(inline_call(method, {container, item}, {}));  // `in` takes bool() of it
  // As list and tuple do: each element is the item itself, or `element == item` is true
  // (objects' __eq__ written in Python, NotImplemented handled as the operator does).
  auto matches = [&](const ValuePtr& element) {
    if (certainly_identical(element, item)) return true;
    if (element->is_tensor() || item->is_tensor())
      unsupported("'in' comparing a tensor with == (its values decide, not the trace)");
    compare_op(Py_EQ, element, item);
    return truth_value(pop());
  };
  if (container->is_sequence() && !(container->is_fully_constant() && item->is_fully_constant())) {
    for (const ValuePtr& element : container->items)
      if (matches(element)) return true;
    return false;
  }
  if (container->kind == ValueKind::Generator || container->kind == ValueKind::Iterator) {
    while (ValuePtr element = next_item(container))  // consumed up to the match, as in CPython
      if (matches(element)) return true;
    return false;
  }
  if ((container->kind == ValueKind::Object || container->kind == ValueKind::NewObject) &&
      (python_special_method(container, "__iter__") || python_special_method(container, "__getitem__"))) {
    // No __contains__: `in` walks iter(obj), or obj[0], obj[1], ... (the sequence protocol).
    for (const ValuePtr& element : iterate(container))
      if (matches(element)) return true;
    return false;
  }
  if (!container->is_fully_constant() || !item->is_fully_constant()) unsupported("'in' on a " + container->describe());
  int found = PySequence_Contains(container->as_python_constant().ptr(), item->as_python_constant().ptr());
  if (found < 0) raise_python_error();
  return found;
}

bool Tracer::op_format_value(const bytecode::Instruction& inst) {
  ValuePtr spec = (inst.arg & 0x04) ? pop() : nullptr;
  ValuePtr value = pop();
  int conversion = inst.arg & 0x03;
  if ((value->kind == ValueKind::NewObject || value->kind == ValueKind::Object) && (!spec || spec->is_constant())) {
    // f"{obj}", f"{obj!r}": the text its class's __str__/__repr__ (written in Python) makes.
    static PyObject* const builtins = PyEval_GetBuiltins();  // borrowed; lives forever
    Ref text_builtin = Ref::borrow(PyDict_GetItemString(builtins, conversion == 2 ? "repr" : "str"));
    Ref format = python_special_method(value, "__format__");
    if (format && PyFunction_Check(format.ptr()) && conversion == 0) {
      // f"{obj:spec}": the class's own __format__, given the spec ("" when none).
      ValuePtr given = spec ? spec : Value::constant(check(PyUnicode_FromString("")));
      ValuePtr text = inline_call(format, {value, given}, {});
      if (!text->is_constant() || !PyUnicode_Check(text->obj.ptr()))
        raise(PyExc_TypeError, "__format__ must return a str, not " + text->describe());
      push(text);
      return true;
    }
    if (!format && (conversion == 0 || conversion == 1 || conversion == 2))
      if (ValuePtr text = call_special_method_builtin(text_builtin, {value}, {})) {
        value = text;
        conversion = 0;
      }
  }
  if (!value->is_fully_constant() || (spec && !spec->is_constant())) unsupported("formatting a " + value->describe());
  Ref object = graph::specialize_all(value->as_python_constant());  // text shows values, not symbols
  if (conversion == 1) object = check(PyObject_Str(object.ptr()));
  else if (conversion == 2) object = check(PyObject_Repr(object.ptr()));
  else if (conversion == 3) object = check(PyObject_ASCII(object.ptr()));
  push(Value::constant(check(PyObject_Format(object.ptr(), spec ? spec->obj.ptr() : nullptr))));
  return true;
}

bool Tracer::op_build_string(const bytecode::Instruction& inst) {
  std::vector<ValuePtr> parts = pop_n(inst.arg);
  Ref list = check(PyList_New(0));
  for (const auto& part : parts) {
    if (!part->is_constant()) unsupported("building a string from a " + part->describe());
    check_status(PyList_Append(list.ptr(), part->obj.ptr()));
  }
  Ref empty = check(PyUnicode_FromString(""));
  push(Value::constant(check(PyUnicode_Join(empty.ptr(), list.ptr()))));
  return true;
}

}  // namespace cdynamo::interp
