"""Graph breaks inside inlined functions (config.nested_graph_breaks): the graph ends inside the
function, the rest of it and of its callers continue in resume functions, and results, mutated
objects and graph counts are what eager and torch._dynamo's nested graph breaks give."""
import pytest
import torch
from torch import nn

import cdynamo
from cdynamo import config
from cdynamo.testing import CompileCounter
from cdynamo.utils import counters

printed = []


def log(*args):
    """A graph break, then a side effect the resume function replays."""
    cdynamo.graph_break()
    printed.append(args)


def breaks_inside(x):
    x = x + 2
    print("inside")  # made after the graph before the break
    cdynamo.graph_break()
    return x + 1


def calls_a_breaking_function(x):
    y = x * 2
    y = breaks_inside(y)
    return y - 1


def compile_counted(fn, **kwargs):
    counter = CompileCounter()
    return cdynamo.compile(fn, backend=counter, **kwargs), counter


def assert_two_graphs(fn, x):
    """One break, resumed inside the function: a graph before it and one after, equal to eager."""
    compiled, counter = compile_counted(fn)
    torch.testing.assert_close(compiled(x), fn(x))
    assert counter.frame_count == 2


def break_count():
    return sum(counters["graph_break"].values())


def test_a_break_one_call_deep_leaves_two_graphs(capsys):
    x = torch.randn(4)
    compiled, counter = compile_counted(calls_a_breaking_function)
    torch.testing.assert_close(compiled(x), calls_a_breaking_function(x))
    # [x * 2, + 2] | print | [+ 1, - 1]: the callee's rest and the caller's rest in one graph
    assert (counter.frame_count, counter.op_count) == (2, 4)
    assert break_count() == 1
    assert capsys.readouterr().out.count("inside") == 2
    counter.clear()
    torch.testing.assert_close(compiled(x), calls_a_breaking_function(x))
    assert counter.frame_count == 0  # cached: no recompile


def test_without_nested_breaks_the_callee_is_a_frame_of_its_own():
    x = torch.randn(4)
    with config.patch(nested_graph_breaks=False):
        compiled, counter = compile_counted(calls_a_breaking_function)
        torch.testing.assert_close(compiled(x), calls_a_breaking_function(x))
    # [x * 2] | breaks_inside: [+ 2] | print | [+ 1] | the caller's rest: [- 1]
    assert counter.frame_count == 4


def level3(x, scale):
    h = x.sin() * scale
    log("level3", h.shape)
    return h.cos()


def level2(x, offset=1.0):
    a = x + offset
    b = level3(a, 2.0)
    return a * b


def level1(x):
    total = x.relu()
    for i in range(2):
        total = total + level2(x, offset=float(i))
    return total


def test_a_break_three_calls_deep_keeps_every_frame_state():
    printed.clear()
    x = torch.randn(3, 5)
    expected = level1(x)
    compiled, counter = compile_counted(level1)
    printed.clear()
    torch.testing.assert_close(compiled(x), expected)
    assert len(printed) == 2 and printed[0] == ("level3", torch.Size([3, 5]))
    assert break_count() >= 1
    # Each break ends one graph: three graphs for the two breaks of the loop.
    assert counter.frame_count == 3
    torch.testing.assert_close(compiled(torch.ones(3, 5)), level1(torch.ones(3, 5)))


def consumer(a, b, c):
    return a * b + c


def breaking_identity(x):
    log("identity")
    return x


def call_argument_breaks(x):
    # The stack under the breaking call holds NULL, consumer, x + 1: carried into the resume.
    return consumer(x + 1, breaking_identity(x * 3), x)


def test_a_break_in_an_argument_carries_the_callers_pending_call():
    assert_two_graphs(call_argument_breaks, torch.randn(6))


def torch_call_argument_breaks(x):
    return torch.add(x * 2, breaking_identity(x))


def test_a_break_in_an_argument_of_a_torch_call_is_a_partial_graph():
    x = torch.randn(6)
    with config.patch(nested_graph_breaks=False):
        compiled, counter = compile_counted(torch_call_argument_breaks)
        torch.testing.assert_close(compiled(x), torch_call_argument_breaks(x))
        # NULL under the call at the root: a partial graph there too, not a frame left eager
        assert counters["stats"]["frames_fallback"] == 0
    assert counter.frame_count >= 1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        h = self.linear(x)
        self.calls += 1
        if h.sum() > 0:  # a data-dependent branch: the break is the jump itself
            h = h * 2
        else:
            h = h - 1
        return torch.relu(h)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x) + x
        return self.head(x)


def test_a_data_dependent_branch_inside_a_submodule():
    torch.manual_seed(0)
    model = Model()
    reference = Model()
    reference.load_state_dict(model.state_dict())
    compiled, counter = compile_counted(model)
    for sign in (1.0, -1.0, 1.0):
        x = sign * torch.randn(4, 8).abs()
        torch.testing.assert_close(compiled(x), reference(x))
    # Mutated module state: as many calls as eager made.
    assert [b.calls for b in model.blocks] == [b.calls for b in reference.blocks]
    assert counter.frame_count >= 2


