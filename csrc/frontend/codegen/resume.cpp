// Graph breaks in bytecode: transformed code that stops at an unsupported instruction, runs it,
// and continues in resume functions made from the original code (CPython 3.11/3.12).
#include "frontend/codegen/resume.h"
#include <set>
#include "common/py_import.h"
#include "frontend/codegen/code_builder.h"

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

// The call of a resume function continuing at `target` with the `stack_count` values on top of
// the stack and the locals of `slots`, whose result the frame returns.
void call_resume(CodeBuilder& code, PyCodeObject* original, const bytecode::InstructionList& instructions, int target,
                 int stack_count, const std::vector<int>& slots, const interp::BreakState& state,
                 int traced_stack = -1) {
  // Stack entries below traced_stack are the traced frame's (an exception handler adds its own).
  if (traced_stack < 0) traced_stack = stack_count;
  std::vector<int> iterator_stack, iterator_slots;
  for (int i = 0; i < std::min(stack_count, traced_stack) && i < static_cast<int>(state.stack.size()); ++i)
    if (state.stack[i]->kind == ValueKind::Iterator) iterator_stack.push_back(i);
  for (int slot : slots)
    if (state.locals[slot] && state.locals[slot]->kind == ValueKind::Iterator) iterator_slots.push_back(slot);
  Ref resume = resume_code(original, instructions, target, stack_count, slots, iterator_stack, iterator_slots);
  code.emit(BUILD_TUPLE, stack_count);
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
    case ValueKind::Set: return;
    case ValueKind::Tuple:
    case ValueKind::List:
    case ValueKind::Dict:
      if (value->obj && value->kind != ValueKind::Tuple) return;
      for (const auto& item : value->items) check_rebuildable(item, false, path);
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

std::vector<ValuePtr> break_outputs(const interp::BreakState& state, const std::vector<interp::SideEffect>& side_effects) {
  std::vector<ValuePtr> outputs;
  for (const auto& effect : side_effects) collect_tensors(effect.value, outputs);
  for (const auto& value : state.locals) collect_tensors(value, outputs);
  for (const auto& value : state.stack) collect_tensors(value, outputs);
  return outputs;
}

Ref resume_code(PyCodeObject* original, const bytecode::InstructionList& instructions, int target, int stack_count,
                const std::vector<int>& passed_slots, const std::vector<int>& iterator_stack,
                const std::vector<int>& iterator_slots) {
  if (original->co_ncellvars > 0) throw interp::Unsupported("a partial graph in a function with cell variables");
  const OpcodeClasses& classes = opcode_classes();
  const int nlocals = original->co_nlocals;
  const int nfree = original->co_nfreevars;

  // New locals: the passed locals (so the original first argument stays first: zero-argument
  // super() reads it), the stack values, then every other local of the original.
  Ref varnames = check(PyList_New(0));
  std::vector<int> new_slot(nlocals, -1);
  auto add_local = [&](int slot) {
    new_slot[slot] = static_cast<int>(PyList_GET_SIZE(varnames.ptr()));
    check_status(PyList_Append(varnames.ptr(), PyTuple_GET_ITEM(original->co_localsplusnames, slot)));
  };
  for (int slot : passed_slots) add_local(slot);
  const int first_stack = static_cast<int>(PyList_GET_SIZE(varnames.ptr()));
  for (int i = 0; i < stack_count; ++i) {
    Ref name = check(PyUnicode_FromFormat("__stack%d", i));
    check_status(PyList_Append(varnames.ptr(), name.ptr()));
  }
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
  for (int slot : iterator_slots) {
    emit(LOAD_FAST, new_slot[slot]);
    emit(GET_ITER, 0);
    emit(STORE_FAST, new_slot[slot]);
  }
  for (int i = 0; i < stack_count; ++i) {
    emit(LOAD_FAST, first_stack + i);
    for (int at : iterator_stack)
      if (at == i) emit(GET_ITER, 0);
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
  set("co_argcount", PyLong_FromSize_t(stack_count + passed_slots.size()));
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

void check_break_state(PyCodeObject* original, const bytecode::InstructionList& instructions,
                       const interp::BreakState& state) {
  const Instruction& inst = instructions.at(state.instruction);
  const bool jump = is_conditional_jump(inst.opcode);
  std::optional<StackUse> use = jump ? StackUse{1, 0} : stack_use(inst, 0);
  if (!use) throw interp::Unsupported(std::string("a partial graph ending at ") + bytecode::opcode_name(inst.opcode));
  const int depth_before = static_cast<int>(state.stack.size());
  if (use->pops > depth_before) throw InternalError("break instruction pops more than the stack holds");
  const int survivors = depth_before - use->pops;
  // Loop iterators travel as tuples of their remaining items (resume_code's prologue): only as
  // the frame's own stack entries that survive the break instruction, or its locals.
  auto check_top = [](const ValuePtr& value, bool null_allowed, bool iterator_allowed) {
    if (value->kind == ValueKind::Iterator) {
      if (!iterator_allowed)
        throw interp::Unsupported("a partial graph that passes a loop iterator to the unsupported instruction");
      for (size_t i = value->position; i < value->items.size(); ++i) check_rebuildable(value->items[i], false);
      return;
    }
    check_rebuildable(value, null_allowed);
  };
  for (int i = 0; i < depth_before; ++i) check_top(state.stack[i], i >= survivors, i < survivors);
  for (const auto& value : state.locals)
    if (value) check_top(value, false, true);
  // A container referenced from two places is rebuilt once (emit_object_table).
  if (original->co_ncellvars > 0) throw interp::Unsupported("a partial graph in a function with cell variables");
}

Ref transformed_code_at_break(PyCodeObject* original, const bytecode::InstructionList& instructions,
                              Handle compiled_graph, const std::vector<graph::GraphInput>& inputs,
                              const interp::BreakState& state, const std::vector<ValuePtr>& outputs,
                              const std::vector<interp::SideEffect>& side_effects) {
  check_break_state(original, instructions, state);
  const Instruction& inst = instructions.at(state.instruction);
  const bool jump = is_conditional_jump(inst.opcode);
  std::optional<StackUse> use = jump ? StackUse{1, 0} : stack_use(inst, 0);
  const int depth_before = static_cast<int>(state.stack.size());
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
  std::vector<ValuePtr> roots(state.stack.begin(), state.stack.end());
  for (const auto& value : state.locals)
    if (value) roots.push_back(value);
  for (const auto& effect : side_effects) roots.push_back(effect.value);
  base = emit_object_table(code, roots, outputs, base);
  // Every value is rebuilt before any local is stored: a value may be reloaded from a slot
  // that a store would overwrite (residual = x; x = f(x) keeps the old x in residual); and
  // before the side effects are replayed, which may change what a source leads to
  // (x = lst.pop() reloads lst[-1]).
  for (int i = 0; i < depth_before; ++i) {
    if (state.stack[i]->kind == ValueKind::Null) code.emit(PUSH_NULL);
    else rebuild(code, state.stack[i], outputs, base + i);
  }
  std::vector<int> stored;
  for (int slot = 0; slot < original->co_nlocals; ++slot) {
    const ValuePtr& value = state.locals[slot];
    if (!value) continue;
    if (value->source && value->source->kind == Source::Kind::Local && value->source->index == slot) continue;
    rebuild(code, value, outputs, base + depth_before + static_cast<int>(stored.size()));
    stored.push_back(slot);
  }
  // The break instruction may observe the attributes the trace wrote: apply them before it.
  replay_side_effects(code, side_effects, outputs, base + depth_before + static_cast<int>(stored.size()));
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) code.emit(STORE_FAST, *it);
  std::vector<int> slots = live_slots(original, state);
  if (state.kw_names && inst.opcode == CALL) code.emit(KW_NAMES, code.const_index(state.kw_names));
  // Inside a try block the instruction run here keeps its handler: an exception it raises
  // lands in a handler of this code that continues in a resume function at the original
  // handler, with the stack the handler expects (the traced values under the try block, lasti,
  // the exception) and the locals stored above.
  const size_t first_break_inst = code.size();
  auto cover_with_handler = [&]() {
    if (!inst.handler) return;
    for (size_t i = first_break_inst; i < code.size(); ++i)
      code.at(i).handler = bytecode::ExceptionHandler{-1, base + inst.handler->depth, inst.handler->lasti};
  };
  auto emit_handler = [&]() {
    if (!inst.handler) return;
    const int handler_start = static_cast<int>(code.size());
    for (size_t i = first_break_inst; i < code.size(); ++i)
      if (code.at(i).handler && code.at(i).handler->target < 0) code.at(i).handler->target = handler_start;
    call_resume(code, original, instructions, inst.handler->target,
                inst.handler->depth + (inst.handler->lasti ? 1 : 0) + 1, slots, state, inst.handler->depth);
  };
  if (inst.opcode == CALL) {
    code.call(inst.arg);
    cover_with_handler();
  } else if (jump) {
    Instruction branch = inst;
    size_t jump_index = code.size();
    code.emit_instruction(branch);
    cover_with_handler();
    call_resume(code, original, instructions, state.instruction + 1, survivors, slots, state);
    code.at(jump_index).target = static_cast<int>(code.size());
    call_resume(code, original, instructions, inst.target, survivors, slots, state);
    emit_handler();
    return code.finish();
  } else {
    code.emit_instruction(translated(code, original, inst));
    cover_with_handler();
  }
  if (use->terminates) {
    emit_handler();
    return code.finish();
  }
  call_resume(code, original, instructions, state.instruction + 1, survivors + use->pushes, slots, state);
  emit_handler();
  return code.finish();
}

}  // namespace cdynamo::codegen
