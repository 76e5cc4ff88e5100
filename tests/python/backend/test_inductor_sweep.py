"""The inductor backend against eager on every lowering family x dtypes x shapes. Many ops share one
graph (one compile), so the sweep stays fast; floats are judged against an fp64 reference."""
import functools

import pytest
import torch
import torch.nn.functional as F

import cdynamo
from cdynamo.utils import counters

inductor = pytest.importorskip("cdynamo.inductor")

FLOATS = [torch.float32, torch.float64, torch.bfloat16]
INTS = [torch.int64, torch.int32]
ALL = FLOATS + INTS + [torch.bool]

SHAPES = {
    "scalar": (),
    "size0": (0, 3),
    "size1": (1, 5),
    "odd": (7, 13),
    "wide": (3, 67),
}


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    counters.clear()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


def make(shape, dtype, *, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2
        if positive:
            x = x.abs() + 0.1
        return x.to(dtype)
    low = 1 if positive else -20
    return torch.randint(low, 20, shape, generator=g, dtype=dtype)


def to_fp64(value):
    if isinstance(value, torch.Tensor) and value.dtype.is_floating_point:
        return value.double()
    return value


def assert_matches(compiled_out, eager_out, fp64_out, dtype):
    if isinstance(eager_out, (tuple, list)):
        assert len(compiled_out) == len(eager_out)
        for c, e, r in zip(compiled_out, eager_out, fp64_out):
            assert_matches(c, e, r, dtype)
        return
    assert compiled_out.dtype == eager_out.dtype, (compiled_out.dtype, eager_out.dtype)
    assert compiled_out.shape == eager_out.shape
    if not eager_out.dtype.is_floating_point:
        assert torch.equal(compiled_out, eager_out)
        return
    # Compiled may differ from eager, but not be further from fp64 than eager is (plus slack).
    ref = fp64_out.double()
    tol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 1e-2, torch.float16: 1e-3}[eager_out.dtype]
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isnan(compiled_out), torch.isnan(eager_out.double().to(compiled_out.dtype)) | (torch.isnan(compiled_out) & ~finite))
    compiled_err = (compiled_out.double() - ref).abs()[finite]
    eager_err = (eager_out.double() - ref).abs()[finite]
    scale = ref.abs()[finite] + 1
    assert bool(((compiled_err <= 2 * eager_err + tol * scale)).all()), (compiled_err.max(), eager_err.max())


def check(fn, *inputs, expect_graphs=1):
    eager_out = fn(*inputs)
    fp64_out = fn(*[to_fp64(x) for x in inputs])
    compiled = cdynamo.optimize("inductor", nopython=True)(fn)
    with torch.no_grad():
        out = compiled(*inputs)
    assert_matches(out, eager_out, fp64_out, None)
    assert counters["stats"]["unique_graphs"] == expect_graphs


def unary_float_ops(x):
    return (
        torch.sin(x), torch.cos(x), torch.tanh(x), torch.exp(x), torch.sigmoid(x), torch.erf(x),
        torch.abs(x), torch.neg(x), torch.floor(x), torch.ceil(x), torch.round(x), torch.trunc(x),
        torch.atan(x), torch.relu(x), F.gelu(x), F.silu(x), torch.expm1(x), torch.sign(x),
        torch.exp2(x), torch.square(x), x.clamp(-0.5, 0.5), torch.isnan(x), torch.isinf(x),
    )


def unary_positive_ops(x):
    return torch.log(x), torch.sqrt(x), torch.rsqrt(x), torch.log1p(x), torch.reciprocal(x), torch.log2(x), x ** 0.5


def binary_ops(a, b):
    return (
        a + b, a - b, a * b, torch.maximum(a, b), torch.minimum(a, b), a == b, a != b, a < b,
        a <= b, a > b, a >= b, torch.where(a > b, a, b), a * 2 + 1, a - 3,
    )


def float_binary_ops(a, b):
    return a / (b.abs() + 1), torch.atan2(a, b), a.pow(2), torch.remainder(a, 1.5), torch.fmod(a, 1.5)


def int_binary_ops(a, b):
    nonzero = torch.where(b == 0, torch.ones_like(b), b)
    return a // nonzero, a % nonzero, a & b, a | b, a ^ b, ~a, a.float() / 3, torch.bitwise_left_shift(a.abs() % 8, 2)


def bool_ops(a, b):
    return a & b, a | b, a ^ b, ~a, torch.logical_and(a, b), torch.logical_or(a, b), a.float() + 1, a.sum()


