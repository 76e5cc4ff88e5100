// The C++/OpenMP code generator: one self-contained translation unit per ir::Kernel.
// Assumes the sources are compiled next to cd_prelude.h (prelude.h) with the cache's flags.
#pragma once
#include <string>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::codegen::cpp {

// Kernel ABI: the translation unit defines
//
//     extern "C" int cd_kernel(char** buffers, const int64_t* cd_symbols);
//
// cd_symbols holds this call's values of the program's size symbols (ir::Program::symbols order;
// null for a static program): the kernel reads those its loops and indices use.
// It returns 0, or 1 when an indirect load met a position outside its dimension (the load read
// element 0 of that dimension instead; the runtime raises IndexError as eager does).
// (one kernel per shared library, loaded RTLD_LOCAL, so every library can use the same symbol).
// buffers[k] is the storage pointer of the k-th buffer in the order kernel.inputs, then
// kernel.outputs, then kernel.locals. Each pointer addresses element 0 of the buffer's offset
// space, i.e. tensor.data_ptr() - buffer.offset * itemsize, because the IR's indices (loads and
// the store's linear_index) already add the buffer's offset. Kernels run their own OpenMP
// parallel regions, never call back into Python and may run with the GIL released.
//
// The source names no buffer and no kernel: kernels that compute the same thing on the same
// shapes (the layers of a transformer) are the same text, so the kernel cache compiles them once.
inline constexpr const char* kKernelSymbol = "cd_kernel";

struct GeneratedKernel {
  std::string name;    // kernel.name, for messages
  std::string source;  // the C++ text; #include <cd_prelude.h>
};

GeneratedKernel generate_kernel(const ir::Program& program, const ir::Kernel& kernel);

}  // namespace cdynamo::codegen::cpp
