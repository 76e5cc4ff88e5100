# Stage tests of the inductor scheduler (csrc/backend/sched) through cdynamo._C._testing:
# kernel counts that prove fusion, dead-code elimination, in-place reuse and the memory plan.
# schedule() and schedule_summary() run the IR verifier after lowering and after scheduling.
import textwrap

import pytest
import torch
import torch.nn.functional as F

from cdynamo import _C
from helpers import aten_graph

T = _C._testing
X = torch.randn(4, 8)


def summary(fn, *inputs):
    return T.schedule_summary(aten_graph(fn, *inputs))


def program(fn, *inputs):
    return T.schedule(aten_graph(fn, *inputs))


def kernels_and_externs(fn, *inputs):
    s = summary(fn, *inputs)
    return s["kernels"], s["externs"]


# ---- fusion ----------------------------------------------------------------------------------

def test_pointwise_chain_is_one_kernel():
    assert kernels_and_externs(lambda x: (x.sin() + 1).relu() * 2, X) == (1, 0)


def test_layer_norm_is_one_kernel():
    w, b = torch.randn(8), torch.randn(8)
    s = summary(lambda x, w, b: F.layer_norm(x, (8,), w, b), X, w, b)
    assert (s["kernels"], s["reduction_kernels"], s["externs"]) == (1, 1, 0)


def test_layer_norm_over_last_dims_of_3d_is_one_kernel():
    x = torch.randn(2, 3, 8)
    assert kernels_and_externs(lambda x: F.layer_norm(x, (3, 8)), x) == (1, 0)


def test_softmax_is_one_kernel():
    # max, sum of exp and the normalising division share the row loop.
    assert kernels_and_externs(lambda x: F.softmax(x, -1), X) == (1, 0)
    assert kernels_and_externs(lambda x: F.log_softmax(x, -1), X) == (1, 0)


def test_softmax_over_a_leading_dim_is_one_kernel():
    # The reduction runs over dim 0; the epilogue's index order differs from the kernel's
    # (outer, reduction) order, so the epilogue is its own kernel.
    assert kernels_and_externs(lambda x: F.softmax(x, 0), X) == (2, 0)


def test_matmul_bias_relu_is_one_extern_and_one_kernel():
    w, b = torch.randn(3, 8), torch.randn(3)
    assert kernels_and_externs(lambda x, w, b: F.linear(x, w, b).relu(), X, w, b) == (1, 1)


def test_mlp_block():
    w1, w2 = torch.randn(16, 8), torch.randn(8, 16)
    fn = lambda x, w1, w2: F.layer_norm(F.linear(F.gelu(F.linear(x, w1)), w2) + x, (8,))
    assert kernels_and_externs(fn, X, w1, w2) == (2, 2)


def test_pointwise_producer_with_two_uses_fuses_into_reduction_kernel():
    def f(x):
        y = x
        for _ in range(8):
            y = (y.sin() * 1.5 + 0.25).exp()  # expensive: realized, not recomputed
        return y.sum(1), y.amax(1)
    p = program(f, X)
    s = summary(f, X)
    assert s["kernels"] == 1 and s["reduction_kernels"] == 1
    # the realized y is written and read at the same point: a kernel local
    assert "locals: buf0" in p


def test_reduction_to_scalar_then_broadcast_epilogue_is_one_kernel():
    assert kernels_and_externs(lambda x: x - x.mean(), X) == (1, 0)


def test_horizontal_fusion_of_independent_kernels():
    y = torch.randn(4, 8)
    s = summary(lambda x, y: (x.sum(1), y.sum(1), x * 2, y + 1), X, y)
    assert s["kernels"] == 1  # pointwise [4, 8] nodes join the [4] x [8] reduction kernel


def test_different_iteration_spaces_stay_apart():
    y = torch.randn(3)
    assert kernels_and_externs(lambda x, y: (x * 2, y * 2), X, y) == (2, 0)


def test_extern_between_kernels_orders_steps():
    p = program(lambda x: ((x + 1) @ (x + 1).t()).relu(), X)
    steps = [l for l in p.splitlines() if l.startswith("kernel") or " = extern " in l]
    assert len(steps) == 3
    assert steps[0].startswith("kernel0") and "extern aten::mm.default" in steps[1] and steps[2].startswith("kernel1")


def test_independent_node_moves_above_an_unrelated_extern():
    # x * 3 does not depend on the matmul: it joins the first kernel.
    s = summary(lambda x: ((x + 1) @ (x + 1).t(), x * 3), X)
    assert (s["kernels"], s["externs"]) == (1, 1)


def test_reading_a_neighbour_point_prevents_fusion():
    def f(x):
        y = (x.sin() * 2).exp()
        for _ in range(4):
            y = y.cos() * y.sin() + y.exp()
        return y + y.flip(1)
    p = program(f, X)
    # y is realized (expensive, used twice); its flipped read is not at the same point.
    assert summary(f, X)["kernels"] == 2, p


def test_input_mutation_kernel_is_last_writer():
    def f(x):
        y = x.sum(1)
        x.mul_(2)
        return y
    p = program(f, X)
    assert p.index("x_1 = pointwise") > p.index("reduce Sum")


def test_mutation_fuses_with_same_point_readers():
    def f(x):
        y = x * 2
        x.add_(1)
        return y
    assert kernels_and_externs(f, X) == (1, 0)


