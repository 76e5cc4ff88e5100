// Assembling an InstructionList into a code object: jump args from targets, EXTENDED_ARG and
// zeroed CACHE units, exception and location tables, co_stacksize, then model.replace(...).
// Assumes the layout rules of CPython 3.11/3.12's assembler, so unchanged input gives identical bytes.
#include <opcode.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/bytecode/tables.h"

namespace cdynamo::bytecode {

namespace {

// Opcodes as they will be written: jumps whose target lies on the other side get the variant for
// that direction. The direction follows from indices alone (a target at or before the jump is
// behind its end), so it is fixed before any offset is known.
std::vector<int> final_opcodes(const InstructionList& insts) {
  std::vector<int> ops(insts.size());
  const int n = static_cast<int>(insts.size());
  for (int i = 0; i < n; ++i) {
    const Instruction& inst = insts[i];
    if (inst.opcode <= 0 || inst.opcode > 255 || inst.opcode == EXTENDED_ARG) {
      throw UserError("cannot assemble opcode " + std::to_string(inst.opcode) + " at instruction " +
                          std::to_string(i),
                      PyExc_ValueError);
    }
    if (inst.arg < 0) {
      throw UserError("negative arg at instruction " + std::to_string(i), PyExc_ValueError);
    }
    if (inst.handler && (inst.handler->target < 0 || inst.handler->target >= n || inst.handler->depth < 0)) {
      throw UserError("bad exception handler at instruction " + std::to_string(i), PyExc_ValueError);
    }
    ops[i] = inst.opcode;
#ifdef PRECALL
    // 3.11's specialised PRECALLs execute the CALL after them and jump past it, so anything
    // between the two would be skipped and the CALL's work done on the wrong stack.
    if (inst.opcode == PRECALL && (i + 1 >= n || insts[i + 1].opcode != CALL)) {
      throw UserError("PRECALL at instruction " + std::to_string(i) + " is not followed by CALL",
                      PyExc_ValueError);
    }
#endif
    if (!has_jump_target(inst.opcode)) continue;
    if (inst.target < 0 || inst.target >= n) {
      throw UserError("jump at instruction " + std::to_string(i) + " has no valid target",
                      PyExc_ValueError);
    }
    ops[i] = jump_in_direction(inst.opcode, inst.target <= i);
    if (ops[i] < 0) {
      throw UserError(std::string(opcode_name(inst.opcode)) + " at instruction " + std::to_string(i) +
                          " cannot jump " + (inst.target <= i ? "backward" : "forward"),
                      PyExc_ValueError);
    }
  }
  return ops;
}

struct Layout {
  std::vector<uint32_t> args;   // final args (jump args recomputed)
  std::vector<int> units;       // code units per instruction
  std::vector<int> offsets;     // first code unit per instruction; offsets[n] is the total
};

// Sizes only ever grow from the smallest (every jump without EXTENDED_ARG), and a jump's distance
// never shrinks when an instruction grows, so this reaches the same fixed point as CPython's
// assembler (which recomputes until no jump changes size).
Layout lay_out(const InstructionList& insts, const std::vector<int>& ops) {
  const size_t n = insts.size();
  Layout l;
  l.args.resize(n);
  l.units.resize(n);
  l.offsets.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    l.args[i] = has_jump_target(ops[i]) ? 0 : static_cast<uint32_t>(insts[i].arg);
    l.units[i] = instruction_units(ops[i], l.args[i]);
  }
  for (bool changed = true; changed;) {
    changed = false;
    l.offsets[0] = 0;
    for (size_t i = 0; i < n; ++i) l.offsets[i + 1] = l.offsets[i] + l.units[i];
    for (size_t i = 0; i < n; ++i) {
      if (!has_jump_target(ops[i])) continue;
      const int end = l.offsets[i + 1];
      const int target = l.offsets[insts[i].target];
      l.args[i] = static_cast<uint32_t>(is_backward_jump(ops[i]) ? end - target : target - end);
      const int needed = instruction_units(ops[i], l.args[i]);
      if (needed > l.units[i]) {
        l.units[i] = needed;
        changed = true;
      }
    }
  }
  return l;
}

std::string emit_code(const std::vector<int>& ops, const Layout& l) {
  std::string code(static_cast<size_t>(l.offsets.back()) * kCodeUnit, '\0');
  for (size_t i = 0; i < ops.size(); ++i) {
    char* p = &code[static_cast<size_t>(l.offsets[i]) * kCodeUnit];
    const uint32_t arg = l.args[i];
    // A unit may have been kept wider than its arg needs; the extra prefixes carry zeros.
    const int prefixes = l.units[i] - 1 - inline_cache_entries(ops[i]);
    for (int k = prefixes; k >= 1; --k) {
      *p++ = static_cast<char>(EXTENDED_ARG);
      *p++ = static_cast<char>(k < 4 ? (arg >> (8 * k)) & 0xFF : 0);
    }
    *p++ = static_cast<char>(ops[i]);
    *p++ = static_cast<char>(arg & 0xFF);
    // The cache units stay zero, as the compiler leaves them.
  }
  return code;
}

// One entry per run of consecutive instructions with the same innermost handler, in code order:
// the flat table CPython's assembler writes.
std::string emit_exception_table(const InstructionList& insts, const Layout& l) {
  std::vector<ExceptionEntry> entries;
  size_t i = 0;
  while (i < insts.size()) {
    const auto& handler = insts[i].handler;
    size_t j = i + 1;
    while (j < insts.size() && insts[j].handler == handler) ++j;
    if (handler) {
      entries.push_back(ExceptionEntry{l.offsets[i], l.offsets[j], l.offsets[handler->target],
                                       handler->depth, handler->lasti});
    }
    i = j;
  }
  return encode_exception_table(entries);
}

std::string emit_location_table(const InstructionList& insts, const Layout& l, int first_line) {
  std::vector<LocationRun> runs;
  runs.reserve(insts.size());
  for (size_t i = 0; i < insts.size(); ++i) {
#if PY_VERSION_HEX >= 0x030C0000
    // 3.12's assembler merges neighbours with equal positions (assemble_location_info).
    if (!runs.empty() && runs.back().position == insts[i].position) {
      runs.back().units += l.units[i];
      continue;
    }
#endif
    // 3.11's writes one run per instruction (assemble_emit), even for equal neighbours.
    runs.push_back(LocationRun{insts[i].position, l.units[i]});
  }
  return encode_location_table(runs, first_line);
}

// co_firstlineno anchors the location table's line deltas, so an override must be honoured.
int first_line_for(PyCodeObject* model, PyObject* replace_kwargs) {
  if (replace_kwargs) {
    PyObject* v = PyDict_GetItemString(replace_kwargs, "co_firstlineno");  // borrowed
    if (v) {
      long line = PyLong_AsLong(v);
      if (line == -1 && PyErr_Occurred()) throw PythonError();
      return static_cast<int>(line);
    }
  }
  return model->co_firstlineno;
}

void set_bytes(PyObject* dict, const char* key, const std::string& value) {
  Ref b = check(PyBytes_FromStringAndSize(value.data(), static_cast<Py_ssize_t>(value.size())));
  check_status(PyDict_SetItemString(dict, key, b.ptr()));
}

}  // namespace

