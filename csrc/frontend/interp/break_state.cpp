// Where a trace may stop with a graph break: at a root-frame instruction, or (a nested break)
// inside the inlined functions, with every frame's state taken. Assumes frames_ as run() left it.
#include <opcode.h>
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

BreakState Tracer::nested_break_state() const {
  // Each frame's live values only: a dead one kept as a graph output would keep its autograd
  // history alive (see run()).
  auto live_values = [](const InterpFrame& frame, int instruction) {
    std::vector<ValuePtr> locals = frame.locals;
    std::vector<bool> live = bytecode::live_locals(frame.code, frame.instructions, instruction);
    for (size_t slot = 0; slot < locals.size(); ++slot)
      if (slot >= live.size() || static_cast<int>(slot) >= frame.code->co_nlocals || !live[slot]) locals[slot] = nullptr;
    return locals;
  };
  const InterpFrame& root = *frames_.front();
  BreakState state;
  state.instruction = static_cast<int>(root.pc) - 1;
  state.stack = root.stack;
  state.locals = live_values(root, state.instruction);
  state.local_touched = root.local_initialised;
  for (size_t k = 1; k < frames_.size(); ++k) {
    const InterpFrame& frame = *frames_[k];
    const bool innermost = k + 1 == frames_.size();
    InlinedBreakFrame inlined;
    inlined.instruction = static_cast<int>(frame.pc) - (innermost ? 0 : 1);
    const int caller_instruction = static_cast<int>(frames_[k - 1]->pc) - 1;
    if (!frame.direct_call || frames_[k - 1]->instructions.at(caller_instruction).opcode != CALL)
      unsupported("a nested graph break below a call that is not a plain CALL");
    inlined.function = frame.function;
    inlined.code = frame.code;
    inlined.instructions = frame.instructions;
    inlined.stack = frame.stack;
    inlined.locals = live_values(frame, inlined.instruction);
    if (innermost) inlined.kw_names = frame.kw_names;
    inlined.shares_root_globals = frame.globals == root_globals_;
    state.inlined.push_back(std::move(inlined));
  }
  return state;
}

void freeze_iterators(BreakState& state) {
  auto freeze = [](const std::vector<ValuePtr>& values) {
    for (const ValuePtr& value : values)
      if (value && value->kind == ValueKind::Iterator) freeze_iterator(*value);
  };
  freeze(state.stack);
  freeze(state.locals);
  for (const InlinedBreakFrame& frame : state.inlined) {
    freeze(frame.stack);
    freeze(frame.locals);
  }
}

bool Tracer::can_break_nested() const {
  if (frames_.size() < 2 || frames_.front()->code->co_ncellvars > 0) return false;
  for (size_t k = 0; k < frames_.size(); ++k) {
    const InterpFrame& frame = *frames_[k];
    if (frame.pc == 0) return false;
    const bytecode::Instruction& inst = frame.instructions[frame.pc - 1];
    // An exception from the instruction run outside the graph would skip the handlers of the
    // frames around it: breaks under try and with blocks stay at the root.
    if (inst.handler) return false;
    if (k + 1 < frames_.size() && inst.opcode != CALL) return false;
    if (k == 0) continue;
    if (!frame.direct_call || frame.code->co_ncellvars > 0) return false;
    if (frame.code->co_nfreevars > 0 && !frame.closure) return false;  // a closure the trace made
  }
  return true;
}

bool Tracer::can_break_at(int instruction) const {
  const InterpFrame& root = *frames_.front();
  if (instruction < 0 || static_cast<size_t>(instruction) >= root.instructions.size()) return false;
  // Inside a try block the transformed code keeps the instruction's handler (resume.cpp); a
  // with-block's context manager cannot be rebuilt (check_break_state refuses it). Cell
  // variables would need their cells rebuilt: not supported yet.
  if (root.code->co_ncellvars > 0) return false;
  return true;
}

}  // namespace cdynamo::interp
