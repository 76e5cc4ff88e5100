// The text of cd_prelude.h, the header every generated C++ kernel includes (see prelude.h).
// Assumes g++ >= 12 or clang >= 14 (GCC vector extensions, __builtin_convertvector), no -ffast-math.
#include "backend/codegen/cpp/prelude.h"

namespace cdynamo::codegen::cpp {
namespace {

// Part 1: scalar semantics. Every op the IR names has a scalar form here or in plain C++; the
// generated code calls these so that NaN, infinities, signed zeros, integer wrap-around (the
// kernels build with -fwrapv) and Python-style division match eager torch.
constexpr const char* kScalarPart = R"CDPRELUDE(// cd_prelude.h: helpers shared by cdynamo's generated CPU kernels (written by cdynamo; do not edit).
// Assumes g++ >= 12 or clang >= 14 (GCC vector extensions), C++17, -fwrapv, and no -ffast-math.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define CD_INLINE static inline __attribute__((always_inline))

// ---- index arithmetic (ir::Expr::str prints these) -------------------------------------------
CD_INLINE int64_t cd_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return q - (int64_t)((a % b != 0) && ((a < 0) != (b < 0)));
}
CD_INLINE int64_t cd_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
CD_INLINE int64_t cd_min(int64_t a, int64_t b) { return b < a ? b : a; }
// An indirect position checked against its dimension's size: out of range sets *error (eager
// raises IndexError; the runtime does after the kernel) and reads element 0 instead of memory
// outside the buffer. The unsigned compare also catches negatives; the store is atomic because
// parallel iterations may hit it together.
CD_INLINE int64_t cd_index_checked(int64_t position, int64_t size, int* error) {
  if (__builtin_expect((uint64_t)position >= (uint64_t)size, 0)) {
    __atomic_store_n(error, 1, __ATOMIC_RELAXED);
    return 0;
  }
  return position;
}
CD_INLINE int64_t cd_max(int64_t a, int64_t b) { return a < b ? b : a; }

// ---- float16 / bfloat16 storage: 16-bit patterns, computed on as float ----------------------
typedef uint16_t cd_half;
typedef uint16_t cd_bfloat16;

CD_INLINE float cd_bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
CD_INLINE uint32_t cd_f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

CD_INLINE float cd_bf16_to_f32(uint16_t h) { return cd_bits_f32((uint32_t)h << 16); }
// Round to nearest even; every NaN becomes the canonical quiet NaN, as torch does.
CD_INLINE uint16_t cd_f32_to_bf16(float f) {
  if (f != f) return 0x7fc0;
  uint32_t u = cd_f32_bits(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

CD_INLINE float cd_f16_to_f32(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return cd_bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) return cd_bits_f32(sign | cd_f32_bits((float)man * 0x1p-24f));
  return cd_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
#endif
}
CD_INLINE uint16_t cd_f32_to_f16(float f) {
#if defined(__F16C__)
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
  uint32_t u = cd_f32_bits(f), sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (u > 0x7f800000u ? 0x200u : 0u));
  if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds past 65504: infinity
  if (u < 0x38800000u) return (uint16_t)(sign | (uint32_t)std::nearbyint(cd_bits_f32(u) * 0x1p24f));
  u += 0xc8000fffu + ((u >> 13) & 1u);  // rebias the exponent by -112 and round to nearest even
  return (uint16_t)(sign | (u >> 13));
#endif
}
// A value of dtype float16/bfloat16 held as float: round it as a store and reload would.
CD_INLINE float cd_round_f16(float f) { return cd_f16_to_f32(cd_f32_to_f16(f)); }
CD_INLINE float cd_round_bf16(float f) { return cd_bf16_to_f32(cd_f32_to_bf16(f)); }

// ---- casts with torch's conversions ----------------------------------------------------------
template <class To, class From>
CD_INLINE To cd_cast(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && sizeof(To) < 8) {
    return (To)(int64_t)x;  // like c10: narrow integers from floating point through int64
  } else {
    return (To)x;
  }
}

