"""The inductor backend picks a code generator per graph: tensors it cannot compile (other devices,
dtypes, layouts, subclasses) run as captured with one warning and a counter, never a crash; and
returned tensors alias the inputs exactly as eager's do."""
import importlib.util
import warnings

import pytest
import torch

import cdynamo
from cdynamo.inductor import targets
from cdynamo.utils import counters


def compiled(fn):
    return cdynamo.optimize("inductor")(fn)


def run_both(fn, *inputs):
    """(eager result, compiled result) on separate clones of the inputs."""
    expected = fn(*[t.clone() for t in inputs])
    got = compiled(fn)(*[t.clone() for t in inputs])
    return expected, got


@pytest.fixture(autouse=True)
def fresh_warnings():
    targets._WARNED.clear()
    yield
    targets._WARNED.clear()


def fallback_reasons():
    return {k: v for k, v in counters["inductor"].items() if k.startswith("eager_fallback: ")}


def test_meta_tensors_run_as_captured_with_one_warning():
    fn = lambda x: (x.sin() + 1).relu()  # noqa: E731
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(fn)(torch.empty(8, device="meta"))
        compiled(lambda x: x * 2)(torch.empty(3, device="meta"))
    assert out.device.type == "meta" and out.shape == (8,)
    messages = [str(w.message) for w in caught if "cdynamo inductor" in str(w.message)]
    assert len(messages) == 1 and "meta" in messages[0] and "runs as captured" in messages[0]
    assert counters["inductor"]["eager_fallback"] == 2
    assert list(fallback_reasons()) == ["eager_fallback: tensors on meta (no code generator for meta yet)"]


def _dense(t):
    return t.to_dense() if t.layout != torch.strided else t


@pytest.mark.parametrize("make, fn, reason", [
    (lambda: torch.randn(4, dtype=torch.complex64), lambda t: t * 2, "dtype torch.complex64"),
    (lambda: torch.randn(4, 4).to_sparse(), lambda t: t * 2, "sparse_coo"),
    (lambda: torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8), lambda t: t.dequantize() + 1,
     "quantized"),
])
def test_unsupported_tensors_run_as_captured(make, fn, reason):
    x = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = fn(x), compiled(fn)(x)
    assert torch.equal(_dense(got), _dense(expected))
    # Said either by the backend (ran as captured) or, where fake tensors cannot stand in for
    # the tensor at all, by the frontend (ran eagerly, a graph break with that reason).
    said = list(fallback_reasons()) + list(counters["graph_break"])
    assert any(reason in key for key in said), said


class Tagged(torch.Tensor):
    """A subclass the runtime must not read through raw storage."""


def test_tensor_subclass_reason_names_the_class():
    t = torch.randn(4).as_subclass(Tagged)
    assert "Tagged" in targets.unsupported_tensor_reason(t)
    assert targets.unsupported_tensor_reason(torch.randn(4)) is None


def test_value_moved_inside_the_graph_is_seen_after_aten_tracing():
    # The inputs are CPU tensors; the graph makes a meta tensor from one.
    fn = lambda x: (x + 1).to("meta") * 2  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(fn)(torch.randn(4))
    assert out.device.type == "meta"
    assert counters["inductor"]["eager_fallback"] == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("fn", [
    lambda x, w: (x.sin() + 1).relu(),
    lambda x, w: torch.relu(x @ w),
])
def test_cuda_inputs_run_correctly(fn):
    # With Triton, CUDA graphs go to the Triton target; without it they run as captured, once warned.
    x, w = torch.randn(16, 16, device="cuda"), torch.randn(16, 16, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = fn(x, w), compiled(fn)(x, w)
    torch.testing.assert_close(got, expected)
    if importlib.util.find_spec("triton") is not None:
        assert counters["inductor"]["eager_fallback"] == 0
        assert counters["inductor"]["triton_kernels"] >= 1
    else:
        assert counters["inductor"]["eager_fallback"] == 1
        assert any("cuda" in key for key in fallback_reasons())


def test_cpp_target_refuses_other_devices_itself():
    # The lowering's own check: a graph reaching it with a meta tensor is an error, not a crash.
    from cdynamo import _C
    from cdynamo.inductor.compile_fx import aten_graph

    gm = torch.fx.symbolic_trace(lambda x: x.sin())
    aten_gm = aten_graph(gm, [torch.empty(4, device="meta")])
    with pytest.raises(Exception, match="target for cpu tensors cannot compile arg0_1, which is on meta"):
        _C._inductor_compile(aten_gm, gm.forward)


# ---- returned tensors alias what eager's alias ------------------------------------------------

def test_clone_is_a_tensor_of_its_own():
    y = torch.arange(4.0)
    c = compiled(lambda y: y.clone())(y)
    assert c is not y and c.data_ptr() != y.data_ptr()
    y.add_(1)
    assert torch.equal(c, torch.arange(4.0))


@pytest.mark.parametrize("fn", [
    lambda y: y.contiguous().clone(),
    lambda y: y.t().clone(),
    lambda y: y.reshape(12).clone(),
    lambda y: y[1:].clone(),
])
def test_copies_of_inputs_and_their_views_are_their_own(fn):
    y = torch.arange(12.0).view(3, 4)
    out = compiled(fn)(y)
    out.fill_(-1)
    assert torch.equal(y, torch.arange(12.0).view(3, 4))


def view_after_mutation(y):
    v = y[0]
    y.add_(1)
    return v


@pytest.mark.parametrize("fn", [
    view_after_mutation,
    lambda y: y.t(),
    lambda y: y.reshape(12),
    lambda y: (y[0], y[1] * 2, y[:, 1:]),
])
def test_views_of_inputs_are_views_as_in_eager(fn):
    ye, yc = torch.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    expected, got = fn(ye), compiled(fn)(yc)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected, got):
        assert torch.equal(e, g)
        assert g.stride() == e.stride()
        e.fill_(7), g.fill_(7)
        assert torch.equal(ye, yc)


