// Opcode handlers for calls and the function objects the traced code makes.
// Assumes CPython 3.11/3.12 bytecode (KW_NAMES before CALL); rows in opcode_table.cpp.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

bool Tracer::op_kw_names(const bytecode::Instruction& inst) {
  frame().kw_names = Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, inst.arg));
  return true;
}

bool Tracer::op_call(const bytecode::Instruction& inst) {
  Ref names = std::move(frame().kw_names);
  call(inst.arg, names);
  return true;
}

bool Tracer::op_call_function_ex(const bytecode::Instruction& inst) {
  ValuePtr kwargs = (inst.arg & 1) ? pop() : nullptr;
  ValuePtr args = pop();
  ValuePtr callable = pop();
  pop();  // the NULL below the callable
  if (args->is_constant() && PyTuple_Check(args->obj.ptr())) {
    std::vector<ValuePtr> items;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args->obj.ptr()); ++i)
      items.push_back(Value::constant(Ref::borrow(PyTuple_GET_ITEM(args->obj.ptr(), i))));
    args = Value::sequence(ValueKind::Tuple, std::move(items));
  }
  if (!args->is_sequence() && args->kind != ValueKind::Dict && args->kind != ValueKind::NNModule)
    args = Value::sequence(ValueKind::Tuple, iterate(args));  // f(*reversed(dims)), f(*map(...)): its items
  if (!args->is_sequence()) unsupported("f(*args) where args is a " + args->describe());
  graph::KwArgs keywords;
  if (kwargs && kwargs->kind == ValueKind::Dict) {
    for (size_t i = 0; i < kwargs->keys.size(); ++i) keywords.emplace_back(to_std_string(kwargs->keys[i]), kwargs->items[i]);
  } else if (kwargs) {
    if (!kwargs->is_constant() || !PyDict_Check(kwargs->obj.ptr()))
      unsupported("f(**kwargs) where kwargs is a " + kwargs->describe());
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs->obj.ptr(), &pos, &key, &item))
      keywords.emplace_back(to_std_string(key), Value::constant(Ref::borrow(item)));
  }
  push(call_value(callable, args->items, std::move(keywords)));
  return true;
}

bool Tracer::op_make_function(const bytecode::Instruction& inst) {
  make_function(inst.arg);
  return true;
}

}  // namespace cdynamo::interp