// ---- scalar math with torch semantics --------------------------------------------------------
template <class T> CD_INLINE bool cd_isnan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x; else return false;
}
template <class T> CD_INLINE bool cd_isinf(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isinf(x); else return false;
}
template <class T> CD_INLINE T cd_maximum(T a, T b) {
  if (cd_isnan(a)) return a;
  if (cd_isnan(b)) return b;
  return a > b ? a : b;
}
template <class T> CD_INLINE T cd_minimum(T a, T b) {
  if (cd_isnan(a)) return a;
  if (cd_isnan(b)) return b;
  return a < b ? a : b;
}
template <class T> CD_INLINE T cd_abs(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
  else if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
  else return x < 0 ? (T)-x : x;
}
// torch.sign: 0 for NaN and for both zeros.
template <class T> CD_INLINE T cd_sign(T x) {
  if constexpr (std::is_same_v<T, bool>) return x;
  else return (T)((T(0) < x) - (x < T(0)));
}
template <class T> CD_INLINE T cd_sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> CD_INLINE T cd_rsqrt(T x) { return T(1) / std::sqrt(x); }

// Integer division that cannot trap: x86 faults on a zero divisor and on INT_MIN / -1, which
// would kill the whole process (eager raises ZeroDivisionError before dividing; a kernel has no
// way to raise). A zero divisor gives 0; INT_MIN / -1 wraps.
template <class T> CD_INLINE T cd_idiv(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (std::is_signed_v<T>) if (b == T(-1)) return (T)(T(0) - a);
  return (T)(a / b);
}
template <class T> CD_INLINE T cd_imod(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (std::is_signed_v<T>) if (b == T(-1)) return T(0);
  return (T)(a % b);
}

// a // b: Python floor division. Floating point follows c10's div_floor_floating.
template <class T> CD_INLINE T cd_div_floor(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    T m = std::fmod(a, b);
    T div = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
  } else if constexpr (std::is_same_v<T, bool>) {
    return a;
  } else {
    T q = cd_idiv(a, b);
    if constexpr (std::is_signed_v<T>) q = (T)(q - (T)((cd_imod(a, b) != 0) && ((a < 0) != (b < 0))));
    return q;
  }
}
// Python-style remainder: the sign of the divisor.
template <class T> CD_INLINE T cd_remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T m = std::fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
  } else if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else {
    T r = cd_imod(a, b);
    if constexpr (std::is_signed_v<T>) if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
  }
}
template <class T> CD_INLINE T cd_fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::fmod(a, b); else return cd_imod(a, b);
}
template <class T> CD_INLINE T cd_pow(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return a == 1 ? T(1) : a == -1 ? (T)((b & 1) ? -1 : 1) : T(0);
    }
    T r = 1;
    while (b) {
      if (b & 1) r = (T)(r * a);
      a = (T)(a * a);
      b = (T)(b >> 1);
    }
    return r;
  }
}
// Shifts by a negative amount or by the bit width or more: like torch (0, or the sign fill).
template <class T> CD_INLINE T cd_shl(T a, T b) {
  constexpr int bits = 8 * sizeof(T);
  if ((int64_t)b < 0 || (int64_t)b >= bits) return T(0);
  return (T)((std::make_unsigned_t<T>)a << b);
}
template <class T> CD_INLINE T cd_shr(T a, T b) {
  constexpr int bits = 8 * sizeof(T);
  if ((int64_t)b < 0 || (int64_t)b >= bits) {
    if constexpr (std::is_signed_v<T>) return (T)(a >> (bits - 1)); else return T(0);
  }
  return (T)(a >> b);
}

