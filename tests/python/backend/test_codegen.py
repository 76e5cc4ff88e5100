"""C++ code generation, stage by stage: hand-built programs (no lowering) compiled by the C++
back end and compared with eager torch: pointwise layouts and tails, reductions, dtypes, special
values of transcendental functions, parallel and vector code shape, generated assembly."""
import math
import os
import re
import subprocess

import pytest
import torch

from cpp_support import (
    C,
    L,
    T,
    assert_close_to_reference,
    buffer,
    contiguous_index,
    kernel_cache_dir,  # noqa: F401  (autouse fixture)
    like,
    op,
    pointwise_program,
    run,
)

f32 = torch.float32


def axpb(index):
    return op("Add", f32, op("Mul", f32, L("x", index), C(2.0)), C(1.0))


# ---- pointwise ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [(0,), (1,), (7,), (37,), (1000,), (3, 5, 17), (2, 1, 300), (4, 0, 3)])
def test_pointwise_shapes_and_tails(sizes):
    x = torch.randn(sizes)
    (out,) = run(pointwise_program([("x", x)], f32, axpb(contiguous_index(sizes)), sizes), x)
    assert out.shape == x.shape and (out.numel() == 0 or out.stride() == x.stride())
    assert torch.equal(out, x * 2 + 1)


def test_contiguous_dims_merge_into_one_vector_loop():
    sizes = (3, 5, 17)
    src = T.generate_cpp(pointwise_program([("x", torch.empty(sizes))], f32, axpb(contiguous_index(sizes)), sizes))["kernel0"]
    assert "// loops: i2<255" in src  # one loop over all 255 elements
    assert "cd_vload<cd_vf32>" in src and "CD_VLEN" in src


def test_broadcast_inputs():
    x, y, z = torch.randn(33, 70), torch.randn(70), torch.randn(33, 1)
    body = op("Add", f32, op("Mul", f32, L("x", "i0*70 + i1"), L("y", "i1")), L("z", "i0"))
    prog = pointwise_program([("x", x), ("y", y), ("z", z)], f32, body, (33, 70))
    assert "vectorized along the innermost loop" in T.generate_cpp(prog)["kernel0"]
    (out,) = run(prog, x, y, z)
    assert torch.equal(out, x * y + z)


def test_transposed_input_and_output():
    x = torch.randn(70, 33).t()  # sizes (33, 70), strides (1, 33)
    y = torch.randn(33, 70)
    body = op("Sub", f32, L("x", "i0 + i1*33"), L("y", "i0*70 + i1"))
    prog = pointwise_program([("x", x), ("y", y)], f32, body, (33, 70))
    src = T.generate_cpp(prog)["kernel0"]
    assert "scalar" in src.splitlines()[0]  # a strided load: no vector loop
    (out,) = run(prog, x, y)
    assert torch.equal(out, x - y)
    # The output transposed instead: the store is strided.
    prog = pointwise_program([("x", y), ("y", y)], f32, op("Mul", f32, L("x", "i0*70 + i1"), C(3.0)), (33, 70), out_strides=(1, 33))
    (out,) = run(prog, y, y)
    assert out.stride() == (1, 33) and torch.equal(out, y * 3)


def test_index_values_and_masked_loads_pad():
    n = 45
    x = torch.randn(n)
    i = ("Index", "Int64", "i0")
    mask = op("LogicalAnd", torch.bool, op("Ge", torch.bool, i, C(2, torch.int64)), op("Lt", torch.bool, i, C(n + 2, torch.int64)))
    body = ("MaskedLoad", "Float32", "x", "i0 - 2", mask, C(-1.5))
    arange = op("Cast", f32, ("Index", "Int64", "i0*3 + 1"))
    prog = pointwise_program([("x", x)], f32, body, (n + 4,), extra_outputs=[("ar", f32, arange)])
    out, ar = run(prog, x)
    assert torch.equal(out, torch.nn.functional.pad(x, (2, 2), value=-1.5))
    assert torch.equal(ar, torch.arange(n + 4, dtype=f32) * 3 + 1)


