// Code generation targets of the inductor backend: the C++/OpenMP target for CPU tensors and the
// Triton target (CUDA tensors, or CPU tensors through Triton's interpreter), chosen per graph.
// Assumes the GIL is held in every call; a target releases it around its own blocking work.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "backend/ir/ir.h"
#include "backend/runtime/launcher.h"

namespace cdynamo::target {

// IR features a target's code generator implements; the lowering and scheduler produce the
// others' equivalents when a feature is missing (extern gathers, separate kernels).
struct Capabilities {
  bool indirect_loads = true;
  bool full_pointwise_in_reductions = true;
  std::string device_type = "cpu";  // what its kernels' pointers address ("cpu", "cuda")
  bool split_long_reductions = false;  // few long rows become two reductions (many programs)
};

class Target {
 public:
  virtual ~Target() = default;
  virtual const char* name() const = 0;
  virtual Capabilities capabilities() const = 0;
  // The generated source of each Kernel step, in order: (kernel name, source).
  virtual std::vector<std::pair<std::string, std::string>> generate(const ir::Program& program) const = 0;
  // Generates the kernels and reads the configuration (GIL held); the returned job compiles
  // (through the target's caches) and loads them, one launcher per Kernel step. The job may run
  // on any thread without the GIL: it takes the GIL itself where it needs Python.
  // With blob non-null, *blob receives the program for the compiled-graph cache (program_blob.h)
  // or stays empty when this target's kernels cannot be stored that way.
  using CompileJob = std::function<std::vector<runtime::Launcher>()>;
  virtual CompileJob prepare(const ir::Program& program, std::string* blob) const = 0;
};

// "cpp" or "triton"; throws UserError naming the known targets otherwise.
const Target& target_named(const std::string& name);

// Compiled-graph cache entries of the Triton target: their kernel keys are Triton kernel
// descriptions (is_triton_blob_key); loading builds the launchers through the build service's
// caches (GIL held). Throws UserError (ValueError) for a malformed key.
bool is_triton_blob_key(const std::string& key);
std::vector<runtime::Launcher> triton_launchers_from_blob(const ir::Program& program, const std::vector<std::string>& keys);

}  // namespace cdynamo::target
