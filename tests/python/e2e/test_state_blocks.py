"""With-blocks on torch.inference_mode() and torch.device(...): entered and left by graph nodes,
so that what the block makes is made as eager makes it (inference tensors, the block's device)."""
import pytest
import torch

import cdynamo
from .helpers import explain, one_graph


def test_inference_mode_block_makes_inference_tensors():
    def f(x):
        with torch.inference_mode():
            y = x * 2
            inside = torch.is_inference_mode_enabled()
        z = x * 3
        return y, z, y.requires_grad, y.is_inference(), z.requires_grad, inside, torch.is_inference_mode_enabled()

    x = torch.randn(3, requires_grad=True)
    got, want = one_graph(f, x), f(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1].detach(), want[1].detach())
    assert got[2:] == want[2:] == (False, True, True, True, False)
    assert got[0].is_inference() and not got[1].is_inference() and got[1].requires_grad


def test_inference_mode_false_and_nested_in_no_grad():
    def f(x):
        with torch.no_grad():
            with torch.inference_mode(False):
                y = x + 1
        return y, y.is_inference(), y.requires_grad

    x = torch.randn(3, requires_grad=True)
    got, want = one_graph(f, x), f(x)
    assert torch.equal(got[0].detach(), want[0].detach()) and got[1:] == want[1:] == (False, True)  # mode=False enables grad


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_inference_mode_graph_runs_as_captured_in_aten_backends(backend):
    def f(x):
        with torch.inference_mode():
            y = x.sin()
        return y, y.is_inference()

    x = torch.randn(3)
    got = cdynamo.optimize(backend, nopython=True)(f)(x)
    assert torch.equal(got[0], x.sin()) and got[0].is_inference() and got[1] is True


def test_a_graph_break_inside_an_inference_mode_block():
    def f(x):
        with torch.inference_mode():
            y = x * 2
            cdynamo.graph_break()
            z = y + 1
        return z, z.is_inference(), torch.is_inference_mode_enabled()

    x = torch.randn(3)
    out = explain(f, x)
    assert out.graph_break_count == 1
    assert torch.equal(out.out[0], x * 2 + 1) and out.out[1:] == (True, False)
    assert not torch.is_inference_mode_enabled()


def test_torch_device_block_sets_the_factories_device():
    def f(x):
        with torch.device("meta") as d:
            t = torch.ones(2)
            inner = torch.empty(3).device
        return x.sum() + 1, t.device, inner, d, torch.ones(1).device

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:]
    assert got[1].type == "meta" and got[4].type == "cpu"
