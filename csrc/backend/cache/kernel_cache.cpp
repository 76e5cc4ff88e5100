// Kernel cache: toolchains (g++ or clang), keys, memory map, disk folders, the parallel compiler
// pool, dlopen, progress lines. Assumes POSIX (dlopen, posix_spawn) and a compiler on PATH.
#include "backend/cache/kernel_cache.h"
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include "backend/cache/process.h"
#include "backend/cache/sha256.h"
#include "backend/codegen/cpp/prelude.h"
#include "common/error.h"

namespace cdynamo::cache {
namespace {

struct State {
  std::mutex mutex;
  std::map<std::string, KernelFn> loaded;  // key -> entry point
  CacheStats stats;
};
State& state() {
  static auto* s = new State();  // leaked: kernels may run during interpreter shutdown
  return *s;
}

// The compiler families differ in flags and in how a precompiled header is used.
enum class Family { Gcc, Clang };

// One configured compiler as the cache uses it, probed once per process (`--version`).
struct Toolchain {
  std::string compiler;            // as configured (config.cxx)
  std::string path;                // what runs: found in PATH, links resolved
  Family family = Family::Gcc;
  std::vector<std::string> flags;  // the command before the source (compile_flags)
  std::string pch_name;            // the precompiled prelude's file name, next to cd_prelude.h
  std::string key;                 // sha256 of everything every kernel key shares
};

// Where posix_spawnp would find program, with symbolic links resolved ("" if nowhere), so the
// key changes when `g++` starts meaning another compiler.
std::string resolve_program(const std::string& program) {
  std::string found;
  if (program.find('/') != std::string::npos) {
    found = program;
  } else {
    const char* env = std::getenv("PATH");
    std::string dirs = env ? env : "/usr/local/bin:/usr/bin:/bin";
    for (size_t start = 0; found.empty();) {
      size_t end = dirs.find(':', start);
      std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
      std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
      if (access(candidate.c_str(), X_OK) == 0) found = candidate;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  if (found.empty()) return "";
  std::unique_ptr<char, decltype(&std::free)> real(realpath(found.c_str(), nullptr), &std::free);
  return real ? std::string(real.get()) : found;
}

[[noreturn]] void compiler_unusable(const std::string& compiler, const std::string& why) {
  throw UserError("cdynamo: cannot run the C++ compiler '" + compiler + "' (" + why +
                  "); the inductor backend compiles its kernels with it. Install g++ (or clang++ with "
                  "libomp-dev), or set CDYNAMO_CXX / cdynamo.config.cxx to a working C++ compiler.");
}

// The compiler's `--version` output (first line: name and version; clang adds target and
// install folder), or UserError when it cannot be run.
std::string compiler_version(const std::string& compiler) {
  std::string log = "/tmp/cdynamo-cxx-version" + unique_suffix();
  std::string error;
  int rc = run_process({compiler, "--version"}, log, &error);
  std::string out = read_file(log);
  std::remove(log.c_str());
  if (rc != 0) compiler_unusable(compiler, error.empty() ? "`--version` exited with status " + std::to_string(rc) : error);
  return out;
}

std::string cpu_flags() {
  std::string cpuinfo = read_file("/proc/cpuinfo");
  size_t flags = cpuinfo.find("\nflags");
  if (flags == std::string::npos) return "";
  return cpuinfo.substr(flags, cpuinfo.find('\n', flags + 1) - flags);
}

// The command before the source. No -ffast-math: NaN, infinities and signed zeros keep their
// meaning. -fno-math-errno lets sqrt and friends be single instructions; -ffp-contract=off keeps
// a*b+c rounded like eager (clang's default contracts within a statement); -fwrapv makes integer
// overflow wrap as torch's integer tensors do. -fopenmp: libgomp under g++, libomp under clang
// (Debian: libomp-dev). -Wno-psabi: both warn that 64-byte vector arguments change the ABI.
std::vector<std::string> flags_for(Family family, const std::string& compiler, const std::vector<std::string>& extra) {
  std::vector<std::string> flags = {compiler,         "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=c++17",
                                    "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fwrapv", "-Wno-psabi"};
#if defined(__x86_64__)
  // clang 14 with AVX512-FP16 (Sapphire Rapids, -march=native) turns the compares of float16
  // values widened to float into FP16 compares and then merges the selects of maximum and
  // minimum of the same operands into one (both results came out as the maximum). Kernels
  // compute float16 in float and never need FP16 arithmetic.
  if (family == Family::Clang) flags.push_back("-mno-avx512fp16");
#endif
  // g++ 12's loop if-conversion miscompiles a scalar kernel's conditional loads at -O3 (the cat of
  // two [3, 2] buffers read zeros for the first row of the second: a GRU's h_n); the vectorized
  // kernels select explicitly and do not need it.
  if (family == Family::Gcc) flags.push_back("-fno-tree-loop-if-convert");
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

std::unique_ptr<Toolchain> probe(const CacheOptions& options) {
  auto t = std::make_unique<Toolchain>();
  t->compiler = options.compiler.empty() ? "g++" : options.compiler;
  t->path = resolve_program(t->compiler);
  if (t->path.empty()) compiler_unusable(t->compiler, "not found in PATH");
  std::string version = compiler_version(t->compiler);
  t->family = version.find("clang") != std::string::npos ? Family::Clang : Family::Gcc;
  // g++ finds <header>.gch next to an included header by itself; clang only loads a PCH named
  // on the command line (-include-pch), and its format is its own.
  t->pch_name = std::string(codegen::cpp::kPreludeFileName) + (t->family == Family::Clang ? ".pch" : ".gch");
  t->flags = flags_for(t->family, t->compiler, options.extra_flags);
  // What makes a cached .so valid: the compiler (path and version), the CPU (-march=native),
  // flags, libraries and the prelude.
  std::string material = t->compiler + "\n" + t->path + "\n" + version + cpu_flags();
  for (const std::string& part : t->flags) (material += '\0') += part;
  for (const std::string& part : link_libraries()) (material += '\0') += part;
  material += '\0';
  material += codegen::cpp::prelude_source();
  t->key = sha256_hex(material);
  return t;
}

// The toolchain of options.compiler and options.extra_flags; probed once per process (a failed
// probe throws UserError and is tried again next time, so installing the compiler helps).
const Toolchain& toolchain(const CacheOptions& options) {
  static std::mutex mutex;
  static auto* known = new std::map<std::string, std::unique_ptr<Toolchain>>();  // leaked, like state()
  std::string name = options.compiler;
  for (const std::string& f : options.extra_flags) (name += '\0') += f;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known->find(name);
  if (it == known->end()) it = known->emplace(name, probe(options)).first;
  return *it->second;
}

// Fewer kernels than this compile faster without first precompiling the prelude (it costs about
// three kernel compiles and then saves about two thirds of each).
constexpr size_t kPrecompileMinKernels = 6;

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string key_of(const Toolchain& t, const KernelSource& k) {
  std::string material = t.key;
  (material += '\0') += k.symbol;
  (material += '\0') += k.source;
  return sha256_hex(material);
}

struct Paths {
  std::string dir, source, library, prelude;
};
Paths paths_of(const CacheOptions& options, const std::string& key) {
  Paths p;
  p.dir = options.cache_dir + "/kernels/" + key.substr(0, 2) + "/" + key;
  p.source = p.dir + "/kernel.cpp";
  p.library = p.dir + "/kernel.so";
  p.prelude = p.dir + "/" + codegen::cpp::kPreludeFileName;
  return p;
}

// dlopen + dlsym; nullptr (with the reason in *error) when the library is missing or broken.
KernelFn load(const std::string& library, const std::string& symbol, std::string* error) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    if (error) *error = dlerror();
    return nullptr;
  }
  void* found = dlsym(handle, symbol.c_str());  // the handle stays open: the kernel may be in use
  if (!found && error) *error = "no symbol " + symbol + " in " + library;
  return reinterpret_cast<KernelFn>(found);
}

// The folder of the shared cd_prelude.h (kernels compile with -I<folder> and include
// <cd_prelude.h>), one per toolchain, written if missing.
std::string prelude_dir(const CacheOptions& options, const Toolchain& t) {
  std::string dir = options.cache_dir + "/pch/" + t.key.substr(0, 32);
  std::string header = dir + "/" + codegen::cpp::kPreludeFileName;
  if (!file_exists(header)) {
    make_dirs(dir);
    write_file_atomic(header, codegen::cpp::prelude_source());
  }
  return dir;
}

bool has_precompiled_prelude(const Toolchain& t, const std::string& dir) { return file_exists(dir + "/" + t.pch_name); }

// Precompiles the prelude next to it; the compiler then loads it instead of parsing the header
// (about three times faster per kernel, g++ and clang alike). Kernels compiled while it is
// being built simply parse the header; a failed build only costs speed.
void precompile_prelude(const Toolchain& t, const std::string& dir) {
  std::string header = dir + "/" + codegen::cpp::kPreludeFileName;
  std::string pch = dir + "/" + t.pch_name;
  std::string suffix = unique_suffix();
  std::string tmp = pch + suffix, log = dir + "/pch" + suffix + ".log";
  std::vector<std::string> argv;
  for (const std::string& flag : t.flags)
    if (flag != "-shared") argv.push_back(flag);
  argv.insert(argv.end(), {"-x", "c++-header", header, "-o", tmp});
  int rc = run_process(argv, log, nullptr);
  std::remove(log.c_str());
  if (rc != 0 || std::rename(tmp.c_str(), pch.c_str()) != 0) std::remove(tmp.c_str());
}

// One compiler run of a kernel into `output`; the compiler's messages land in *message.
int compile_once(const Toolchain& t, const std::string& source, const std::string& include_dir, const std::string& pch,
                 const std::string& output, std::string* message) {
  std::vector<std::string> argv = t.flags;
  argv.insert(argv.end(), {"-I", include_dir});
  if (!pch.empty()) argv.insert(argv.end(), {"-include-pch", pch});
  argv.insert(argv.end(), {source, "-o", output});
  for (const std::string& lib : link_libraries()) argv.push_back(lib);
  std::string log = output + ".log", error;
  int rc = run_process(argv, log, &error);
  *message = error.empty() ? read_file(log) : error + "\n" + read_file(log);
  std::remove(log.c_str());
  return rc;
}

// Writes the sources and runs the compiler into a temporary file renamed into place on success.
void build(const CacheOptions& options, const Toolchain& t, const std::string& key, const KernelSource& k,
           const std::string& include_dir) {
  Paths p = paths_of(options, key);
  make_dirs(p.dir);
  if (!file_exists(p.prelude)) write_file_atomic(p.prelude, codegen::cpp::prelude_source());
  if (!file_exists(p.source)) write_file_atomic(p.source, k.source);
  std::string tmp = p.library + unique_suffix(), message;
  // g++ picks up the .gch by itself; clang needs it named, and rejects one whose header changed
  // since (rewritten by another process): then the kernel compiles again from the header.
  std::string pch = include_dir + "/" + t.pch_name;
  bool named_pch = t.family == Family::Clang && file_exists(pch);
  int rc = compile_once(t, p.source, include_dir, named_pch ? pch : "", tmp, &message);
  if (rc != 0 && named_pch) rc = compile_once(t, p.source, include_dir, "", tmp, &message);
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().stats.compiled;
  }
  if (rc != 0) {
    std::remove(tmp.c_str());
    throw UserError("cdynamo: " + t.compiler + " failed to compile kernel " + k.name + " (generated source: " + p.source +
                    ")\n" + message + "\n(compiler: " + t.path +
                    "; set CDYNAMO_CXX / cdynamo.config.cxx to use another, e.g. g++ or clang++)");
  }
  if (std::rename(tmp.c_str(), p.library.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError("cdynamo cannot move the compiled kernel into the cache: " + p.library);
  }
}

// Waits for `finished`, printing a progress line each second once `start` is 2 s (options) old.
class Progress {
 public:
  Progress(const CacheOptions& options, size_t total, int jobs)
      : options_(options), total_(total), jobs_(jobs), start_(std::chrono::steady_clock::now()) {}
  ~Progress() {
    if (reported_) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fprintf(stderr, "cdynamo: compiled %zu C++ kernel%s in %.1f s\n", total_, total_ == 1 ? "" : "s", elapsed);
    }
  }
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Pred finished, const size_t& done) {
    while (!finished()) {
      cv.wait_for(lock, std::chrono::milliseconds(250));
      auto now = std::chrono::steady_clock::now();
      double elapsed = std::chrono::duration<double>(now - start_).count();
      if (elapsed >= options_.progress_after_s && (!reported_ || now - last_ >= std::chrono::seconds(1))) {
        std::fprintf(stderr, "cdynamo: compiling %zu C++ kernel%s with %d compiler process%s: %zu done (%.1f s)\n", total_,
                     total_ == 1 ? "" : "s", jobs_, jobs_ == 1 ? "" : "es", done, elapsed);
        reported_ = true;
        last_ = now;
      }
    }
  }