def test_fused_outputs_share_loads_and_locals_stay_in_registers():
    x = torch.randn(4, 257)
    xi = L("x", "i0*257 + i1")
    s = op("Sin", f32, xi)
    prog = {
        "buffers": [like("x", x), buffer("t", x.shape), buffer("a", x.shape, "output"), buffer("b", x.shape, "output")],
        "outputs": ["a", "b"],
        "steps": [{"kernel": "kernel0", "ranges": [4, 257], "nodes": [
            {"pointwise": "t", "body": op("Mul", f32, s, s)},
            {"pointwise": "a", "body": op("Add", f32, L("t", "i0*257 + i1"), C(1.0))},
            {"pointwise": "b", "body": op("Sub", f32, L("t", "i0*257 + i1"), xi)},
        ]}],
    }
    src = T.generate_cpp(prog)["kernel0"]
    # t (a local: buffers[3] after x, a, b) is never stored: it stays in registers
    assert src.count("cd_vsin(") == 1 and "b3 + " not in src and "b3[" not in src
    a, b = run(prog, x)
    ref = torch.sin(x.double()) ** 2
    assert_close_to_reference(a, ref + 1, f32)
    assert_close_to_reference(b, ref - x.double(), f32)


def test_parallel_regions_only_for_enough_work():
    small = pointwise_program([("x", torch.empty(1000))], f32, axpb("i0"), (1000,))
    assert "omp parallel" not in T.generate_cpp(small)["kernel0"]
    for sizes in [(200, 3000), (3, 100003)]:
        x = torch.randn(sizes)
        prog = pointwise_program([("x", x)], f32, axpb(contiguous_index(sizes)), sizes, out_strides=None)
        # a strided output keeps both loops (no merge), so the parallel split is visible
        prog["buffers"][1]["strides"] = [1, sizes[0]]
        src = T.generate_cpp(prog)["kernel0"]
        assert "#pragma omp parallel for" in src
        (out,) = run(prog, x)
        assert torch.equal(out, x * 2 + 1) and out.stride() == (1, sizes[0])


# ---- reductions ----------------------------------------------------------------------------------


def reduction_program(x, out_sizes, out_dtype, reductions, ranges, reduction_ranges):
    """reductions: list of (output name, type, body)."""
    buffers = [like("x", x)]
    nodes = []
    for name, rtype, body in reductions:
        dtype = torch.int64 if rtype in ("ArgMax", "ArgMin") else out_dtype
        buffers.append(buffer(name, out_sizes, "output", dtype))
        nodes.append({"reduction": name, "type": rtype, "body": body})
    return {
        "buffers": buffers,
        "outputs": [r[0] for r in reductions],
        "steps": [{"kernel": "kernel0", "ranges": list(ranges), "reduction_ranges": list(reduction_ranges), "nodes": nodes}],
    }


def test_inner_reductions_sum_max_min_argmax_argmin_with_nan_and_ties():
    n, r = 37, 100
    x = torch.randn(n, r)
    x[3, 5] = float("nan")
    x[3, 60] = float("nan")
    x[4, :] = 1.0  # ties: first index wins
    x[5, :] = float("-inf")
    x[6, 17] = x[6, 90] = 50.0
    x[6, 3] = x[6, 99] = -50.0
    xi = L("x", "i0*100 + r0")
    prog = reduction_program(x, [n], f32, [("s", "Sum", xi), ("mx", "Max", xi), ("mn", "Min", xi), ("am", "ArgMax", xi), ("an", "ArgMin", xi)], [n], [r])
    assert "vectorized along the innermost reduction loop" in T.generate_cpp(prog)["kernel0"]
    s, mx, mn, am, an = run(prog, x)
    assert_close_to_reference(s, x.double().sum(1), f32, rtol=1e-5, atol=1e-5)
    assert torch.equal(mx.nan_to_num(), x.amax(1).nan_to_num()) and mx[3].isnan()
    assert torch.equal(mn.nan_to_num(), x.amin(1).nan_to_num())
    assert torch.equal(am, x.argmax(1)) and torch.equal(an, x.argmin(1))
    assert am[3] == 5 and am[4] == 0 and am[5] == 0 and am[6] == 17 and an[6] == 3


