// Opcode handlers for the value stack, constants, fast locals and closure cells.
// Assumes CPython 3.11/3.12 bytecode decoded by frontend/bytecode; rows in opcode_table.cpp.
#include "common/error.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

bool Tracer::op_nothing(const bytecode::Instruction&) { return true; }

bool Tracer::op_push_null(const bytecode::Instruction&) {
  push(Value::null());
  return true;
}

bool Tracer::op_pop_top(const bytecode::Instruction&) {
  pop();
  return true;
}

bool Tracer::op_end_for(const bytecode::Instruction&) {
  pop();
  pop();
  return true;
}

bool Tracer::op_copy(const bytecode::Instruction& inst) {
  push(top(inst.arg));
  return true;
}

bool Tracer::op_swap(const bytecode::Instruction& inst) {
  std::swap(top(1), top(inst.arg));
  return true;
}

bool Tracer::op_load_const(const bytecode::Instruction& inst) {
  push(Value::constant(Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, inst.arg))));
  return true;
}

bool Tracer::op_load_fast(const bytecode::Instruction& inst) {
  push(load_local(inst.arg));
  return true;
}

bool Tracer::op_load_fast_and_clear(const bytecode::Instruction& inst) {
  // A comprehension inlined into its function (3.12) saves the slot's value and clears it.
  const int slot = inst.arg;
  ValuePtr value = frame().locals[slot];
  if (!value && !frame().local_initialised[slot] && slot < frame().argument_slots) value = load_local(slot);
  push(value ? value : Value::null());
  frame().locals[slot] = nullptr;
  frame().local_initialised[slot] = true;
  return true;
}

bool Tracer::op_store_fast(const bytecode::Instruction& inst) {
  store_local(inst.arg, pop());
  return true;
}

bool Tracer::op_delete_fast(const bytecode::Instruction& inst) {
  frame().locals[inst.arg] = nullptr;
  frame().local_initialised[inst.arg] = true;
  return true;
}

bool Tracer::op_make_cell(const bytecode::Instruction& inst) {
  make_cell(inst.arg);
  return true;
}

bool Tracer::op_load_deref(const bytecode::Instruction& inst) {
  ValuePtr value = load_local(inst.arg);
  if (value->kind == ValueKind::Cell) {
    if (!value->items[0] && inst.arg >= frame().first_free_slot)  // CPython's errors for an empty cell
      raise(PyExc_NameError, "cannot access free variable '" + local_name(inst.arg) +
                                 "' where it is not associated with a value in enclosing scope");
    if (!value->items[0])
      raise(PyExc_UnboundLocalError, "cannot access local variable '" + local_name(inst.arg) + "' where it is not associated with a value");
    value = value->items[0];
  }
  push(value);
  return true;
}

bool Tracer::op_load_closure(const bytecode::Instruction& inst) {
  ValuePtr value = load_local(inst.arg);
  if (value->kind != ValueKind::Cell) {
    // A free variable read from a real closure: the new function sees its current value
    // (a read-only copy: writes through it are refused).
    auto cell = std::make_shared<Value>();
    cell->kind = ValueKind::Cell;
    cell->items = {value};
    cell->read_only = true;
    value = cell;
  }
  push(value);
  return true;
}

bool Tracer::op_store_deref(const bytecode::Instruction& inst) {
  ValuePtr value = pop();
  ValuePtr cell = frame().locals[inst.arg];
  if (cell && cell->kind == ValueKind::Cell && !cell->read_only) {
    cell->items[0] = value;  // seen by every function sharing the cell
    return true;
  }
  if (inst.arg >= frame().first_free_slot)
    unsupported("assigning to the enclosing function's variable " + local_name(inst.arg));
  store_local(inst.arg, value);
  return true;
}

bool Tracer::op_delete_deref(const bytecode::Instruction& inst) {
  ValuePtr value = load_local(inst.arg);
  if (value->kind != ValueKind::Cell || value->read_only)
    unsupported("deleting the enclosing function's variable " + local_name(inst.arg));
  value->items[0] = nullptr;
  return true;
}

}  // namespace cdynamo::interp