// ---- reduction combines (order independent, so chunked and vector accumulation agree) -------
// argmax/argmin: the extreme value; among equal values the smallest position; NaN is the
// extreme of both and the first NaN wins.
template <class T> CD_INLINE void cd_argmax_combine(T& v, int64_t& i, T nv, int64_t ni) {
  bool take = cd_isnan(nv) ? (!cd_isnan(v) || ni < i) : (!cd_isnan(v) && (nv > v || (nv == v && ni < i)));
  if (take) { v = nv; i = ni; }
}
template <class T> CD_INLINE void cd_argmin_combine(T& v, int64_t& i, T nv, int64_t ni) {
  bool take = cd_isnan(nv) ? (!cd_isnan(v) || ni < i) : (!cd_isnan(v) && (nv < v || (nv == v && ni < i)));
  if (take) { v = nv; i = ni; }
}
template <class T> CD_INLINE T cd_lowest() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <class T> CD_INLINE T cd_highest() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}
)CDPRELUDE";

// Part 2: SIMD. CD_VLEN lanes for every element type (16 with AVX-512, 8 with AVX2); a vector
// of 16 doubles spans two registers and g++ splits it. Booleans are masks of int32 lanes
// (-1 true, 0 false). Transcendentals call glibc's libmvec (link -lmvec); anything without a
// vector form runs lane by lane with the scalar helpers above.
constexpr const char* kVectorPart = R"CDPRELUDE(
// ---- SIMD types ------------------------------------------------------------------------------
#if defined(__AVX512F__)
#define CD_VLEN 16
#elif defined(__AVX2__)
#define CD_VLEN 8
#else
#define CD_VLEN 4
#endif
#if CD_VLEN == 16
// AVX-512 intrinsics are called in their zero-masking form with every lane selected: both
// compilers fold the mask away (the same single instruction), while g++ 12's plain forms start
// from _mm512_undefined_*(), which -Wall reports as "used uninitialized" (GCC bug 105593).
#define CD_ALL16 ((__mmask16)0xffff)
#define CD_ALL8 ((__mmask8)0xff)
#endif
#define CD_VEC_TYPE(name, T) typedef T name __attribute__((vector_size(CD_VLEN * sizeof(T))))
CD_VEC_TYPE(cd_vf32, float);
CD_VEC_TYPE(cd_vf64, double);
CD_VEC_TYPE(cd_vi8, int8_t);
CD_VEC_TYPE(cd_vu8, uint8_t);
CD_VEC_TYPE(cd_vi16, int16_t);
CD_VEC_TYPE(cd_vu16, uint16_t);
CD_VEC_TYPE(cd_vi32, int32_t);
CD_VEC_TYPE(cd_vu32, uint32_t);
CD_VEC_TYPE(cd_vi64, int64_t);
typedef cd_vi32 cd_vmask;
// Half a cd_vf64 (cd_vi64): one machine register.
typedef double cd_vf64h __attribute__((vector_size(CD_VLEN * sizeof(double) / 2)));
typedef int64_t cd_vi64h __attribute__((vector_size(CD_VLEN * sizeof(int64_t) / 2)));
// The machine-register halves of a two-register vector. Reduction accumulators of 8-byte lanes
// are kept as two halves: g++ keeps a loop-carried two-register vector in memory (each add then
// waits on a store and a reload), but half vectors stay in registers.
template <class V> struct cd_vhalf_of;
template <> struct cd_vhalf_of<cd_vf64> { typedef cd_vf64h type; };
template <> struct cd_vhalf_of<cd_vi64> { typedef cd_vi64h type; };
template <class V> CD_INLINE typename cd_vhalf_of<V>::type cd_vlo(const V& x) {
  typename cd_vhalf_of<V>::type h;
  std::memcpy(&h, &x, sizeof h);
  return h;
}
template <class V> CD_INLINE typename cd_vhalf_of<V>::type cd_vhi(const V& x) {
  typename cd_vhalf_of<V>::type h;
  std::memcpy(&h, reinterpret_cast<const char*>(&x) + sizeof h, sizeof h);
  return h;
}