def test_outer_reductions_vectorize_across_the_kept_dimension():
    r, n = 300, 37
    x = torch.randn(r, n)
    x[7, 2] = float("nan")
    x[:, 3] = 2.0
    xi = L("x", "r0*37 + i0")
    prog = reduction_program(x, [n], f32, [("s", "Sum", xi), ("mx", "Max", xi), ("am", "ArgMax", xi), ("an", "ArgMin", xi)], [n], [r])
    assert "vectorized along the innermost loop" in T.generate_cpp(prog)["kernel0"]
    s, mx, am, an = run(prog, x)
    assert_close_to_reference(s, x.double().sum(0), f32, rtol=1e-5, atol=1e-5)
    assert torch.equal(mx.nan_to_num(), x.amax(0).nan_to_num()) and mx[2].isnan()
    assert torch.equal(am, x.argmax(0)) and torch.equal(an, x.argmin(0)) and am[2] == 7 and am[3] == 0


def test_full_reduction_to_a_scalar_and_two_reduction_dims():
    x = torch.randn(5003)
    prog = reduction_program(x, [], f32, [("s", "Sum", L("x", "r0")), ("am", "ArgMax", L("x", "r0"))], [], [5003])
    s, am = run(prog, x)
    assert s.shape == () and am.shape == ()
    assert_close_to_reference(s, x.double().sum(), f32, rtol=1e-5, atol=1e-4)
    assert am == x.argmax()
    # reduce dims 0 and 2 of a [4, 6, 9] tensor; i is dim 1
    y = torch.randn(4, 6, 9)
    prog = reduction_program(y, [6], f32, [("s", "Sum", L("x", "r0*54 + i0*9 + r1")), ("am", "ArgMax", L("x", "r0*54 + i0*9 + r1"))], [6], [4, 9])
    s, am = run(prog, y)
    assert_close_to_reference(s, y.double().sum((0, 2)), f32, rtol=1e-5, atol=1e-5)
    assert torch.equal(am, y.permute(1, 0, 2).reshape(6, -1).argmax(1))


def test_long_full_reductions_split_over_threads_deterministically():
    n = 300007
    x = torch.randn(n)
    x[123456] = 40.0  # argmax in a middle chunk; ties resolved to the first
    x[250000] = 40.0
    xi = L("x", "r0")
    prog = reduction_program(x, [], f32, [("s", "Sum", xi), ("am", "ArgMax", xi), ("an", "ArgMin", xi), ("mx", "Max", xi)], [], [n])
    src = T.generate_cpp(prog)["kernel0"]
    assert src.count("#pragma omp parallel for") == 4 and "acc0_part[" in src
    s, am, an, mx = run(prog, x)
    assert_close_to_reference(s, x.double().sum(), f32, rtol=1e-5, atol=1e-3)
    assert am == 123456 and an == x.argmin() and mx == 40.0
    assert all(torch.equal(s, run(prog, x)[0]) for _ in range(3))  # the same bits every run
    x[200001] = float("nan")
    s, am, an, mx = run(prog, x)
    assert s.isnan() and am == 200001 and an == 200001 and mx.isnan()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sum_of_reduced_precision_floats_accumulates_in_float32(dtype):
    x = (torch.rand(8, 2000) + 0.5).to(dtype)  # large sums: half-precision accumulation would drift
    xi = L("x", "i0*2000 + r0", dtype)
    prog = reduction_program(x, [8], dtype, [("s", "Sum", xi), ("mx", "Max", xi)], [8], [2000])
    s, mx = run(prog, x)
    assert s.dtype == dtype
    assert_close_to_reference(s, x.double().sum(1), dtype)
    assert torch.equal(s, x.sum(1))  # torch also accumulates in float32 and rounds once
    assert torch.equal(mx, x.amax(1))


