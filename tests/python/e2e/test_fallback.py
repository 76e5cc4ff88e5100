"""Code cdynamo cannot capture: eager fallback with the right result and a recorded reason,
errors naming the construct and the user's line under fullgraph/nopython, failing backends,
and frames that are never traced."""
import os
import warnings

import pytest
import torch

import cdynamo
from cdynamo import config, exc
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

from .helpers import line_of


def prints(x):
    y = x + 1
    print("value:", y)  # a tensor's values: a graph break
    return y * 2


def calls_item(x):
    scale = x.sum().item()
    return x * scale


def branches_on_item(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def branches_on_data(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def explicit_break(x):
    y = x.sin()
    cdynamo.graph_break()
    return y.cos()


UNSUPPORTED = [
    (prints, "print(\"value:"),
    (branches_on_item, ".item() > 0"),
    (branches_on_data, "if x.sum() > 0"),
    (explicit_break, "graph_break()"),
]
UNSUPPORTED_IDS = [fn.__name__ for fn, _ in UNSUPPORTED]


def graph_break_reasons():
    return list(counters["graph_break"])


@pytest.mark.parametrize("fn, marker", UNSUPPORTED, ids=UNSUPPORTED_IDS)
def test_unsupported_code_falls_back_with_right_result_and_reason(fn, marker, capsys):
    compiled = cdynamo.optimize(CompileCounter())(fn)
    for x in (torch.randn(4).abs() + 0.1, -torch.randn(4).abs() - 0.1):  # both branch outcomes
        assert same(compiled(x), fn(x))
    assert graph_break_reasons(), "no reason recorded for the fallback"


def test_fallback_runs_side_effects_exactly_once(capsys):
    x = torch.randn(3)
    prints(x)
    eager_out = capsys.readouterr().out
    cdynamo.optimize(CompileCounter())(prints)(x)
    assert capsys.readouterr().out == eager_out


def test_fallback_reason_names_the_construct():
    x = torch.randn(4)
    cdynamo.optimize(CompileCounter())(calls_item)(x)
    assert any("item" in reason for reason in graph_break_reasons()), graph_break_reasons()


def prints_between(x):
    y = x + 1
    cdynamo.graph_break()
    return y * 2


def test_graph_break_is_decided_once_not_on_every_call():
    compiled = cdynamo.optimize(CompileCounter())(prints_between)
    for _ in range(5):
        x = torch.randn(4)
        assert same(compiled(x), prints_between(x))
    assert sum(counters["graph_break"].values()) == 1
    graphs = counters["stats"]["unique_graphs"]
    compiled(torch.randn(4))
    assert counters["stats"]["unique_graphs"] == graphs  # cached: no retracing per call


@pytest.mark.parametrize("fn, marker", UNSUPPORTED, ids=UNSUPPORTED_IDS)
@pytest.mark.parametrize("strict_mode", ["fullgraph", "nopython"])
def test_strict_mode_raises_naming_construct_file_and_line(fn, marker, strict_mode):
    if strict_mode == "fullgraph":
        compiled = cdynamo.compile(fn, backend=CompileCounter(), fullgraph=True)
    else:
        compiled = cdynamo.optimize(CompileCounter(), nopython=True)(fn)
    with pytest.raises(exc.Unsupported) as raised:
        compiled(torch.randn(4).abs() + 0.1)
    message = str(raised.value)
    assert os.path.basename(__file__) in message, message
    assert str(line_of(fn, marker)) in message, message


@pytest.mark.parametrize("fn, construct", [(prints, "print"), (branches_on_item, "data")])
def test_strict_mode_error_names_the_construct(fn, construct):
    compiled = cdynamo.compile(fn, backend=CompileCounter(), fullgraph=True)
    with pytest.raises(exc.Unsupported, match=construct):
        compiled(torch.randn(4))


def failing_backend(gm, example_inputs):
    raise RuntimeError("this backend cannot compile anything")


def not_a_compiler(gm, example_inputs):
    return "not callable"


def add_one(x):
    return x + 1


def test_failing_backend_raises_naming_it():
    compiled = cdynamo.optimize(failing_backend)(add_one)
    with pytest.raises(exc.BackendCompilerFailed) as raised:
        compiled(torch.randn(3))
    assert "failing_backend" in str(raised.value)
    assert "cannot compile anything" in str(raised.value)
    assert isinstance(raised.value.inner_exception, RuntimeError)


def test_backend_returning_non_callable_raises_naming_it():
    compiled = cdynamo.optimize(not_a_compiler)(add_one)
    with pytest.raises(exc.BackendCompilerFailed, match="not_a_compiler"):
        compiled(torch.randn(3))


def test_failing_backend_falls_back_when_errors_are_suppressed():
    x = torch.randn(3)
    with config.patch(suppress_errors=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert same(cdynamo.optimize(failing_backend)(add_one)(x), add_one(x))
    assert any("failing_backend" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_generators_are_not_traced():
    def generate(x):
        yield x + 1
        yield x * 2

    counter = CompileCounter()
    x = torch.randn(3)
    assert same(list(cdynamo.optimize(counter)(generate)(x)), [x + 1, x * 2])
    assert counter.frame_count == 0


def test_frames_of_torch_are_not_traced():
    counter = CompileCounter()
    x = torch.randn(3)
    # F.softmax is Python code inside torch's package: a skipped directory.
    assert same(cdynamo.optimize(counter)(torch.nn.functional.softmax)(x, dim=0), x.softmax(0))
    assert counter.frame_count == 0


def test_skip_dirs_is_honoured():
    def fn(x):
        return x + 1

    counter = CompileCounter()
    x = torch.randn(3)
    this_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")
    with config.patch(skip_dirs=config.skip_dirs + [this_dir]):
        assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert counter.frame_count == 0


@pytest.mark.parametrize("filename", ["<string>", "<stdin>", "<ipython-input-3-1f2e>", "<doctest demo[0]>", "<console>"])
def test_code_of_exec_the_repl_ipython_and_doctests_is_compiled(filename):
    scope = {"torch": torch}
    exec(compile("def fn(x):\n    return x.sin() + 1\n", filename, "exec"), scope)
    counter = CompileCounter()
    x = torch.randn(3)
    assert same(cdynamo.optimize(counter)(scope["fn"])(x), scope["fn"](x))
    assert counter.frame_count == 1


def test_the_rest_of_a_lambda_after_a_graph_break_is_compiled():
    fn = lambda x: (x.sin() + 1, cdynamo.graph_break(), x.cos() * 2)  # noqa: E731
    counter = CompileCounter()
    x = torch.randn(3)
    got = cdynamo.optimize(counter)(fn)(x)
    assert same(got[0], x.sin() + 1) and same(got[2], x.cos() * 2)
    assert counter.frame_count == 2


def test_a_graph_module_is_compiled_like_any_module():
    # torch.compile(fx.symbolic_trace(model)) and GraphModules inside models (torchvision's
    # feature extractors) are user code; only the backends' own graphs run untraced.
    gm = torch.fx.symbolic_trace(lambda x: x.cos() + 1)
    assert gm.forward.__code__.co_filename.startswith("<eval_with_key>")
    counter = CompileCounter()
    x = torch.randn(3)
    assert same(cdynamo.optimize(counter)(gm)(x), gm(x))
    assert counter.frame_count == 1 and counter.op_count == 2


# ---- values dead at a graph break are not graph outputs ---------------------------------------

_first, _second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)


def dead_before_break(x):
    unused = _first(x)  # never read again
    kept = _second(x)
    cdynamo.graph_break()
    return kept * 2


class _FailingStream:
    def write(self, text):
        raise RuntimeError("stream closed")


def read_only_in_handler(x, stream):
    y = _first(x)
    try:
        print("break", file=stream)  # a graph break that raises: the handler reads y
        z = x * 3
    except RuntimeError:
        return y
    return z


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_dead_value_is_no_graph_output_and_gets_no_grad(backend, capsys):
    from cdynamo.testing import EagerAndRecordGraphs

    recorder = EagerAndRecordGraphs()
    for layer in (_first, _second):
        layer.zero_grad(set_to_none=True)
    out = cdynamo.optimize(recorder if backend == "eager" else "inductor")(dead_before_break)(torch.randn(2, 4))
    out.sum().backward()
    assert _first.weight.grad is None and _second.weight.grad is not None  # as eager leaves them
    if backend == "eager":
        first_graph = recorder.graphs[0]
        returned = [n for n in first_graph.graph.nodes if n.op == "output"][0].args[0]
        assert len(returned) == 1


def test_value_read_by_an_exception_handler_stays_live(capsys):
    x = torch.randn(2, 4)
    with torch.no_grad():
        expected = read_only_in_handler(x, _FailingStream())
        assert same(cdynamo.optimize("eager")(read_only_in_handler)(x, _FailingStream()), expected)


def test_a_clock_reading_breaks_the_graph_and_says_why():
    import time

    def timed(x):
        start = time.perf_counter()
        y = x * 2
        return y, time.perf_counter() - start

    out = cdynamo.explain(timed)(torch.randn(3))
    assert out.graph_break_count >= 1 and out.out[1] >= 0
    assert "time.perf_counter() reads the clock" in str(out.break_reasons[0])