Ref assemble(const InstructionList& insts, PyCodeObject* model, PyObject* replace_kwargs) {
  init_opcode_tables();
  if (replace_kwargs && !PyDict_Check(replace_kwargs)) {
    throw UserError("replace_kwargs must be a dict", PyExc_TypeError);
  }
  const std::vector<int> ops = final_opcodes(insts);
  const Layout layout = lay_out(insts, ops);

  InstructionList as_written;
  const InstructionList* for_depth = &insts;
  if (ops.size() && !std::equal(ops.begin(), ops.end(), insts.begin(),
                                [](int op, const Instruction& inst) { return op == inst.opcode; })) {
    as_written = insts;
    for (size_t i = 0; i < ops.size(); ++i) as_written[i].opcode = ops[i];
    for_depth = &as_written;
  }

  Ref kwargs = check(PyDict_New());
  set_bytes(kwargs.ptr(), "co_code", emit_code(ops, layout));
  set_bytes(kwargs.ptr(), "co_exceptiontable", emit_exception_table(insts, layout));
  set_bytes(kwargs.ptr(), "co_linetable",
            emit_location_table(insts, layout, first_line_for(model, replace_kwargs)));
  Ref depth = check(PyLong_FromLong(stack_depth(*for_depth)));
  check_status(PyDict_SetItemString(kwargs.ptr(), "co_stacksize", depth.ptr()));
  // The caller's keywords win, co_stacksize included, so generated code can state its own.
  if (replace_kwargs) check_status(PyDict_Update(kwargs.ptr(), replace_kwargs));

  Ref replace = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(model), "replace"));
  Ref no_args = check(PyTuple_New(0));
  return check(PyObject_Call(replace.ptr(), no_args.ptr(), kwargs.ptr()));
}

}  // namespace cdynamo::bytecode
