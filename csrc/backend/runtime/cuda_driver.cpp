// The CUDA driver entry points cdynamo needs, resolved with dlopen/dlsym once per process, and
// the Kernel wrapper. Assumes torch uses each device's primary context (it does).
#include "backend/runtime/cuda_driver.h"
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>
#include "common/error.h"

namespace cdynamo::runtime::cuda {
namespace {

// The driver's types, as the ABI has them (cuda.h is not needed to build).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
constexpr int kMaxDynamicSharedAttribute = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct Driver {
  bool ok = false;
  std::string missing;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuEventCreate)(void**, unsigned) = nullptr;
  CUresult (*cuEventRecord)(void*, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(void*) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, void*, void*) = nullptr;
  CUresult (*cuEventDestroy)(void*) = nullptr;
};

template <class F>
void resolve(void* lib, const char* name, F& fn, Driver& d) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && d.missing.empty()) d.missing = name;
}

const Driver& driver() {
  static Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.missing = "libcuda.so.1";
      return d;
    }
    resolve(lib, "cuInit", d.cuInit, d);
    resolve(lib, "cuDeviceGet", d.cuDeviceGet, d);
    resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, d);
    resolve(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent, d);
    resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent, d);
    resolve(lib, "cuModuleLoadData", d.cuModuleLoadData, d);
    resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, d);
    resolve(lib, "cuFuncSetAttribute", d.cuFuncSetAttribute, d);
    resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, d);
    resolve(lib, "cuGetErrorString", d.cuGetErrorString, d);
    resolve(lib, "cuEventCreate", d.cuEventCreate, d);
    resolve(lib, "cuEventRecord", d.cuEventRecord, d);
    resolve(lib, "cuEventSynchronize", d.cuEventSynchronize, d);
    resolve(lib, "cuEventElapsedTime", d.cuEventElapsedTime, d);
    // cuEventDestroy is exported as cuEventDestroy_v2 since CUDA 4.0
    d.cuEventDestroy = reinterpret_cast<decltype(d.cuEventDestroy)>(dlsym(lib, "cuEventDestroy_v2"));
    if (!d.cuEventDestroy) resolve(lib, "cuEventDestroy", d.cuEventDestroy, d);
    d.ok = d.missing.empty() && d.cuInit(0) == 0;
    if (d.missing.empty() && !d.ok) d.missing = "cuInit";
    return d;
  }();
  return d;
}

std::string error_text(CUresult status) {
  const char* text = nullptr;
  if (driver().cuGetErrorString) driver().cuGetErrorString(status, &text);
  return "CUDA driver error " + std::to_string(status) + (text ? std::string(" (") + text + ")" : "");
}

void check_cu(CUresult status, const std::string& what) {
  if (status != 0) throw UserError(what + ": " + error_text(status));
}

// The primary context of `device` (retained once), made current on this thread.
CUcontext use_primary_context(int device) {
  const Driver& d = driver();
  static std::mutex mutex;
  static CUcontext contexts[64] = {};
  if (device < 0 || device >= 64) throw UserError("CUDA device index out of range: " + std::to_string(device));
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!contexts[device]) {
      CUdevice dev = 0;
      check_cu(d.cuDeviceGet(&dev, device), "cuDeviceGet");
      check_cu(d.cuDevicePrimaryCtxRetain(&contexts[device], dev), "cuDevicePrimaryCtxRetain");
    }
    ctx = contexts[device];
  }
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  if (current != ctx) check_cu(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

}  // namespace

bool driver_available() { return driver().ok; }

Kernel::Kernel(const std::string& cubin, const std::string& symbol, int device, int num_warps, int shared_bytes)
    : device_(device), block_x_(static_cast<unsigned>(32 * num_warps)), shared_(static_cast<unsigned>(shared_bytes)) {
  const Driver& d = driver();
  if (!d.ok) throw UserError("cdynamo: the CUDA driver is not usable (" + d.missing + "): cannot load Triton kernels");
  context_ = use_primary_context(device);
  CUmodule module = nullptr;
  check_cu(d.cuModuleLoadData(&module, cubin.data()), "loading a Triton kernel (cuModuleLoadData)");
  CUfunction fn = nullptr;
  check_cu(d.cuModuleGetFunction(&fn, module, symbol.c_str()), "finding kernel " + symbol);
  // More than 48 KiB of dynamic shared memory must be asked for explicitly.
  if (shared_bytes > 49152) check_cu(d.cuFuncSetAttribute(fn, kMaxDynamicSharedAttribute, shared_bytes), "cuFuncSetAttribute");
  function_ = fn;
}

std::string Kernel::launch(uint32_t grid_x, uint32_t grid_y, void* stream, void** params) const {
  const Driver& d = driver();
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  // Another device's context may be current (torch sets it per device): launch in ours, put it back.
  if (current != context_ && d.cuCtxSetCurrent(context_) != 0) return "cuCtxSetCurrent failed";
  CUresult status = d.cuLaunchKernel(static_cast<CUfunction>(function_), grid_x, grid_y, 1, block_x_, 1, 1, shared_,
                                     static_cast<CUstream>(stream), params, nullptr);
  if (current && current != context_) d.cuCtxSetCurrent(current);
  return status == 0 ? std::string() : error_text(status);
}

double Kernel::time_launches(uint32_t grid_x, uint32_t grid_y, void* stream, void** params, int launches, int repeats) const {
  const Driver& d = driver();
  struct Events {
    const Driver& d;
    void* start = nullptr;
    void* stop = nullptr;
    ~Events() {
      if (start) d.cuEventDestroy(start);
      if (stop) d.cuEventDestroy(stop);
    }
  } events{d};
  check_cu(d.cuEventCreate(&events.start, 0), "cuEventCreate");
  check_cu(d.cuEventCreate(&events.stop, 0), "cuEventCreate");
  auto run = [&] {
    for (int k = 0; k < launches; ++k) {
      std::string error = launch(grid_x, grid_y, stream, params);
      if (!error.empty()) throw UserError("timing a Triton kernel: " + error);
    }
  };
  run();  // warm: first-launch work (module load) out of the timings
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    check_cu(d.cuEventRecord(events.start, static_cast<CUstream>(stream)), "cuEventRecord");
    run();
    check_cu(d.cuEventRecord(events.stop, static_cast<CUstream>(stream)), "cuEventRecord");
    check_cu(d.cuEventSynchronize(events.stop), "cuEventSynchronize");
    float ms = 0;
    check_cu(d.cuEventElapsedTime(&ms, events.start, events.stop), "cuEventElapsedTime");
    times.push_back(static_cast<double>(ms) / launches);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double Kernel::cpu_us_per_launch(uint32_t grid_x, void* stream, void** params, int launches, int repeats) const {
  const Driver& d = driver();
  void* drained = nullptr;
  check_cu(d.cuEventCreate(&drained, 0), "cuEventCreate");
  std::vector<double> times;
  std::string error;
  for (int r = 0; r <= repeats && error.empty(); ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < launches && error.empty(); ++k) error = launch(grid_x, 1, stream, params);
    auto stop = std::chrono::steady_clock::now();
    if (r > 0) times.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / launches);  // batch 0 warms
    if (d.cuEventRecord(drained, static_cast<CUstream>(stream)) == 0) d.cuEventSynchronize(drained);
  }
  d.cuEventDestroy(drained);
  if (!error.empty()) throw UserError("timing launches: " + error);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace cdynamo::runtime::cuda
