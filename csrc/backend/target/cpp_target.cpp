// The C++/OpenMP target: codegen/cpp sources, compiled by the kernel cache's g++/clang pool, run
// as functions of loaded shared libraries. Assumes CPU tensors (raw host pointers).
#include "backend/cache/kernel_cache.h"
#include "backend/codegen/cpp/cpp_codegen.h"
#include "backend/runtime/compiled_program.h"
#include "backend/runtime/gil.h"
#include "backend/runtime/program_blob.h"
#include "backend/target/target.h"
#include "common/error.h"

namespace cdynamo::target {
namespace {

class CppTarget final : public Target {
 public:
  const char* name() const override { return "cpp"; }
  Capabilities capabilities() const override { return {true, true, "cpu"}; }

  std::vector<std::pair<std::string, std::string>> generate(const ir::Program& program) const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const ir::Step& step : program.steps)
      if (const auto* k = std::get_if<ir::Kernel>(&step)) {
        codegen::cpp::GeneratedKernel g = codegen::cpp::generate_kernel(program, *k);
        out.emplace_back(g.name, g.source);
      }
    return out;
  }

  CompileJob prepare(const ir::Program& program, std::string* blob) const override {
    std::vector<cache::KernelSource> sources;
    for (auto& [name, source] : generate(program)) sources.push_back({name, codegen::cpp::kKernelSymbol, source});
    cache::CacheOptions options = runtime::cache_options_from_config();
    if (blob) {
      std::vector<std::string> symbols;
      for (const cache::KernelSource& k : sources) symbols.push_back(k.symbol);
      try {
        std::vector<std::string> keys;
        {
          runtime::GilRelease nogil;  // the first use of a compiler runs it (--version)
          keys = cache::kernel_keys(sources, options);
        }
        *blob = runtime::serialize_program(program, keys, symbols);
      } catch (const UserError&) {
        blob->clear();  // no kernel keys (the compiler cannot be run): compiled, just not cached
      }
    }
    return [sources = std::move(sources), options] {
      std::vector<runtime::Launcher> launchers;
      for (cache::KernelFn fn : cache::compile_kernels(sources, options)) launchers.push_back(runtime::cpu_launcher(fn));
      return launchers;
    };
  }
};

}  // namespace

const Target& cpp_target() {
  static CppTarget target;
  return target;
}

}  // namespace cdynamo::target
