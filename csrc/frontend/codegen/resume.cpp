// Graph breaks in bytecode: transformed code that stops at an unsupported instruction, runs it,
// and continues in resume functions made from the original code (CPython 3.11/3.12).
#include "frontend/codegen/resume.h"
#include <algorithm>
#include <set>
#include "common/py_import.h"
#include "frontend/codegen/code_builder.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::codegen {
namespace {

// Opcode classes of the running Python, from the dis module (read once).
struct OpcodeClasses {
  std::set<int> local, free, name, constant;
};

const OpcodeClasses& opcode_classes() {
  static const OpcodeClasses* classes = [] {
    auto* result = new OpcodeClasses();  // never freed: read for the life of the process
    auto fill = [](const char* list_name, std::set<int>& out) {
      Ref list = import_attr("dis", list_name);
      Ref items = check(PySequence_Fast(list.ptr(), "opcode list"));
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
        out.insert(static_cast<int>(PyLong_AsLong(PySequence_Fast_GET_ITEM(items.ptr(), i))));
    };
    fill("haslocal", result->local);
    fill("hasfree", result->free);
    fill("hasname", result->name);
    fill("hasconst", result->constant);
    return result;
  }();
  return *classes;
}

// What the break instruction takes from and leaves on the stack (pushes never include NULL).
struct StackUse {
  int pops = 0;
  int pushes = 0;
  bool terminates = false;  // raise: nothing runs after it
};

std::optional<StackUse> stack_use(const Instruction& inst, int kw_count) {
  const int op = inst.opcode;
  const int arg = inst.arg;
  (void)kw_count;
  switch (op) {
    case CALL: return StackUse{arg + 2, 1};
    case CALL_FUNCTION_EX: return StackUse{3 + (arg & 1), 1};
    case LOAD_ATTR:
#if CD_PY312
      if (arg & 1) return std::nullopt;  // method form may push NULL
#endif
      return StackUse{1, 1};
    case BINARY_OP:
    case BINARY_SUBSCR:
    case COMPARE_OP:
    case IS_OP:
    case CONTAINS_OP:
    case IMPORT_NAME: return StackUse{2, 1};
    case UNARY_NEGATIVE:
    case UNARY_NOT:
    case UNARY_INVERT: return StackUse{1, 1};
    case STORE_ATTR:
    case DELETE_SUBSCR: return StackUse{2, 0};
    case STORE_SUBSCR: return StackUse{3, 0};
    case STORE_GLOBAL:
    case DELETE_ATTR: return StackUse{1, 0};
    case BUILD_SLICE: return StackUse{arg, 1};
    case BUILD_STRING:
    case BUILD_TUPLE:
    case BUILD_LIST: return StackUse{arg, 1};
    case FORMAT_VALUE: return StackUse{(arg & 0x04) ? 2 : 1, 1};
    case UNPACK_SEQUENCE: return StackUse{1, arg};
    case UNPACK_EX: return StackUse{1, (arg & 0xFF) + (arg >> 8) + 1};
    case RAISE_VARARGS: return StackUse{arg, 0, true};
#if CD_PY312
    case BINARY_SLICE: return StackUse{3, 1};
    case STORE_SLICE: return StackUse{4, 0};
#endif
    default: return std::nullopt;
  }
}

bool is_conditional_jump(int op) {
  switch (op) {
#if CD_PY312
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
#else
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
#endif
      return true;
    default: return false;
  }
}

// The instruction as it appears in the transformed code: constant and name arguments point
// into the new code's tables; local slots keep their meaning (same locals layout).
Instruction translated(CodeBuilder& code, PyCodeObject* original, const Instruction& inst) {
  const OpcodeClasses& classes = opcode_classes();
  Instruction out = inst;
  if (classes.constant.count(inst.opcode)) {
    out.arg = code.const_index(PyTuple_GET_ITEM(original->co_consts, inst.arg));
  } else if (classes.name.count(inst.opcode)) {
    int shift = 0;
    if (inst.opcode == LOAD_GLOBAL) shift = 1;
#if CD_PY312
    if (inst.opcode == LOAD_ATTR) shift = 1;
    if (inst.opcode == LOAD_SUPER_ATTR) shift = 2;
#endif
    int low_bits = inst.arg & ((1 << shift) - 1);
    std::string name = to_std_string(PyTuple_GET_ITEM(original->co_names, inst.arg >> shift));
    out.arg = (code.name_index(name) << shift) | low_bits;
  }
  return out;
}

// Slots bound when the break instruction runs: traced values, and arguments the trace never read.
std::vector<int> live_slots(PyCodeObject* original, const interp::BreakState& state) {
  std::vector<int> slots;
  int arguments = interp::argument_slot_count(original);
  for (int slot = 0; slot < original->co_nlocals; ++slot) {
    bool untouched_argument = slot < arguments && !state.local_touched[slot];
    if (state.locals[slot] || untouched_argument) slots.push_back(slot);
  }
  return slots;
}

// What a resume function's prologue rebuilds from `stack` (its entries below `traced_end`) and
// the locals of `slots`: NULLs, and iterators passed as tuples of their items.
ResumeEntry entry_for(const std::vector<ValuePtr>& stack, int traced_end, const std::vector<ValuePtr>& locals,
                      const std::vector<int>& slots) {
  ResumeEntry entry;
  for (int i = 0; i < traced_end && i < static_cast<int>(stack.size()); ++i) {
    if (stack[i]->kind == ValueKind::Null) entry.null_stack.push_back(i);
    else if (stack[i]->kind == ValueKind::Iterator) entry.iterator_stack.push_back(i);
  }
  for (int slot : slots)
    if (locals[slot] && locals[slot]->kind == ValueKind::Iterator) entry.iterator_slots.push_back(slot);
  return entry;
}

// A nested break's continuation of the inlined frames: the resume function of the outermost
// one (made now, with its function's globals and closure; it calls the next one's first), and
// how many arguments it takes.
struct InnerContinuation {
  Ref function;
  int arguments = 0;
};

// The slots an inlined frame passes to its resume function: its live traced values.
std::vector<int> traced_slots(const interp::InlinedBreakFrame& frame) {
  std::vector<int> slots;
  for (int slot = 0; slot < frame.code->co_nlocals; ++slot)
    if (frame.locals[slot]) slots.push_back(slot);
  return slots;
}

// The continuation when the innermost frame goes on at `target` with `stack_count` stack
// entries, the first `survivors` of them traced ones.
InnerContinuation inner_continuation(const interp::BreakState& state, int target, int stack_count, int survivors,
                                     std::vector<MadeResume>& made) {
  InnerContinuation inner;
  const int count = static_cast<int>(state.inlined.size());
  for (int k = count - 1; k >= 0; --k) {
    const interp::InlinedBreakFrame& frame = state.inlined[k];
    const bool innermost = k == count - 1;
    std::vector<int> slots = traced_slots(frame);
    ResumeEntry entry = entry_for(frame.stack, innermost ? survivors : static_cast<int>(frame.stack.size()),
                                  frame.locals, slots);
    int frame_target = target, frame_stack = stack_count, passed_stack = stack_count;
    if (!innermost) {
      entry.inner_function = inner.function;
      entry.inner_arguments = inner.arguments;
      frame_target = frame.instruction + 1;
      frame_stack = static_cast<int>(frame.stack.size()) + 1;  // + the inner call's result
      passed_stack = frame_stack - 1 + inner.arguments;
    }
    passed_stack -= static_cast<int>(entry.null_stack.size());
    Ref code = resume_code(frame.code, frame.instructions, frame_target, frame_stack, slots, entry);
    made.push_back({code, Ref::borrow(reinterpret_cast<PyObject*>(frame.code)),
                    inside_loop(frame.instructions, frame.instruction), false});
    Ref function = check(PyFunction_New(code.ptr(), PyFunction_GET_GLOBALS(frame.function.ptr())));
    if (PyObject* closure = PyFunction_GET_CLOSURE(frame.function.ptr()))
      check_status(PyFunction_SetClosure(function.ptr(), closure));
    inner.function = std::move(function);
    inner.arguments = static_cast<int>(slots.size()) + passed_stack;
  }
  return inner;
}

// The call of the root's resume function continuing at `target` with the root's stack entries
// 0..stack_count there (its traced entries below `traced_stack`, NULLs among them not pushed,
// the others on top of the stack, with an inner continuation's arguments above them) and the
// locals of `slots`; the frame returns its result.
void call_resume(CodeBuilder& code, PyCodeObject* original, const bytecode::InstructionList& instructions, int target,
                 int stack_count, int traced_stack, const std::vector<int>& slots, const interp::BreakState& state,
                 std::vector<MadeResume>& made, const InnerContinuation* inner = nullptr) {
  ResumeEntry entry = entry_for(state.stack, traced_stack, state.locals, slots);
  int on_stack = stack_count - static_cast<int>(entry.null_stack.size());
  if (inner) {
    entry.inner_function = inner->function;
    entry.inner_arguments = inner->arguments;
    on_stack += inner->arguments - 1;
  }
  Ref resume = resume_code(original, instructions, target, stack_count, slots, entry);
  made.push_back({resume, Ref::borrow(reinterpret_cast<PyObject*>(original)), inside_loop(instructions, state.instruction),
                  true});
  code.emit(BUILD_TUPLE, on_stack);
  for (int slot : slots) code.emit(LOAD_FAST, slot);
  code.emit(BUILD_TUPLE, static_cast<int>(slots.size()));
  code.emit(SWAP, 2);
  code.emit(BINARY_OP, 0);  // locals + stack: one argument tuple
  code.emit(PUSH_NULL);
  code.emit(SWAP, 2);
  code.make_function(resume);
  code.emit(SWAP, 2);
  code.emit(CALL_FUNCTION_EX, 0);
  code.emit(RETURN_VALUE);
}

void check_rebuildable(const ValuePtr& value, bool null_allowed, interp::WalkPath& path) {
  // Back at a value being checked (a list that contains itself): the table rebuilds it once.
  interp::PathStep step(path, value.get(), "a value to rebuild");
  if (step.cycle()) return;
  switch (value->kind) {
    case ValueKind::Null:
      if (!null_allowed) throw interp::Unsupported("a partial graph with a NULL left on the stack");
      return;
    case ValueKind::Tensor:
    case ValueKind::Constant:
    case ValueKind::GradModeExit:
    case ValueKind::StateExit: return;
    case ValueKind::Set:
      for (const auto& key : interp::traced_keys_of(*value)) check_rebuildable(key, false, path);
      return;
    case ValueKind::Tuple:
    case ValueKind::List:
    case ValueKind::Dict:
      if (value->obj && value->kind != ValueKind::Tuple) return;
      for (const auto& item : value->items) check_rebuildable(item, false, path);
      for (const auto& key : interp::traced_keys_of(*value)) check_rebuildable(key, false, path);
      return;
    case ValueKind::TensorMethod:
    case ValueKind::UserMethod:
      if (value->name.empty() || value->items.empty() ||
          (value->kind == ValueKind::TensorMethod && !value->items[0]->is_tensor()))
        throw interp::Unsupported("a partial graph that would have to rebuild a " + value->describe());
      check_rebuildable(value->items[0], false, path);
      return;
    case ValueKind::NNModule:
    case ValueKind::PyModule:
    case ValueKind::Object:
      if (value->source) return;
      [[fallthrough]];
    default:
      throw interp::Unsupported(std::string("a partial graph that would have to rebuild a ") + value->describe());
    case ValueKind::NewObject:
      visit_values(value, [&](const ValuePtr& inner) {
        if (inner.get() != value.get() && inner->kind != ValueKind::NewObject && inner->kind != ValueKind::Dict)
          check_rebuildable(inner, false, path);
      });
      return;
  }
}

void check_rebuildable(const ValuePtr& value, bool null_allowed) {
  interp::WalkPath path;
  check_rebuildable(value, null_allowed, path);
}

void collect_tensors(const ValuePtr& value, std::vector<ValuePtr>& out) {
  if (!value) return;
  visit_values(value, [&](const ValuePtr& v) {
    if (!v->is_tensor() || v->source) return;  // tensors with a source are reloaded from it
    for (const auto& seen : out)
      if (seen->node.ptr() == v->node.ptr()) return;
    out.push_back(v);
  });
}

}  // namespace