// The integer vector with the element width of V: what a comparison of two V yields.
template <class V> struct cd_vint_of;
template <> struct cd_vint_of<cd_vf32> { typedef cd_vi32 type; };
template <> struct cd_vint_of<cd_vf64> { typedef cd_vi64 type; };
template <> struct cd_vint_of<cd_vi8> { typedef cd_vi8 type; };
template <> struct cd_vint_of<cd_vu8> { typedef cd_vi8 type; };
template <> struct cd_vint_of<cd_vi16> { typedef cd_vi16 type; };
template <> struct cd_vint_of<cd_vi32> { typedef cd_vi32 type; };
template <> struct cd_vint_of<cd_vi64> { typedef cd_vi64 type; };

template <class V, class T> CD_INLINE V cd_vload(const T* p) { V v; std::memcpy(&v, p, sizeof(V)); return v; }
template <class V, class T> CD_INLINE void cd_vstore(T* p, V v) { std::memcpy(p, &v, sizeof(V)); }
// scalar - zero vector: g++ broadcasts the scalar (one instruction); a lane-by-lane fill becomes
// sixteen masked inserts per use. x - (+0) is x for every x, -0 and NaN included.
template <class V, class T> CD_INLINE V cd_vbcast(T x) {
  typedef __typeof__(V{}[0]) E;
  return static_cast<E>(x) - V{};
}
// The low half of a vector, each lane converted to H's element type (float lanes into double).
// E is the lane type without const: x[0] of a const vector is a const lvalue under g++ 13+.
template <class H, class V> CD_INLINE H cd_vlo_as(const V& x) {
  typedef std::remove_cv_t<std::remove_reference_t<decltype(x[0])>> E;
  typedef E VH __attribute__((vector_size(sizeof(V) / 2)));
  VH h;
  std::memcpy(&h, &x, sizeof h);
  return __builtin_convertvector(h, H);
}
template <class H, class V> CD_INLINE H cd_vhi_as(const V& x) {
  typedef std::remove_cv_t<std::remove_reference_t<decltype(x[0])>> E;
  typedef E VH __attribute__((vector_size(sizeof(V) / 2)));
  VH h;
  std::memcpy(&h, reinterpret_cast<const char*>(&x) + sizeof h, sizeof h);
  return __builtin_convertvector(h, H);
}
template <class V> CD_INLINE V cd_viota() {
  V v;
  for (int l = 0; l < CD_VLEN; ++l) v[l] = l;
  return v;
}
// Any comparison result (a lane of all ones or zero, of any width) as a mask.
template <class V> CD_INLINE cd_vmask cd_vtomask(V cmp) { return __builtin_convertvector(cmp, cd_vmask); }
template <class V> CD_INLINE V cd_vsel(cd_vmask m, V a, V b) {
  typedef typename cd_vint_of<V>::type M;
  M wide = __builtin_convertvector(m, M);
  return wide ? a : b;
}
CD_INLINE bool cd_vany(cd_vmask m) {
  for (int l = 0; l < CD_VLEN; ++l) if (m[l]) return true;
  return false;
}

