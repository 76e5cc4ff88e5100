// The prelude header of generated C++ kernels (cd_prelude.h), embedded in the extension as text.
// Assumes the caller writes it next to the generated sources, which #include "cd_prelude.h".
#pragma once
#include <string>

namespace cdynamo::codegen::cpp {

// The full text of cd_prelude.h: index helpers (cd_floordiv, cd_mod, cd_min, cd_max), torch's
// scalar semantics (NaN-propagating min/max, Python-style division and modulo, shifts, casts),
// float16/bfloat16 conversions, SIMD types (GCC vector extensions, CD_VLEN lanes) and vector
// math through glibc's libmvec with lane-by-lane fallbacks.
const std::string& prelude_source();

// The file name generated sources include.
inline constexpr const char* kPreludeFileName = "cd_prelude.h";

}  // namespace cdynamo::codegen::cpp