std::vector<ValuePtr> break_values(const interp::BreakState& state) {
  std::vector<ValuePtr> values;
  auto add = [&](const std::vector<ValuePtr>& list) {
    for (const auto& value : list)
      if (value) values.push_back(value);
  };
  add(state.stack);
  add(state.locals);
  for (const auto& frame : state.inlined) {
    add(frame.stack);
    add(frame.locals);
  }
  return values;
}

std::vector<ValuePtr> break_outputs(const interp::BreakState& state, const std::vector<interp::SideEffect>& side_effects) {
  std::vector<ValuePtr> outputs;
  for (const auto& effect : side_effects) {
    collect_tensors(effect.value, outputs);
    if (effect.object && effect.object->is_tensor()) collect_tensors(effect.object, outputs);  // t.tag = ...
  }
  for (const auto& value : break_values(state)) collect_tensors(value, outputs);
  return outputs;
}

Ref resume_code(PyCodeObject* original, const bytecode::InstructionList& instructions, int target, int stack_count,
                const std::vector<int>& passed_slots, const ResumeEntry& entry) {
  if (original->co_ncellvars > 0) throw interp::Unsupported("a partial graph in a function with cell variables");
  const OpcodeClasses& classes = opcode_classes();
  const int nlocals = original->co_nlocals;
  const int nfree = original->co_nfreevars;
  auto contains = [](const std::vector<int>& list, int item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  // The last stack entry of a nested break is the inner call's result, not an argument.
  const int passed_stack = entry.inner_function ? stack_count - 1 : stack_count;

  // New locals: the passed locals (so the original first argument stays first: zero-argument
  // super() reads it), the stack values, the inner call's arguments, then every other local.
  Ref varnames = check(PyList_New(0));
  std::vector<int> new_slot(nlocals, -1);
  auto add_local = [&](int slot) {
    new_slot[slot] = static_cast<int>(PyList_GET_SIZE(varnames.ptr()));
    check_status(PyList_Append(varnames.ptr(), PyTuple_GET_ITEM(original->co_localsplusnames, slot)));
  };
  auto add_named = [&](const char* format, int index) {
    Ref name = check(PyUnicode_FromFormat(format, index));
    check_status(PyList_Append(varnames.ptr(), name.ptr()));
    return static_cast<int>(PyList_GET_SIZE(varnames.ptr())) - 1;
  };
  for (int slot : passed_slots) add_local(slot);
  std::vector<int> stack_slot(passed_stack, -1);
  for (int i = 0; i < passed_stack; ++i)
    if (!contains(entry.null_stack, i)) stack_slot[i] = add_named("__stack%d", i);
  std::vector<int> inner_slot;
  for (int i = 0; i < entry.inner_arguments; ++i) inner_slot.push_back(add_named("__inner%d", i));
  const int argument_count = static_cast<int>(PyList_GET_SIZE(varnames.ptr()));
  for (int slot = 0; slot < nlocals; ++slot)
    if (new_slot[slot] < 0) add_local(slot);
  const int first_free = static_cast<int>(PyList_GET_SIZE(varnames.ptr()));

  bytecode::InstructionList out;
  auto emit = [&](int opcode, int arg) {
    Instruction inst;
    inst.opcode = opcode;
    inst.arg = arg;
    out.push_back(inst);
  };
  if (nfree) emit(COPY_FREE_VARS, nfree);
  emit(RESUME, 0);
  for (int slot : entry.iterator_slots) {
    emit(LOAD_FAST, new_slot[slot]);
    emit(GET_ITER, 0);
    emit(STORE_FAST, new_slot[slot]);
  }
  for (int i = 0; i < passed_stack; ++i) {
    if (stack_slot[i] < 0) {
      emit(PUSH_NULL, 0);
      continue;
    }
    emit(LOAD_FAST, stack_slot[i]);
    if (contains(entry.iterator_stack, i)) emit(GET_ITER, 0);
  }
  Ref consts = Ref::borrow(original->co_consts);
  if (entry.inner_function) {
    // The frame was calling the inner one when the graph broke: its continuation runs as that
    // call, here, and returns what the inner function would have returned.
    consts = check(PySequence_Concat(original->co_consts, Ref(check(PyTuple_Pack(1, entry.inner_function.ptr()))).ptr()));
    emit(PUSH_NULL, 0);
    emit(LOAD_CONST, static_cast<int>(PyTuple_GET_SIZE(consts.ptr())) - 1);
    for (int slot : inner_slot) emit(LOAD_FAST, slot);
#if !CD_PY312
    emit(PRECALL, entry.inner_arguments);
#endif
    emit(CALL, entry.inner_arguments);
  }
  emit(JUMP_FORWARD, 0);
  const int prologue = static_cast<int>(out.size());
  out.back().target = prologue + target;

  for (const Instruction& original_inst : instructions) {
    Instruction inst = original_inst;
    if (inst.target >= 0) inst.target += prologue;
    if (inst.handler) inst.handler->target += prologue;
    if (classes.local.count(inst.opcode) || classes.free.count(inst.opcode)) {
      if (inst.arg < nlocals) inst.arg = new_slot[inst.arg];
      else inst.arg = first_free + (inst.arg - nlocals);
    }
    out.push_back(inst);
  }

  int line = original->co_firstlineno;
  Ref kwargs = check(PyDict_New());
  auto set = [&](const char* key, PyObject* value) {
    Ref owned = steal(value);
    if (!owned) throw PythonError();
    check_status(PyDict_SetItemString(kwargs.ptr(), key, owned.ptr()));
  };
  std::string name = to_std_string(original->co_name) + "_resume_at_line_" +
                     std::to_string(instructions[target].position.line >= 0 ? instructions[target].position.line : line);
  set("co_argcount", PyLong_FromLong(argument_count));
  set("co_consts", Py_NewRef(consts.ptr()));
  set("co_posonlyargcount", PyLong_FromLong(0));
  set("co_kwonlyargcount", PyLong_FromLong(0));
  set("co_nlocals", PyLong_FromSsize_t(PyList_GET_SIZE(varnames.ptr())));
  set("co_varnames", PyList_AsTuple(varnames.ptr()));
  set("co_flags", PyLong_FromLong(original->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)));
  set("co_name", PyUnicode_FromString(name.c_str()));
  set("co_qualname", PyUnicode_FromString((to_std_string(original->co_qualname) + "_resume_at_line_" +
                                           name.substr(name.rfind('_') + 1)).c_str()));
  return bytecode::assemble(out, original, kwargs.ptr());
}

