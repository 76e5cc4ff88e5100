// What runs one Kernel step of a compiled program, whatever the target: a loaded C++ kernel, a
// Triton kernel on a CUDA stream, or a Triton kernel through Triton's interpreter (CPU tensors).
// Assumes buffers are passed as both targets' ABIs define them (cpp_codegen.h, triton_codegen.h).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>
#include "backend/cache/kernel_cache.h"
#include "backend/runtime/size_expr.h"

namespace cdynamo::runtime {

class KernelLauncher {
 public:
  virtual ~KernelLauncher() = default;
  // buffers[k]: the storage pointer of the kernel's k-th buffer (inputs, outputs, locals),
  // addressing element 0 of its offset space. symbols: this call's values of the program's size
  // symbols (ir::Program::symbols order; null for a static program). stream: the CUstream of
  // cuda_device() current in torch at the call (null on the CPU). Called without the GIL
  // (launchers that need Python take it themselves). Returns nonzero when an indirect position
  // was out of range.
  virtual int launch(char** buffers, const int64_t* symbols, void* stream) const = 0;
  // The CUDA device the kernel runs on, or -1 for a CPU kernel.
  virtual int cuda_device() const { return -1; }
  // A kernel of symbolic sizes compiled with 32-bit indices: what must stay below 2^31 on a call
  // (the executor checks them before running any step). Null when nothing is limited.
  virtual const std::vector<SizeExpr>* narrow_limits() const { return nullptr; }
};

using Launcher = std::shared_ptr<const KernelLauncher>;

// A kernel of the C++ target (a function of a loaded shared library).
Launcher cpu_launcher(cache::KernelFn fn);

}  // namespace cdynamo::runtime
