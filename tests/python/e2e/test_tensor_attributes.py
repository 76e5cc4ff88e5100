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
