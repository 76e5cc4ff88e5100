// The backend's entry point for the lead: a scheduled ir::Program in, a Python callable out.
// Assumes the GIL is held; code generation, compilation and the runtime live behind it.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "backend/cache/kernel_cache.h"
#include "backend/ir/ir.h"
#include "common/py_ref.h"

namespace cdynamo::runtime {

// Generates the target's kernels, compiles them (the C++ target's kernel cache: memory, disk
// under cdynamo.config.cache_dir, else g++ processes in parallel, with the GIL released; the
// Triton target's build service) and returns a callable f(*inputs) -> tuple of outputs (see executor.h).
//
// With cdynamo.config.async_compile true and a callable eager_fallback, it returns at once: the
// compile runs on a background thread, calls run eager_fallback(*inputs) until the kernels are
// ready and the compiled program afterwards (a failed background compile warns once and keeps
// the fallback). The callable then has `.ready` (bool) and `.wait(timeout=None)` (-> ready).
// BuildMode::WaitOnFirstCall builds in the background too, but a call waits for the build (GIL
// released) instead of running the fallback: the caller goes on (compiles the next graph, whose
// kernels join the same build workers) and the results are the compiled program's from the
// first call; only a failed build runs the fallback (warned once).
// eager_fallback may be None (or a null Handle): always synchronous.
//
// Ownership contract: program and constants are taken by value (constants: tensor references);
// eager_fallback is borrowed and, if used, a new reference to it is kept; returns a new
// reference. Throws UserError on a compile error (message names the generated source's path).
//
// With blob non-null, *blob receives the program as bytes for the compiled-graph cache
// (program_blob.h, kernels named by their cache keys), or stays empty if it cannot be stored.
// target: "cpp" or "triton" (target/target.h).
enum class BuildMode { FromConfig, WaitOnFirstCall };
Ref compile_program(ir::Program program, std::vector<std::pair<std::string, Ref>> constants, Handle eager_fallback,
                    std::string* blob = nullptr, const std::string& target = "cpp", BuildMode mode = BuildMode::FromConfig);

// The callable of a program stored by compile_program(..., blob), its kernels loaded from the
// kernel cache (never compiled): a null Ref when a kernel library is missing (the caller
// compiles instead). Throws UserError (ValueError) for a malformed blob, and whatever
// make_executor throws (a constant missing or of the wrong kind). eager_fallback (borrowed, may
// be null or None) runs a symbolic program's calls past its kernels' 32-bit limits.
// Ownership contract: constants are tensor references the executor keeps; returns a new reference.
Ref load_program(std::string_view blob, const std::vector<std::pair<std::string, Ref>>& constants, Handle eager_fallback);

// The kernel cache's options from cdynamo.config: cache_dir, cxx (the compiler), cxx_flags.
// Throws PythonError or UserError (a knob of the wrong type).
cache::CacheOptions cache_options_from_config();

// The generated source of each Kernel step for a target, in order: (kernel name, source).
// For tests and logs.
std::vector<std::pair<std::string, std::string>> generate_sources(const ir::Program& program, const std::string& target = "cpp");

}  // namespace cdynamo::runtime
