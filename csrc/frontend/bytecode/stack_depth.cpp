// Maximum operand-stack depth of an InstructionList, as CPython's compiler computes co_stacksize:
// a walk over reachable instructions using PyCompile_OpcodeStackEffectWithJump.
// Assumes stack depths agree on every path into an instruction (true of valid bytecode).
#include <Python.h>
#include <opcode.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "frontend/bytecode/bytecode.h"

namespace cdynamo::bytecode {

namespace {

int effect_of(const Instruction& inst, bool jump) {
  // The generator prologue (RETURN_GENERATOR, POP_TOP) is added by the compiler after it has
  // measured the stack, so CPython reports no effect for it; in fact the first send pushes its
  // value there, which the POP_TOP removes.
  if (inst.opcode == RETURN_GENERATOR) return 1;
  int effect = PyCompile_OpcodeStackEffectWithJump(inst.opcode, inst.arg, jump ? 1 : 0);
  if (effect == PY_INVALID_STACK_EFFECT) {
    // CPython sets no exception for unknown opcodes but may leave one for a bad oparg.
    PyErr_Clear();
    throw InternalError(std::string("no stack effect known for ") + opcode_name(inst.opcode) +
                        " " + std::to_string(inst.arg));
  }
  return effect;
}

}  // namespace

int stack_depth(const InstructionList& insts) {
  const int n = static_cast<int>(insts.size());
  std::vector<int> depth_at(insts.size(), -1);
  std::vector<int> work;
  int max_depth = 0;
  bool strict = true;
  auto reach = [&](int index, int depth, const char* how) {
    if (index < 0 || index >= n) throw InternalError(std::string(how) + " leaves the instruction list");
    if (depth < 0) throw InternalError("stack underflow at instruction " + std::to_string(index));
    if (depth > max_depth) max_depth = depth;
    if (depth_at[index] < 0) {
      depth_at[index] = depth;
      work.push_back(index);
    } else if (depth_at[index] != depth && strict) {
      throw InternalError("instruction " + std::to_string(index) + " reached with stack depths " +
                          std::to_string(depth_at[index]) + " and " + std::to_string(depth));
    }
  };
  auto run = [&] {
    while (!work.empty()) {
      const int i = work.back();
      work.pop_back();
      const Instruction& inst = insts[i];
      const int depth = depth_at[i];
      // A handler starts with the saved depth, plus the exception, plus lasti when it pushes
      // it: the depth the compiler gave its SETUP_* target.
      if (inst.handler) {
        reach(inst.handler->target, inst.handler->depth + 1 + (inst.handler->lasti ? 1 : 0),
              "an exception handler");
      }
      if (has_jump_target(inst.opcode)) reach(inst.target, depth + effect_of(inst, true), "a jump");
      if (is_terminator(inst.opcode)) continue;
      const int next = depth + effect_of(inst, false);
      if (i + 1 < n) {
        reach(i + 1, next, "fall-through");
      } else if (next > max_depth) {
        max_depth = next;
      }
    }
  };
  if (n > 0) reach(0, 0, "entry");
  run();
  // The compiler measures before dropping the SETUP_* of an empty try body, so it still counts
  // the handler of that body, which no table entry points at any more. Such a handler opens with
  // PUSH_EXC_INFO under its own cleanup entry, whose depth is the handler's starting depth.
  strict = false;
  for (int i = 0; i < n; ++i) {
    if (depth_at[i] < 0 && insts[i].opcode == PUSH_EXC_INFO && insts[i].handler) {
      reach(i, insts[i].handler->depth, "a dead handler");
      run();
    }
  }
  return max_depth;
}

}  // namespace cdynamo::bytecode