// ---- loads and stores of the storage types ---------------------------------------------------
CD_INLINE cd_vmask cd_vload_bool(const bool* p) {
  cd_vu8 u;
  std::memcpy(&u, p, sizeof u);
  return cd_vtomask(u != cd_vbcast<cd_vu8>(0));
}
CD_INLINE void cd_vstore_bool(bool* p, cd_vmask m) {
  cd_vu8 u = __builtin_convertvector(m & 1, cd_vu8);
  std::memcpy(p, &u, sizeof u);
}
CD_INLINE cd_vf32 cd_vload_bf16(const uint16_t* p) {
  cd_vu16 h;
  std::memcpy(&h, p, sizeof h);
  return (cd_vf32)(__builtin_convertvector(h, cd_vu32) << 16);
}
CD_INLINE cd_vu16 cd_vf32_to_bf16(cd_vf32 x) {
  cd_vu32 u = (cd_vu32)x;
  u = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  u = (x != x) ? cd_vbcast<cd_vu32>(0x7fc0u) : u;
  return __builtin_convertvector(u, cd_vu16);
}
CD_INLINE void cd_vstore_bf16(uint16_t* p, cd_vf32 x) { cd_vu16 h = cd_vf32_to_bf16(x); std::memcpy(p, &h, sizeof h); }
CD_INLINE cd_vf32 cd_vround_bf16(cd_vf32 x) {
  return (cd_vf32)(__builtin_convertvector(cd_vf32_to_bf16(x), cd_vu32) << 16);
}
CD_INLINE cd_vf32 cd_vload_f16(const uint16_t* p) {
#if CD_VLEN == 16
  return (cd_vf32)_mm512_maskz_cvtph_ps(CD_ALL16, _mm256_loadu_si256((const __m256i*)p));
#elif CD_VLEN == 8 && defined(__F16C__)
  return (cd_vf32)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
#else
  cd_vf32 r;
  for (int l = 0; l < CD_VLEN; ++l) r[l] = cd_f16_to_f32(p[l]);
  return r;
#endif
}
CD_INLINE void cd_vstore_f16(uint16_t* p, cd_vf32 x) {
#if CD_VLEN == 16
  _mm256_storeu_si256((__m256i*)p, _mm512_maskz_cvtps_ph(CD_ALL16, (__m512)x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif CD_VLEN == 8 && defined(__F16C__)
  _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph((__m256)x, _MM_FROUND_TO_NEAREST_INT));
#else
  for (int l = 0; l < CD_VLEN; ++l) p[l] = cd_f32_to_f16(x[l]);
#endif
}
CD_INLINE cd_vf32 cd_vround_f16(cd_vf32 x) {
  uint16_t tmp[CD_VLEN];
  cd_vstore_f16(tmp, x);
  return cd_vload_f16(tmp);
}

// ---- vector math ---------------------------------------------------------------------------
template <class V> CD_INLINE V cd_vmaximum(V a, V b) { return ((a > b) | (a != a)) ? a : b; }
template <class V> CD_INLINE V cd_vminimum(V a, V b) { return ((a < b) | (a != a)) ? a : b; }
CD_INLINE cd_vf32 cd_vabs(cd_vf32 x) { return (cd_vf32)((cd_vu32)x & 0x7fffffffu); }
CD_INLINE cd_vf64 cd_vabs(cd_vf64 x) {
  typedef uint64_t U __attribute__((vector_size(sizeof(cd_vf64))));
  return (cd_vf64)((U)x & (U)cd_vbcast<cd_vi64>(0x7fffffffffffffffLL));
}
template <class V> CD_INLINE V cd_vabs(V x) { return (x < 0) ? -x : x; }

// Applies a function on machine-register halves of a cd_vf64.
template <class F> CD_INLINE cd_vf64 cd_vf64_halves(cd_vf64 x, F f) {
  cd_vf64h h[2];
  std::memcpy(h, &x, sizeof x);
  h[0] = f(h[0]);
  h[1] = f(h[1]);
  std::memcpy(&x, h, sizeof x);
  return x;
}
template <class F> CD_INLINE cd_vf64 cd_vf64_halves2(cd_vf64 x, cd_vf64 y, F f) {
  cd_vf64h a[2], b[2];
  std::memcpy(a, &x, sizeof x);
  std::memcpy(b, &y, sizeof y);
  a[0] = f(a[0], b[0]);
  a[1] = f(a[1], b[1]);
  std::memcpy(&x, a, sizeof x);
  return x;
}

#if CD_VLEN == 16
#define CD_MVEC_F32(fn) _ZGVeN16v_##fn##f
#define CD_MVEC_F64(fn) _ZGVeN8v_##fn
#define CD_MVEC2_F32(fn) _ZGVeN16vv_##fn##f
#define CD_MVEC2_F64(fn) _ZGVeN8vv_##fn
#elif CD_VLEN == 8
#define CD_MVEC_F32(fn) _ZGVdN8v_##fn##f
#define CD_MVEC_F64(fn) _ZGVdN4v_##fn
#define CD_MVEC2_F32(fn) _ZGVdN8vv_##fn##f
#define CD_MVEC2_F64(fn) _ZGVdN4vv_##fn
#endif

#ifdef CD_MVEC_F32
#define CD_VMATH1(fn)                                                                  \
  extern "C" cd_vf32 CD_MVEC_F32(fn)(cd_vf32);                                         \
  extern "C" cd_vf64h CD_MVEC_F64(fn)(cd_vf64h);                                       \
  CD_INLINE cd_vf32 cd_v##fn(cd_vf32 x) { return CD_MVEC_F32(fn)(x); }                 \
  CD_INLINE cd_vf64 cd_v##fn(cd_vf64 x) {                                              \
    return cd_vf64_halves(x, [](cd_vf64h h) { return CD_MVEC_F64(fn)(h); });           \
  }
