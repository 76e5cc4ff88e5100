# Stage tests of the inductor lowering (csrc/backend/lower) through cdynamo._C._testing.lower:
# golden IR text for small graphs, which ops are lowered vs extern, views folded into indexing,
# dtype semantics, and the verifier run on every lowered graph (lower() verifies before returning).
import textwrap

import pytest
import torch
import torch.nn.functional as F

from cdynamo import _C
from helpers import aten_graph

lower = _C._testing.lower


def ir_of(fn, *inputs):
    return lower(aten_graph(fn, *inputs))


def golden(text):
    return textwrap.dedent(text).lstrip("\n")


X = torch.randn(4, 8)


# ---- golden text -----------------------------------------------------------------------------

def test_golden_pointwise_chain_is_one_lazy_body():
    assert ir_of(lambda x: (x.sin() + 1).relu() * 2, X) == golden("""
        inputs: x_1
        outputs: buf0
          x_1: input Float32 [4, 8] strides [8, 1]
          buf0: output Float32 [4, 8] strides [8, 1]
        buf0 = pointwise [4, 8] {
          %0 = load x_1[i1 + (8*i0)] : Float32
          %1 = Sin %0 : Float32
          %2 = const 1.0 : Float32
          %3 = Add %1, %2 : Float32
          %4 = const 0.0 : Float32
          %5 = Maximum %3, %4 : Float32
          %6 = const 2.0 : Float32
          %7 = Mul %5, %6 : Float32
          store %7
        }
        """)


def test_golden_softmax_two_reductions_and_epilogue():
    assert ir_of(lambda x: F.softmax(x, -1), X) == golden("""
        inputs: x_1
        outputs: buf2
          x_1: input Float32 [4, 8] strides [8, 1]
          buf0: buffer Float32 [4] strides [1]
          buf1: buffer Float32 [4] strides [1]
          buf2: output Float32 [4, 8] strides [8, 1]
        buf0 = reduce Max [4] over [8] {
          %0 = load x_1[r0 + (8*i0)] : Float32
          reduce %0
        }
        buf1 = reduce Sum [4] over [8] {
          %0 = load x_1[r0 + (8*i0)] : Float32
          %1 = load buf0[i0] : Float32
          %2 = Sub %0, %1 : Float32
          %3 = Exp %2 : Float32
          reduce %3
        }
        buf2 = pointwise [4, 8] {
          %0 = load x_1[i1 + (8*i0)] : Float32
          %1 = load buf0[i0] : Float32
          %2 = Sub %0, %1 : Float32
          %3 = Exp %2 : Float32
          %4 = load buf1[i0] : Float32
          %5 = Div %3, %4 : Float32
          store %5
        }
        """)


def test_golden_linear_is_extern_addmm_with_transposed_weight_alias():
    w, b = torch.randn(3, 8), torch.randn(3)
    assert ir_of(lambda x, w, b: F.linear(x, w, b).relu(), X, w, b) == golden("""
        inputs: x_1, w_1, b_1
        outputs: buf2
          x_1: input Float32 [4, 8] strides [8, 1]
          w_1: input Float32 [3, 8] strides [8, 1]
          b_1: input Float32 [3] strides [1]
          buf0: buffer Float32 [8, 3] strides [1, 8] reuses w_1
          buf1: buffer Float32 [4, 3] strides [3, 1]
          buf2: output Float32 [4, 3] strides [3, 1]
        buf1 = extern aten::addmm.default(b_1, x_1, buf0, beta=1, alpha=1)
        buf2 = pointwise [4, 3] {
          %0 = load buf1[i1 + (3*i0)] : Float32
          %1 = const 0.0 : Float32
          %2 = Maximum %0, %1 : Float32
          store %2
        }
        """)


def test_golden_gather_uses_indirect_load():
    idx = torch.tensor([0, 2])
    assert ir_of(lambda x, i: x[i], X, idx) == golden("""
        inputs: x_1, i_1
        outputs: buf0
          x_1: input Float32 [4, 8] strides [8, 1]
          i_1: input Int64 [2] strides [1]
          buf0: output Float32 [2, 8] strides [8, 1]
        buf0 = pointwise [2, 8] {
          %0 = load i_1[i0] : Int64
          %1 = const 0 : Int64
          %2 = Lt %0, %1 : Bool
          %3 = const 4 : Int64
          %4 = Add %0, %3 : Int64
          %5 = Where %2, %4, %0 : Int64
          %6 = load x_1[i1 + (8*ind0)] with ind0=%5 < 4 : Float32
          store %6
        }
        """)