# ---- dead code -------------------------------------------------------------------------------

def test_dead_code_is_eliminated():
    def f(x):
        unused = x.cumsum(0)  # an extern nobody reads
        return x + 1
    gm = aten_graph(f, X)
    s = T.schedule_summary(gm)
    assert s["externs"] == 0 and s["kernels"] == 1
    assert "cumsum" not in T.schedule(gm)


def test_unused_extern_outputs_keep_the_call():
    s = summary(lambda x: x.sort(1).values * 2, X)
    assert s["externs"] == 1


# ---- reuse and memory plan -------------------------------------------------------------------

def test_inplace_reuse_of_a_dying_extern_output():
    p = program(lambda x, w: (x @ w).sin(), X, torch.randn(8, 8))
    assert "buf1: output Float32 [4, 8] strides [8, 1] reuses buf0" in p
    assert summary(lambda x, w: (x @ w).sin(), X, torch.randn(8, 8))["reused"] == 1


def test_no_reuse_when_the_donor_is_read_later():
    def fn(x, w):
        y = x @ w
        return y.sin(), y  # y is returned: its storage must survive
    assert summary(fn, X, torch.randn(8, 8))["reused"] == 0


def test_no_reuse_of_inputs():
    assert summary(lambda x: x.sin(), X)["reused"] == 0


def test_frees_after_last_use():
    def f(x, w):
        a = x @ w          # extern -> buf0
        b = a.relu() @ w   # kernel reads buf0, extern
        return b.sum()
    p = program(f, X, torch.randn(8, 8))
    lines = p.splitlines()
    frees = [l for l in lines if l.startswith("free ")]
    freed = {name for l in frees for name in l[len("free "):].split(", ")}
    assert freed, p
    # nothing returned, input or constant is ever freed
    assert "x_1" not in freed and "w_1" not in freed
    outputs = lines[1][len("outputs: "):].split(", ")
    assert not freed & set(outputs)


def test_chain_of_externs_reuses_and_frees():
    w = torch.randn(8, 8)
    def f(x, w):
        for _ in range(4):
            x = (x @ w).tanh()
        return x
    s = summary(f, X, w)
    assert s["externs"] == 4 and s["kernels"] == 4
    assert s["reused"] == 4  # each tanh writes over the matmul result it reads
    assert s["frees"] >= 3


def test_golden_program_layer_norm():
    text = program(lambda x: F.layer_norm(x, (8,)), X)
    expected = textwrap.dedent("""\
        inputs: x_1
        outputs: buf2
          x_1: input Float32 [4, 8] strides [8, 1]
          buf0: buffer Float32 [4] strides [1]
          buf1: buffer Float32 [4] strides [1]
          buf2: output Float32 [4, 8] strides [8, 1]
        kernel0 [4] reduce [8] (inputs: x_1; outputs: buf2; locals: buf0, buf1)
        """)
    assert text.startswith(expected)
    assert text.rstrip().endswith("free buf0, buf1")


@pytest.mark.parametrize("fn", [
    lambda x: torch.cat([x.sum(1, keepdim=True), x], 1).softmax(1),
    lambda x: F.pad(x, (1, 1)).cumsum(1)[:, 1:-1] * x,
    lambda x: x.view(2, 16).t().contiguous().view(4, 8) + x,
    lambda x: (x[torch.tensor([1, 0, 3])] @ x.t()).var(0),
    lambda x: torch.stack([x, x.exp()]).amax(0).argmax(1),
], ids=["cat_softmax", "pad_extern_slice", "transpose_contiguous", "index_mm_var", "stack_amax_argmax"])
def test_mixed_graphs_schedule_and_verify(fn):
    s = summary(fn, X)
    assert s["kernels"] >= 1


# ---- switches for code generators that lag behind ---------------------------------------------

def test_switch_off_full_pointwise_in_reductions():
    gm = aten_graph(lambda x: F.layer_norm(x, (8,)), X)
    s = T.schedule_summary(gm, {"full_pointwise_in_reductions": False})
    assert (s["kernels"], s["reduction_kernels"]) == (2, 1)
    for line in T.schedule(gm, {"full_pointwise_in_reductions": False}).splitlines():
        if line.startswith("kernel") and "reduce" in line:
            assert "pointwise [4, 8]" not in line


def test_switch_off_reuse():
    gm = aten_graph(lambda x, w: (x @ w).sin(), X, torch.randn(8, 8))
    assert T.schedule_summary(gm, {"reuse_buffers": False})["reused"] == 0
    assert "reuses" not in T.schedule(gm, {"reuse_buffers": False})


def test_switched_off_programs_still_compute_the_same():
    off = {"indirect_loads": False, "full_pointwise_in_reductions": False, "reuse_buffers": False}
    fn = lambda x, w, i: (F.layer_norm(x @ w, (8,)).softmax(-1)[i], F.embedding(i, x))
    x, w, i = torch.randn(4, 8), torch.randn(8, 8), torch.tensor([3, 0, 1])
    gm = aten_graph(fn, x, w, i)
    outputs, _ = T.run_ir(gm, [x, w, i], True, off)
    for got, want in zip(outputs, fn(x, w, i)):
        torch.testing.assert_close(got, want)
