// The launch heuristics of the Triton target (see launch_heuristics.h): pointwise blocks of up to
// 1024 elements, persistent rows up to 8192 elements, looped r blocks beyond.
#include "backend/codegen/triton/launch_heuristics.h"
#include <algorithm>

namespace cdynamo::codegen::triton {
namespace {

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

int warps_for(int64_t elements) { return static_cast<int>(std::clamp<int64_t>(pow2_at_least(elements / 512), 2, 16)); }

constexpr int64_t kPersistentRow = 8192;  // a row this long still fits the registers of one program
constexpr int64_t kOuterXBlock = 32;      // outputs per program of a looped outer reduction
constexpr int64_t kBusyPrograms = 8;      // fewer column blocks: a split's second stage, latency-bound
constexpr int64_t kMaxLoopTile = 8192;    // elements per loop step of such a latency-bound loop

}  // namespace

HeuristicChoice choose_launch(int64_t xnumel, int64_t rnumel, bool reduction, bool r_contiguous, bool r_fixed) {
  HeuristicChoice choice;
  const int64_t x = std::max<int64_t>(xnumel, 1), r = std::max<int64_t>(rnumel, 1);
  if (!reduction) {
    int64_t block = std::min<int64_t>(1024, pow2_at_least(x));
    choice.config = {block, 1, block >= 512 ? 4 : 2, 1};
    choice.candidates = {choice.config};
    if (x > 1024)
      for (auto [b, w] : {std::pair<int64_t, int>{2048, 8}, {512, 4}, {4096, 8}})
        if (b != block) choice.candidates.push_back({b, 1, w, 1});
    return choice;
  }
  if (r_fixed && r_contiguous && r <= kPersistentRow) {
    int64_t rblock = pow2_at_least(r);
    int64_t xblock = std::clamp<int64_t>(2048 / rblock, 1, std::min<int64_t>(64, pow2_at_least(x)));
    choice.config = {xblock, rblock, warps_for(xblock * rblock), 1};
    choice.candidates = {choice.config};
    for (int64_t xb : {xblock * 2, xblock / 2})
      if (xb >= 1 && xb <= 64 && xb * rblock <= 16384) choice.candidates.push_back({xb, rblock, warps_for(xb * rblock), 1});
    return choice;
  }
  if (r_fixed && !r_contiguous && r <= 64) {
    int64_t rblock = pow2_at_least(r);
    int64_t xblock = std::min<int64_t>(pow2_at_least(x), std::max<int64_t>(1, 4096 / rblock));
    xblock = std::min<int64_t>(xblock, 256);
    choice.config = {xblock, rblock, warps_for(xblock * rblock), 1};
    choice.candidates = {choice.config};
    return choice;
  }
  choice.persistent = false;
  if (r_contiguous) {
    int64_t rblock = std::min<int64_t>(2048, pow2_at_least(r));
    choice.config = {1, rblock, 8, 1};
    choice.candidates = {choice.config, {1, 1024, 4, 1}, {2, 1024, 8, 1}};
  } else if (x >= kBusyPrograms * kOuterXBlock) {
    // Enough column blocks to fill the GPU: small 32 x 32 tiles were within 1-2% of the best of
    // 20 configurations on every shape of bench/outer_reduction_sweep.py (H200).
    choice.config = {kOuterXBlock, std::min<int64_t>(32, pow2_at_least(r)), 4, 1};
    choice.candidates = {choice.config, {64, 16, 4, 1}, {32, 16, 2, 1}, {64, 64, 8, 1}};
  } else {
    // Few programs (a split reduction's second stage: chunks x few columns) loop serially over r:
    // wide tiles make the loop short.
    int64_t xblock = std::min<int64_t>(64, pow2_at_least(x));
    int64_t rblock = std::min<int64_t>(pow2_at_least(r), kMaxLoopTile / xblock);
    choice.config = {xblock, rblock, std::min(8, warps_for(xblock * rblock)), 1};
    choice.candidates = {choice.config, {std::min<int64_t>(32, xblock), 32, 4, 1}, {xblock, 64, 8, 1}};
  }
  return choice;
}

HeuristicChoice choose_tiled_launch(int64_t rows, int64_t columns) {
  HeuristicChoice choice;
  int64_t r = std::min<int64_t>(64, pow2_at_least(std::max<int64_t>(rows, 1)));
  int64_t c = std::min<int64_t>(64, pow2_at_least(std::max<int64_t>(columns, 1)));
  choice.config = {r, c, 4, 1};
  choice.candidates = {choice.config};
  if (r >= 32 && c >= 32) choice.candidates.push_back({32, 32, 4, 1});
  if (rows >= 128 && c >= 64) choice.candidates.push_back({128, 64, 8, 1});
  return choice;
}

}  // namespace cdynamo::codegen::triton
