"""cdynamo.allow_in_graph / disallow_in_graph, as torch._dynamo's: an allowed function is one graph
node (run on fake tensors while tracing, not traced through); a disallowed one breaks the graph."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

calls = []


def opaque_helper(x):
    calls.append(len(calls))  # Python side effects a trace could not keep
    return x.sin() * 2


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    yield
    from cdynamo import _call_policy

    _call_policy.ALLOWED_IN_GRAPH.clear()
    _call_policy.DISALLOWED_IN_GRAPH.clear()
    cdynamo.reset()


def test_an_allowed_function_is_one_node_of_one_graph():
    assert cdynamo.allow_in_graph(opaque_helper) is opaque_helper
    fn = lambda x: opaque_helper(x + 1) - 1  # noqa: E731
    counter = CompileCounter()
    x = torch.randn(5)
    for backend in (counter, "inductor"):
        assert same(cdynamo.optimize(backend)(fn)(x), fn(x))
    assert counter.frame_count == 1 and counter.op_count == 3 and not counters["graph_break"]
    gm_targets = []

    def keep(gm, example_inputs):
        gm_targets.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    cdynamo.reset()
    cdynamo.optimize(keep)(fn)(x)
    assert opaque_helper in gm_targets


def test_a_disallowed_torch_function_breaks_the_graph_and_still_runs():
    cdynamo.disallow_in_graph(torch.sin)
    fn = lambda x: torch.sin(x + 1) * 2  # noqa: E731
    counter = CompileCounter()
    x = torch.randn(5)
    assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert counter.frame_count == 2
    assert any("torch.sin is marked with cdynamo.disallow_in_graph" in reason for reason in counters["graph_break"])


def test_lists_and_bad_arguments():
    f, g = (lambda x: x + 1), (lambda x: x * 2)
    assert cdynamo.allow_in_graph([f, g]) == [f, g]
    with pytest.raises(TypeError, match="takes a function"):
        cdynamo.allow_in_graph(3)
    cdynamo.disallow_in_graph(f)  # the later mark wins
    from cdynamo import _call_policy

    assert id(f) not in _call_policy.ALLOWED_IN_GRAPH and id(g) in _call_policy.ALLOWED_IN_GRAPH
