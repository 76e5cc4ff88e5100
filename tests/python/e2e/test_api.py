"""The public API end to end: straight-line functions compile to one graph and match eager;
optimize/compile/run/disable, backends and their registry, nn.Module wrapping."""
import math

import pytest
import torch
import torch.nn.functional as F

import cdynamo
from cdynamo import exc
from cdynamo.testing import CompileCounter, EagerAndRecordGraphs, same
from cdynamo.utils import counters


def _floats(*shapes):
    generator = torch.Generator().manual_seed(len(shapes) * 7 + sum(map(sum, shapes)))
    return tuple(torch.randn(shape, generator=generator) for shape in shapes)


def _ints():
    return (torch.arange(-8, 8).reshape(4, 4),)


WEIGHT, BIAS = _floats((3, 4), (3,))

# (name, function, inputs): each is straight-line code that must be captured as one graph.
STRAIGHT_LINE_CASES = [
    ("add", lambda x, y: x + y, _floats((4, 4), (4, 4))),
    ("sub_scalar", lambda x: x - 2.5, _floats((4, 4))),
    ("reflected_sub", lambda x: 1 - x, _floats((4, 4))),
    ("mul_broadcast", lambda x, y: x * y, _floats((4, 4), (4,))),
    ("truediv", lambda x, y: x / (y.abs() + 1), _floats((4, 4), (4, 4))),
    ("floordiv_mod", lambda x, y: (x // y, x % 0.7), _floats((4, 4), (4, 4))),
    ("matmul", lambda x, y: x @ y, _floats((4, 3), (3, 5))),
    ("pow", lambda x: (x ** 2, 2 ** x, x.abs() ** 0.5), _floats((4, 4))),
    ("comparisons", lambda x, y: (x > y, x <= 0.5, x == x, x != y, x < 0, x >= y), _floats((4, 4), (4, 4))),
    ("unary", lambda x: (-x, +x, abs(x), ~(x > 0)), _floats((4, 4))),
    ("int_tensor_arithmetic", lambda a: a * 3 + a // 2 - a % 5, _ints()),
    ("method_chain", lambda x: x.sin().cos().exp(), _floats((4, 4))),
    ("reductions", lambda x: (x.relu().sum(dim=0), x.mean(), x.amax(dim=-1, keepdim=True)), _floats((4, 4))),
    ("views", lambda x: (x.view(-1), x.transpose(0, 1).contiguous(), x.reshape(2, 8), x.t()), _floats((4, 4))),
    ("method_kwargs", lambda x: x.clamp(min=-0.5, max=0.5).softmax(dim=-1), _floats((4, 4))),
    ("shape_and_size", lambda x: x * x.shape[0] + x.size(1) + x.size()[0], _floats((3, 5))),
    ("dim_and_ndim", lambda x: x * (x.dim() + x.ndim), _floats((3, 5))),
    ("dtype_and_device", lambda x, y: torch.zeros(x.shape, dtype=x.dtype, device=x.device) + y.to(x.dtype), (_floats((4,))[0].double(), _floats((4,))[0])),
    ("reshape_from_sizes", lambda x: x.reshape(x.size(0) * x.size(1)), _floats((3, 5))),
    ("torch_functions", lambda x, y: (torch.cat([x, y], dim=0), torch.stack((x, y)), torch.where(x > 0, x, y)), _floats((4, 4), (4, 4))),
    ("torch_math", lambda x, y: torch.matmul(torch.sin(x), torch.relu(y)) + torch.ones_like(x), _floats((4, 4), (4, 4))),
    ("torch_kwargs", lambda x: torch.softmax(x, dim=-1) + torch.sum(x, dim=0, keepdim=True), _floats((4, 4))),
    ("functional", lambda x: (F.relu(x), F.gelu(x), F.softmax(x, dim=1), F.layer_norm(x, (4,))), _floats((4, 4))),
    ("functional_linear", lambda x, w, b: F.linear(x, w, b), _floats((2, 4)) + (WEIGHT, BIAS)),
    ("functional_dropout_eval", lambda x: F.dropout(x, p=0.5, training=False) * 2, _floats((4, 4))),
    ("tuple_return", lambda x: (x + 1, x * 2), _floats((4,))),
    ("list_return", lambda x, y: [x.sin(), y.cos()], _floats((4,), (4,))),
    ("mixed_return", lambda x: (x + 1, x.dim(), x.shape, x.dtype), _floats((2, 3))),
    ("python_constant_arithmetic", lambda x: x * (2 ** 3 + 1) - (7 // 2) + 7 % 3 / 4.0, _floats((4,))),
    ("math_on_constants", lambda x: x * (1.0 / math.sqrt(16)) + abs(-3) + max(2, 5), _floats((4,))),
]


@pytest.mark.parametrize(
    "fn, inputs", [case[1:] for case in STRAIGHT_LINE_CASES], ids=[case[0] for case in STRAIGHT_LINE_CASES]
)
def test_straight_line_code_compiles_to_one_graph_matching_eager(fn, inputs):
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(fn)
    assert same(compiled(*inputs), fn(*inputs))
    assert counter.frame_count == 1
    assert counter.op_count >= 1


def test_frame_and_op_counts():
    def fn(x):
        return x.sin().cos() + 1

    counter = CompileCounter()
    x = torch.randn(8)
    assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert (counter.frame_count, counter.op_count) == (1, 3)


def test_tensor_metadata_is_specialised_not_captured():
    def fn(x):
        return x * (x.shape[0] + x.size(1) + x.dim() + x.ndim)

    counter = CompileCounter()
    x = torch.randn(3, 5)
    assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert (counter.frame_count, counter.op_count) == (1, 1)


def test_one_node_per_torch_call():
    def fn(x, y):
        return torch.relu(x) * 2 + F.linear(y, WEIGHT)

    counter = CompileCounter()
    x, y = torch.randn(2, 3), torch.randn(2, 4)
    assert same(cdynamo.optimize(counter)(fn)(x, y), fn(x, y))
    assert (counter.frame_count, counter.op_count) == (1, 4)


def test_stats_counters():
    def fn(x):
        return x.sin().cos() + 1

    compiled = cdynamo.optimize(CompileCounter())(fn)
    for _ in range(3):
        compiled(torch.randn(4))
    stats = counters["stats"]
    assert stats["unique_graphs"] == 1
    assert stats["calls_captured"] == 3
    assert stats["frames_compiled"] == 1


def test_keyword_and_default_arguments():
    def fn(x, y, alpha=2.0):
        return x * alpha + y

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(fn)
    x, y = torch.randn(4), torch.randn(4)
    assert same(compiled(x, y=y), fn(x, y=y))
    assert same(compiled(x, y, alpha=3.0), fn(x, y, alpha=3.0))
    assert same(compiled(x, y, alpha=4.0), fn(x, y, alpha=4.0))
    # The default left as it is was a constant; once alpha changed it is a graph input.
    assert counter.frame_count == 2

    def scaled(x, y, alpha=2.0):
        return x * alpha + y

    static = cdynamo.optimize(counter, dynamic=False)(scaled)
    assert same(static(x, y), fn(x, y)) and same(static(x, y, alpha=3.0), fn(x, y, alpha=3.0))
    assert counter.frame_count == 4  # dynamic=False: a specialised constant


def test_graph_receives_fx_graph_module_and_example_inputs():
    received = []

    def backend(gm, example_inputs):
        received.append((gm, list(example_inputs)))
        return gm.forward

    def fn(x, y):
        return x @ y + 1

    x, y = torch.randn(2, 3), torch.randn(3, 4)
    assert same(cdynamo.optimize(backend)(fn)(x, y), fn(x, y))
    (gm, example_inputs), = received
    assert isinstance(gm, torch.fx.GraphModule)
    assert [tuple(t.shape) for t in example_inputs] == [(2, 3), (3, 4)]


def test_backend_compiles_under_the_callers_torch_function_state():
    # Tracing turns tensor subclasses' __torch_function__ off; the backend must not inherit that
    # (torch 2.11's AOTAutograd traces scalars with MetaProxy, a __torch_function__ proxy).
    seen = []

    def backend(gm, example_inputs):
        seen.append((torch._C._is_torch_function_enabled(), torch._C._is_torch_function_all_disabled()))
        return gm.forward

    def fn(x):
        return x * 2

    x = torch.randn(3)
    assert same(cdynamo.optimize(backend)(fn)(x), fn(x))
    with torch._C.DisableTorchFunction():
        assert same(cdynamo.optimize(backend)(lambda t: t - 1)(x), x - 1)
    assert seen == [(True, False), (False, True)]


def test_optimize_as_context_manager():
    def fn(x):
        return x.relu() + 1

    counter = CompileCounter()
    x = torch.randn(4)
    with cdynamo.optimize(counter):
        actual = fn(x)
    assert same(actual, x.relu() + 1)
    assert counter.frame_count == 1
    # Outside the block the function is plain Python again: a new shape compiles nothing.
    y = torch.randn(5)
    assert same(fn(y), y.relu() + 1)
    assert counter.frame_count == 1


def test_compiled_function_keeps_name_and_wraps_original():
    def my_function(x):
        return x + 1

    compiled = cdynamo.optimize("eager")(my_function)
    assert compiled.__name__ == "my_function"
    assert same(compiled(torch.ones(2)), torch.full((2,), 2.0))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_builtin_backends_match_eager(backend):
    def fn(x, y):
        return (x.sin() @ y).relu() + 1

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    assert same(cdynamo.compile(fn, backend=backend, fullgraph=True)(x, y), fn(x, y))


def test_aot_eager_backward_matches_eager():
    def fn(x):
        return (x.sin() * x).sum()

    x = torch.randn(5, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    cdynamo.compile(fn, backend="aot_eager")(x).backward()
    fn(x_eager).backward()
    assert same(x.grad, x_eager.grad)


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_compile_module_returns_optimized_module_sharing_state():
    model = TwoLayer()
    counter = CompileCounter()
    compiled = cdynamo.compile(model, backend=counter, fullgraph=True)
    assert isinstance(compiled, cdynamo.OptimizedModule)
    assert isinstance(compiled, torch.nn.Module)

    x = torch.randn(5, 8)
    assert same(compiled(x), model(x))
    assert counter.frame_count == 1
    assert counter.op_count >= 3  # two linears and a relu

    assert list(compiled.state_dict()) == list(model.state_dict())
    for name, tensor in compiled.state_dict().items():
        assert tensor.data_ptr() == model.state_dict()[name].data_ptr()
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    assert compiled.fc1 is model.fc1


def test_compiled_module_sees_parameter_updates():
    model = TwoLayer()
    compiled = cdynamo.compile(model, backend="eager")
    x = torch.randn(5, 8)
    compiled(x)
    with torch.no_grad():
        model.fc2.bias.add_(1.0)
    assert same(compiled(x), model(x))


def test_unknown_backend_lists_available_ones():
    with pytest.raises(exc.InvalidBackend) as raised:
        cdynamo.optimize("no_such_backend")
    message = str(raised.value)
    assert "no_such_backend" in message
    assert "eager" in message and "aot_eager" in message
    with pytest.raises(exc.InvalidBackend):
        cdynamo.lookup_backend("no_such_backend")


def test_list_backends():
    names = cdynamo.list_backends()
    assert {"eager", "aot_eager"} <= set(names)
    assert names == sorted(names)


def test_register_backend_as_decorator(restore_backend_registry):
    calls = []

    @cdynamo.register_backend
    def my_backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    @cdynamo.register_backend(name="my_named_backend", tags=("debug",))
    def another(gm, example_inputs):
        return gm.forward

    assert cdynamo.lookup_backend("my_backend") is my_backend
    assert cdynamo.lookup_backend("my_named_backend") is another
    assert "my_backend" in cdynamo.list_backends()
    assert "my_named_backend" not in cdynamo.list_backends()
    assert "my_named_backend" in cdynamo.list_backends(exclude_tags=())

    def fn(x):
        return x * 3

    x = torch.randn(4)
    assert same(cdynamo.optimize("my_backend")(fn)(x), fn(x))
    assert len(calls) == 1


def test_registering_a_taken_name_fails(restore_backend_registry):
    with pytest.raises(ValueError, match="eager"):
        cdynamo.register_backend(lambda gm, example_inputs: gm.forward, name="eager")


def test_reset_empties_caches():
    def fn(x):
        return x - 1

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(fn)
    x = torch.randn(4)
    compiled(x)
    compiled(x)
    assert counter.frame_count == 1
    cdynamo.reset()
    assert same(compiled(x), fn(x))
    assert counter.frame_count == 2


def _counting_graph_calls(calls):
    """A backend whose compiled graphs count how often they run: shows cached code running."""

    def backend(gm, example_inputs):
        def run_graph(*args):
            calls.append(1)
            return gm.forward(*args)

        return run_graph

    return backend


def test_run_uses_cached_code_and_never_compiles():
    def fn(x):
        return x * 2 + 1

    graph_calls = []
    counter = CompileCounter()
    x = torch.randn(4)

    # Nothing cached yet: run() executes eagerly and compiles nothing.
    assert same(cdynamo.run(fn)(x), fn(x))
    assert counter.frame_count == 0 and graph_calls == []

    cdynamo.optimize(_counting_graph_calls(graph_calls))(fn)(x)
    assert len(graph_calls) == 1
    assert same(cdynamo.run(fn)(x), fn(x))
    assert len(graph_calls) == 2  # the cached graph ran

    # A shape with no cache entry runs eagerly under run(), compiling nothing.
    y = torch.randn(7)
    assert same(cdynamo.run(fn)(y), fn(y))
    assert len(graph_calls) == 2
    assert counters["stats"]["frames_compiled"] == 1


def test_disable_function_is_never_compiled():
    def fn(x):
        return x.sin() + 1

    counter = CompileCounter()
    x = torch.randn(4)
    with cdynamo.optimize(counter):
        actual = cdynamo.disable(fn)(x)
    assert same(actual, fn(x))
    assert counter.frame_count == 0


def test_disable_as_context_manager():
    def fn(x):
        return x.sin() + 1

    counter = CompileCounter()
    x = torch.randn(4)
    with cdynamo.optimize(counter):
        with cdynamo.disable():
            actual = fn(x)
    assert same(actual, x.sin() + 1)
    assert counter.frame_count == 0


def test_disable_recursive_covers_callees():
    def inner(x):
        return x.sin()

    def outer(x):
        return inner(x) + 1

    recorder = EagerAndRecordGraphs()
    x = torch.randn(4)
    with cdynamo.optimize(recorder):
        actual = cdynamo.disable(outer)(x)
    assert same(actual, outer(x))
    assert recorder.graphs == []


def test_disable_non_recursive_still_compiles_callees():
    def inner(x):
        return x.sin()

    def outer(x):
        return inner(x) + 1

    recorder = EagerAndRecordGraphs()
    x = torch.randn(4)
    with cdynamo.optimize(recorder):
        actual = cdynamo.disable(outer, recursive=False)(x)
    assert same(actual, outer(x))
    graph_targets = [str(node.target) for gm in recorder.graphs for node in gm.graph.nodes]
    assert any("sin" in target for target in graph_targets)
    assert not any("add" in target for target in graph_targets)  # outer's `+ 1` stays eager


def test_disabled_callee_stays_out_of_graphs():
    @cdynamo.disable
    def inner(x):
        return x.sin()

    def outer(x):
        return inner(x) + 1

    recorder = EagerAndRecordGraphs()
    x = torch.randn(4)
    assert same(cdynamo.optimize(recorder)(outer)(x), x.sin() + 1)
    graph_targets = [str(node.target) for gm in recorder.graphs for node in gm.graph.nodes]
    assert not any("sin" in target for target in graph_targets)


def test_compiling_an_nn_sequential_captures_its_layers():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    counter = CompileCounter()
    compiled = cdynamo.compile(model, backend=counter)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert same(compiled(x), model(x))
    assert counter.frame_count == 1 and counter.op_count == 3


@pytest.mark.parametrize("make", [lambda: torch.nn.Linear(4, 3), lambda: torch.nn.LayerNorm(4)], ids=["linear", "layernorm"])
def test_compiling_a_torch_nn_layer_directly_captures_it(make):
    layer = make()
    counter = CompileCounter()
    compiled = cdynamo.compile(layer, backend=counter)
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert same(compiled(x), layer(x))
        assert same(compiled(x), layer(x))
    assert counter.frame_count == 1 and counter.op_count == 1


def test_explain_reports_graphs_breaks_and_ops():
    def fn(x):
        y = x.sin() + 1
        cdynamo.graph_break()
        return y.cos()

    x = torch.randn(3)
    report = cdynamo.explain(fn)(x)
    assert report.graph_count == 2 and report.graph_break_count == 1
    assert "graph_break()" in report.break_reasons[0]
    assert report.op_count == 3
    assert "Graph Count: 2" in str(report)
    assert same(report.out, fn(x))
