// Python-visible functions of the bytecode part: cdynamo._C._testing.decode / roundtrip /
// assemble_from / stack_depth / opcode_info. Assumes registration happens once, from PyInit__C.
#include <string>

#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/bytecode/tables.h"
#include "module.h"

namespace cdynamo {

namespace {

using bytecode::Instruction;
using bytecode::InstructionList;

PyCodeObject* code_arg(PyObject* obj) {
  if (!PyCode_Check(obj)) throw UserError("expected a code object", PyExc_TypeError);
  return reinterpret_cast<PyCodeObject*>(obj);
}

// -1 ("none") shows as None, as in code.co_positions().
Ref int_or_none(int v) { return v < 0 ? Ref::borrow(Py_None) : check(PyLong_FromLong(v)); }

int int_from(PyObject* obj, int none_value) {
  if (obj == Py_None) return none_value;
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) throw PythonError();
  return static_cast<int>(v);
}

Ref instruction_tuple(const Instruction& inst) {
  Ref pos = check(Py_BuildValue("(NNNN)", int_or_none(inst.position.line).release(),
                                int_or_none(inst.position.end_line).release(),
                                int_or_none(inst.position.col).release(),
                                int_or_none(inst.position.end_col).release()));
  Ref handler = Ref::borrow(Py_None);
  if (inst.handler) {
    handler = check(Py_BuildValue("(iiO)", inst.handler->target, inst.handler->depth,
                                  inst.handler->lasti ? Py_True : Py_False));
  }
  return check(Py_BuildValue("(siiiOO)", bytecode::opcode_name(inst.opcode), inst.arg, inst.target,
                             inst.offset, pos.ptr(), handler.ptr()));
}

Ref instruction_list(const InstructionList& insts) {
  Ref list = check(PyList_New(static_cast<Py_ssize_t>(insts.size())));
  for (size_t i = 0; i < insts.size(); ++i) {
    PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), instruction_tuple(insts[i]).release());
  }
  return list;
}

Ref item(PyObject* seq, Py_ssize_t i) { return check(PySequence_GetItem(seq, i)); }

// Accepts the tuple shape decode() returns; the opcode may be a name or a number.
Instruction parse_instruction(PyObject* t) {
  if (!PySequence_Check(t) || PySequence_Size(t) != 6) {
    throw UserError("an instruction is (opname, arg, target, offset, position, handler)",
                    PyExc_TypeError);
  }
  Instruction inst;
  Ref op = item(t, 0);
  if (PyUnicode_Check(op.ptr())) {
    const char* name = PyUnicode_AsUTF8(op.ptr());
    if (!name) throw PythonError();
    inst.opcode = bytecode::opcode_from_name(name);
    if (inst.opcode < 0) throw UserError(std::string("unknown opcode ") + name, PyExc_ValueError);
  } else {
    inst.opcode = int_from(op.ptr(), -1);
  }
  inst.arg = int_from(item(t, 1).ptr(), 0);
  inst.target = int_from(item(t, 2).ptr(), -1);
  inst.offset = int_from(item(t, 3).ptr(), -1);
  Ref pos = item(t, 4);
  if (pos.ptr() != Py_None) {
    if (PySequence_Size(pos.ptr()) != 4) throw UserError("a position has 4 fields", PyExc_TypeError);
    inst.position.line = int_from(item(pos.ptr(), 0).ptr(), -1);
    inst.position.end_line = int_from(item(pos.ptr(), 1).ptr(), -1);
    inst.position.col = int_from(item(pos.ptr(), 2).ptr(), -1);
    inst.position.end_col = int_from(item(pos.ptr(), 3).ptr(), -1);
  }
  Ref handler = item(t, 5);
  if (handler.ptr() != Py_None) {
    if (PySequence_Size(handler.ptr()) != 3) {
      throw UserError("a handler is (target, depth, lasti)", PyExc_TypeError);
    }
    int lasti = PyObject_IsTrue(item(handler.ptr(), 2).ptr());
    check_status(lasti);
    inst.handler = bytecode::ExceptionHandler{int_from(item(handler.ptr(), 0).ptr(), -1),
                                              int_from(item(handler.ptr(), 1).ptr(), 0), lasti != 0};
  }
  return inst;
}