namespace {

// The frame whose instruction runs outside the graph: the root, or the innermost inlined one.
struct BreakSite {
  PyCodeObject* code;
  const bytecode::InstructionList& instructions;
  int index;
  const std::vector<ValuePtr>& stack;
  Ref kw_names;
  const Instruction& inst() const { return instructions.at(index); }
};

BreakSite break_site(PyCodeObject* original, const bytecode::InstructionList& instructions,
                     const interp::BreakState& state) {
  if (state.inlined.empty()) return {original, instructions, state.instruction, state.stack, state.kw_names};
  const interp::InlinedBreakFrame& frame = state.inlined.back();
  return {frame.code, frame.instructions, frame.instruction, frame.stack, frame.kw_names};
}

// Loop iterators travel as tuples of their remaining items (resume_code's prologue): only as a
// frame's own stack entries that stay there, or its locals. NULLs are pushed again.
void check_carried(const ValuePtr& value, bool null_allowed, bool iterator_allowed) {
  if (value->kind == ValueKind::Iterator) {
    if (!iterator_allowed)
      throw interp::Unsupported("a partial graph that passes a loop iterator to the unsupported instruction");
    for (const ValuePtr& item : interp::iterator_pending(*value)) check_rebuildable(item, false);
    return;
  }
  check_rebuildable(value, null_allowed);
}

}  // namespace

