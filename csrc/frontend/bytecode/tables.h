// Private to the bytecode folder: the codecs for co_linetable and co_exceptiontable and the
// opcode-table setup, shared by decode, assemble and the bindings. Assumes the GIL is held.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "frontend/bytecode/instruction.h"

namespace cdynamo::bytecode {

// One code unit is two bytes (opcode, oparg) in 3.11 and 3.12; tables count in code units.
constexpr int kCodeUnit = 2;

// Fills the opcode tables (names, cache counts) from the running interpreter's `opcode` module.
// Idempotent; throws PythonError if the module cannot be read.
void init_opcode_tables();
// The opcode whose name is `name`, or -1.
int opcode_from_name(const std::string& name);
// The variant of jump `opcode` that goes in the given direction (itself if it already does),
// or -1 when the version has none (3.12 has no backward conditional jumps).
int jump_in_direction(int opcode, bool backward);
// Code units taken by `arg` in EXTENDED_ARG prefixes (0 to 3).
int extended_arg_count(uint32_t arg);
// Code units of an instruction with this opcode and arg: prefixes, the opcode, its caches.
int instruction_units(int opcode, uint32_t arg);

// Location table (PEP 657). `positions` gets one Position per code unit of a code object with
// `n_units` code units; units the table does not cover get "no location".
void decode_location_table(const uint8_t* data, size_t size, int first_line, size_t n_units,
                           std::vector<Position>& positions);
// A run of code units sharing one position, in code order. The encoder writes each run as CPython's
// assembler writes one: cut into entries of at most 8 units. Which instructions form a run
// differs by version and is the caller's choice.
struct LocationRun {
  Position position;
  int units;
};
std::string encode_location_table(const std::vector<LocationRun>& runs, int first_line);

// Exception table entries, in code units; `end` is exclusive.
struct ExceptionEntry {
  int start;
  int end;
  int target;
  int depth;
  bool lasti;
};
std::vector<ExceptionEntry> decode_exception_table(const uint8_t* data, size_t size);
std::string encode_exception_table(const std::vector<ExceptionEntry>& entries);

}  // namespace cdynamo::bytecode
