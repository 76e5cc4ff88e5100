// The interpreter loop: frame state (stack, locals), the step loop and its dispatch through the
// opcode table (handlers in ops_*.cpp). Assumes instructions decoded by frontend/bytecode.
#include "frontend/interp/tracer.h"
#include "common/cpython_compat.h"
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/bytecode/bytecode.h"

namespace cdynamo::interp {

// ============================================================================================
// Frame state
// ============================================================================================

Tracer::Tracer(CdFrame* real_frame, Handle shape_trace, int break_at, size_t break_step)
    : guards_(std::make_unique<guards::RootGuardManager>()) {
  break_at_ = break_at;
  break_step_ = break_step;
  graph_.set_shape_trace(Ref::borrow(shape_trace));
  auto root = std::make_unique<InterpFrame>();
  root->code = cd_frame_code(real_frame);
  root->real_locals = cd_frame_localsplus(real_frame);
  root->globals = cd_frame_globals(real_frame);
  root->builtins = cd_frame_builtins(real_frame);
  PyObject* function = cd_frame_function(real_frame);
  if (function && PyFunction_Check(function)) root->closure = PyFunction_GET_CLOSURE(function);
  root->argument_slots = argument_slot_count(root->code);
  root->first_free_slot = root->code->co_nlocalsplus - root->code->co_nfreevars;
  root->instructions = bytecode::decode(root->code);
  root->locals.resize(root->code->co_nlocalsplus);
  root->local_initialised.resize(root->code->co_nlocalsplus, false);
  root_globals_ = root->globals;
  initial_grad_mode_ = PyObject_IsTrue(call_helper("torch", "is_grad_enabled", {}).ptr()) == 1;
  initial_state_ = call_helper("cdynamo._global_state", "global_state", {});
  initial_entered_ = call_helper("cdynamo._global_state", "entered_state", {});
  frames_.push_back(std::move(root));
  // Graphs depend on grad mode (autograd records or not): always guarded.
  guards_->add_grad_mode_guard();
}

Tracer::~Tracer() {
  // A list from the frame that contains itself is a Value that holds itself: cut the cycle, or
  // the Values (and the fx nodes and fakes they hold) would never be freed.
  for (auto& [object, container] : container_inputs_) container->items.clear();
  keeping_pending_error([&] {
    call_helper("cdynamo._global_state", "set_global_state", {initial_state_});
    if (rng_state_before_trace_) call_helper("torch", "set_rng_state", {rng_state_before_trace_});
    call_helper("cdynamo._global_state", "restore_entered", {initial_entered_});  // what the nodes' fake runs entered or left
  });
}

std::string Tracer::local_name(int slot) const {
  return to_std_string(PyTuple_GET_ITEM(frames_.back()->code->co_localsplusnames, slot));
}

void Tracer::unsupported(const std::string& reason) const {
  const InterpFrame& current = *frames_.back();
  Unsupported error(reason);
  error.filename = to_std_string(current.code->co_filename);
  error.line = current.line >= 0 ? current.line : current.code->co_firstlineno;
  error.function = to_std_string(current.code->co_qualname);
  throw error;
}

ValuePtr Tracer::pop() {
  if (frame().stack.empty()) throw InternalError("interpreter stack underflow");
  ValuePtr value = std::move(frame().stack.back());
  frame().stack.pop_back();
  return value;
}

ValuePtr& Tracer::top(int depth) {
  if (depth < 1 || static_cast<size_t>(depth) > frame().stack.size()) throw InternalError("bad stack depth");
  return frame().stack[frame().stack.size() - depth];
}

std::vector<ValuePtr> Tracer::pop_n(int n) {
  if (static_cast<size_t>(n) > frame().stack.size()) throw InternalError("interpreter stack underflow");
  std::vector<ValuePtr> values(frame().stack.end() - n, frame().stack.end());
  frame().stack.resize(frame().stack.size() - n);
  return values;
}

ValuePtr Tracer::load_local(int slot) {
  if (!frame().locals[slot] && !frame().local_initialised[slot]) {
    frame().local_initialised[slot] = true;
    if (slot >= frame().first_free_slot) {
      int index = slot - frame().first_free_slot;
      if (!frame().closure) unsupported("free variable " + local_name(slot) + " without a closure");
      PyObject* cell = PyTuple_GET_ITEM(frame().closure, index);
      PyObject* contents = PyCell_GET(cell);
      if (!contents) unsupported("free variable " + local_name(slot) + " is not bound yet");
      // An inlined function's cells are reached through the cell object itself.
      SourcePtr source = in_root_frame()
                             ? Source::closure(index, local_name(slot))
                             : Source::attr(Source::fixed(Ref::borrow(cell), "<cell " + local_name(slot) + ">"), "cell_contents");
      frame().locals[slot] = wrap(contents, source);
    } else if (frame().real_locals && slot < frame().argument_slots && frame().real_locals[slot]) {
      frame().locals[slot] = wrap(frame().real_locals[slot], Source::local(slot, local_name(slot)));
    }
  }
  // Unbound (never assigned, or deleted as `except ... as e` deletes e): eager's error, which the
  // program may catch.
  if (!frame().locals[slot])
    raise(PyExc_UnboundLocalError, "cannot access local variable '" + local_name(slot) + "' where it is not associated with a value");
  return frame().locals[slot];
}

void Tracer::store_local(int slot, ValuePtr value) {
  frame().local_initialised[slot] = true;
  frame().locals[slot] = value->kind == ValueKind::Null ? nullptr : std::move(value);
}

// ============================================================================================
// The loop
// ============================================================================================

ValuePtr Tracer::run_frame() {
  while (true) {
    InterpFrame& current = frame();
    if (current.pc >= current.instructions.size()) throw InternalError("frame ended without RETURN");
    if (break_at_ >= 0 && frames_.size() == 1 && current.pc == static_cast<size_t>(break_at_)) {
      reached_break_ = true;
      return nullptr;
    }
    if (break_step_ && steps_ + 1 == break_step_) {
      nested_break_ = nested_break_state();
      throw ReachedNestedBreak{};
    }
    const bytecode::Instruction& inst = current.instructions[current.pc++];
    if (inst.position.line >= 0 && inst.position.line != current.line) {
      current.line = inst.position.line;
      // A dynamic trace tags the facts its ShapeEnv records with the user's line.
      if (graph_.dynamic()) graph_.set_location(current.code, current.line);
    }
    if (++steps_ > 1000000) unsupported("the function runs more than a million bytecode steps");
    if (current.pending_throw) {
      // gen.throw(e): raised where the generator resumes, as if by the paused yield.
      TracedException raised{std::move(current.pending_throw), to_std_string(current.code->co_filename) + ":" +
                                                                 std::to_string(current.line)};
      current.pending_throw = Ref();
      if (!enter_handler(inst, raised)) throw raised;
      continue;
    }
    try {
      if (!step(inst)) return current.return_value;
    } catch (const TracedException& raised) {
      if (!enter_handler(inst, raised)) throw;
    } catch (const Unsupported& error) {
      // An operation that raised on fake tensors raises in the trace where a try block awaits
      // it (the graph keeps no node of it); elsewhere it stays a graph break before the call.
      if (!error.raised || !inside_try_block()) throw;
      TracedException raised{error.raised, to_std_string(current.code->co_filename) + ":" + std::to_string(current.line)};
      if (!enter_handler(inst, raised)) throw raised;
    }
  }
}

bool Tracer::inside_try_block() const {
  for (size_t i = 0; i < frames_.size(); ++i) {
    const InterpFrame& running = *frames_[i];
    if (running.pc == 0) continue;
    if (running.instructions[running.pc - 1].handler) return true;  // the instruction it runs now
  }
  return false;
}

TraceResult Tracer::run() {
  TraceResult result;
  try {
    try {
      result.return_value = run_frame();
    } catch (const ReachedNestedBreak&) {
      result.break_state = std::move(nested_break_);
    }
    if (result.break_state) freeze_iterators(*result.break_state);
    check_context_vars_reset();
    check_traced_hooks_removed();
    for (const auto& container : mutated_containers_) result.side_effects.push_back({container, "", container});
    result.side_effects.insert(result.side_effects.end(), side_effects_.begin(), side_effects_.end());
    if (reached_break_) {
      InterpFrame& root = *frames_.front();
      BreakState state;
      state.instruction = break_at_;
      state.stack = root.stack;
      state.locals = root.locals;
      state.local_touched = root.local_initialised;
      // A traced value no later instruction reads is dropped: as a graph output it would keep
      // its autograd history alive and give the parameters that fed it a zero .grad.
      std::vector<bool> live = bytecode::live_locals(root.code, root.instructions, break_at_);
      for (size_t slot = 0; slot < state.locals.size() && slot < live.size(); ++slot)
        if (!live[slot]) state.locals[slot] = nullptr;
      state.kw_names = root.kw_names;
      freeze_iterators(state);
      result.break_state = std::move(state);
    }
  } catch (const TracedException& raised) {
    // Raised and not handled in the traced frame: the graph ends before the instruction, which
    // then runs eagerly and raises for real.
    Ref repr = steal(PyObject_Repr(raised.exception.ptr()));
    if (!repr) PyErr_Clear();
    Unsupported error("the traced code raises " + (repr ? to_std_string(repr) : std::string("an exception")) +
                      " (raised at " + raised.where + ")");
    const InterpFrame& root = *frames_.front();
    error.filename = to_std_string(root.code->co_filename);
    error.line = root.line >= 0 ? root.line : root.code->co_firstlineno;
    error.function = to_std_string(root.code->co_qualname);
    // Before any operation or side effect there is nothing to compile: the frame runs as it is
    // and raises for real (also under fullgraph=True, where eager raises the same).
    error.silent = graph_.op_count() == 0 && side_effects_.empty() && mutated_containers_.empty();
    error.raised_before_operations = error.silent;
    throw error;
  } catch (Unsupported& error) {
    // Errors raised below the interpreter (graph building) learn where they happened here:
    // the innermost inlined frame, and the chain of calls that led there.
    const InterpFrame& innermost = *frames_.back();
    if (error.filename.empty()) {
      error.filename = to_std_string(innermost.code->co_filename);
      error.line = innermost.line >= 0 ? innermost.line : innermost.code->co_firstlineno;
      error.function = to_std_string(innermost.code->co_qualname);
    }
    throw;
  }
  return result;
}

std::unique_ptr<guards::RootGuardManager> Tracer::take_guards() {
  if (local_tensor_inputs_.size() > 1) guards_->add_no_aliasing_guard(local_tensor_inputs_);
  if (graph_.dynamic()) add_shape_guard();
  return std::move(guards_);
}

bool Tracer::step(const bytecode::Instruction& inst) {
  OpcodeHandler handler = opcode_table()[inst.opcode];
  if (!handler) unsupported(std::string("the bytecode instruction ") + bytecode::opcode_name(inst.opcode));
  return (this->*handler)(inst);
}

}  // namespace cdynamo::interp