def test_any_all_prod_xorsum():
    b = torch.rand(9, 50) > 0.9
    b[0] = False
    b[1] = True
    f = torch.randn(9, 50)
    f[2] = 0.0
    i = torch.randint(-3, 4, (9, 50), dtype=torch.int64)
    prog = {
        "buffers": [like("b", b), like("f", f), like("i", i),
                    buffer("any", [9], "output", torch.bool), buffer("all", [9], "output", torch.bool),
                    buffer("anyf", [9], "output", torch.bool), buffer("prod", [9], "output", torch.int64),
                    buffer("xor", [9], "output", torch.int64), buffer("fprod", [9], "output", torch.float64)],
        "outputs": ["any", "all", "anyf", "prod", "xor", "fprod"],
        "steps": [{"kernel": "kernel0", "ranges": [9], "reduction_ranges": [50], "nodes": [
            {"reduction": "any", "type": "Any", "body": L("b", "i0*50 + r0", torch.bool)},
            {"reduction": "all", "type": "All", "body": L("b", "i0*50 + r0", torch.bool)},
            {"reduction": "anyf", "type": "Any", "body": op("Cast", torch.bool, L("f", "i0*50 + r0"))},
            {"reduction": "prod", "type": "Prod", "body": L("i", "i0*50 + r0", torch.int64)},
            {"reduction": "xor", "type": "XorSum", "body": L("i", "i0*50 + r0", torch.int64)},
            {"reduction": "fprod", "type": "Prod", "body": op("Cast", torch.float64, op("Add", f32, L("f", "i0*50 + r0"), C(1.0)))},
        ]}],
    }
    any_, all_, anyf, prod, xor, fprod = run(prog, b, f, i)
    assert torch.equal(any_, b.any(1)) and torch.equal(all_, b.all(1)) and torch.equal(anyf, (f != 0).any(1))
    assert torch.equal(prod, i.prod(1))
    expected_xor = torch.tensor([functools_xor(row) for row in i.tolist()])
    assert torch.equal(xor, expected_xor)
    assert_close_to_reference(fprod, (f + 1).double().prod(1), torch.float64, rtol=1e-10)


def functools_xor(values):
    acc = 0
    for v in values:
        acc ^= v
    return acc


def test_logsumexp_epilogue_after_two_reductions():
    n, r = 19, 333
    x = torch.randn(n, r) * 10
    x[2, 7] = float("inf")
    xi = L("x", "i0*333 + r0")
    m = L("m", "i0")
    prog = {
        "buffers": [like("x", x), buffer("m", [n]), buffer("se", [n]), buffer("lse", [n], "output")],
        "outputs": ["lse"],
        "steps": [{"kernel": "kernel0", "ranges": [n], "reduction_ranges": [r], "nodes": [
            {"reduction": "m", "type": "Max", "body": xi},
            {"reduction": "se", "type": "Sum", "body": op("Exp", f32, op("Sub", f32, xi, m))},
            {"pointwise": "lse", "body": op("Add", f32, op("Log", f32, L("se", "i0")), m)},
        ]}],
    }
    src = T.generate_cpp(prog)["kernel0"]
    assert "b2[" not in src and "b3[" not in src  # m and se (locals after x, lse) stay in registers
    (lse,) = run(prog, x)
    ref = torch.logsumexp(x.double(), 1)
    ref[2] = float("nan")  # inf - inf inside, as in the naive formula (torch special-cases it)
    assert_close_to_reference(lse, ref, f32, rtol=1e-5, atol=1e-5)


