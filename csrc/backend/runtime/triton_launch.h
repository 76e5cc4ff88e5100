// Launchers of Triton kernels: compiled cubins through the CUDA driver (no Python per launch),
// and, for CPU tensors, Triton's interpreter through a Python callable (tests without a GPU).
// Assumes the GeneratedTritonKernel's ABI (triton_codegen.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "backend/codegen/triton/triton_codegen.h"
#include "backend/runtime/launcher.h"
#include "backend/runtime/size_expr.h"
#include "common/py_ref.h"

namespace cdynamo::runtime {

// What a launcher needs of the generated kernel: the values of its scalar arguments, the grid,
// each evaluated per call from the size symbols when the program's sizes are symbolic.
struct TritonLaunchShape {
  size_t pointer_count = 0;   // buffer pointers (the error flag not included)
  bool error_flag = false;
  std::vector<std::pair<SizeExpr, bool>> scalars;  // numels, then size symbols; true: passed as int64
  SizeExpr grid{0};           // programs along axis 0 (0: nothing to run)
  SizeExpr grid_y{1};         // programs along axis 1 (tiled kernels' columns)
  std::vector<SizeExpr> narrow_limits;  // a 32-bit kernel's: a call where one reaches 2^31 runs as captured
  int implicit_params = 0;    // null pointers Triton appends (global / profile scratch)
  bool symbolic() const;
};
TritonLaunchShape launch_shape(const codegen::triton::GeneratedTritonKernel& k, const codegen::triton::LaunchConfig& config,
                               const std::vector<ir::Symbol>& symbols);
// The shape's scalar values and grid for one call (symbols: null for a static shape). The
// narrow limits are the caller's to check (the executor does, before a call's first step).
struct LaunchValues {
  std::vector<std::pair<int64_t, bool>> scalars;
  int64_t grid = 0, grid_y = 1;
};
LaunchValues launch_values(const TritonLaunchShape& shape, const int64_t* symbols);
// The same without allocating (the launch path): scalars[k] for each of shape.scalars.
void evaluate_launch(const TritonLaunchShape& shape, const int64_t* symbols, int64_t* scalars, int64_t& grid, int64_t& grid_y);

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
  SizeExpr extent;  // elements from the pointer that the kernel may touch
};
// scalar_names: the kernel's parameter name of each of shape.scalars; a symbolic shape passes
// this call's values by those names, with its grid as cd_grid.
Launcher interpreted_triton_launcher(Handle launch, std::vector<BufferView> views, TritonLaunchShape shape,
                                     std::vector<std::string> scalar_names);

}  // namespace cdynamo::runtime
