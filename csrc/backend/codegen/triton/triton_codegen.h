// The Triton code generator: one Python module with one @triton.jit kernel per ir::Kernel, plus
// how to launch it (arguments, grid, block sizes). Sizes may be symbolic: numels and the size
// symbols are arguments, and heuristics choose at the symbols' hints.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::codegen::triton {

// Kernel ABI: `cd_kernel(p0, p1, ..., [cd_error,] xnumel, rnumel, [s0, ...,] XBLOCK, RBLOCK)` where pK is
// the storage pointer of the K-th buffer in the order kernel.inputs, kernel.outputs,
// kernel.locals, addressing element 0 of the buffer's offset space (as the C++ target's
// buffers[k]); cd_error (present when `error_flag`) points at one int32 that a load at an
// out-of-range indirect position sets to 1; xnumel and rnumel are the kernel's outer and
// reduction element counts (for a tiled pointwise kernel: rows and columns); s0... are the size
// symbols its indices use (symbolic programs); XBLOCK and RBLOCK are constexprs. The source names
// no buffer.
inline constexpr const char* kFunctionName = "cd_kernel";

struct LaunchConfig {
  int64_t xblock = 1024, rblock = 1;
  int num_warps = 4;
  int num_stages = 1;
};

struct TritonArg {
  std::string name;       // the parameter's name in the source: p0.., cd_error, xnumel, rnumel
  std::string signature;  // triton.compile's type: "*fp32", "*i32", "i32", "i64"
  std::string buffer;     // for pointers: the buffer ("" for cd_error and numels)
};

struct GeneratedTritonKernel {
  std::string name;    // kernel.name, for messages
  std::string source;  // a complete Python module (prelude() + the kernel)
  std::vector<TritonArg> args;  // launch arguments in order, constexprs excluded
  bool error_flag = false;
  ir::Expr xnumel, rnumel;       // values of the numel arguments (over the size symbols)
  std::vector<std::string> symbol_params;  // size symbols passed after the numels, in order
  // 32-bit kernels of symbolic sizes: what must stay below 2^31 on each call (numels, extents).
  std::vector<ir::Expr> narrow_limits;
  bool reduction = false;        // rnumel is meaningful (2-D tiles)
  bool index64 = false;          // numels and indices are int64
  bool tiled = false;            // a pointwise kernel on 2-D tiles: RBLOCK columns of rnumel, grid axis 1
  LaunchConfig config;           // the heuristic's choice
  std::vector<LaunchConfig> candidates;  // what max-autotune tries (config first)
};

// Programs along grid axis 0 for a config: ceil(xnumel / XBLOCK); along axis 1: ceil(rnumel /
// RBLOCK) for tiled kernels, else 1.
ir::Expr grid_size(const GeneratedTritonKernel& k, const LaunchConfig& config);
ir::Expr grid_columns(const GeneratedTritonKernel& k, const LaunchConfig& config);

GeneratedTritonKernel generate_kernel(const ir::Program& program, const ir::Kernel& kernel);

// The module text every kernel starts with (imports and helpers).
const char* prelude();

}  // namespace cdynamo::codegen::triton