# ---- dtypes ----------------------------------------------------------------------------------------


FLOAT_BINARY = [("Add", torch.add), ("Sub", torch.sub), ("Mul", torch.mul), ("Div", torch.div),
                ("Maximum", torch.maximum), ("Minimum", torch.minimum), ("Atan2", torch.atan2), ("Pow", torch.pow),
                ("Remainder", torch.remainder), ("Fmod", torch.fmod),
                ("FloorDiv", lambda a, b: torch.div(a, b, rounding_mode="floor"))]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_float_dtypes_binary_ops(dtype):
    n = 77
    a = (torch.randn(n, dtype=torch.float64) * 3).to(dtype)
    b = (torch.randn(n, dtype=torch.float64) * 3).to(dtype)
    a[:4] = torch.tensor([float("nan"), float("inf"), -0.0, 5.0], dtype=dtype)
    b[:4] = torch.tensor([1.0, 2.0, float("nan"), -0.0], dtype=dtype)
    a[4:8] = torch.tensor([-7.0, 7.0, -7.5, 2.0], dtype=dtype)
    b[4:8] = torch.tensor([2.0, -2.0, 2.0, 0.5], dtype=dtype)
    la, lb = L("a", "i0", dtype), L("b", "i0", dtype)
    outs = [(name.lower(), dtype, op(name, dtype, la, lb)) for name, _ in FLOAT_BINARY[1:]]
    outs.append(("where", dtype, op("Where", dtype, op("Gt", torch.bool, la, lb), la, lb)))
    outs.append(("lt", torch.bool, op("Lt", torch.bool, la, lb)))
    prog = pointwise_program([("a", a), ("b", b)], dtype, op("Add", dtype, la, lb), (n,), extra_outputs=outs)
    results = run(prog, a, b)
    references = [fn(a, b) for _, fn in FLOAT_BINARY] + [torch.where(a > b, a, b), a < b]
    for (name, _), got, want in zip(FLOAT_BINARY + [("where", 0), ("lt", 0)], results, references):
        if dtype in (torch.float32, torch.float64) or want.dtype == torch.bool:
            # one rounding per op, like eager: equal up to the ulps of pow/atan2/libm
            if name in ("Atan2", "Pow"):
                assert_close_to_reference(got, fn_double(name, a, b), dtype)
            else:
                torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=name)
        else:
            torch.testing.assert_close(got.double(), want.double(), rtol=0.01, atol=0.01, equal_nan=True, msg=name)


def fn_double(name, a, b):
    return dict(FLOAT_BINARY)[name](a.double(), b.double())


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_dtypes_exact(dtype):
    n = 70
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = torch.randint(lo, hi + 1, (n,), dtype=dtype)
    b = torch.randint(lo, hi + 1, (n,), dtype=dtype)
    b[b == 0] = 3
    a[0], b[0] = info.max, 1  # wraps around on Add
    if info.min < 0:
        a[1], b[1] = -7, 2
        a[2], b[2] = 7, -2
    s = torch.randint(0, 8 * a.element_size() + 3, (n,), dtype=dtype)  # shifts past the width too
    la, lb, ls = L("a", "i0", dtype), L("b", "i0", dtype), L("s", "i0", dtype)
    cases = [
        ("Add", lambda: a + b), ("Sub", lambda: a - b), ("Mul", lambda: a * b),
        ("FloorDiv", lambda: torch.div(a, b, rounding_mode="floor")), ("Remainder", lambda: torch.remainder(a, b)),
        ("BitwiseAnd", lambda: a & b), ("BitwiseOr", lambda: a | b), ("BitwiseXor", lambda: a ^ b),
        ("Maximum", lambda: torch.maximum(a, b)), ("Minimum", lambda: torch.minimum(a, b)),
    ]
    outs = [(name.lower(), dtype, op(name, dtype, la, lb)) for name, _ in cases[1:]]
    outs += [("shl", dtype, op("ShiftLeft", dtype, la, ls)), ("shr", dtype, op("ShiftRight", dtype, la, ls)),
             ("neg", dtype, op("Neg", dtype, la)), ("not", dtype, op("BitwiseNot", dtype, la)),
             ("abs", dtype, op("Abs", dtype, la)), ("le", torch.bool, op("Le", torch.bool, la, lb)),
             ("tof", f32, op("Cast", f32, la)), ("sign", dtype, op("Sign", dtype, la))]
    prog = pointwise_program([("a", a), ("b", b), ("s", s)], dtype, op("Add", dtype, la, lb), (n,), extra_outputs=outs)
    results = run(prog, a, b, s)
    references = [fn() for _, fn in cases] + [
        torch.bitwise_left_shift(a, s), torch.bitwise_right_shift(a, s), -a, ~a, torch.abs(a), a <= b, a.float(), torch.sign(a)]
    names = [c[0] for c in cases] + ["shl", "shr", "neg", "not", "abs", "le", "tof", "sign"]
    for name, got, want in zip(names, results, references):
        assert torch.equal(got, want), (name, got, want)


