// The CUDA driver API, loaded at run time (libcuda.so.1), for loading compiled Triton kernels and
// launching them: the package builds and imports on machines without CUDA. No Python, no torch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cdynamo::runtime::cuda {

// True when libcuda.so.1 loads and has the entry points used here (no device needed).
bool driver_available();

// A kernel loaded from a cubin into the primary context of `device`, with its launch shape.
// Unloading the module is left to process exit: kernels are cached for the process's lifetime
// and contexts may already be gone at static destruction.
class Kernel {
 public:
  // Throws UserError when the driver is missing or rejects the binary (message from the driver).
  Kernel(const std::string& cubin, const std::string& symbol, int device, int num_warps, int shared_bytes);
  // Launches grid_x * grid_y programs on `stream` (a CUstream; 0 for the legacy default stream).
  // params[k] points at the k-th kernel parameter's value. Returns "" or the driver's error.
  std::string launch(uint32_t grid_x, uint32_t grid_y, void* stream, void** params) const;
  // Milliseconds per launch, median of `repeats` timed batches of `launches` launches on stream
  // (CUDA events; blocks until they finish). Throws UserError on a driver error.
  double time_launches(uint32_t grid_x, uint32_t grid_y, void* stream, void** params, int launches, int repeats) const;
  // Microseconds of CPU per launch() call: median of `repeats` batches of `launches`, the stream
  // drained between batches so that a full launch queue never blocks (a launch-overhead probe).
  double cpu_us_per_launch(uint32_t grid_x, void* stream, void** params, int launches, int repeats) const;
  int device() const { return device_; }

 private:
  void* function_ = nullptr;  // CUfunction
  void* context_ = nullptr;   // CUcontext: the device's primary context
  int device_ = 0;
  unsigned block_x_ = 128;
  unsigned shared_ = 0;
};

}  // namespace cdynamo::runtime::cuda
