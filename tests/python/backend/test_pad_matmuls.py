"""Matmuls with sizes off cuBLAS's 16-byte alignment run on zero-padded operands (the pass is for
CUDA; here it is let onto the CPU, with its cost model told that padding always pays): results
equal eager's, returned tensors keep eager's strides, readers inside the graph read the slice."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounterWithBackend
from cdynamo.inductor import compile_fx, pad_matmuls

aten = torch.ops.aten


@pytest.fixture(autouse=True)
def padding_on_the_cpu(monkeypatch):
    monkeypatch.setattr(pad_matmuls, "_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(pad_matmuls, "_UNALIGNED_SLOWDOWN", 1e12)
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


def padded_graph(fn, *inputs):
    gm = compile_fx.aten_graph(torch.fx.symbolic_trace(fn), list(inputs))
    changed = pad_matmuls.pad_misaligned_matmuls(gm)
    return changed, gm, gm(*inputs)


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_lm_head_pads_the_weight_and_returns_eager_strides():
    x, w, b = torch.randn(64, 32), torch.randn(37, 32), torch.randn(37)
    fn = lambda x, w, b: torch.nn.functional.linear(x, w, b)  # noqa: E731
    changed, gm, out = padded_graph(fn, x, w, b)
    assert changed and aten.constant_pad_nd.default in targets(gm)
    (out,) = out if isinstance(out, (list, tuple)) else (out,)
    expected = fn(x, w, b)
    assert out.shape == expected.shape and out.stride() == expected.stride()
    torch.testing.assert_close(out, expected)
    mm = next(n for n in gm.graph.nodes if n.target in (aten.addmm.default, aten.mm.default))
    assert mm.meta["val"].shape[-1] == 40  # 37 columns padded to 16 bytes of float32
    assert mm.args[2].meta["val"].stride() == (1, 32)  # the weight padded as itself: still K-major


@pytest.mark.parametrize("fn, shapes", [
    (lambda a, b: (a @ b).softmax(-1), [(48, 30), (30, 37)]),       # K and N off, read inside the graph
    (lambda a, b: (a @ b).view(-1) * 2, [(48, 32), (32, 37)]),      # a view the slice cannot take
    (lambda a, b: (a @ b).view(6, 8, 37) + 1, [(48, 32), (32, 37)]),
    (lambda a, b: torch.bmm(a, b).relu(), [(3, 16, 30), (3, 30, 37)]),
    (lambda a, b: a @ b, [(48, 30), (30, 64)]),                       # K alone: no slice at all
    (lambda a, b: (a @ b.t(), a @ b.t() + 1), [(48, 32), (37, 32)]),
])
def test_compiled_results_and_strides_equal_eager(fn, shapes):
    inputs = [torch.randn(s) for s in shapes]
    changed, gm, _ = padded_graph(fn, *inputs)
    assert changed
    expected = fn(*inputs)
    got = cdynamo.optimize("inductor")(fn)(*inputs)
    for e, g in zip(*(r if isinstance(r, tuple) else (r,) for r in (expected, got))):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride()


def test_aligned_and_small_matmuls_are_left_alone(monkeypatch):
    changed, _, _ = padded_graph(lambda a, b: a @ b, torch.randn(16, 32), torch.randn(32, 64))
    assert not changed
    monkeypatch.setattr(pad_matmuls, "_UNALIGNED_SLOWDOWN", 1.5)  # the real cost model: copies cost more here
    changed, _, _ = padded_graph(lambda a, b: a @ b, torch.randn(16, 30), torch.randn(30, 37))
    assert not changed


@pytest.mark.parametrize("rows, padded", [(4096, (0, 3)), (8, None)])
def test_the_cost_model_pads_gpt2s_lm_head_but_not_one_token(monkeypatch, rows, padded):
    # Meta tensors: the sizes of GPT-2's LM head (768 -> 50257 words) with nothing computed.
    monkeypatch.setattr(pad_matmuls, "_DEVICES", ("meta",))
    monkeypatch.setattr(pad_matmuls, "_UNALIGNED_SLOWDOWN", 1.5)
    x, w = torch.empty(rows, 768, device="meta"), torch.empty(50257, 768, device="meta")
    gm = compile_fx.aten_graph(torch.fx.symbolic_trace(lambda x, w: x @ w.t()), [x, w])
    mm = next(n for n in gm.graph.nodes if n.target is aten.mm.default)
    assert pad_matmuls._plan(mm) == padded


@pytest.mark.parametrize("train", [False, True])
def test_symbolic_graphs_pad_their_static_widths(monkeypatch, train):
    # GPT-2's LM head at every sequence length: the rows are symbolic, K and N static, so the
    # padding serves every size of the one symbolic program.
    cdynamo.utils.counters.clear()
    padded = []
    original = pad_matmuls.pad_misaligned_matmuls
    monkeypatch.setattr(pad_matmuls, "pad_misaligned_matmuls", lambda gm: padded.append(original(gm)) or padded[-1])
    weight = torch.randn(37, 32, requires_grad=train)

    def fn(x):
        return torch.nn.functional.linear(x, weight).softmax(-1)

    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter)(fn)
    with cdynamo.config.patch(symbolic_training=True, graph_cache=False):  # every graph compiles here
        for rows in (5, 9, 12, 17):
            x = torch.randn(2, rows, 32, requires_grad=train)
            expected, got = fn(x), compiled(x)
            torch.testing.assert_close(got, expected)
            assert got.stride() == expected.stride()
            if train:
                (g_expected,) = torch.autograd.grad(expected.sum(), [weight])
                (g_got,) = torch.autograd.grad(got.sum(), [weight])
                torch.testing.assert_close(g_got, g_expected)
    assert counter.frame_count == 2  # static, then symbolic rows
    assert cdynamo.utils.counters["dynamic"]["symbolic programs"] == 1
    assert padded and all(padded)
