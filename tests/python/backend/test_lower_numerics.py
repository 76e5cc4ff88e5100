# Lowering and scheduling checked against eager: every graph is lowered, scheduled, verified and
# run by the reference IR evaluator (_testing.run_ir), fused and unfused, over dtypes and shapes
# (scalars, size-0 and size-1 dims, odd sizes, non-contiguous and broadcast inputs).
import math
import zlib

import pytest
import torch
import torch.nn.functional as F

from cdynamo import _C
from helpers import aten_graph
import test_lower

run_ir = _C._testing.run_ir

TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
       torch.float16: (2e-3, 2e-3)}


LOW_PRECISION = (torch.bfloat16, torch.float16)


def check(fn, *inputs, fused=(True, False)):
    """fn on the IR (both scheduled and unscheduled) == fn in eager, outputs and mutated inputs.

    With half-precision inputs the reference is fn over float64 copies, rounded to eager's
    result dtypes: the IR computes in float32 and rounds once on store, as inductor does,
    where eager rounds after every op."""
    with torch.no_grad():
        gm = aten_graph(fn, *[t.clone() for t in inputs])
        eager_inputs = [t.clone() for t in inputs]
        expected = fn(*eager_inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        if any(t.dtype in LOW_PRECISION for t in inputs):
            wide_inputs = [t.double() if t.dtype in LOW_PRECISION else t.clone() for t in inputs]
            wide = fn(*wide_inputs)
            wide = list(wide) if isinstance(wide, (tuple, list)) else [wide]
            expected = [w.to(e.dtype) for w, e in zip(wide, expected)]
            eager_inputs = [w.to(t.dtype) for w, t in zip(wide_inputs, inputs)]
    for f in fused:
        ir_inputs = [t.clone() for t in inputs]
        outputs, after = run_ir(gm, ir_inputs, f)
        assert len(outputs) == len(expected)
        for got, want in zip(outputs + after, expected + eager_inputs):
            assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
            if want.dtype.is_floating_point:
                atol, rtol = TOL[want.dtype]
                torch.testing.assert_close(got, want, atol=atol, rtol=rtol, equal_nan=True)
            else:
                assert torch.equal(got, want), (got, want)


def make(shape, dtype, noncontiguous=False):
    g = torch.Generator().manual_seed(zlib.crc32(repr((shape, dtype)).encode()))
    full = shape[::-1] if noncontiguous else shape
    if dtype.is_floating_point:
        t = torch.randn(full, generator=g, dtype=torch.float64).to(dtype)
    elif dtype == torch.bool:
        t = torch.rand(full, generator=g) > 0.5
    else:
        t = torch.randint(-9, 10, full, generator=g).to(dtype)
    return t.permute(*reversed(range(len(shape)))) if noncontiguous else t


FLOATS = [torch.float32, torch.float64, torch.bfloat16]
SHAPES = [(), (0,), (1,), (5, 3), (2, 1, 3)]


# ---- the required-op table of test_lower, in float32 --------------------------------------------

@pytest.mark.parametrize("name", sorted(test_lower.LOWERED))
def test_lowered_op_matches_eager(name):
    check(test_lower.LOWERED[name], torch.randn(4, 8, dtype=torch.float64).float())


@pytest.mark.parametrize("name", sorted(test_lower.EXTERNS))
def test_extern_op_matches_eager(name):
    check(test_lower.EXTERNS[name][0], torch.randn(4, 8))


# ---- pointwise sweep -----------------------------------------------------------------------------

UNARY = {
    "sin": torch.sin, "exp": torch.exp, "log_abs": lambda x: (x.abs() + 0.5).log(), "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "neg_abs": lambda x: -x.abs(), "floor_round": lambda x: x.floor() + (x * 3).round(),
    "rsqrt": lambda x: (x * x + 1).rsqrt(), "erf": torch.erf, "relu": torch.relu, "sign": torch.sign,
    "reciprocal": lambda x: (x.abs() + 1).reciprocal(), "expm1_log1p": lambda x: x.expm1() + x.abs().log1p(),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, shape, dtype):
    check(UNARY[name], make(shape, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_noncontiguous(dtype):
    check(lambda x: x.sin() * 2 + 1, make((3, 5), dtype, noncontiguous=True))


BINARY = {
    "add": lambda a, b: a + b, "sub_alpha": lambda a, b: torch.sub(a, b, alpha=2), "mul": lambda a, b: a * b,
    "maximum": torch.maximum, "lt_where": lambda a, b: torch.where(a < b, a, b),
    "eq_ne": lambda a, b: (a == b) | (a != b * 2),
}
INTEGRAL_BINARY = {
    "floordiv": lambda a, b: a // b.abs().clamp(min=1), "remainder": lambda a, b: a % b.abs().clamp(min=1),
    "truediv": lambda a, b: a / b.abs().clamp(min=1), "trunc_div": lambda a, b: torch.div(a, b.abs().clamp(min=1), rounding_mode="trunc"),
    "bitwise": lambda a, b: (a & b) | (a ^ 3), "pow": lambda a, b: a ** 2 + a.abs() ** 3,
}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_broadcast(name, dtype):
    check(BINARY[name], make((4, 1, 3), dtype), make((5, 1), dtype))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("name", sorted(INTEGRAL_BINARY))
def test_integer_semantics(name, dtype):
    check(INTEGRAL_BINARY[name], make((6,), dtype), make((6,), dtype))


def test_float_floor_divide_and_remainder():
    a, b = make((7,), torch.float32) * 5, make((7,), torch.float32)
    check(lambda a, b: (a // b, a % b, torch.fmod(a, b)), a, b)


def test_bool_ops():
    a, b = make((5,), torch.bool), make((5,), torch.bool)
    check(lambda a, b: (a + b, a & b, ~a, torch.logical_xor(a, b), a * b), a, b)


def test_mixed_promotion():
    i32, f64_0d, b = make((4,), torch.int32), torch.tensor(1.5, dtype=torch.float64), make((4,), torch.bool)
    check(lambda i, s, b: (i + s, i * 2.5, b + i, i / 2, i + True), i32, f64_0d, b)


def test_clamp_casts_and_scalars():
    x = make((3, 4), torch.float32) * 3
    check(lambda x: (x.clamp(-1, 1), x.clamp(max=0.5), x.to(torch.int32), x.to(torch.bfloat16),
                     x.to(torch.bool), torch.where(x > 0, 1.0, x)), x)


def test_nan_and_inf_propagate():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, 1.0])
    check(lambda x: (x.relu(), torch.maximum(x, x.flip(0)), x.isnan(), x.isinf(), x.clamp(0, 1), x.amax(), x.argmax()), x)


# ---- reductions ----------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": lambda x: x.sum(1), "sum_keep": lambda x: x.sum((0, 2), keepdim=True), "sum_all": lambda x: x.sum(),
    "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax((1, 2)), "amin_keep": lambda x: x.amin(0, keepdim=True),
    "argmax": lambda x: x.argmax(1), "argmin_all": lambda x: x.argmin(), "argmax_keep": lambda x: x.argmax(2, keepdim=True),
    "var": lambda x: x.var(1), "std_keep": lambda x: x.std(2, keepdim=True, correction=0), "var_mean": lambda x: torch.var_mean(x, (0, 1)),
    "prod": lambda x: x.prod(2), "logsumexp": lambda x: torch.logsumexp(x, 1), "max_dim": lambda x: x.max(1),
    "softmax": lambda x: x.softmax(1), "log_softmax": lambda x: x.log_softmax(0),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, dtype):
    check(REDUCTIONS[name], make((3, 5, 2), dtype))


@pytest.mark.parametrize("name", ["sum", "sum_all", "amax", "argmax", "prod"])
def test_integer_reduction(name):
    check(REDUCTIONS[name], make((3, 5, 2), torch.int32))


def test_any_all_on_bool_and_float():
    check(lambda b, x: (b.any(1), b.all(), (x > 0).any(), x.all(0)), make((3, 4), torch.bool), make((3, 4), torch.float32))


def test_reductions_over_size_one_and_empty_dims():
    check(lambda x: (x.sum(1), x.amax(1), x.mean(1)), make((3, 1), torch.float32))
    check(lambda x: (x.sum(1), x.prod(1), (x > 0).any(1)), make((3, 0), torch.float32))


def test_norms_and_normalisations():
    x = make((2, 4, 3, 3), torch.float32)
    w, b = make((4,), torch.float32), make((4,), torch.float32)
    check(lambda x, w, b: (F.group_norm(x, 2, w, b), F.layer_norm(x, (3, 3)),
                           F.batch_norm(x, w.abs(), w.abs() + 1, w, b)), x, w, b)
    check(lambda x: F.layer_norm(x, (3,)), make((2, 3), torch.bfloat16))


# ---- views, data movement and indexing -----------------------------------------------------------

def test_view_chains():
    x = make((2, 3, 4), torch.float32)
    check(lambda x: (x.view(6, 4).t().reshape(2, 12)[:, 3:9:2] * 2,
                     x.permute(2, 0, 1).reshape(4, 6).unsqueeze(1).expand(4, 3, 6) + 0,
                     x.transpose(0, 2)[1:, :, ::2].select(1, 2) + 1,
                     x.unfold(2, 2, 1) * 1, x.diagonal(0, 1, 2) + 0, x.flip(1, 2) - 0,
                     torch.as_strided(x, (3, 3), (4, 1), 2) * 1), x)


def test_views_of_noncontiguous_inputs_and_of_computed_values():
    x = make((4, 6), torch.float32, noncontiguous=True)
    check(lambda x: ((x + 1).reshape(24).view(2, 12), (x * 2).t().reshape(-1), x.reshape(3, 8) + 0, x.t().view(24) * 1), x)


def test_returned_views_and_aliases():
    x = make((4, 6), torch.float32)
    check(lambda x: (x.t(), x[1], x[:, 2:4], (x * 2).t(), x.view(3, 8)), x)


def test_cat_pad_scatter():
    a, b = make((2, 3), torch.float32), make((2, 5), torch.float32)
    check(lambda a, b: (torch.cat([a, b, a.exp()], 1), torch.cat([a, a], 0), torch.stack([a, a * 2], 2),
                        F.pad(b, (2, 1, 0, 1), value=-1.0), F.pad(b, (-1, 1)),
                        torch.slice_scatter(b, a, 1, 1, 4), torch.slice_scatter(b, a[:, :2], 1, 0, 4, 2),
                        torch.select_scatter(b, b[0] * 3, 0, 1)),
          a, b)
    i = make((3, 4), torch.int64)
    check(lambda i: (torch.cat([i, i + 1], 0), F.pad(i, (1, 1))), i)


def test_indexing():
    x = make((5, 4, 3), torch.float32)
    i = torch.tensor([[4, 0], [-1, 2]])
    j = torch.tensor([1, 3])
    check(lambda x, i, j: (x[i], x[:, j], x[i, j], x[j, :, j.clamp(max=2)], x.index_select(1, j), torch.gather(x, 2, torch.zeros(5, 4, 2, dtype=torch.int64)),
                           F.embedding(i.abs(), x[:, :, 0])), x, i, j)


def test_factories():
    x = make((3, 4), torch.float32)
    check(lambda x: (torch.arange(4) + x, torch.arange(1, 10, 3, dtype=torch.float32), torch.arange(0.5, 3.0, 0.25),
                     torch.full((2, 3), 7, dtype=torch.int32), torch.zeros_like(x) + torch.ones(4),
                     torch.scalar_tensor(2.5) * x), x)


# ---- input mutation ------------------------------------------------------------------------------

def test_input_mutations():
    def f(x, y):
        a = x * 2
        x.add_(1)
        y[1:3] = y[0:2].clone()
        return a, x.sum()
    check(f, make((4, 3), torch.float32), make((5, 2), torch.float32))


def test_mutation_of_noncontiguous_input():
    def f(x):
        x.mul_(3)
        return x + 1
    check(f, make((3, 4), torch.float32, noncontiguous=True))


# ---- small models --------------------------------------------------------------------------------

def test_mlp_block_matches_eager():
    x, w1, b1, w2 = make((4, 8), torch.float32), make((16, 8), torch.float32), make((16,), torch.float32), make((8, 16), torch.float32)
    check(lambda x, w1, b1, w2: F.layer_norm(F.linear(F.gelu(F.linear(x, w1, b1)), w2) + x, (8,)), x, w1, b1, w2)


def test_attention_block_matches_eager():
    q, k, v = make((2, 4, 8), torch.float32), make((2, 4, 8), torch.float32), make((2, 4, 8), torch.float32)
    def attention(q, k, v):
        scores = (q @ k.transpose(1, 2)) / math.sqrt(8)
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
    check(attention, q, k, v)


# ---- edge cases ----------------------------------------------------------------------------------

def _mutate_without_return(x):
    x.mul_(2)
    return ()


def _mutate_slice(x):
    x[0] = 1.0
    return x[1:]


def _mutate_through_transpose(x):
    x.t().add_(1)
    return x.sum()


EDGES = {
    "identity": lambda x: x,
    "returned_twice": lambda x: (x, x, x * 2, x * 2),
    "constant_output": lambda x: (x + 1, torch.tensor([1.0, 2.0])),
    "view_of_extern": lambda x: (x @ x.t()).t(),
    "mutate_without_return": _mutate_without_return,
    "mutate_slice": _mutate_slice,
    "mutate_through_transpose": _mutate_through_transpose,
    "zero_dim_broadcast": lambda x: x.sum() * x.sum(0),
    "empty_slice": lambda x: x[:0] * 2,
    "int_bool_mix": lambda x: (x > 0).sum(1, keepdim=True) + (x.long() // 2),
    "expand_output": lambda x: x[:1].expand(3, 8),
    "bf16_sum_cast": lambda x: x.bfloat16().sum(0).float(),
    "chunk": lambda x: [c.exp() for c in x.chunk(3, 1)],
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_case(name):
    check(EDGES[name], make((4, 8), torch.float32))


# ---- modules with parameters as graph inputs -----------------------------------------------------

class _Block(torch.nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(d, 2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class _ConvBlock(torch.nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1, self.bn2 = torch.nn.BatchNorm2d(c), torch.nn.BatchNorm2d(c)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + x)


def _check_module(module, x):
    from torch.func import functional_call
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    names = list(state)

    def fn(x, *tensors):
        return functional_call(module, dict(zip(names, tensors)), (x,))
    check(fn, x, *[t.detach() for t in state.values()])


def test_transformer_block_matches_eager():
    torch.manual_seed(0)
    _check_module(_Block().eval(), make((2, 5, 16), torch.float32))


def test_conv_block_matches_eager():
    torch.manual_seed(0)
    _check_module(_ConvBlock().eval(), make((2, 4, 5, 5), torch.float32))
