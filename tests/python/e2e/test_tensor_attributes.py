"""Python attributes set on tensors inside traced code (t.tag = ...): read back in the trace, and
set on the real tensors (the graph's outputs, or the inputs) after the graph, as eager leaves them."""
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from .helpers import explain, one_graph


def test_attribute_on_a_computed_tensor_and_on_an_input():
    def f(x):
        y = x * 2
        y.tag = "hello"
        x.seen = 1
        x.seen = x.seen + 1
        return y, y.tag, x.seen

    x = torch.randn(3)
    y, tag, seen = one_graph(f, x)
    assert torch.equal(y, x * 2) and tag == "hello" and seen == 2
    assert y.tag == "hello" and x.seen == 2


def test_attribute_set_before_a_graph_break_survives_it():
    def f(x):
        y = x + 1
        y.meta = {"k": 3}
        cdynamo.graph_break()
        return y * y.meta["k"]

    x = torch.randn(3)
    out = explain(f, x)
    assert out.graph_break_count == 1 and torch.equal(out.out, (x + 1) * 3)


def test_input_tensor_attribute_is_read_and_guarded():
    def f(x):
        return x * x.scale

    x = torch.randn(3)
    x.scale = 2
    compiled = cdynamo.optimize("eager", nopython=True)(f)
    assert torch.equal(compiled(x), x * 2)
    x.scale = 5
    assert torch.equal(compiled(x), x * 5)


def test_grad_fn_of_a_leaf_is_none():
    # A leaf input (guarded to stay one) and a tensor that does not require grad have no grad_fn.
    def fn(x, y):
        return x * 2 if x.grad_fn is None else x, y.grad_fn is None

    x, y = torch.randn(3, requires_grad=True), torch.randn(3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x, y), fn(x, y))
    assert counter.frame_count == 1


def test_grad_fn_of_a_computed_tensor_is_told_from_none_only():
    # A tensor computed from one that requires grad has a grad_fn (not None), one made a leaf by
    # requires_grad_() has none; the node itself (its name, or returning it) is refused.
    import pytest

    def fn(x):
        t = x * 2
        w = torch.ones(3).requires_grad_()
        return t.grad_fn is not None, t.grad_fn is None, w.grad_fn is None, bool(t.grad_fn), t

    x = torch.randn(3, requires_grad=True)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)) and counter.frame_count == 1
    with pytest.raises(cdynamo.exc.Unsupported, match="grad_fn"):
        cdynamo.compile(lambda x: (x * 2).grad_fn.name(), backend="eager", fullgraph=True)(x)
    with pytest.raises(cdynamo.exc.Unsupported, match="grad_fn"):
        cdynamo.compile(lambda x: (x * 2).grad_fn, backend="eager", fullgraph=True)(x)


def test_base_of_a_view_of_an_input():
    # v = x[1:]: v._base is x when x is no view itself (guarded: a view input recompiles).
    def fn(x):
        v = x[1:]
        return v._base is x, v._base is None, v

    counter = CompileCounter()
    compiled = cdynamo.compile(fn, backend=counter)
    x = torch.randn(4)
    assert same(compiled(x), fn(x)) and counter.frame_count == 1
    view = torch.randn(5)[1:]
    assert same(compiled(view), fn(view)) and counter.frame_count == 2
