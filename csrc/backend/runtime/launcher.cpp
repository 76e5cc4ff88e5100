// The C++ target's launcher: a call of the loaded kernel's entry point.
// Assumes the kernel follows cpp_codegen.h's ABI.
#include "backend/runtime/launcher.h"

namespace cdynamo::runtime {
namespace {

class CpuLauncher final : public KernelLauncher {
 public:
  explicit CpuLauncher(cache::KernelFn fn) : fn_(fn) {}
  int launch(char** buffers, const int64_t* symbols, void*) const override { return fn_(buffers, symbols); }

 private:
  cache::KernelFn fn_;
};

}  // namespace

Launcher cpu_launcher(cache::KernelFn fn) { return std::make_shared<CpuLauncher>(fn); }

}  // namespace cdynamo::runtime
