// The executor: a Python callable (vectorcall) that runs a compiled ir::Program on tensors:
// binds inputs and constants, allocates buffers, runs kernels and extern aten ops, frees early.
// Assumes the kernels were compiled from this program's Kernel steps, in step order.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include "backend/cache/kernel_cache.h"
#include "backend/ir/ir.h"
#include "backend/runtime/launcher.h"
#include "common/py_ref.h"

namespace cdynamo::runtime {

struct ExecutorOptions {
  // Storage of buffers of at least this many bytes is kept between calls and reused once nobody
  // else holds it (an output the caller dropped, an intermediate): fresh large allocations are
  // mmap'ed by malloc and page-faulted on first touch, which costs more than the kernel itself.
  // 0 disables reuse.
  int64_t reuse_min_bytes = int64_t{16} << 20;
  // What runs a call whose sizes outgrow a kernel's 32-bit indices (the graph as captured, taking
  // the program's arguments); without one such a call raises.
  Ref oversize_fallback;
};

// Builds the callable. kernels[k] runs the k-th Kernel step. constants bind
// Constant buffers by name to tensors (any object torch accepts as a tensor).
// Calling it with the program's inputs (tensors, positionally) returns a tuple of its outputs.
// Extern arguments are parsed against the op schemas here, so a bad constant fails now.
// Ownership contract: borrows nothing past the call except what it copies into the executor
// (new references to the constants); returns a new reference. Throws on error (GIL held).
Ref make_executor(ir::Program program, const std::vector<std::pair<std::string, Ref>>& constants,
                  std::vector<Launcher> kernels, ExecutorOptions options = {});

// True if obj is an executor made by make_executor.
bool is_executor(Handle obj);

}  // namespace cdynamo::runtime
