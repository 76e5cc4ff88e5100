// The kernel cache: generated C++ sources become loaded entry points, through an in-memory cache,
// an on-disk cache shared between processes, and a pool of parallel compiler processes (g++/clang++).
// Assumes the caller resolved the options (with the GIL) and calls compile_kernels without it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cdynamo::cache {

// Returns 0, or nonzero when the kernel met an out-of-range indirect position (cpp_codegen.h).
using KernelFn = int (*)(char** buffers, const int64_t* symbols);

struct CacheOptions {
  std::string cache_dir;          // root folder; kernels live under <cache_dir>/kernels/
  std::string compiler = "g++";   // cdynamo.config.cxx: a program name (searched in PATH) or path
  std::vector<std::string> extra_flags;  // cdynamo.config.cxx_flags, after the built-in flags
  int jobs = 0;                   // parallel compiler processes; 0: the number of usable cores
  double progress_after_s = 2.0;  // a progress line on stderr once compiling takes longer
};

struct KernelSource {
  std::string name;    // for messages (the IR kernel's name)
  std::string symbol;  // the entry point the library exports
  std::string source;  // C++ text that includes <cd_prelude.h>
};

// Returns the entry point of every kernel, in order: from memory, else from the disk cache
// (<cache_dir>/kernels/<key[:2]>/<key>/kernel.so, key = sha256 of compiler identity, flags,
// prelude, symbol and source), else compiled by options.compiler (several at once, identical
// sources once) into that folder with atomic renames, so processes can share it. The prelude is
// precompiled once per cache and compiler (<cache_dir>/pch/<key>/: cd_prelude.h.gch for g++,
// cd_prelude.h.pch for clang), which makes each kernel's compile several times faster; a copy of
// cd_prelude.h also lies next to each source (g++ -I. works). Blocking and free of Python: call
// it with the GIL released. A compile error throws UserError naming the generated source's path
// and quoting the compiler's message; a compiler that cannot be run throws UserError saying how
// to choose another (CDYNAMO_CXX / cdynamo.config.cxx).
std::vector<KernelFn> compile_kernels(const std::vector<KernelSource>& kernels, const CacheOptions& options);

// The cache key of each kernel, in order (what compile_kernels looks up).
std::vector<std::string> kernel_keys(const std::vector<KernelSource>& kernels, const CacheOptions& options);
// Kernels already in the cache, by key: from memory, else dlopen'ed from disk; never compiles.
// Returns an empty vector if any is missing or fails to load (the caller then compiles).
// Blocking and free of Python, like compile_kernels.
std::vector<KernelFn> load_kernels(const std::vector<std::string>& keys, const std::vector<std::string>& symbols,
                                   const CacheOptions& options);
// SHA-256 of what every kernel key includes (compiler path and version, CPU flags, compile
// flags, libraries, prelude): a compiled-graph cache entry naming kernel keys is valid only
// with it. Runs the compiler once (--version) per compiler and process; free of Python.
std::string toolchain_key(const CacheOptions& options);

struct CacheStats {
  int64_t compiled = 0;     // compiler runs
  int64_t disk_hits = 0;    // kernels loaded from a .so already on disk
  int64_t memory_hits = 0;  // kernels already loaded in this process
};
CacheStats cache_stats();
void reset_cache_stats();
// Forgets loaded kernels (they stay mapped), so the next lookup goes to the disk cache.
void clear_memory_cache();

// The compiler and its flags (the source, -o and libraries follow), e.g. for an assembly listing.
std::vector<std::string> compile_flags(const CacheOptions& options);
// Libraries linked after the object: libmvec for the vector math, libm.
std::vector<std::string> link_libraries();

}  // namespace cdynamo::cache