 private:
  const CacheOptions& options_;
  size_t total_;
  int jobs_;
  std::chrono::steady_clock::time_point start_, last_;
  bool reported_ = false;
};

}  // namespace

std::vector<std::string> compile_flags(const CacheOptions& options) { return toolchain(options).flags; }

std::vector<std::string> link_libraries() { return {"-lmvec", "-lm"}; }

std::vector<KernelFn> compile_kernels(const std::vector<KernelSource>& kernels, const CacheOptions& options) {
  std::vector<KernelFn> result(kernels.size(), nullptr);
  const Toolchain& tools = toolchain(options);
  std::vector<std::string> keys;
  for (const KernelSource& k : kernels) keys.push_back(key_of(tools, k));

  // Memory, then disk.
  std::vector<size_t> todo;
  for (size_t i = 0; i < kernels.size(); ++i) {
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      auto it = state().loaded.find(keys[i]);
      if (it != state().loaded.end()) {
        result[i] = it->second;
        ++state().stats.memory_hits;
        continue;
      }
    }
    Paths p = paths_of(options, keys[i]);
    if (file_exists(p.library)) {
      if (KernelFn fn = load(p.library, kernels[i].symbol, nullptr)) {
        std::lock_guard<std::mutex> lock(state().mutex);
        state().loaded[keys[i]] = fn;
        ++state().stats.disk_hits;
        result[i] = fn;
        continue;
      }
    }
    todo.push_back(i);
  }
  if (todo.empty()) return result;

  // Each distinct key compiles once, at most `jobs` at a time.
  std::vector<size_t> unique;
  std::map<std::string, size_t> first_of;
  for (size_t i : todo)
    if (first_of.emplace(keys[i], i).second) unique.push_back(i);
  const std::string include_dir = prelude_dir(options, tools);
  // Worth precompiling the prelude only for several kernels; it is the pool's first task.
  const bool precompile = unique.size() >= kPrecompileMinKernels && !has_precompiled_prelude(tools, include_dir);
  const size_t tasks = unique.size() + (precompile ? 1 : 0);
  const int jobs = std::max(1, std::min<int>(options.jobs > 0 ? options.jobs : usable_cores(), static_cast<int>(tasks)));
  std::vector<std::exception_ptr> errors(unique.size());
  std::mutex done_mutex;
  std::condition_variable done_cv;
  size_t done = 0;
  Progress progress(options, unique.size(), jobs);
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < jobs; ++w) {
    workers.emplace_back([&] {
      for (size_t t; (t = next.fetch_add(1)) < tasks;) {
        if (precompile && t == 0) {
          precompile_prelude(tools, include_dir);
          continue;
        }
        size_t j = precompile ? t - 1 : t;
        try {
          build(options, tools, keys[unique[j]], kernels[unique[j]], include_dir);
        } catch (...) {
          errors[j] = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(done_mutex);
        ++done;
        done_cv.notify_all();
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(done_mutex);
    progress.wait(lock, done_cv, [&] { return done == unique.size(); }, done);
  }
  for (std::thread& t : workers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  for (size_t i : todo) {
    Paths p = paths_of(options, keys[i]);
    std::string error;
    KernelFn fn = load(p.library, kernels[i].symbol, &error);
    if (!fn) throw UserError("cdynamo cannot load the compiled kernel " + p.library + ": " + error);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().loaded[keys[i]] = fn;
    result[i] = fn;
  }
  return result;
}

std::string toolchain_key(const CacheOptions& options) { return toolchain(options).key; }

std::vector<std::string> kernel_keys(const std::vector<KernelSource>& kernels, const CacheOptions& options) {
  const Toolchain& tools = toolchain(options);
  std::vector<std::string> keys;
  for (const KernelSource& k : kernels) keys.push_back(key_of(tools, k));
  return keys;
}

std::vector<KernelFn> load_kernels(const std::vector<std::string>& keys, const std::vector<std::string>& symbols,
                                   const CacheOptions& options) {
  if (keys.size() != symbols.size()) return {};
  std::vector<KernelFn> result(keys.size(), nullptr);
  int64_t memory = 0, disk = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      auto it = state().loaded.find(keys[i]);
      if (it != state().loaded.end()) {
        result[i] = it->second;
        ++memory;
        continue;
      }
    }
    // A key is 64 hex digits: anything else (a corrupt entry) must not become a path.
    if (keys[i].size() != 64 || keys[i].find_first_not_of("0123456789abcdef") != std::string::npos) return {};
    Paths p = paths_of(options, keys[i]);
    KernelFn fn = file_exists(p.library) ? load(p.library, symbols[i], nullptr) : nullptr;
    if (!fn) return {};
    std::lock_guard<std::mutex> lock(state().mutex);
    state().loaded[keys[i]] = fn;
    result[i] = fn;
    ++disk;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  state().stats.memory_hits += memory;
  state().stats.disk_hits += disk;
  return result;
}

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

void reset_cache_stats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().stats = {};
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().loaded.clear();
}

}  // namespace cdynamo::cache