bool inside_loop(const bytecode::InstructionList& instructions, int index) {
  for (size_t j = static_cast<size_t>(index) + 1; j < instructions.size(); ++j)
    if (bytecode::is_backward_jump(instructions[j].opcode) && instructions[j].target <= index) return true;
  return false;
}

void check_break_state(PyCodeObject* original, const bytecode::InstructionList& instructions,
                       const interp::BreakState& state) {
  const BreakSite site = break_site(original, instructions, state);
  const Instruction& inst = site.inst();
  const bool jump = is_conditional_jump(inst.opcode);
  std::optional<StackUse> use = jump ? StackUse{1, 0} : stack_use(inst, 0);
  if (!use) throw interp::Unsupported(std::string("a partial graph ending at ") + bytecode::opcode_name(inst.opcode));
  const int depth_before = static_cast<int>(site.stack.size());
  if (use->pops > depth_before) throw InternalError("break instruction pops more than the stack holds");
  const int survivors = depth_before - use->pops;
  for (int i = 0; i < depth_before; ++i) check_carried(site.stack[i], true, i < survivors);
  for (const auto& value : state.locals)
    if (value) check_carried(value, false, true);
  // A container referenced from two places is rebuilt once (emit_object_table).
  if (original->co_ncellvars > 0) throw interp::Unsupported("a partial graph in a function with cell variables");
  if (state.inlined.empty()) return;
  // A nested break: the frames around the instruction continue in resume functions of their
  // own code, called from the root's; the instruction itself runs in the root's code.
  if (instructions.at(state.instruction).handler)
    throw interp::Unsupported("a nested graph break under a try or with block");
  for (const auto& value : state.stack) check_carried(value, true, true);
  for (size_t k = 0; k < state.inlined.size(); ++k) {
    const interp::InlinedBreakFrame& frame = state.inlined[k];
    if (frame.code->co_ncellvars > 0) throw interp::Unsupported("a nested graph break in a function with cell variables");
    if (frame.instructions.at(frame.instruction).handler)
      throw interp::Unsupported("a nested graph break under a try or with block");
    if (k + 1 < state.inlined.size())
      for (const auto& value : frame.stack) check_carried(value, true, true);
    for (const auto& value : frame.locals)
      if (value) check_carried(value, false, true);
  }
  // Run in the root's code, an instruction that uses its frame's globals would use the root's.
  if ((inst.opcode == IMPORT_NAME || inst.opcode == STORE_GLOBAL) && !state.inlined.back().shares_root_globals)
    throw interp::Unsupported("a nested graph break at a global store or import of another module");
}