# ---- views fold into indexing ----------------------------------------------------------------

def test_view_of_contiguous_simplifies_to_flat_index():
    text = ir_of(lambda x: x.view(2, 16) + 1, X)
    assert "load x_1[i1 + (16*i0)]" in text
    assert "//" not in text and "%" not in text.replace("%0", "").replace("%1", "").replace("%2", "")


def test_permute_and_reshape_fold_into_one_load():
    text = ir_of(lambda x: x.t().reshape(-1)[2:5] * 3, X)
    assert text.count("load x_1") == 1
    assert "(8*((i0 + 2) % 4)) + ((i0 + 2) // 4)" in text


VIEW_INDEX = {
    "split_and_merge_back": (lambda x: x.view(2, 2, 8).view(32) + 1, "x_1[i0]"),
    "flatten_unflatten": (lambda x: x.view(32).view(8, 4) * 2, "x_1[i1 + (4*i0)]"),
    "transpose_inside_a_group": (lambda x: x.view(2, 2, 2, 4).permute(0, 1, 3, 2).reshape(4, 8) + 1,
                                 "x_1[(4*(i1 % 2)) + (8*i0) + (i1 // 2)]"),
    "slice_of_reshape": (lambda x: x.reshape(2, 16)[:, 3:7] * 1, "x_1[i1 + (16*i0) + 3]"),
    "expand_then_merge": (lambda x: x.unsqueeze(1).expand(4, 3, 8).reshape(12, 8) * 1, "x_1[i1 + (8*(i0 // 3))]"),
    "transpose_then_flatten": (lambda x: x.t().reshape(32) + 1, "x_1[(8*(i0 % 4)) + (i0 // 4)]"),
    "reduce_a_split_dim": (lambda x: x.view(4, 2, 4).sum(1), "x_1[i1 + (4*r0) + (8*i0)]"),
}


@pytest.mark.parametrize("name", sorted(VIEW_INDEX))
def test_view_indexing_simplifies(name):
    fn, load = VIEW_INDEX[name]
    loads = [l.split("= load ")[1].split(" :")[0] for l in ir_of(fn, X).splitlines() if "= load " in l]
    assert loads == [load]


def test_returned_views_alias_their_base_with_own_layout():
    text = ir_of(lambda x: (x.t(), x[1], x[:, 2:4]), X)
    assert "outputs: buf0, buf1, buf2" in text
    assert "buf0: output Float32 [8, 4] strides [1, 8] reuses x_1" in text
    assert "buf1: output Float32 [8] strides [1] offset 8 reuses x_1" in text
    assert "buf2: output Float32 [4, 2] strides [8, 1] offset 2 reuses x_1" in text
    assert "pointwise" not in text


def test_returned_input_is_the_input_buffer():
    assert ir_of(lambda x, y: (x, y + 1), X, X.clone()).splitlines()[1] == "outputs: x_1, buf0"


def test_expand_broadcasts_with_zero_index():
    text = ir_of(lambda x, b: x + b, X, torch.randn(8))
    assert "load b_1[i1]" in text


def test_output_keeps_eager_strides_for_dense_permuted_results():
    text = ir_of(lambda x: x.t() * 2, X)
    assert "buf0: output Float32 [8, 4] strides [1, 8]" in text


# ---- realization heuristics ------------------------------------------------------------------

def test_cheap_value_used_twice_is_inlined():
    text = ir_of(lambda x: (x + 1) * (x + 1).sin(), X)
    assert text.count("pointwise") == 1


def test_expensive_value_used_twice_is_realized():
    def f(x):
        y = x
        for _ in range(8):
            y = (y.sin() * 1.5 + 0.25).exp()
        return y + 1, y * 2
    text = ir_of(f, X)
    assert text.count("pointwise") == 3  # y once, then the two consumers


# ---- dtypes ----------------------------------------------------------------------------------

def test_bfloat16_computes_in_float32_and_rounds_on_store():
    text = ir_of(lambda x: x.sin() * 2, X.to(torch.bfloat16))
    assert "load x_1[i1 + (8*i0)] : BFloat16" in text
    assert "Cast %0 : Float32" in text and "Sin %1 : Float32" in text
    assert text.rstrip().endswith("Cast %4 : BFloat16\n  store %5\n}")


def test_explicit_cast_to_half_rounds():
    text = ir_of(lambda x: x.to(torch.float16).to(torch.float32), X)
    assert "Cast %0 : Float16" in text and "Cast %1 : Float32" in text