class Base(nn.Module):
    def forward(self, x):
        return x * 3


class Child(Base):
    def forward(self, x):
        y = super().forward(x)
        log("child")
        return super().forward(y) + 1


def test_zero_argument_super_after_a_nested_break():
    child = Child()

    def fn(x):
        return child(x) * 2

    x = torch.randn(5)
    compiled, counter = compile_counted(fn)
    torch.testing.assert_close(compiled(x), fn(x))
    assert counter.frame_count == 2


def make_closure(scale):
    def scaled(x):
        y = x * scale
        log("closure")
        return y + scale

    return scaled


closure = make_closure(4.0)


def calls_closure(x):
    return closure(x - 1) * 2


def test_a_break_inside_a_closure():
    assert_two_graphs(calls_closure, torch.randn(5))


def raises_inside(x):
    if x.shape[0] > 100:
        return x
    log("before raise")
    raise ValueError("bad input")


def catches_outer(x):
    try:
        return raises_inside(x)
    except ValueError:
        return x - 1


def test_a_break_under_a_try_block_of_a_caller_keeps_its_handler():
    x = torch.randn(5)
    compiled, _ = compile_counted(catches_outer)
    torch.testing.assert_close(compiled(x), catches_outer(x))


mutated = {"count": 0}


def mutates_then_breaks(x, items):
    items.append(x * 2)
    mutated["count"] += 1
    log("mutates")
    items.append(x * 3)
    return len(items)


def caller_of_mutation(x, items):
    n = mutates_then_breaks(x + 1, items)
    return x * n


def test_mutations_before_a_nested_break_are_replayed_once():
    x = torch.randn(3)
    eager_items, compiled_items = [], []
    mutated["count"] = 0
    expected = caller_of_mutation(x, eager_items)
    eager_count = mutated["count"]
    mutated["count"] = 0
    compiled, _ = compile_counted(caller_of_mutation)
    torch.testing.assert_close(compiled(x, compiled_items), expected)
    assert mutated["count"] == eager_count
    assert len(compiled_items) == len(eager_items)
    for got, want in zip(compiled_items, eager_items):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("nested", [True, False])
def test_fullgraph_still_refuses_a_nested_break(nested):
    with config.patch(nested_graph_breaks=nested):
        compiled = cdynamo.compile(calls_a_breaking_function, backend="eager", fullgraph=True)
        with pytest.raises(Exception, match="graph_break"):
            compiled(torch.randn(3))


def _positive(t):
    if t.sum() > 0:  # a data-dependent branch: the graph breaks here
        return 1
    return 0


@pytest.mark.parametrize("iterations", [3, 40, 1500])
def test_a_loop_that_breaks_in_every_iteration_compiles_a_bounded_number_of_frames(iterations):
    # Each iteration's break continues in a resume function of its own; past
    # config.cache_size_limit of them the rest of the loop runs eagerly (before, every iteration
    # compiled a frame, and a long loop nested resume calls past Python's recursion limit).
    def f(xs, w):
        out = []
        for i, x in enumerate(xs):
            y = torch.relu(x @ w)
            k = _positive(y)
            out.append(y.sum() + k + i)
        return torch.stack(out)

    torch.manual_seed(0)
    xs, w = [torch.randn(4, 4) for _ in range(iterations)], torch.randn(4, 4)
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(f)
    assert torch.equal(compiled(xs, w), f(xs, w))
    frames = counter.frame_count
    assert frames <= config.cache_size_limit + 2
    assert counters["stats"]["loops_left_eager"] == (1 if iterations > config.cache_size_limit else 0)
    assert torch.equal(compiled(xs, w), f(xs, w))
    assert counter.frame_count == frames  # the second call compiles nothing


class _Postprocess(torch.nn.Module):
    # SSD's postprocess_detections, reduced: a method the forward calls, looping over labels with a
    # data-dependent selection in each iteration (the loop's chain of resume functions is the
    # method's, called first by the forward's continuation).
    def post(self, scores):
        outs = []
        for label in range(1, scores.shape[1]):
            kept = scores[:, label][scores[:, label] > 0.3]
            n = 5 if kept.numel() > 5 else kept.numel()  # a branch on a size only the data gives: a break
            outs.append(kept.topk(n)[0].sum())
        return torch.stack(outs)

    def forward(self, x):
        return self.post(torch.sigmoid(x * 2)) + 1


def test_a_loop_that_breaks_inside_a_called_method_compiles_a_bounded_number_of_frames():
    torch.manual_seed(0)
    x, model = torch.randn(20, 40), _Postprocess()
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(model)
    assert torch.equal(compiled(x), model(x))
    frames = counter.frame_count
    assert frames <= config.cache_size_limit + 3 and counters["stats"]["loops_left_eager"] == 1
    assert torch.equal(compiled(x), model(x)) and counter.frame_count == frames
