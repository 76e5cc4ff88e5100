// Python's integer floor division and modulo on int64 (C++'s / and % truncate toward zero):
// shared by the IR's simplifier, the runtime's size programs and the shape guard.
#pragma once
#include <cstdint>

namespace cdynamo {

// a // b as Python computes it (b != 0).
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// a % b as Python computes it: the sign of b (b != 0).
inline int64_t python_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace cdynamo
