// Bounds on how deep the interpreter follows nested data, and the step of a recursive walk:
// cycles are found by identity on the walk's current path, depth by an explicit limit.
// Assumes each walk owns its path (a local vector passed down the recursion).
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "frontend/interp/compile_frame.h"

namespace cdynamo::interp {

// Data nested deeper than this (containers in containers, attribute paths, values the trace
// builds) is a graph break: C++ recursion over it could otherwise exhaust the C stack.
constexpr int kMaxNestingDepth = 200;

using WalkPath = std::vector<const void*>;

// Enters `node` on `path` for the lifetime of the step. A node already on the path is a cycle:
// the step is not entered (cycle() is true) and the walk decides what a cycle means for it.
// Deeper than kMaxNestingDepth: Unsupported naming `what`.
class PathStep {
 public:
  PathStep(WalkPath& path, const void* node, const char* what) : path_(path) {
    if (std::find(path.begin(), path.end(), node) != path.end()) return;
    if (path.size() >= static_cast<size_t>(kMaxNestingDepth))
      throw Unsupported(std::string(what) + " nested deeper than " + std::to_string(kMaxNestingDepth) + " levels");
    path.push_back(node);
    entered_ = true;
  }
  ~PathStep() {
    if (entered_) path_.pop_back();
  }
  PathStep(const PathStep&) = delete;
  PathStep& operator=(const PathStep&) = delete;
  bool cycle() const { return !entered_; }

 private:
  WalkPath& path_;
  bool entered_ = false;
};

// One level of a recursion without a path to keep (each level meets a new object): counts it
// in `depth` while alive.
class DepthCount {
 public:
  explicit DepthCount(int& depth) : depth_(depth) { ++depth_; }
  ~DepthCount() { --depth_; }
  DepthCount(const DepthCount&) = delete;
  DepthCount& operator=(const DepthCount&) = delete;

 private:
  int& depth_;
};

}  // namespace cdynamo::interp
