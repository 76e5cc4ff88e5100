// Per-opcode facts for the running CPython (3.11 or 3.12): names, inline cache counts, jumps.
// Assumes opcode numbers from <opcode.h>; names and cache counts are read once from Lib/opcode.py.
#include <Python.h>
#include <opcode.h>

#include <array>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/bytecode/tables.h"

namespace cdynamo::bytecode {

namespace {

// Names and cache counts come from Python rather than being hard-coded: libpython's own
// _PyOpcode_Caches is not exported, and the opcode module is generated from the same source.
struct OpcodeTables {
  bool ready = false;
  std::array<std::string, 256> names;
  std::array<uint8_t, 256> caches{};
  std::unordered_map<std::string, int> by_name;
};

OpcodeTables& tables() {
  static OpcodeTables t;
  return t;
}

OpcodeTables& ready_tables() {
  OpcodeTables& t = tables();
  if (!t.ready) init_opcode_tables();
  return t;
}

int checked_int(PyObject* obj) {
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) throw PythonError();
  return static_cast<int>(v);
}

}  // namespace

void init_opcode_tables() {
  OpcodeTables& t = tables();
  if (t.ready) return;
  Ref mod = check(PyImport_ImportModule("opcode"));
  Ref opname = check(PyObject_GetAttrString(mod.ptr(), "opname"));
  // 3.12's list also holds pseudo-opcodes past 255; they never appear in co_code.
  for (int op = 0; op < 256; ++op) {
    Ref name = check(PySequence_GetItem(opname.ptr(), op));
    const char* s = PyUnicode_AsUTF8(name.ptr());
    if (!s) throw PythonError();
    t.names[op] = s;
    if (s[0] != '<') t.by_name.emplace(s, op);
  }
  Ref caches = check(PyObject_GetAttrString(mod.ptr(), "_inline_cache_entries"));
  if (PyDict_Check(caches.ptr())) {
    // 3.13 keys the table by name; kept so the toolkit keeps loading when 3.13 support starts.
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(caches.ptr(), &pos, &key, &value)) {
      const char* s = PyUnicode_AsUTF8(key);
      if (!s) throw PythonError();
      auto it = t.by_name.find(s);
      if (it != t.by_name.end()) t.caches[it->second] = static_cast<uint8_t>(checked_int(value));
    }
  } else {
    for (int op = 0; op < 256; ++op) {
      Ref n = check(PySequence_GetItem(caches.ptr(), op));
      t.caches[op] = static_cast<uint8_t>(checked_int(n.ptr()));
    }
  }
  t.ready = true;
}

int opcode_from_name(const std::string& name) {
  const OpcodeTables& t = ready_tables();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? -1 : it->second;
}

const char* opcode_name(int opcode) {
  if (opcode < 0 || opcode > 255) return "<invalid>";
  return ready_tables().names[opcode].c_str();
}

int inline_cache_entries(int opcode) {
  if (opcode < 0 || opcode > 255) return 0;
  return ready_tables().caches[opcode];
}

int extended_arg_count(uint32_t arg) {
  if (arg > 0xFFFFFF) return 3;
  if (arg > 0xFFFF) return 2;
  if (arg > 0xFF) return 1;
  return 0;
}

int instruction_units(int opcode, uint32_t arg) {
  return extended_arg_count(arg) + 1 + inline_cache_entries(opcode);
}

// Jump opcodes are listed by macro so that each version compiles with the ones it has; every
// jump in 3.11 and 3.12 is relative to the end of the instruction (caches included).
bool has_jump_target(int opcode) {
  switch (opcode) {
    case FOR_ITER:
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
    case SEND:
#ifdef JUMP_IF_FALSE_OR_POP
    case JUMP_IF_FALSE_OR_POP:
    case JUMP_IF_TRUE_OR_POP:
#endif
#ifdef POP_JUMP_FORWARD_IF_FALSE
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
#endif
#ifdef POP_JUMP_IF_FALSE
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
    case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE:
#endif
      return true;
    default:
      return false;
  }
}

bool is_backward_jump(int opcode) {
  switch (opcode) {
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
#ifdef POP_JUMP_BACKWARD_IF_FALSE
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
#endif
      return true;
    default:
      return false;
  }
}

int jump_in_direction(int opcode, bool backward) {
  if (is_backward_jump(opcode) == backward) return opcode;
  switch (opcode) {
    case JUMP_FORWARD:
      return JUMP_BACKWARD;
    case JUMP_BACKWARD:
    // Neither checks the eval breaker going forward, so the interrupt-free variant is kept.
    case JUMP_BACKWARD_NO_INTERRUPT:
      return JUMP_FORWARD;
#ifdef POP_JUMP_FORWARD_IF_FALSE
    case POP_JUMP_FORWARD_IF_FALSE:
      return POP_JUMP_BACKWARD_IF_FALSE;
    case POP_JUMP_FORWARD_IF_TRUE:
      return POP_JUMP_BACKWARD_IF_TRUE;
    case POP_JUMP_FORWARD_IF_NONE:
      return POP_JUMP_BACKWARD_IF_NONE;
    case POP_JUMP_FORWARD_IF_NOT_NONE:
      return POP_JUMP_BACKWARD_IF_NOT_NONE;
    case POP_JUMP_BACKWARD_IF_FALSE:
      return POP_JUMP_FORWARD_IF_FALSE;
    case POP_JUMP_BACKWARD_IF_TRUE:
      return POP_JUMP_FORWARD_IF_TRUE;
    case POP_JUMP_BACKWARD_IF_NONE:
      return POP_JUMP_FORWARD_IF_NONE;
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
      return POP_JUMP_FORWARD_IF_NOT_NONE;
#endif
    default:
      return -1;
  }
}

bool is_terminator(int opcode) {
  switch (opcode) {
    case RETURN_VALUE:
#ifdef RETURN_CONST
    case RETURN_CONST:
#endif
    case RAISE_VARARGS:
    case RERAISE:
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
      return true;
    default:
      return false;
  }
}

}  // namespace cdynamo::bytecode
