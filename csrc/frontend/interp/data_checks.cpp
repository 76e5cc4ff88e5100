// A branch on tensor data whose one side only raises (`if not valid: raise ValueError(...)`,
// `assert (x > 0).all()`): a graph node that checks the condition when the graph runs, instead of
// a graph break. Assumes CPython 3.11/3.12 bytecode and _checks.check_node.
#include <string_view>
#include <unordered_set>

#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

// What a block that only builds an exception and raises it may run: loads, the message's
// formatting and the calls making it (none of which runs when the check passes, and which the
// check does not run when it fails: the message is the one thing it cannot rebuild).
constexpr std::string_view kRaisingBlockOpcodes[] = {
    "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD",
    "LOAD_CLOSURE", "LOAD_ASSERTION_ERROR", "LOAD_SUPER_ATTR", "PUSH_NULL", "PRECALL", "CALL", "CALL_FUNCTION_EX",
    "KW_NAMES", "FORMAT_VALUE", "BUILD_STRING", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BINARY_OP",
    "BINARY_SUBSCR", "COPY", "SWAP", "NOP", "CALL_INTRINSIC_1"};

bool may_run_in_raising_block(int opcode) {
  static const std::unordered_set<int> allowed = [] {
    std::unordered_set<int> opcodes;
    for (std::string_view name : kRaisingBlockOpcodes) {
      int opcode = bytecode::opcode_from_name(std::string(name));
      if (opcode >= 0) opcodes.insert(opcode);
    }
    return opcodes;
  }();
  return allowed.contains(opcode);
}

}  // namespace

// The exception class and constant arguments of the block starting at `start` when it only makes
// an exception and raises it; the class is null otherwise. args is null when the arguments are
// computed (an f-string of the data).
Tracer::RaisingBlock Tracer::raising_block_at(size_t start) {
  static const int raise_varargs = bytecode::opcode_from_name("RAISE_VARARGS");
  static const int load_assertion_error = bytecode::opcode_from_name("LOAD_ASSERTION_ERROR");
  static const int load_global_op = bytecode::opcode_from_name("LOAD_GLOBAL");
  static const int load_const = bytecode::opcode_from_name("LOAD_CONST");
  static const int push_null = bytecode::opcode_from_name("PUSH_NULL");
  static const int precall = bytecode::opcode_from_name("PRECALL");
  static const int call = bytecode::opcode_from_name("CALL");
  const InterpFrame& running = frame();
  RaisingBlock block;
  size_t end = start;
  while (end < running.instructions.size() && running.instructions[end].opcode != raise_varargs) {
    if (!may_run_in_raising_block(running.instructions[end].opcode) || running.instructions[end].target >= 0) return block;
    ++end;
  }
  if (end >= running.instructions.size() || running.instructions[end].arg != 1) return block;  // `raise E` only
  size_t first = start;
  bool null_below = first < end && running.instructions[first].opcode == push_null;
  if (null_below) ++first;
  if (first >= end) return block;
  const bytecode::Instruction& load = running.instructions[first];
  Ref cls;
  if (load.opcode == load_assertion_error) {
    cls = Ref::borrow(PyExc_AssertionError);
  } else if (load.opcode == load_global_op) {
    PyObject* name = PyTuple_GET_ITEM(running.code->co_names, load.arg >> 1);
    if (!PyDict_GetItemWithError(running.globals, name) && !PyErr_Occurred() &&
        !(PyDict_Check(running.builtins) && PyDict_GetItemWithError(running.builtins, name)) && !PyErr_Occurred())
      return block;  // eager raises NameError there: an ordinary branch
    check_status(PyErr_Occurred() ? -1 : 0);
    ValuePtr found = load_global(to_std_string(Handle(name)));
    if (!found->is_constant() || !PyType_Check(found->obj.ptr()) ||
        !PyType_IsSubtype(as_type(found->obj), as_type(PyExc_Exception)))
      return block;
    cls = found->obj;
  } else {
    return block;
  }
  block.cls = cls;
  if (load.opcode == load_global_op && (load.arg & 1)) null_below = true;
  // The arguments: constants between the class and its call (`raise E("text")`), or none at all.
  std::vector<PyObject*> constants;
  size_t at = first + 1;
  while (at < end && running.instructions[at].opcode == load_const)
    constants.push_back(PyTuple_GET_ITEM(running.code->co_consts, running.instructions[at++].arg));
  if (at < end && running.instructions[at].opcode == precall) ++at;
  // CALL's argument counts the arguments after the callable, less one when no NULL is below it
  // (then the first stands where a method's self would: LOAD_ASSERTION_ERROR; LOAD_CONST; CALL 0).
  int call_arg = static_cast<int>(constants.size()) - (null_below ? 0 : 1);
  bool called = at < end && running.instructions[at].opcode == call && running.instructions[at].arg == call_arg &&
                at + 1 == end;
  if (called || (at == end && constants.empty())) {
    block.args = check(PyTuple_New(static_cast<Py_ssize_t>(constants.size())));
    for (size_t i = 0; i < constants.size(); ++i) PyTuple_SET_ITEM(block.args.ptr(), i, Py_NewRef(constants[i]));
  }
  return block;
}

