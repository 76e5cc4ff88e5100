"""With-blocks on torch.inference_mode(), torch.device(...) and TorchFunctionModes: entered and left
by graph nodes, so that what the block makes is made as eager makes it (inference tensors, the
block's device, the mode's __torch_function__ at every torch call)."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
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


class _AddOneToAdds(torch.overrides.TorchFunctionMode):
    """Changes results: torch.add inside the block gives one more."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1 if func is torch.add else out


class _CountingMode(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_torch_function_mode_made_in_the_function_acts_on_the_block_only():
    def f(x, y):
        with _AddOneToAdds():
            inside = torch.add(x, y)
            product = x * y  # not torch.add: unchanged
        return inside, product, torch.add(x, y)

    x, y = torch.randn(3), torch.randn(3)
    got, want = one_graph(f, x, y), f(x, y)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.equal(got[0], x + y + 1) and torch.equal(got[2], x + y)
    compiled = cdynamo.optimize("eager", nopython=True)(f)
    assert torch.equal(compiled(x, y)[0], x + y + 1) and torch.equal(compiled(x, y)[0], x + y + 1)  # each call


def test_a_program_owned_mode_is_guarded_by_identity():
    modes = {"mode": _AddOneToAdds()}

    def f(x):
        with modes["mode"]:
            return torch.add(x, x)

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(f)
    x = torch.randn(3)
    assert torch.equal(compiled(x), x + x + 1) and torch.equal(compiled(x), x + x + 1)
    assert counter.frame_count == 1
    modes["mode"] = _AddOneToAdds()
    assert torch.equal(compiled(x), x + x + 1) and counter.frame_count == 2


def test_a_mode_that_keeps_state_breaks_the_graph_with_the_reason():
    def f(x):
        with _CountingMode():
            y = torch.sin(x)
        return y * 2

    x = torch.randn(3)
    out = explain(f, x)
    assert torch.equal(out.out, f(x))
    assert out.graph_break_count >= 1
    assert any("writes attributes" in str(reason) for reason in out.break_reasons)


class _ScaledAdds(torch.overrides.TorchFunctionMode):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out * self.scale if func is torch.add else out


def test_a_mode_made_from_constants_is_entered_and_one_made_from_tensors_breaks():
    def constant_scale(x):
        with _ScaledAdds(3):
            return torch.add(x, x)

    def tensor_scale(x):
        with _ScaledAdds(x.sum()):  # the mode holds a tensor the graph computes
            return torch.add(x, x)

    x = torch.randn(3)
    assert torch.equal(one_graph(constant_scale, x), constant_scale(x))
    out = explain(tensor_scale, x)
    assert torch.allclose(out.out, tensor_scale(x)) and out.graph_break_count >= 1


@torch.inference_mode()
def _doubled_without_autograd(t):
    return t * 2, torch.is_inference_mode_enabled()


@torch.autocast("cpu", dtype=torch.bfloat16)
def _autocast_product(t):
    return t @ t.T


def test_functions_decorated_with_inference_mode_and_autocast_are_traced():
    # torch's decorator wrappers: the block entered around the call, as in eager, at module level
    # and applied inside the compiled function.
    def fn(x):
        @torch.autocast("cpu", dtype=torch.bfloat16)
        def inner(t):
            return torch.mm(t, t.T)

        doubled, inside = _doubled_without_autograd(x)
        return doubled.sum() + x, inside, _autocast_product(x).dtype, inner(x)

    x = torch.randn(4, 3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1


def test_sdpa_kernel_blocks_are_entered_by_the_graph():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    def fn(q):
        with sdpa_kernel([SDPBackend.MATH]):
            inside = torch.backends.cuda.math_sdp_enabled()
            out = scaled_dot_product_attention(q, q, q)
        return out * 2, inside

    q = torch.randn(1, 2, 4, 8)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(q), fn(q))
    assert counter.frame_count == 1 and torch.backends.cuda.flash_sdp_enabled()  # restored after the block
