// The registry of code generation targets, by the names cdynamo.inductor.targets chooses.
// Assumes both targets are linked in (the Triton one needs no CUDA at build time).
#include "backend/target/target.h"
#include "common/error.h"

namespace cdynamo::target {

const Target& cpp_target();
const Target& triton_target();

const Target& target_named(const std::string& name) {
  if (name == "cpp") return cpp_target();
  if (name == "triton") return triton_target();
  throw UserError("unknown inductor target '" + name + "' (known: cpp, triton)", PyExc_ValueError);
}

}  // namespace cdynamo::target