Ref transformed_code_at_break(PyCodeObject* original, const bytecode::InstructionList& instructions,
                              Handle compiled_graph, const std::vector<graph::GraphInput>& inputs,
                              const interp::BreakState& state, const std::vector<ValuePtr>& outputs,
                              const std::vector<interp::SideEffect>& side_effects, std::vector<MadeResume>& made) {
  check_break_state(original, instructions, state);
  const bool nested = !state.inlined.empty();
  const BreakSite site = break_site(original, instructions, state);
  const Instruction& inst = site.inst();
  const bool jump = is_conditional_jump(inst.opcode);
  std::optional<StackUse> use = jump ? StackUse{1, 0} : stack_use(inst, 0);
  const int depth_before = static_cast<int>(site.stack.size());
  const int survivors = depth_before - use->pops;

  CodeBuilder code(original);
  code.prologue();
  int base = 0;
  if (compiled_graph) {
    code.emit(PUSH_NULL);
    code.load_const(compiled_graph);
    for (const auto& input : inputs) code.load_source(*input.source);
    code.call(static_cast<int>(inputs.size()));
    base = 1;
  }
  std::vector<ValuePtr> roots = break_values(state);
  for (const auto& effect : side_effects) roots.push_back(effect.value);
  base = emit_object_table(code, roots, outputs, base);
  // Every value is rebuilt before any local is stored: a value may be reloaded from a slot
  // that a store would overwrite (residual = x; x = f(x) keeps the old x in residual); and
  // before the side effects are replayed, which may change what a source leads to
  // (x = lst.pop() reloads lst[-1]). The stack holds, bottom up: the root's traced entries,
  // then (a nested break) each inlined frame's locals and traced entries, and the operands of
  // the instruction on top. A traced NULL is pushed again by the resume function.
  int pushed = 0;
  auto push_value = [&](const ValuePtr& value, bool operand) {
    if (value->kind == ValueKind::Null) {
      if (!operand) return;
      code.emit(PUSH_NULL);
    } else {
      rebuild(code, value, outputs, base + pushed);
    }
    ++pushed;
  };
  for (int i = 0; i < static_cast<int>(state.stack.size()); ++i) push_value(state.stack[i], !nested && i >= survivors);
  for (size_t k = 0; k < state.inlined.size(); ++k) {
    const interp::InlinedBreakFrame& frame = state.inlined[k];
    for (int slot : traced_slots(frame)) push_value(frame.locals[slot], false);
    const bool innermost = k + 1 == state.inlined.size();
    for (int i = 0; i < static_cast<int>(frame.stack.size()); ++i) push_value(frame.stack[i], innermost && i >= survivors);
  }
  std::vector<int> stored;
  for (int slot = 0; slot < original->co_nlocals; ++slot) {
    const ValuePtr& value = state.locals[slot];
    if (!value) continue;
    if (value->source && value->source->kind == Source::Kind::Local && value->source->index == slot) continue;
    rebuild(code, value, outputs, base + pushed + static_cast<int>(stored.size()));
    stored.push_back(slot);
  }
  // The break instruction may observe the attributes the trace wrote: apply them before it.
  replay_side_effects(code, side_effects, outputs, base + pushed + static_cast<int>(stored.size()));
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) code.emit(STORE_FAST, *it);
  std::vector<int> slots = live_slots(original, state);
  if (site.kw_names && inst.opcode == CALL) code.emit(KW_NAMES, code.const_index(site.kw_names));
  // Inside a try block the instruction run here keeps its handler: an exception it raises
  // lands in a handler of this code that continues in a resume function at the original
  // handler, with the stack the handler expects (the traced values under the try block, lasti,
  // the exception) and the locals stored above. (A nested break is never under one.)
  const size_t first_break_inst = code.size();
  auto cover_with_handler = [&]() {
    if (!inst.handler) return;
    int under_try = 0;
    for (int i = 0; i < inst.handler->depth; ++i)
      if (state.stack[i]->kind != ValueKind::Null) ++under_try;
    for (size_t i = first_break_inst; i < code.size(); ++i)
      code.at(i).handler = bytecode::ExceptionHandler{-1, base + under_try, inst.handler->lasti};
  };
  auto emit_handler = [&]() {
    if (!inst.handler) return;
    const int handler_start = static_cast<int>(code.size());
    for (size_t i = first_break_inst; i < code.size(); ++i)
      if (code.at(i).handler && code.at(i).handler->target < 0) code.at(i).handler->target = handler_start;
    call_resume(code, original, instructions, inst.handler->target,
                inst.handler->depth + (inst.handler->lasti ? 1 : 0) + 1, inst.handler->depth, slots, state, made);
  };
  // The frames go on at `target` of the break site's code with `stack_count` entries there.
  auto continue_at = [&](int target, int stack_count) {
    if (!nested) {
      call_resume(code, original, instructions, target, stack_count, survivors, slots, state, made);
      return;
    }
    InnerContinuation inner = inner_continuation(state, target, stack_count, survivors, made);
    const int root_stack = static_cast<int>(state.stack.size());
    call_resume(code, original, instructions, state.instruction + 1, root_stack + 1, root_stack, slots, state, made,
                &inner);
  };
  if (inst.opcode == CALL) {
    code.call(inst.arg);
    cover_with_handler();
  } else if (jump) {
    Instruction branch = inst;
    size_t jump_index = code.size();
    code.emit_instruction(branch);
    cover_with_handler();
    continue_at(site.index + 1, survivors);
    code.at(jump_index).target = static_cast<int>(code.size());
    continue_at(inst.target, survivors);
    emit_handler();
    return code.finish();
  } else {
    code.emit_instruction(translated(code, site.code, inst));
    cover_with_handler();
  }
  if (use->terminates) {
    emit_handler();
    return code.finish();
  }
  continue_at(site.index + 1, survivors + use->pushes);
  emit_handler();
  return code.finish();
}

}  // namespace cdynamo::codegen
