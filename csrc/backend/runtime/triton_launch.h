// Launchers of Triton kernels: compiled cubins through the CUDA driver (no Python per launch),
// and, for CPU tensors, Triton's interpreter through a Python callable (tests without a GPU).
// Assumes the GeneratedTritonKernel's ABI (triton_codegen.h) and static sizes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "backend/codegen/triton/triton_codegen.h"
#include "backend/runtime/launcher.h"
#include "common/py_ref.h"

namespace cdynamo::runtime {

// What a launcher needs of the generated kernel: the values of its scalar arguments, the grid.
struct TritonLaunchShape {
  size_t pointer_count = 0;   // buffer pointers (the error flag not included)
  bool error_flag = false;
  std::vector<std::pair<int64_t, bool>> scalars;  // numel values; true: passed as int64
  int64_t grid = 0;           // programs along axis 0 (0: nothing to run)
  int64_t grid_y = 1;         // programs along axis 1 (tiled kernels' columns)
  int implicit_params = 0;    // null pointers Triton appends (global / profile scratch)
};
TritonLaunchShape launch_shape(const codegen::triton::GeneratedTritonKernel& k, const codegen::triton::LaunchConfig& config);

// The compiled binary of a kernel: cubin bytes, its symbol, warps and dynamic shared memory.
struct CubinKernel {
  std::string cubin;
  std::string symbol;
  int num_warps = 4;
  int shared_bytes = 0;
  int implicit_params = 0;
  int device = 0;
};
// The binary described by a build result dict (cdynamo.inductor.triton_runtime: "cubin",
// "symbol", "num_warps", "shared", "implicit_params", "device_index"). Throws if one is missing.
CubinKernel cubin_from_result(Handle result);
// rebuild_unaligned: a Python callable returning the result dict of the variant compiled
// without assuming 16-byte aligned pointers, used from the first launch with a misaligned one
// (an input that is a slice at an odd offset). Ownership contract: keeps a new reference to it.
Launcher cuda_triton_launcher(const CubinKernel& binary, TritonLaunchShape shape, Handle rebuild_unaligned);

// Milliseconds per launch of a built kernel on the given device pointers and numels (value,
// passed as int64), grid programs on `stream`: what max-autotune compares. Blocks until the
// timing launches finish; needs no GIL.
double time_triton_kernel(const CubinKernel& binary, const std::vector<uint64_t>& pointers,
                          const std::vector<std::pair<int64_t, bool>>& scalars, int64_t grid, int64_t grid_y,
                          void* stream);

// Runs `launch(*tensors)` with the GIL, where tensors view the buffers (one per pointer, of the
// buffer's dtype and extent), plus a one-element int32 error tensor when shape.error_flag.
// Ownership contract: keeps a new reference to launch (released with the GIL held).
struct BufferView {
  ir::DType dtype = ir::DType::Float32;
  int64_t extent = 0;  // elements from the pointer that the kernel may touch
};
Launcher interpreted_triton_launcher(Handle launch, std::vector<BufferView> views, TritonLaunchShape shape);

}  // namespace cdynamo::runtime
