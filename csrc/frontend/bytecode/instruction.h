// The decoded form of CPython 3.11/3.12 bytecode: one Instruction per real instruction, with
// EXTENDED_ARG folded into arg, CACHE entries dropped, jumps as target indices.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace cdynamo::bytecode {

// Source position of an instruction (PEP 657 location table); -1 means "none".
struct Position {
  int line = -1;
  int end_line = -1;
  int col = -1;
  int end_col = -1;
  bool operator==(const Position&) const = default;
};

// The innermost exception-table entry covering an instruction.
struct ExceptionHandler {
  int target = -1;  // index of the handler's first instruction in the instruction list
  int depth = 0;    // stack depth the handler expects
  bool lasti = false;
  bool operator==(const ExceptionHandler&) const = default;
};

struct Instruction {
  int opcode = 0;   // a base opcode as found in code.co_code (never CACHE or EXTENDED_ARG)
  int arg = 0;      // the full argument; for jumps it is recomputed from `target` when assembling
  int target = -1;  // jumps only: index of the target instruction in the same list
  int offset = -1;  // byte offset of the decoded instruction (its first EXTENDED_ARG); -1 if new
  Position position;
  std::optional<ExceptionHandler> handler;
};

using InstructionList = std::vector<Instruction>;

}  // namespace cdynamo::bytecode