def test_integer_division_and_true_division():
    a = torch.randint(1, 9, (4,))
    assert "FloorDiv %0, %1 : Int64" in ir_of(lambda a, b: a // b, a, a.clone())
    text = ir_of(lambda a, b: a / b, a, a.clone())
    assert "Cast %0 : Float32" in text and "Div" in text and "output Float32" in text


def test_type_promotion_int_tensor_with_float_scalar():
    text = ir_of(lambda a: a + 2.5, torch.randint(0, 5, (4,), dtype=torch.int32))
    assert "buf0: output Float32" in text and "const 2.5 : Float32" in text


def test_comparison_computes_in_common_dtype_and_returns_bool():
    text = ir_of(lambda a, b: a < b, torch.randint(0, 5, (4,)), torch.randn(4))
    assert "Lt %1, %2 : Bool" in text and "output Bool" in text


def test_bool_add_is_logical_or():
    m = torch.rand(4) > 0.5
    assert "LogicalOr" in ir_of(lambda a, b: a + b, m, m)


def test_sum_of_int32_accumulates_in_int64():
    text = ir_of(lambda a: a.sum(), torch.randint(0, 5, (4, 3), dtype=torch.int32))
    assert "reduce Sum [] over [4, 3]" in text and "Cast %0 : Int64" in text


def test_mean_of_bfloat16_sums_in_float32():
    text = ir_of(lambda x: x.mean(1), X.to(torch.bfloat16))
    assert "buf0: buffer Float32 [4]" in text and "output BFloat16" in text


# ---- what is lowered and what is extern ------------------------------------------------------

M = torch.randn(4, 8)
I = torch.tensor([[0, 1], [3, 2]])
LOWERED = {
    "add_alpha": lambda x: torch.add(x, x, alpha=2),
    "rsub": lambda x: 1 - x,
    "div_floor": lambda x: torch.div(x, 3, rounding_mode="floor"),
    "div_trunc": lambda x: torch.div(x, 3, rounding_mode="trunc"),
    "pow": lambda x: x.abs() ** 1.7,
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "clamp_tensor": lambda x: x.clamp(min=x[0]),
    "where_scalar": lambda x: torch.where(x > 0, x, 0.0),
    "masked_fill": lambda x: x.masked_fill(x > 0, -1.0),
    "sigmoid_tanh_erf": lambda x: x.sigmoid() + x.tanh() + torch.erf(x),
    "gelu": lambda x: F.gelu(x),
    "silu": lambda x: F.silu(x),
    "hardtanh": lambda x: F.hardtanh(x),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "isnan_logical": lambda x: torch.logical_and(x.isnan(), x > 0),
    "to_int": lambda x: x.to(torch.int64) + 1,
    "sum_keepdim": lambda x: x.sum(1, keepdim=True),
    "mean_all": lambda x: x.mean(),
    "amax_amin": lambda x: x.amax(0) + x.amin(0),
    "argmax_argmin": lambda x: x.argmax(1) + x.argmin(),
    "max_dim": lambda x: x.max(1),
    "var_std": lambda x: x.var(1, correction=0) + x.std(1),
    "prod": lambda x: x.prod(1),
    "any_all": lambda x: (x > 0).any(1) & (x > 0).all(1),
    "logsumexp": lambda x: torch.logsumexp(x, 1),
    "softmax": lambda x: F.softmax(x, 0),
    "log_softmax": lambda x: F.log_softmax(x, 1),
    "layer_norm": lambda x: F.layer_norm(x, (8,)),
    "group_norm": lambda x: F.group_norm(x.view(2, 4, 4), 2),
    "batch_norm": lambda x: F.batch_norm(x, torch.zeros(8), torch.ones(8), torch.ones(8), torch.zeros(8)),
    "views": lambda x: x.view(2, 2, 8).permute(2, 0, 1).transpose(0, 2).unsqueeze(0).squeeze(0).expand(3, 2, 2, 8) + 0,
    "slice_select": lambda x: x[1:3, ::2].select(1, 1) * 2,
    "as_strided": lambda x: torch.as_strided(x, (3, 3), (2, 1), 1) + 0,
    "split_unbind": lambda x: [t * 1 for t in x.split(3, 1)] + [t + 0 for t in x.unbind(0)],
    "cat": lambda x: torch.cat([x, x * 2, x[:, :1]], 1),
    "constant_pad": lambda x: F.pad(x, (1, 2, 0, 1), value=3.0),
    "gather": lambda x: torch.gather(x, 1, torch.tensor([[0, 7], [1, 1], [2, 0], [3, 3]])),
    "index_select": lambda x: x.index_select(1, torch.tensor([7, 0])),
    "embedding": lambda x: F.embedding(torch.tensor([[1, 3], [0, 0]]), x),
    "index_two": lambda x: x[torch.tensor([0, 3]), torch.tensor([1, 2])],
    "index_none_first": lambda x: x[:, torch.tensor([0, 3])],
    "arange_full": lambda x: x + torch.arange(8) + torch.full((4, 8), 2.0) + torch.ones(8) + torch.zeros(4, 1),
    "scalar_tensor": lambda x: torch.where(x > 0, torch.tensor(1.0), x),
    "clone_copy": lambda x: x.clone() + x.t().contiguous().t(),
    "flip": lambda x: x.flip(0) + 1,
    "slice_scatter": lambda x: torch.slice_scatter(x, torch.zeros(4, 2), 1, 2, 6, 2),
    "select_scatter": lambda x: torch.select_scatter(x, torch.zeros(8), 0, 1),
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_required_op_lowers_without_extern(name):
    with torch.no_grad():
        text = ir_of(LOWERED[name], M)
    assert "extern" not in text, text


EXTERNS = {
    "mm": (lambda x: x @ x.t(), "aten::mm.default"),
    "bmm": (lambda x: torch.bmm(x.view(2, 2, 8), x.view(2, 8, 2)), "aten::bmm.default"),
    "conv": (lambda x: F.conv1d(x.view(1, 4, 8), torch.ones(2, 4, 3)), "aten::convolution.default"),
    "cumsum": (lambda x: x.cumsum(1), "aten::cumsum.default"),
    "sort": (lambda x: x.sort(1).values + 1, "aten::sort.default"),
    "topk": (lambda x: x.topk(2).indices, "aten::topk.default"),
}


@pytest.mark.parametrize("name", sorted(EXTERNS))
def test_unlowered_ops_become_extern_calls(name):
    fn, op = EXTERNS[name]
    text = ir_of(fn, M)
    assert f"extern {op}(" in text


def test_fused_attention_stays_one_extern():
    q = torch.randn(2, 2, 4, 8)
    text = ir_of(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, q.clone(), q.clone())
    assert text.count(" = extern ") == 1 and "scaled_dot_product" in text
    assert "pointwise" not in text and "reduce" not in text


def test_switch_off_indirect_loads_makes_gathers_extern():
    gm = aten_graph(lambda x, i: (x[i], x.index_select(1, i), torch.gather(x, 1, i.expand(4, 2)), F.embedding(i, x)),
                    X, torch.tensor([0, 2]))
    text = lower(gm, {"indirect_loads": False})
    for op in ("index.Tensor", "index_select.default", "gather.default", "embedding.default"):
        assert f"extern aten::{op}(" in text
    assert " with ind0=" not in text
    assert " with ind0=" in lower(gm)


def test_extern_constants_are_encoded_as_text():
    text = ir_of(lambda x: x.cumsum(1, dtype=torch.float64), M)
    assert "extern aten::cumsum.default(x_1, 1, dtype=torch.float64)" in text


def test_extern_tuple_outputs_bind_one_buffer_each():
    text = ir_of(lambda x: x.sort(1)[1] + 1, M)
    line = next(l for l in text.splitlines() if "extern aten::sort" in l)
    assert line.startswith("buf0, buf1 = extern")
    assert "load buf1" in text


def test_constants_from_get_attr_become_constant_buffers():
    gm = aten_graph(lambda x: x + torch.tensor([1.0, 2.0]).expand(4, 2).sum(0), torch.randn(2))
    text = lower(gm)
    assert "constant Float32 [2] strides [1]" in text


# ---- input mutation --------------------------------------------------------------------------

def test_input_mutation_writes_the_input_last():
    def f(x):
        y = x * 2
        x.add_(1)
        return y
    text = ir_of(f, X)
    last_node = [l for l in text.splitlines() if l.endswith("{")][-1]
    assert last_node == "x_1 = pointwise [4, 8] {"
    # y was computed from the old x before the write
    assert text.index("buf0 = pointwise") < text.index("x_1 = pointwise")


def test_input_mutation_reading_other_points_goes_through_a_buffer():
    def f(x):
        x.copy_(x.flip(0))
        return x.sum()
    text = ir_of(f, X)
    store = text[text.index("x_1 = pointwise"):]
    assert "load x_1" not in store


# ---- errors ----------------------------------------------------------------------------------

def test_non_tensor_output_is_a_clear_error():
    gm = aten_graph(lambda x: x + 1, X)
    gm.graph.output_node().args = ((None,),)
    gm.recompile()
    with pytest.raises(RuntimeError, match="only returns tensors"):
        lower(gm)