def test_bool_dtype_and_casts():
    n = 41
    p = torch.rand(n) > 0.5
    q = torch.rand(n) > 0.5
    x = torch.randn(n) * 300
    x[:6] = torch.tensor([float("nan"), -0.0, 0.0, 2.5, -2.5, 65519.0])
    lp, lq, lx = L("p", "i0", torch.bool), L("q", "i0", torch.bool), L("x", "i0")
    outs = [
        ("or", torch.bool, op("LogicalOr", torch.bool, lp, lq)), ("xor", torch.bool, op("LogicalXor", torch.bool, lp, lq)),
        ("not", torch.bool, op("LogicalNot", torch.bool, lp)), ("eq", torch.bool, op("Eq", torch.bool, lp, lq)),
        ("pf", f32, op("Cast", f32, lp)), ("xb", torch.bool, op("Cast", torch.bool, lx)),
        ("xi32", torch.int32, op("Cast", torch.int32, op("Where", f32, op("IsNan", torch.bool, lx), C(0.0), lx))),
        ("xh", torch.float16, op("Cast", torch.float16, lx)), ("xbf", torch.bfloat16, op("Cast", torch.bfloat16, lx)),
        ("xd", torch.float64, op("Cast", torch.float64, lx)),
        ("rt", f32, op("Cast", f32, op("Cast", torch.float16, lx))),  # rounds through half precision
        ("sel", f32, op("Where", f32, lp, lx, C(-1.0))),
    ]
    prog = pointwise_program([("p", p), ("q", q), ("x", x)], torch.bool, op("LogicalAnd", torch.bool, lp, lq), (n,), extra_outputs=outs)
    got = run(prog, p, q, x)
    xz = torch.where(x.isnan(), torch.zeros(()), x)
    want = [p & q, p | q, p ^ q, ~p, p == q, p.float(), x.bool(), xz.int(), x.half(), x.bfloat16(), x.double(),
            x.half().float(), torch.where(p, x, -1.0)]
    for k, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True, msg=str(k))


# ---- transcendental functions: vector forms keep NaN and infinity semantics ------------------------

UNARY = [("Exp", torch.exp), ("Log", torch.log), ("Sin", torch.sin), ("Cos", torch.cos), ("Tanh", torch.tanh),
         ("Erf", torch.erf), ("Sigmoid", torch.sigmoid), ("Expm1", torch.expm1), ("Log1p", torch.log1p),
         ("Sqrt", torch.sqrt), ("Rsqrt", torch.rsqrt), ("Atan", torch.atan), ("Asinh", torch.asinh), ("Tan", torch.tan),
         ("Erfc", torch.erfc), ("Log2", torch.log2), ("Exp2", torch.exp2), ("Floor", torch.floor), ("Round", torch.round),
         ("Abs", torch.abs), ("Sign", torch.sign), ("Reciprocal", torch.reciprocal), ("Acos", torch.acos),
         ("Cosh", lambda t: _python_math(math.cosh, t))]