#define CD_VMATH2(fn)                                                                  \
  extern "C" cd_vf32 CD_MVEC2_F32(fn)(cd_vf32, cd_vf32);                               \
  extern "C" cd_vf64h CD_MVEC2_F64(fn)(cd_vf64h, cd_vf64h);                            \
  CD_INLINE cd_vf32 cd_v##fn(cd_vf32 x, cd_vf32 y) { return CD_MVEC2_F32(fn)(x, y); }  \
  CD_INLINE cd_vf64 cd_v##fn(cd_vf64 x, cd_vf64 y) {                                   \
    return cd_vf64_halves2(x, y, [](cd_vf64h a, cd_vf64h b) { return CD_MVEC2_F64(fn)(a, b); }); \
  }
#else
#define CD_VMATH1(fn)                                                                  \
  CD_INLINE cd_vf32 cd_v##fn(cd_vf32 x) {                                              \
    for (int l = 0; l < CD_VLEN; ++l) x[l] = std::fn(x[l]);                            \
    return x;                                                                          \
  }                                                                                    \
  CD_INLINE cd_vf64 cd_v##fn(cd_vf64 x) {                                              \
    for (int l = 0; l < CD_VLEN; ++l) x[l] = std::fn(x[l]);                            \
    return x;                                                                          \
  }
#define CD_VMATH2(fn)                                                                  \
  CD_INLINE cd_vf32 cd_v##fn(cd_vf32 x, cd_vf32 y) {                                   \
    for (int l = 0; l < CD_VLEN; ++l) x[l] = std::fn(x[l], y[l]);                      \
    return x;                                                                          \
  }                                                                                    \
  CD_INLINE cd_vf64 cd_v##fn(cd_vf64 x, cd_vf64 y) {                                   \
    for (int l = 0; l < CD_VLEN; ++l) x[l] = std::fn(x[l], y[l]);                      \
    return x;                                                                          \
  }
#endif
CD_VMATH1(exp) CD_VMATH1(exp2) CD_VMATH1(expm1) CD_VMATH1(log) CD_VMATH1(log2) CD_VMATH1(log10)
CD_VMATH1(log1p) CD_VMATH1(sin) CD_VMATH1(cos) CD_VMATH1(tan) CD_VMATH1(asin) CD_VMATH1(acos)
CD_VMATH1(atan) CD_VMATH1(sinh) CD_VMATH1(cosh) CD_VMATH1(tanh) CD_VMATH1(asinh) CD_VMATH1(acosh)
CD_VMATH1(atanh) CD_VMATH1(erf) CD_VMATH1(erfc)
CD_VMATH2(pow) CD_VMATH2(atan2)