// Ownership contract: `code` is borrowed; returns a new reference to a list of new tuples, or
// NULL with an exception set.
PyObject* py_decode(PyObject*, PyObject* code) {
  CDYNAMO_BOUNDARY_BEGIN
  return instruction_list(bytecode::decode(code_arg(code))).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: `code` is borrowed; returns a new reference to a new code object, or NULL
// with an exception set.
PyObject* py_roundtrip(PyObject*, PyObject* code) {
  CDYNAMO_BOUNDARY_BEGIN
  PyCodeObject* co = code_arg(code);
  return bytecode::assemble(bytecode::decode(co), co, nullptr).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: all arguments are borrowed (replace_kwargs may be None or absent); returns
// a new reference to a new code object, or NULL with an exception set.
PyObject* py_assemble_from(PyObject*, PyObject* args, PyObject* kwargs) {
  CDYNAMO_BOUNDARY_BEGIN
  static const char* names[] = {"code", "instructions", "replace_kwargs", nullptr};
  PyObject *code, *list, *replace_kwargs = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:assemble_from", const_cast<char**>(names),
                                   &code, &list, &replace_kwargs)) {
    return nullptr;
  }
  PyCodeObject* co = code_arg(code);
  Ref seq = check(PySequence_Fast(list, "instructions must be a sequence"));
  InstructionList insts;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  insts.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) insts.push_back(parse_instruction(PySequence_Fast_GET_ITEM(seq.ptr(), i)));
  return bytecode::assemble(insts, co, replace_kwargs == Py_None ? nullptr : replace_kwargs).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: `code` is borrowed; returns a new reference to an int, or NULL with an
// exception set.
PyObject* py_stack_depth(PyObject*, PyObject* code) {
  CDYNAMO_BOUNDARY_BEGIN
  return check(PyLong_FromLong(bytecode::stack_depth(bytecode::decode(code_arg(code))))).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: `op` is borrowed; returns a new reference to
// (name, cache_entries, has_jump_target, is_backward_jump, is_terminator), or NULL with an
// exception set.
PyObject* py_opcode_info(PyObject*, PyObject* op) {
  CDYNAMO_BOUNDARY_BEGIN
  int opcode = int_from(op, -1);
  return check(Py_BuildValue("(siOOO)", bytecode::opcode_name(opcode),
                             bytecode::inline_cache_entries(opcode),
                             bytecode::has_jump_target(opcode) ? Py_True : Py_False,
                             bytecode::is_backward_jump(opcode) ? Py_True : Py_False,
                             bytecode::is_terminator(opcode) ? Py_True : Py_False))
      .release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef testing_methods[] = {
    {"decode", py_decode, METH_O,
     "decode(code) -> [(opname, arg, target_or_-1, offset, (line, end_line, col, end_col), "
     "(handler_target, depth, lasti) or None)]"},
    {"roundtrip", py_roundtrip, METH_O, "roundtrip(code) -> code: decode, then assemble unchanged"},
    {"assemble_from", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_assemble_from)),
     METH_VARARGS | METH_KEYWORDS,
     "assemble_from(code, instructions, replace_kwargs=None) -> code built from decode()-shaped "
     "tuples, other fields from `code`"},
    {"stack_depth", py_stack_depth, METH_O, "stack_depth(code) -> int, computed from its bytecode"},
    {"opcode_info", py_opcode_info, METH_O,
     "opcode_info(op) -> (name, caches, has_jump_target, is_backward_jump, is_terminator)"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_bytecode(PyObject* module, PyObject* testing) {
  (void)module;
  bytecode::init_opcode_tables();
  add_functions(testing, testing_methods);
}

}  // namespace cdynamo
