"""Torch's global state that compiled code changes (grad mode, autocast): what the graph computes
under it and what it leaves after a graph break or a return, on every backend, as eager does."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

BACKENDS = ["eager", "inductor"]


def no_grad_block_cut_by_a_break(x):
    with torch.no_grad():
        y = x * 2
        print("inside")
        z = y * x
    return z + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_no_grad_block_cut_by_a_break_keeps_no_grad_after_the_graph(backend, capsys):
    x = torch.randn(3, requires_grad=True)
    got = cdynamo.compile(no_grad_block_cut_by_a_break, backend=backend)(x)
    want = no_grad_block_cut_by_a_break(x)
    assert same(got, want) and got.requires_grad == want.requires_grad
    (got_grad,) = torch.autograd.grad(got.sum(), x)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    assert same(got_grad, want_grad)
    assert torch.is_grad_enabled()
    assert sum(counters["graph_break"].values()) == 1


def switches_grad_off_and_on(x):
    torch._C._set_grad_enabled(False)
    y = x * 2
    torch._C._set_grad_enabled(True)
    return y, x * 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_grad_enabled_called_directly_is_a_node_of_the_graph(backend):
    x = torch.randn(3, requires_grad=True)
    counter = CompileCounter()
    compiled = cdynamo.compile(switches_grad_off_and_on, backend=backend if backend != "eager" else counter)
    got, want = compiled(x), switches_grad_off_and_on(x)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [False, True]
    assert torch.is_grad_enabled()


def leaves_grad_off(x):
    torch._C._set_grad_enabled(False)
    return x * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_mode_a_function_leaves_off_stays_off_after_it(backend):
    x = torch.randn(3, requires_grad=True)
    try:
        got = cdynamo.compile(leaves_grad_off, backend=backend)(x)
        assert not torch.is_grad_enabled() and not got.requires_grad
    finally:
        torch._C._set_grad_enabled(True)
