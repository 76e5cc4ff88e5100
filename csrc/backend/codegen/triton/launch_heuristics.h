// Block sizes, warps and persistence of a Triton kernel from its element counts: one table of
// choices for the default, and the candidates max-autotune benchmarks. Symbolic sizes: at hints.
#pragma once
#include <cstdint>
#include <vector>
#include "backend/codegen/triton/triton_codegen.h"

namespace cdynamo::codegen::triton {

struct HeuristicChoice {
  LaunchConfig config;
  std::vector<LaunchConfig> candidates;  // config first
  bool persistent = true;                // a reduction row fits one RBLOCK tile
};

// r_contiguous: the reduction's loads walk memory along r (a row reduction); otherwise along x
// (a reduction over an outer dimension), where wide x blocks keep the loads coalesced.
// r_fixed: rnumel is the same on every call (false: a symbolic row length, never persistent).
HeuristicChoice choose_launch(int64_t xnumel, int64_t rnumel, bool reduction, bool r_contiguous, bool r_fixed = true);
// A pointwise kernel on 2-D tiles: rows x columns.
HeuristicChoice choose_tiled_launch(int64_t rows, int64_t columns);

}  // namespace cdynamo::codegen::triton
