// A bound on the C recursion of the backend's walks over expression trees, scalar graphs and
// view chains: past kMaxRecursionDepth nested guarded calls compilation stops with a clean error.
// Assumes one compilation per thread at a time (the depth is thread-local).
#pragma once
#include <string>
#include "common/error.h"

namespace cdynamo::ir {

// Guarded calls nested deeper than this end the compilation (the backend's caller then runs the
// graph eagerly); graphs that deep would otherwise exhaust the C stack.
constexpr int kMaxRecursionDepth = 1000;

class RecursionGuard {
 public:
  explicit RecursionGuard(const char* what) {
    if (++depth() > kMaxRecursionDepth) {
      --depth();
      throw UserError(std::string(what) + " nested deeper than " + std::to_string(kMaxRecursionDepth) +
                      " levels: the graph is too deep for the inductor backend");
    }
  }
  ~RecursionGuard() { --depth(); }
  RecursionGuard(const RecursionGuard&) = delete;
  RecursionGuard& operator=(const RecursionGuard&) = delete;

 private:
  static int& depth() {
    static thread_local int value = 0;
    return value;
  }
};

}  // namespace cdynamo::ir