def _python_math(fn, t):
    """The reference from Python's libm where torch's float64 kernel is less exact (torch.cosh
    overflows to inf at 710, where cosh is still finite)."""

    def one(v):
        try:
            return fn(v)
        except OverflowError:
            return math.inf
    return torch.tensor([one(v) for v in t.tolist()], dtype=torch.float64)
SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 0.5, -0.5, 2.5, 88.7, -88.7,
           100.0, -104.0, 1e4, -1e4, 3.1415927, 710.0, -745.0, 1e-310, 0.9999, -0.9999, 1.0000001]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transcendentals_special_values(dtype):
    g = torch.Generator().manual_seed(0)
    values = torch.tensor(SPECIAL, dtype=torch.float64)
    x = torch.cat([values, torch.randn(64, generator=g, dtype=torch.float64) * 5, values]).to(dtype)  # vector body and tail
    n = x.numel()
    lx = L("x", "i0", dtype)
    outs = [(name.lower(), dtype, op(name, dtype, lx)) for name, _ in UNARY[1:]]
    prog = pointwise_program([("x", x)], dtype, op(UNARY[0][0], dtype, lx), (n,), extra_outputs=outs)
    src = T.generate_cpp(prog)["kernel0"]
    assert "cd_vexp(" in src and "cd_verf(" in src  # the vector forms run the body
    results = run(prog, x)
    xd = x.double()
    for (name, fn), got in zip(UNARY, results):
        ref = fn(xd)
        # libmvec promises a few ulps; torch's own vectorized math is no closer
        rtol = 4e-6 if dtype == torch.float32 else 1e-13
        if name in ("Tan",):  # tan near its poles amplifies the input's rounding
            rtol = 1e-4 if dtype == torch.float32 else 1e-9
        try:
            assert_close_to_reference(got, ref, dtype, rtol=rtol, atol=1e-30 if name != "Sin" else 1e-6)
        except AssertionError as e:
            bad = ~torch.isclose(got.double(), ref, rtol=rtol, atol=1e-30, equal_nan=True)
            raise AssertionError(f"{name}: x={x[bad].tolist()} got={got[bad].tolist()} want={ref[bad].tolist()} {e}") from None
        nan = ref.to(dtype).isnan()
        assert torch.equal(got.isnan(), nan), name
        assert torch.equal(got[~nan], ref.to(dtype)[~nan]) or name not in ("Abs", "Sign", "Floor", "Round"), name


def test_generated_assembly_uses_packed_simd(tmp_path):
    cpu = open("/proc/cpuinfo").read()
    if "avx2" not in cpu:
        pytest.skip("the vector paths target AVX2 or AVX-512")
    flags, libs = T.cpp_compile_command()
    body = op("Add", f32, op("Mul", f32, L("x", "i0"), C(3.0)), C(1.0))  # (x*2 would become x+x)
    prog = pointwise_program([("x", torch.empty(1 << 20))], f32, body, (1 << 20,))
    chain = pointwise_program([("x", torch.empty(1 << 20))], f32, op("Exp", f32, op("Neg", f32, L("x", "i0"))), (1 << 20,))
    (tmp_path / "cd_prelude.h").write_text(T.cpp_prelude())
    asm = {}
    for name, p in [("axpb", prog), ("exp", chain)]:
        src = tmp_path / f"{name}.cpp"
        src.write_text(T.generate_cpp(p)["kernel0"])
        out = tmp_path / f"{name}.s"
        compile_only = [f for f in flags if f != "-shared"]  # clang -Werror: -shared is unused with -S
        subprocess.run([*compile_only, "-I", str(tmp_path), "-S", str(src), "-o", str(out)], check=True)
        asm[name] = out.read_text()
    width = "zmm" if "avx512f" in cpu else "ymm"
    assert re.search(rf"\bv(mulps|fmadd\w*ps)\s+[^\n]*%{width}", asm["axpb"]), "no packed multiply"
    assert re.search(rf"\bvaddps\s+[^\n]*%{width}", asm["axpb"]) or "vfmadd" in asm["axpb"]
    assert re.search(r"callq?\s+_ZGV\w*expf", asm["exp"]), "exp is not the libmvec vector variant"  # clang: callq



