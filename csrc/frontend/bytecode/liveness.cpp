// Which fast locals a code object may still read at an instruction (backward dataflow over the
// decoded instructions, exception handlers included), so a graph break keeps only those alive.
// Assumes 3.11/3.12 bytecode; cell and free slots, and code that can see its own frame, count as live.
#include <Python.h>
#include <opcode.h>

#include <cstring>
#include <string>
#include <vector>

#include "frontend/bytecode/bytecode.h"

namespace cdynamo::bytecode {
namespace {

enum class LocalUse { None, Read, Write, Cell };

// DELETE_FAST reads: deleting an unbound local raises, so the slot must stay bound until then.
LocalUse local_use(int opcode) {
  switch (opcode) {
    case LOAD_FAST:
    case DELETE_FAST:
#ifdef LOAD_FAST_CHECK
    case LOAD_FAST_CHECK:
#endif
#ifdef LOAD_FAST_AND_CLEAR
    case LOAD_FAST_AND_CLEAR:
#endif
      return LocalUse::Read;
    case STORE_FAST: return LocalUse::Write;
    case LOAD_CLOSURE:
    case LOAD_DEREF:
    case STORE_DEREF:
    case DELETE_DEREF:
    case MAKE_CELL:
#ifdef LOAD_FROM_DICT_OR_DEREF
    case LOAD_FROM_DICT_OR_DEREF:
#endif
      return LocalUse::Cell;
    default: return LocalUse::None;
  }
}

// Whether a tuple of names (co_names, co_localsplusnames) holds `wanted`; a name that is not
// valid UTF-8 counts as a match (the callers then assume the worst).
bool names_contain(PyObject* names, const char* wanted) {
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); ++k) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, k));
    if (!name) {
      PyErr_Clear();
      return true;
    }
    if (std::strcmp(name, wanted) == 0) return true;
  }
  return false;
}

// Names through which code reaches its own frame's locals (locals(), vars(), exec, eval,
// sys._getframe, inspect): any of them makes every local live.
bool may_read_own_frame(PyCodeObject* code) {
  static const char* const kNames[] = {"locals", "vars", "exec", "eval", "_getframe", "currentframe", "stack"};
  for (const char* watched : kNames)
    if (names_contain(code->co_names, watched)) return true;
  return false;
}

// Zero-argument super() reads the frame's first local (self) and its __class__ cell without an
// instruction naming either: where the code calls it, the first local stays live throughout.
bool calls_zero_argument_super(PyCodeObject* code) {
  return names_contain(code->co_localsplusnames, "__class__") && names_contain(code->co_names, "super");
}

}  // namespace

std::vector<bool> live_locals(PyCodeObject* code, const InstructionList& insts, int at) {
  const int nlocals = code->co_nlocals;
  std::vector<bool> all(nlocals, true);
  if (may_read_own_frame(code) || at < 0 || at >= static_cast<int>(insts.size())) return all;
  std::vector<bool> always(nlocals, false);
  for (const Instruction& inst : insts)
    if (local_use(inst.opcode) == LocalUse::Cell && inst.arg < nlocals) always[inst.arg] = true;
  if (nlocals > 0 && code->co_argcount > 0 && calls_zero_argument_super(code)) always[0] = true;

  // live_in[i] = use[i] | (live_out[i] & ~def[i]); live_out = union of successors' live_in.
  const int n = static_cast<int>(insts.size());
  std::vector<std::vector<bool>> live_in(n, std::vector<bool>(nlocals, false));
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = n - 1; i >= 0; --i) {
      const Instruction& inst = insts[i];
      std::vector<bool> live = always;
      auto add = [&](int successor) {
        if (successor < 0 || successor >= n) return;
        for (int s = 0; s < nlocals; ++s) live[s] = live[s] || live_in[successor][s];
      };
      if (!is_terminator(inst.opcode)) add(i + 1);
      if (has_jump_target(inst.opcode)) add(inst.target);
      if (inst.handler) add(inst.handler->target);
      LocalUse use = local_use(inst.opcode);
      // STORE_FAST cannot raise, so the store kills the slot on every path out of it.
      if (use == LocalUse::Write && inst.arg < nlocals) live[inst.arg] = always[inst.arg];
      if (use == LocalUse::Read && inst.arg < nlocals) live[inst.arg] = true;
      if (live != live_in[i]) {
        live_in[i] = std::move(live);
        changed = true;
      }
    }
  }
  return live_in[at];
}

}  // namespace cdynamo::bytecode