def reduction_ops(x):
    return (
        x.sum(), x.sum(dim=-1), x.sum(dim=0, keepdim=True), x.amax(dim=-1), x.amin(dim=0),
        x.argmax(dim=-1), x.argmin(dim=0), x.prod(dim=-1), torch.any(x > 0, dim=-1), torch.all(x > -1),
    )


def float_reduction_ops(x):
    return (
        x.mean(dim=-1), x.var(dim=-1), x.std(dim=0, unbiased=False), torch.logsumexp(x, dim=-1),
        torch.softmax(x, dim=-1), torch.log_softmax(x, dim=0), F.layer_norm(x, x.shape[-1:]),
    )


@pytest.mark.parametrize("shape_name", list(SHAPES))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_float(dtype, shape_name):
    shape = SHAPES[shape_name]
    check(unary_float_ops, make(shape, dtype))
    check(unary_positive_ops, make(shape, dtype, positive=True), expect_graphs=2)


@pytest.mark.parametrize("shape_name", list(SHAPES))
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_binary(dtype, shape_name):
    shape = SHAPES[shape_name]
    a, b = make(shape, dtype, seed=1), make(shape, dtype, seed=2)
    check(binary_ops, a, b)
    extra = float_binary_ops if dtype.is_floating_point else int_binary_ops
    check(extra, a, b, expect_graphs=2)


@pytest.mark.parametrize("shape_name", ["odd", "size1", "scalar"])
def test_bool(shape_name):
    shape = SHAPES[shape_name]
    check(bool_ops, make(shape, torch.bool, seed=1), make(shape, torch.bool, seed=2))


@pytest.mark.parametrize("shape_name", ["odd", "size1", "wide"])
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_reductions(dtype, shape_name):
    x = make(SHAPES[shape_name], dtype)
    check(reduction_ops, x)
    if dtype.is_floating_point:
        check(float_reduction_ops, x, expect_graphs=2)


def test_broadcast_noncontiguous_and_views():
    def fn(x, row, col):
        y = x.t() * row + col                  # transposed input, broadcasts both ways
        z = y[1:, ::2].reshape(-1)             # slicing with a step, then a copy-free view
        w = torch.cat([z, z * 2]).unsqueeze(0).expand(3, -1)
        return w, y.permute(1, 0).contiguous(), x.diagonal()

    x = torch.randn(9, 9)
    check(fn, x, torch.randn(9), torch.randn(9, 1))


def test_mixed_dtype_promotion_and_casts():
    def fn(a, b, c):
        return a + b, a * c, (a > 0).to(torch.int32) + b, b.to(torch.float64) / 3, c.to(torch.bfloat16) * 2

    check(fn, torch.randn(5, 6), torch.randint(-3, 3, (5, 6)), torch.randn(6, dtype=torch.float64))


def test_indexing_ops():
    def fn(x, idx, table):
        return (
            x[idx], torch.index_select(x, 1, idx), torch.gather(x, 1, idx.view(1, -1).expand(x.shape[0], -1)),
            F.embedding(idx, table), F.pad(x, (1, 2, 0, 1), value=0.5), torch.arange(0, 10, 3) * 2,
            torch.full((2, 3), 7.0), torch.zeros(4) + torch.ones(4),
        )

    x = torch.randn(6, 8)
    check(fn, x, torch.tensor([0, 5, 2, 2]), torch.randn(10, 4))


def test_extern_ops_mix_with_kernels():
    def fn(x, w, b, img, kernel):
        y = torch.relu(x @ w + b)
        z = F.conv2d(img, kernel, padding=1).sigmoid()
        mean, var = torch.zeros(4, dtype=z.dtype, device=z.device), torch.ones(4, dtype=z.dtype, device=z.device)
        return y, z, torch.nn.functional.batch_norm(z, mean, var, training=False)

    check(fn, torch.randn(8, 16), torch.randn(16, 32), torch.randn(32), torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3))


@functools.lru_cache
def _special_values():
    return torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e30, -1e30, 88.0, -88.0, 1e-30])


def test_nan_and_inf_semantics():
    def fn(x):
        return torch.exp(x), torch.log(x), torch.sin(x), torch.tanh(x), torch.sigmoid(x), torch.erf(x), torch.maximum(x, x * 0), x.amax()

    x = _special_values().repeat(7)  # long enough for the vector path and a tail
    eager = fn(x)
    compiled = cdynamo.optimize("inductor")(fn)
    out = compiled(x)
    for c, e in zip(out, eager):
        torch.testing.assert_close(c, e, equal_nan=True, rtol=1e-5, atol=1e-6)
