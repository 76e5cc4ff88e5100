// The Python text every generated Triton kernel module starts with: imports and @triton.jit
// helpers with torch's scalar semantics. Assumes Triton 3.6+ (triton.language.extra.libdevice).
#include "backend/codegen/triton/triton_codegen.h"

namespace cdynamo::codegen::triton {

// Helpers avoid Python integer literals next to narrow integer tiles: Triton would promote
// int8 + 1 to int32, where torch keeps int8 and wraps. Zeros and ones come from the operand.
const char* prelude() {
  return R"PY(import triton
import triton.language as tl
from triton.language.extra import libdevice

CD_INF = tl.constexpr(float("inf"))
CD_NAN = tl.constexpr(float("nan"))


@triton.jit
def cd_maximum(a, b):
    # NaN-propagating, as torch.maximum and max reductions
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def cd_minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def cd_add(a, b):
    return a + b


@triton.jit
def cd_mul(a, b):
    return a * b


@triton.jit
def cd_or(a, b):
    return a | b


@triton.jit
def cd_and(a, b):
    return a & b


@triton.jit
def cd_xor(a, b):
    return a ^ b


@triton.jit
def cd_argmax_combine(v, i, nv, ni):
    # the extreme value; among equal values the smallest position; NaN wins, the first NaN first
    take = tl.where(nv != nv, (v == v) | (ni < i), (v == v) & ((nv > v) | ((nv == v) & (ni < i))))
    return tl.where(take, nv, v), tl.where(take, ni, i)


@triton.jit
def cd_argmin_combine(v, i, nv, ni):
    take = tl.where(nv != nv, (v == v) | (ni < i), (v == v) & ((nv < v) | ((nv == v) & (ni < i))))
    return tl.where(take, nv, v), tl.where(take, ni, i)


@triton.jit
def cd_floordiv_int(a, b):
    # index arithmetic, b > 0: Python's floor division from Triton's truncating one
    q = a // b
    return tl.where(((a % b) != 0) & (a < 0), q - 1, q)


@triton.jit
def cd_mod_int(a, b):
    r = a % b
    return tl.where(r < 0, r + b, r)


@triton.jit
def cd_sign(x):
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


@triton.jit
def cd_sigmoid(x):
    return tl.div_rn(1.0, 1.0 + libdevice.exp(-x))


@triton.jit
def cd_sigmoid64(x):
    return 1.0 / (1.0 + libdevice.exp(-x))


@triton.jit
def cd_reciprocal(x):
    return 1.0 / x


@triton.jit
def cd_idiv(a, b):
    # truncating integer division that never faults: a zero divisor gives 0
    zero = b == 0
    q = a // tl.where(zero, b + 1, b)
    return tl.where(zero, b, q)


@triton.jit
def cd_imod(a, b):
    zero = b == 0
    r = a % tl.where(zero, b + 1, b)
    return tl.where(zero, b, r)


@triton.jit
def cd_floordiv(a, b):
    q = cd_idiv(a, b)
    r = cd_imod(a, b)
    return tl.where((r != 0) & ((a < 0) != (b < 0)), q - (r - r + 1).to(q.dtype), q)


@triton.jit
def cd_remainder(a, b):
    r = cd_imod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def cd_floordiv_float(a, b):
    # c10's div_floor_floating
    m = libdevice.fmod(a, b)
    div = (a - m) / b
    div = tl.where((m != 0) & ((b < 0) != (m < 0)), div - 1.0, div)
    fl = libdevice.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    fl = tl.where(div == 0, libdevice.copysign(div * 0.0, a / b), fl)
    return tl.where(b == 0, a / b, fl)


@triton.jit
def cd_remainder_float(a, b):
    m = libdevice.fmod(a, b)
    return tl.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


@triton.jit
def cd_ipow(a, b):
    base = a + (b - b).to(a.dtype)
    e = b + (a - a).to(b.dtype)
    one = (base - base) + tl.full([], 1, a.dtype)
    r = one
    for _ in range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    # negative exponents: 1 for base 1, +-1 for base -1, else 0 (integer torch.pow)
    odd = (b & 1) != 0
    neg = tl.where(a == one, one, tl.where(a == -one, tl.where(odd, -one, one), one - one))
    return tl.where(b < 0, neg, r)


@triton.jit
def cd_shl(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < bits)
    return tl.where(ok, a << tl.where(ok, b, b - b).to(a.dtype), a - a)


@triton.jit
def cd_shr(a, b):
    bits: tl.constexpr = a.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < bits)
    shifted = a >> tl.where(ok, b, b - b).to(a.dtype)
    fill = tl.where(a < 0, (a - a) - tl.full([], 1, a.dtype), a - a)
    return tl.where(ok, shifted, fill)

)PY";
}

}  // namespace cdynamo::codegen::triton
