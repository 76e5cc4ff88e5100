// Opcode handlers for control flow: jumps, loops and iterators, returns, generators and the
// entry of with-blocks. Assumes CPython 3.11/3.12 bytecode (jump targets decoded).
#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

void Tracer::jump_if(const bytecode::Instruction& inst, bool jump_when, bool pop_always, bool none_test) {
  ValuePtr condition = pop();
  // `if not valid: raise ...` and `assert cond` on tensor data: a check in the graph.
  if (pop_always && !none_test && (condition->is_tensor() || decided_by_data(condition)) &&
      check_instead_of_branch(inst, condition, jump_when))
    return;
  bool truth;
  if (none_test) {
    truth = condition->kind == ValueKind::Constant && condition->obj.ptr() == Py_None;
  } else {
    truth = truth_value(condition);
  }
  if (truth == jump_when) {
    if (!pop_always) push(condition);
    frame().pc = inst.target;
  }
}

bool Tracer::op_jump(const bytecode::Instruction& inst) {
  frame().pc = inst.target;
  return true;
}

bool Tracer::op_pop_jump_if_false(const bytecode::Instruction& inst) {
  jump_if(inst, false, true, false);
  return true;
}

bool Tracer::op_pop_jump_if_true(const bytecode::Instruction& inst) {
  jump_if(inst, true, true, false);
  return true;
}

bool Tracer::op_pop_jump_if_none(const bytecode::Instruction& inst) {
  jump_if(inst, true, true, true);
  return true;
}

bool Tracer::op_pop_jump_if_not_none(const bytecode::Instruction& inst) {
  jump_if(inst, false, true, true);
  return true;
}

bool Tracer::op_jump_if_false_or_pop(const bytecode::Instruction& inst) {
  jump_if(inst, false, false, false);
  return true;
}

bool Tracer::op_jump_if_true_or_pop(const bytecode::Instruction& inst) {
  jump_if(inst, true, false, false);
  return true;
}

bool Tracer::op_get_iter(const bytecode::Instruction&) {  // GET_ITER and GET_YIELD_FROM_ITER
  get_iter(pop());
  return true;
}

bool Tracer::op_for_iter(const bytecode::Instruction& inst) {
  // A copy: running a generator's or an iterator class's code may reallocate this frame's stack.
  ValuePtr iterator = top();
  if (iterator->kind != ValueKind::Generator && iterator->kind != ValueKind::Iterator && !is_python_iterator(iterator))
    throw InternalError("FOR_ITER without an iterator");
  if (ValuePtr item = next_item(iterator)) {  // one item per step: a break leaves the iterator where eager does
    push(std::move(item));
    return true;
  }
  pop();
  InterpFrame& current = frame();
  current.pc = inst.target;
  static const int end_for = bytecode::opcode_from_name("END_FOR");  // -1 where there is none
  if (kOparg.for_iter_over_end_for && current.pc < current.instructions.size() &&
      current.instructions[current.pc].opcode == end_for)
    ++current.pc;
  return true;
}

bool Tracer::op_send(const bytecode::Instruction& inst) {
  send_none(inst.target);
  return true;
}

bool Tracer::op_end_send(const bytecode::Instruction&) {
  ValuePtr value = pop();
  pop();  // the exhausted sub-iterator
  push(std::move(value));
  return true;
}

bool Tracer::op_return_value(const bytecode::Instruction&) {
  frame().return_value = pop();
  return false;
}

bool Tracer::op_return_const(const bytecode::Instruction& inst) {
  frame().return_value = Value::constant(Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, inst.arg)));
  return false;
}

bool Tracer::op_yield_value(const bytecode::Instruction&) {
  frame().return_value = pop();
  frame().yielded = true;
  return false;
}

bool Tracer::op_return_generator(const bytecode::Instruction&) {
  push(Value::constant(Ref::borrow(Py_None)));  // popped right after
  return true;
}

bool Tracer::op_before_with(const bytecode::Instruction&) {
  before_with(pop());
  return true;
}

void Tracer::get_iter(ValuePtr iterable) {
  if (iterable->kind == ValueKind::Iterator || iterable->kind == ValueKind::Generator) {
    push(iterable);
    return;
  }
  if (iterable->kind == ValueKind::NewObject || iterable->kind == ValueKind::Object) {
    if (Ref method = python_special_method(iterable, "__iter__")) {
      ValuePtr result = inline_call(method, {iterable}, {});  // iter(obj) calls it now; a generator runs lazily
      if (result->kind == ValueKind::Generator || result->kind == ValueKind::Iterator || is_python_iterator(result)) {
        push(result);
        return;
      }
      push(Value::sequence(ValueKind::Iterator, iterate(result)));
      return;
    }
  }
  push(iterator_over(iterable));
}

ValuePtr Tracer::iterator_over(const ValuePtr& iterable) {
  // A list the trace holds is read as it is at each step: a loop that appends to the list it
  // walks (a worklist) sees the new items, as in CPython. Dict views are snapshots already.
  if (iterable->kind == ValueKind::List && !iterable->view_type) {
    auto iterator = Value::sequence(ValueKind::Iterator, {});
    iterator->live_list = iterable;
    return iterator;
  }
  return Value::sequence(ValueKind::Iterator, iterate(iterable));
}

}  // namespace cdynamo::interp
