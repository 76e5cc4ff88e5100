// Decoding a code object into an InstructionList: EXTENDED_ARG folded, CACHE units skipped, jump
// args resolved to instruction indices, positions and innermost handlers attached.
// Assumes co_code as CPython exposes it (deoptimised, caches zeroed) and relative jumps only.
#include <opcode.h>

#include <algorithm>

#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/bytecode/tables.h"

namespace cdynamo::bytecode {

namespace {

// Maps a code-unit offset to the instruction starting there; offsets inside an instruction
// (its EXTENDED_ARG prefixes' successors, its caches) have no entry.
class StartIndex {
 public:
  explicit StartIndex(size_t n_units) : index_(n_units + 1, -1) {}
  void set(size_t unit, int index) { index_[unit] = index; }
  int at(long unit, const char* what) const {
    if (unit < 0 || static_cast<size_t>(unit) >= index_.size() || index_[unit] < 0) {
      throw InternalError(std::string(what) + " does not point at the start of an instruction");
    }
    return index_[unit];
  }

 private:
  std::vector<int> index_;
};

}  // namespace

InstructionList decode(PyCodeObject* code) {
  init_opcode_tables();
  // PyCode_GetCode hands back the unspecialised bytes that code.co_code shows.
  Ref co_code = check(PyCode_GetCode(code));
  const auto* bytes = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(co_code.ptr()));
  const size_t n_units = static_cast<size_t>(PyBytes_GET_SIZE(co_code.ptr())) / kCodeUnit;

  InstructionList insts;
  std::vector<size_t> start_unit;  // per instruction: its first unit
  std::vector<size_t> end_unit;    // per instruction: the unit after its caches
  StartIndex starts(n_units);
  size_t unit = 0;
  while (unit < n_units) {
    const size_t start = unit;
    uint32_t arg = 0;
    int op = bytes[unit * 2];
    while (op == EXTENDED_ARG) {
      arg = (arg | bytes[unit * 2 + 1]) << 8;
      if (++unit >= n_units) throw InternalError("co_code ends in EXTENDED_ARG");
      op = bytes[unit * 2];
    }
    arg |= bytes[unit * 2 + 1];
    ++unit;
    if (op == CACHE) throw InternalError("CACHE unit where an instruction was expected");
    unit += static_cast<size_t>(inline_cache_entries(op));
    if (unit > n_units) throw InternalError("co_code ends inside an instruction's caches");

    Instruction inst;
    inst.opcode = op;
    inst.arg = static_cast<int>(arg);
    inst.offset = static_cast<int>(start * kCodeUnit);
    starts.set(start, static_cast<int>(insts.size()));
    insts.push_back(inst);
    start_unit.push_back(start);
    end_unit.push_back(unit);
  }

  // Relative jumps count from the end of the jump (caches included): that is how 3.12's FOR_ITER
  // lands on its END_FOR, which the interpreter then skips at run time.
  for (size_t i = 0; i < insts.size(); ++i) {
    Instruction& inst = insts[i];
    if (!has_jump_target(inst.opcode)) continue;
    long delta = is_backward_jump(inst.opcode) ? -static_cast<long>(inst.arg) : inst.arg;
    inst.target = starts.at(static_cast<long>(end_unit[i]) + delta, "a jump");
  }

  std::vector<Position> positions;
  PyObject* linetable = code->co_linetable;
  decode_location_table(reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(linetable)),
                        static_cast<size_t>(PyBytes_GET_SIZE(linetable)), code->co_firstlineno,
                        n_units, positions);
  for (size_t i = 0; i < insts.size(); ++i) insts[i].position = positions[start_unit[i]];

  // CPython takes the first entry that covers an offset; the compiler's tables never overlap,
  // but a first-wins rule keeps hand-made nested tables meaning what the interpreter sees.
  PyObject* table = code->co_exceptiontable;
  std::vector<ExceptionEntry> entries =
      decode_exception_table(reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(table)),
                             static_cast<size_t>(PyBytes_GET_SIZE(table)));
  for (const ExceptionEntry& e : entries) {
    int target = starts.at(e.target, "an exception handler");
    auto first = std::lower_bound(start_unit.begin(), start_unit.end(), static_cast<size_t>(e.start));
    for (size_t i = static_cast<size_t>(first - start_unit.begin());
         i < insts.size() && start_unit[i] < static_cast<size_t>(e.end); ++i) {
      if (!insts[i].handler) insts[i].handler = ExceptionHandler{target, e.depth, e.lasti};
    }
  }
  return insts;
}

}  // namespace cdynamo::bytecode