// Whether an exception raised now could be caught in the traced frames: a handler of a running
// frame other than a with-block on one of torch's state blocks (no_grad, autocast, a
// TorchFunctionMode, ...), whose __exit__ restores its state and never suppresses the exception.
bool Tracer::exception_could_be_caught() const {
  static const int push_exc_info = bytecode::opcode_from_name("PUSH_EXC_INFO");
  static const int with_except_start = bytecode::opcode_from_name("WITH_EXCEPT_START");
  for (const auto& running : frames_) {
    if (running->pc == 0) continue;
    const auto& handler = running->instructions[running->pc - 1].handler;
    if (!handler) continue;
    const auto& code = running->instructions;
    size_t at = static_cast<size_t>(handler->target);
    bool with_block = at + 1 < code.size() && code[at].opcode == push_exc_info && code[at + 1].opcode == with_except_start;
    if (!with_block || handler->depth < 1 || static_cast<size_t>(handler->depth) > running->stack.size()) return true;
    const ValuePtr& exit = running->stack[handler->depth - 1];
    if (!exit || (exit->kind != ValueKind::GradModeExit && exit->kind != ValueKind::StateExit)) return true;
  }
  return false;
}

// A symbolic bool that only the data decides (of a number Tensor.item() gave under
// config.capture_scalar_outputs).
bool Tracer::decided_by_data(const ValuePtr& condition) const {
  if (!condition->is_constant() || !graph_.dynamic()) return false;
  return PyObject_IsTrue(call_helper("cdynamo._checks", "undecided_by_sizes", {condition->obj}).ptr()) == 1;
}

// At a POP_JUMP_IF_* on a tensor (or on a bool decided_by_data): when one side only raises and no
// try-block could catch that exception, a node raising it when the graph finds the condition so,
// and the trace goes on along the other side. False when the branch is an ordinary one.
bool Tracer::check_instead_of_branch(const bytecode::Instruction& inst, const ValuePtr& condition, bool jump_when) {
  if (exception_could_be_caught()) return false;  // eager's handler would catch what the graph raises
  const size_t jump_side = static_cast<size_t>(inst.target), next_side = frame().pc;
  RaisingBlock raising = raising_block_at(next_side);
  bool raises_when = !jump_when;  // falling through, the condition was !jump_when
  size_t continue_at = jump_side;
  if (!raising.cls) {
    raising = raising_block_at(jump_side);
    raises_when = jump_when;
    continue_at = next_side;
  }
  if (!raising.cls) return false;
  std::string where = to_std_string(Handle(frame().code->co_filename)) + ":" + std::to_string(frame().line);
  Ref node = call_helper("cdynamo._checks", "check_node",
                         {raising.cls, raising.args ? raising.args : Ref::borrow(Py_None),
                          Ref::borrow(raises_when ? Py_True : Py_False), check(PyUnicode_FromString(where.c_str()))});
  if (node.ptr() == Py_None) return false;
  keep_alive_.push_back(node);
  graph_.call("call_function", node, {condition}, {}, "a check of tensor data", true);
  if (!condition->is_tensor())  // a symbolic bool: the trace goes on knowing it holds as the check requires
    call_helper("cdynamo._checks", "assume", {condition->obj, Ref::borrow(raises_when ? Py_False : Py_True)});
  frame().pc = continue_at;
  return true;
}

}  // namespace cdynamo::interp