def test_integer_division_by_zero_does_not_trap():
    # Eager raises before dividing; a kernel cannot raise, but must not kill the process (SIGFPE).
    a = torch.tensor([7, -7, torch.iinfo(torch.int64).min, 5] * 5, dtype=torch.int64)
    b = torch.tensor([0, 0, -1, 2] * 5, dtype=torch.int64)
    la, lb = L("a", "i0", torch.int64), L("b", "i0", torch.int64)
    i64 = torch.int64
    prog = pointwise_program([("a", a), ("b", b)], i64, op("FloorDiv", i64, la, lb), (20,),
                             extra_outputs=[("r", i64, op("Remainder", i64, la, lb)), ("d", i64, op("Div", i64, la, lb)),
                                            ("f", i64, op("Fmod", i64, la, lb))])
    fd, r, d, f = run(prog, a, b)
    assert fd.tolist()[:4] == [0, 0, torch.iinfo(torch.int64).min, 2] and r.tolist()[:4] == [0, 0, 0, 1]
    assert d.tolist()[:4] == [0, 0, torch.iinfo(torch.int64).min, 2] and f.tolist()[:4] == [0, 0, 0, 1]


@pytest.mark.parametrize("isa", ["-mno-avx512f", "-mno-avx"])
def test_narrower_simd_targets_give_the_same_results(tmp_path, isa):
    """The prelude's AVX2 (8 lanes) and generic (4 lanes, no libmvec) branches, built by hand
    with narrower targets and called through ctypes on the same inputs."""
    import ctypes

    flags, libs = T.cpp_compile_command()
    if isa == "-mno-avx512f" and "avx2" not in open("/proc/cpuinfo").read():
        pytest.skip("no AVX2 on this machine")
    x = torch.cat([torch.tensor(SPECIAL), torch.randn(61) * 4])
    h = x.half()
    n = x.numel()
    lx, lh = L("x", "i0"), L("h", "i0", torch.float16)
    outs = [(name.lower(), f32, op(name, f32, lx)) for name, _ in UNARY[1:]]
    outs += [("hsq", torch.float16, op("Mul", torch.float16, lh, lh)), ("bf", torch.bfloat16, op("Cast", torch.bfloat16, lx)),
             ("gt", torch.bool, op("Gt", torch.bool, lx, C(0.5))), ("fl", torch.int32, op("Cast", torch.int32, op("Floor", f32, op("Minimum", f32, lx, C(1e6))))) ]
    prog = pointwise_program([("x", x), ("h", h)], f32, op(UNARY[0][0], f32, lx), (n,), extra_outputs=outs)
    expected = run(prog, x, h)
    (tmp_path / "cd_prelude.h").write_text(T.cpp_prelude())
    src = tmp_path / "k.cpp"
    src.write_text(T.generate_cpp(prog)["kernel0"])
    lib = tmp_path / "k.so"
    subprocess.run([*flags, isa, "-I", str(tmp_path), str(src), "-o", str(lib), *libs], check=True)
    results = [torch.empty_like(e) for e in expected]
    tensors = [x, h, *results]
    pointers = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    ctypes.CDLL(str(lib)).cd_kernel(pointers)
    names = [UNARY[0][0]] + [o[0] for o in outs]
    for name, got, want in zip(names, results, expected):
        torch.testing.assert_close(got, want, rtol=4e-6, atol=1e-30, equal_nan=True, msg=f"{isa} {name}")
