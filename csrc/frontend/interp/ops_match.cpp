// Opcode handlers of the match statement (MATCH_SEQUENCE, MATCH_MAPPING, MATCH_KEYS,
// MATCH_CLASS, GET_LEN) and the assert statement's LOAD_ASSERTION_ERROR, as CPython 3.11/3.12 run them.
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

// The Py_TPFLAGS_SEQUENCE / Py_TPFLAGS_MAPPING flag of the value's type, as `case [...]` and
// `case {...}` test it.
bool has_type_flag(const ValuePtr& value, Handle type, unsigned long flag) {
  switch (value->kind) {
    case ValueKind::Tuple:
    case ValueKind::List: return flag == Py_TPFLAGS_SEQUENCE;
    case ValueKind::Dict: return flag == Py_TPFLAGS_MAPPING;
    case ValueKind::Tensor: return false;
    default: return PyType_Check(type.ptr()) && (as_type(type)->tp_flags & flag);
  }
}

}  // namespace

bool Tracer::op_match_sequence(const bytecode::Instruction&) {
  push(Value::boolean(has_type_flag(top(), apparent_type(top()), Py_TPFLAGS_SEQUENCE)));
  return true;
}

bool Tracer::op_match_mapping(const bytecode::Instruction&) {
  push(Value::boolean(has_type_flag(top(), apparent_type(top()), Py_TPFLAGS_MAPPING)));
  return true;
}

bool Tracer::op_get_len(const bytecode::Instruction&) {
  static PyObject* const len = PyDict_GetItemString(PyEval_GetBuiltins(), "len");  // borrowed; lives forever
  push(call_value(Value::constant(Ref::borrow(len)), {top()}, {}));
  return true;
}

bool Tracer::op_match_keys(const bytecode::Instruction&) {
  // TOS: the pattern's keys, TOS1: the subject (both stay); pushes their values, or None.
  ValuePtr keys = top(1);
  ValuePtr subject = top(2);
  if (subject->kind != ValueKind::Dict || !keys->is_constant() || !PyTuple_Check(keys->obj.ptr()))
    unsupported("a mapping pattern on a " + subject->describe());
  std::vector<ValuePtr> values;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys->obj.ptr()); ++i) {
    int at = subject->dict_index(Ref::borrow(PyTuple_GET_ITEM(keys->obj.ptr(), i)));
    if (at < 0) {
      push(Value::constant(Ref::borrow(Py_None)));
      return true;
    }
    values.push_back(subject->items[at]);
  }
  push(Value::sequence(ValueKind::Tuple, std::move(values)));
  return true;
}

bool Tracer::op_match_class(const bytecode::Instruction& inst) {
  // TOS: keyword attribute names, TOS1: the class, TOS2: the subject; pushes the positional
  // then keyword attributes, or None when the subject is not an instance or lacks one.
  ValuePtr names = pop();
  ValuePtr cls = pop();
  ValuePtr subject = pop();
  if (!cls->is_constant() || !PyType_Check(cls->obj.ptr())) raise(PyExc_TypeError, "called match pattern must be a class");
  static PyObject* const isinstance = PyDict_GetItemString(PyEval_GetBuiltins(), "isinstance");  // borrowed
  if (!truth_value(call_value(Value::constant(Ref::borrow(isinstance)), {subject, cls}, {}))) {
    push(Value::constant(Ref::borrow(Py_None)));
    return true;
  }
  std::vector<std::string> attributes;
  PyTypeObject* type = as_type(cls->obj);
  // int(x), str(x), tuple(x), ...: one positional pattern matches the subject itself.
  const bool matches_self = type->tp_flags & (Py_TPFLAGS_LONG_SUBCLASS | Py_TPFLAGS_LIST_SUBCLASS |
                                              Py_TPFLAGS_TUPLE_SUBCLASS | Py_TPFLAGS_BYTES_SUBCLASS |
                                              Py_TPFLAGS_UNICODE_SUBCLASS | Py_TPFLAGS_DICT_SUBCLASS);
  std::vector<ValuePtr> found;
  if (inst.arg > 0) {
    Ref match_args = steal(PyObject_GetAttrString(cls->obj.ptr(), "__match_args__"));
    if (!match_args) {
      PyErr_Clear();
      if (!(matches_self || type == &PyFloat_Type || type == &PyBool_Type || type == &PySet_Type ||
            type == &PyFrozenSet_Type || type == &PyByteArray_Type) || inst.arg > 1)
        raise(PyExc_TypeError, std::string(type->tp_name) + "() accepts 0 positional sub-patterns (" +
                                   std::to_string(inst.arg) + " given)");
      found.push_back(subject);
    } else {
      if (!PyTuple_Check(match_args.ptr()) || PyTuple_GET_SIZE(match_args.ptr()) < inst.arg)
        raise(PyExc_TypeError, std::string(type->tp_name) + "() accepts fewer positional sub-patterns");
      for (int i = 0; i < inst.arg; ++i) attributes.push_back(to_std_string(PyTuple_GET_ITEM(match_args.ptr(), i)));
    }
  }
  for (Py_ssize_t i = 0; names->is_constant() && i < PyTuple_GET_SIZE(names->obj.ptr()); ++i)
    attributes.push_back(to_std_string(PyTuple_GET_ITEM(names->obj.ptr(), i)));
  for (const std::string& name : attributes) {
    try {
      found.push_back(load_attr(subject, name));
    } catch (const TracedException& raised) {
      if (!is_instance_of(raised, PyExc_AttributeError)) throw;
      push(Value::constant(Ref::borrow(Py_None)));  // a missing attribute: no match
      return true;
    }
  }
  push(Value::sequence(ValueKind::Tuple, std::move(found)));
  return true;
}

bool Tracer::op_load_assertion_error(const bytecode::Instruction&) {
  push(Value::constant(Ref::borrow(PyExc_AssertionError)));
  return true;
}

}  // namespace cdynamo::interp
