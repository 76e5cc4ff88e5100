// A compiled program as bytes (the value of the compiled-graph cache): what the executor needs,
// without kernel bodies, plus the kernel cache keys; symbolic programs with their symbol table.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::runtime {

// A program rebuilt from a blob: Kernel steps keep name, inputs, outputs and locals only (the
// executor never reads bodies or ranges); kernel_keys[k] / kernel_symbols[k] name the k-th
// Kernel step's library in the kernel cache.
struct ProgramBlob {
  ir::Program program;
  std::vector<std::string> kernel_keys;
  std::vector<std::string> kernel_symbols;
};

std::string serialize_program(const ir::Program& program, const std::vector<std::string>& kernel_keys,
                              const std::vector<std::string>& kernel_symbols);

// Throws UserError (ValueError) on anything malformed: truncation, unknown tags, bad numbers,
// a format version other than this build's. Never reads past the end of `data`.
ProgramBlob deserialize_program(std::string_view data);

}  // namespace cdynamo::runtime