// Square root and rounding are single instructions; the fallbacks are lane loops.
#if CD_VLEN == 16
CD_INLINE cd_vf32 cd_vsqrt(cd_vf32 x) { return (cd_vf32)_mm512_maskz_sqrt_ps(CD_ALL16, (__m512)x); }
CD_INLINE cd_vf64 cd_vsqrt(cd_vf64 x) { return cd_vf64_halves(x, [](cd_vf64h h) { return (cd_vf64h)_mm512_maskz_sqrt_pd(CD_ALL8, (__m512d)h); }); }
#define CD_VROUND(name, mode)                                                                      \
  CD_INLINE cd_vf32 cd_v##name(cd_vf32 x) { return (cd_vf32)_mm512_maskz_roundscale_ps(CD_ALL16, (__m512)x, mode | _MM_FROUND_NO_EXC); } \
  CD_INLINE cd_vf64 cd_v##name(cd_vf64 x) {                                                        \
    return cd_vf64_halves(x, [](cd_vf64h h) { return (cd_vf64h)_mm512_maskz_roundscale_pd(CD_ALL8, (__m512d)h, mode | _MM_FROUND_NO_EXC); }); \
  }
#elif CD_VLEN == 8
CD_INLINE cd_vf32 cd_vsqrt(cd_vf32 x) { return (cd_vf32)_mm256_sqrt_ps((__m256)x); }
CD_INLINE cd_vf64 cd_vsqrt(cd_vf64 x) { return cd_vf64_halves(x, [](cd_vf64h h) { return (cd_vf64h)_mm256_sqrt_pd((__m256d)h); }); }
#define CD_VROUND(name, mode)                                                                      \
  CD_INLINE cd_vf32 cd_v##name(cd_vf32 x) { return (cd_vf32)_mm256_round_ps((__m256)x, mode | _MM_FROUND_NO_EXC); } \
  CD_INLINE cd_vf64 cd_v##name(cd_vf64 x) {                                                        \
    return cd_vf64_halves(x, [](cd_vf64h h) { return (cd_vf64h)_mm256_round_pd((__m256d)h, mode | _MM_FROUND_NO_EXC); }); \
  }
#else
CD_INLINE cd_vf32 cd_vsqrt(cd_vf32 x) { for (int l = 0; l < CD_VLEN; ++l) x[l] = std::sqrt(x[l]); return x; }
CD_INLINE cd_vf64 cd_vsqrt(cd_vf64 x) { for (int l = 0; l < CD_VLEN; ++l) x[l] = std::sqrt(x[l]); return x; }
#define CD_VROUND(name, mode)                                                                      \
  CD_INLINE cd_vf32 cd_v##name(cd_vf32 x) { for (int l = 0; l < CD_VLEN; ++l) x[l] = std::name(x[l]); return x; } \
  CD_INLINE cd_vf64 cd_v##name(cd_vf64 x) { for (int l = 0; l < CD_VLEN; ++l) x[l] = std::name(x[l]); return x; }
#endif
CD_VROUND(floor, _MM_FROUND_TO_NEG_INF)
CD_VROUND(ceil, _MM_FROUND_TO_POS_INF)
CD_VROUND(trunc, _MM_FROUND_TO_ZERO)
CD_VROUND(nearbyint, _MM_FROUND_TO_NEAREST_INT)

template <class V> CD_INLINE V cd_vsigmoid(V x) {
  V one = cd_vbcast<V>(1);
  return one / (one + cd_vexp(-x));
}
template <class V> CD_INLINE V cd_vrsqrt(V x) { return cd_vbcast<V>(1) / cd_vsqrt(x); }
template <class V> CD_INLINE cd_vmask cd_visnan(V x) { return cd_vtomask(x != x); }
template <class V> CD_INLINE cd_vmask cd_visinf(V x) {
  typedef decltype(x[0] + 0) T;
  return cd_vtomask(cd_vabs(x) == cd_vbcast<V>(std::numeric_limits<T>::infinity()));
}
template <class V> CD_INLINE V cd_vsign(V x) {
  V zero = cd_vbcast<V>(0), one = cd_vbcast<V>(1);
  return ((zero < x) ? one : zero) - ((x < zero) ? one : zero);  // NaN: 0, as torch.sign
}
)CDPRELUDE";

}  // namespace

const std::string& prelude_source() {
  static const std::string text = std::string(kScalarPart) + kVectorPart;
  return text;
}

}  // namespace cdynamo::codegen::cpp