def test_in_place_result_is_the_input_itself():
    y = torch.zeros(3)
    assert compiled(lambda y: y.add_(1))(y) is y
    assert torch.equal(y, torch.ones(3))


_weight = torch.randn(4, requires_grad=True)


def writes_into_saved_input(x):
    y = x * _weight  # autograd saves x for the weight's gradient
    x.add_(1)
    return y


def writes_into_saved_result(x):
    y = _weight.exp()  # exp saves its result
    y.mul_(2)
    return y * x


@pytest.mark.parametrize("fn", [writes_into_saved_input, writes_into_saved_result])
def test_in_place_write_into_saved_tensor_runs_forward_and_fails_backward_as_eager(fn):
    xe, xc = torch.randn(4), None
    xc = xe.clone()
    expected = fn(xe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(fn)(xc)
    torch.testing.assert_close(got, expected)
    assert torch.equal(xe, xc)
    for out in (expected, got):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    assert counters["inductor"]["autograd_fallback"] == 1


@pytest.mark.parametrize("fn", [
    lambda a: a.norm().mean(dim=0, keepdim=True),
    lambda a: torch.softmax(a.max(), dim=-1),
    lambda a: a.sum().argmax(0),
    lambda a: a.sum().flip(0),
    lambda a: a.sum().unsqueeze(0).squeeze(-1),
])
def test_dimensions_of_0d_tensors_as_torch_wraps_them(fn):
    a = torch.randn(3, 4)
    expected, got = run_both(fn, a)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected)


def outputs_of_one_storage(x):
    t = torch.full_like(x, 3.0) * x
    same = t.contiguous()  # t itself
    return same.select(-1, 0), same, t.clone(), same[1:]


def test_outputs_share_storage_exactly_as_eager():
    x = torch.randn(3, 4)
    expected, got = run_both(outputs_of_one_storage, x)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e)
    assert got[1] is not got[0] and got[1] is not got[3]
    for outs in (expected, got):
        outs[1].fill_(-1)  # the base: its views see it, the clone does not
    for e, g in zip(expected, got):
        assert torch.equal(g, e)
    assert not torch.equal(got[2], got[1])


def reads_view_then_writes_base(a, v):
    e = v.exp()
    a.mul_(0.5)
    return e


def test_inputs_sharing_memory_with_a_write_run_as_captured():
    ae, ac = torch.randn(2, 4), None
    ac = ae.clone()
    expected = reads_view_then_writes_base(ae, ae[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(reads_view_then_writes_base)(ac, ac[0])
    torch.testing.assert_close(got, expected)
    assert torch.equal(ac, ae)
    assert any("share memory" in key for key in fallback_reasons())


def test_returned_views_are_autograd_views_of_their_base():
    # A write through the returned view must bump the input's version, as eager's does: a
    # tensor autograd saved from the input then fails its backward exactly as in eager.
    a = torch.randn(2, 4)
    view = compiled(lambda a: a.unsqueeze(0))(a)
    before = a._version
    view.fill_(2.0)
    assert a._version > before and view._base is a
    assert torch.equal(a, torch.full((2, 4), 2.0))


class TestGpuSelfCheckAfterTheCompile:
    """targets.checked_on_device, on a graph of fake CUDA tensors (runs without a GPU): the
    device's self-check runs after the graph's compile and decides whether its result is used."""

    @pytest.fixture
    def graph(self, monkeypatch):
        from torch._subclasses.fake_tensor import FakeTensorMode

        from cdynamo.inductor import triton_selfcheck

        with FakeTensorMode():
            x = torch.empty(4, device="cuda:0")
        events = []
        self.verdict = None

        def failure_reason(device_index):
            events.append(f"check cuda:{device_index}")
            return self.verdict

        monkeypatch.setattr(triton_selfcheck, "failure_reason", failure_reason)
        return torch.fx.symbolic_trace(lambda x: x.sin()), [x], events

    def test_a_passed_check_keeps_the_compiled_graph_and_runs_after_it(self, graph):
        gm, inputs, events = graph
        program = object()
        assert targets.checked_on_device(gm, inputs, lambda: events.append("compile") or program) is program
        assert events == ["compile", "check cuda:0"]

    def test_a_failed_check_runs_the_graph_as_captured_with_its_reason(self, graph):
        gm, inputs, events = graph
        self.verdict = "tensors on cuda:0, where the Triton target failed its self-check (broken)"
        with pytest.warns(UserWarning, match="failed its self-check"):
            result = targets.checked_on_device(gm, inputs, lambda: object())
        assert result == gm.forward
        assert fallback_reasons() == {f"eager_fallback: {self.verdict}": 1}

    def test_a_compile_error_on_a_failing_device_runs_as_captured_and_else_is_raised(self, graph):
        gm, inputs, events = graph

        def broken():
            raise RuntimeError("no kernel image is available")

        with pytest.raises(RuntimeError, match="no kernel image"):
            targets.checked_on_device(gm, inputs, broken)
        self.verdict = "tensors on cuda:0, where the Triton target failed its self-check (broken)"
        with pytest.warns(UserWarning, match="failed its self-check"):
            assert targets.checked_on_device(gm, inputs, broken) == gm.forward
        assert events == ["check cuda:0", "check cuda:0"]

    def test_graphs_without_a_target_or_on_the_cpu_skip_the_check(self, graph):
        gm, inputs, events = graph
        assert targets.checked_on_device(gm, inputs, lambda: gm.forward) == gm.forward
        assert targets.checked_on_device(gm, [torch.randn(4)], lambda: 7) == 7
        assert events == []
