"""CUDA graphs: decisions, the wrapper on CPU with a stand-in runtime, compile(mode=/options=), and on CUDA.
Assumes CUDA only for the tests marked requires_cuda; the rest run anywhere."""
import warnings

import pytest
import torch
import torch.fx

import cdynamo
from cdynamo import config, exc
from cdynamo.cudagraphs import cudagraphify, outputs, policy, wrapper
from cdynamo.utils import counters

from .cudagraph_fakes import FakeRuntime

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def fresh_warnings():
    wrapper._WARNED.clear()
    yield
    wrapper._WARNED.clear()


def cg():
    return counters["cudagraphs"]


def skips():
    return {key[len("skipped: "):]: n for key, n in cg().items() if key.startswith("skipped: ")}


class MLP(torch.nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, width)
        self.fc2 = torch.nn.Linear(width, width)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * 2


def fake_graphed(module_or_fn, runtime=None):
    """The module traced by torch.fx and wrapped as the "cudagraphs" backend does, on CPU."""
    gm = torch.fx.symbolic_trace(module_or_fn)
    return cudagraphify(gm.forward, gm, runtime=runtime or FakeRuntime())


def fake_backend(runtime):
    """A backend like "cudagraphs" whose CUDA calls are the CPU stand-in's."""
    return lambda gm, example_inputs: cudagraphify(gm.forward, gm, example_inputs, runtime=runtime)


# ---- policy: plain decisions ------------------------------------------------------------------

def test_signature_keys_tensor_metadata_and_baked_values():
    x = torch.randn(2, 3)
    key = policy.input_signature((x, 3), False, False)
    assert key == policy.input_signature((torch.randn(2, 3), 3), False, False)  # values don't matter
    assert key != policy.input_signature((torch.randn(3, 2), 3), False, False)  # shape
    assert key != policy.input_signature((x.t().contiguous().t(), 3), False, False)  # strides
    assert key != policy.input_signature((x.double(), 3), False, False)  # dtype
    assert key != policy.input_signature((x, 4), False, False)  # a baked-in value
    assert key != policy.input_signature((x, 3), True, False)  # grad mode
    assert key != policy.input_signature((x, 3), False, True)  # inference mode
    assert policy.input_signature((0.0,), False, False) != policy.input_signature((-0.0,), False, False)
    nan = policy.input_signature((float("nan"),), False, False)
    assert nan == policy.input_signature((float("nan"),), False, False)
    assert policy.input_signature(([x],), False, False) is None
    assert "list" in policy.unhashable_argument_reason(([x],))


def test_parameters_are_static_and_keyed_by_address():
    weight = torch.nn.Parameter(torch.randn(3))
    x = torch.randn(3)
    assert policy.copied_input_indices((x, weight, 2)) == (0,)
    other = torch.nn.Parameter(weight.detach().clone())
    assert policy.input_signature((weight,), False, False) != policy.input_signature((other,), False, False)


def test_device_autograd_and_kind_reasons():
    cpu, gpu0, gpu1 = torch.device("cpu"), torch.device("cuda", 0), torch.device("cuda", 1)
    assert policy.devices_reason([gpu0, gpu0], "cuda") is None
    assert policy.devices_reason([gpu0, cpu], "cuda").startswith("CPU tensors")
    assert policy.devices_reason([gpu0, gpu1], "cuda") == "tensors on several devices (cuda:0, cuda:1)"
    assert policy.devices_reason([], "cuda") == "no cuda tensors"
    needs_grad = torch.randn(2, requires_grad=True)
    assert policy.autograd_reason([needs_grad], grad_enabled=True).startswith("autograd")
    assert policy.autograd_reason([needs_grad], grad_enabled=False) is None
    assert policy.tensor_kind_reason(torch.randn(2, 2).to_sparse()) == "sparse_coo tensors"


def test_capture_failures_that_sync_are_named_so():
    sync = RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore")
    assert policy.capture_failure_reason(sync).startswith("the graph does work that stream capture forbids")
    assert policy.capture_failure_reason(sync).endswith("operation not permitted when stream is capturing")
    assert policy.sync_reason(["called a synchronizing CUDA operation"]).startswith("the graph synchronizes")
    assert "cudaErrorStreamCaptureUnsupported" in policy.capture_failure_reason(
        RuntimeError("cudaErrorStreamCaptureUnsupported: ..."))
    other = policy.capture_failure_reason(ValueError("bad value"))
    assert other == "capturing the graph raised ValueError: bad value"


def test_written_input_sharing_memory_is_refused():
    x = torch.randn(4)
    assert policy.written_input_alias_reason((x, x[1:]), [0], []) is not None
    assert policy.written_input_alias_reason((x, torch.randn(3)), [0], []) is None
    assert policy.written_input_alias_reason((x, x[1:]), [], []) is None  # read-only sharing is fine
    assert policy.written_input_alias_reason((x[:2],), [0], [x]) is not None  # shares a parameter's memory


def test_graph_values_off_the_device_are_found():
    gm = torch.fx.symbolic_trace(lambda x: x.cpu() + 1)
    for node in gm.graph.nodes:
        node.meta["val"] = torch.empty(2, device="meta" if node.name == "x" else "cpu")
    assert policy.graph_values_reason(gm, "meta").startswith("CPU tensors in the graph (node cpu")


# ---- outputs: what each result is, and liveness -----------------------------------------------

def test_outputs_are_described_as_eager_returns_them():
    x, w = torch.randn(4, 4), torch.nn.Parameter(torch.randn(4))
    y = x * 2
    leaves = [y, y[1], x, x[2:], y, 3, w, w[1:]]
    plan = outputs.describe(leaves, (x,), [w], x.device)
    kinds = [spec.kind for spec in plan.specs]
    assert kinds == ["owned", "owned", "arg", "arg_view", "repeat", "constant", "static", "static_view"]
    assert plan.specs[1].view_of == 0 and plan.specs[3].offset == 8
    assert len(plan.groups) == 1 and plan.groups[0].nbytes == y.numel() * 4
    with pytest.raises(outputs.Unrecordable, match="type object"):
        outputs.describe([object()], (), [], x.device)


def test_results_are_rebuilt_over_the_captures_memory_and_the_callers_tensors():
    x = torch.randn(4, 4)
    y = x + 1
    plan = outputs.describe([y, y[1], x[2:], x], (x,), [], x.device)
    buffers, owned = outputs.alias_owned(plan, [y, y[1], x[2:], x])
    caller_x = torch.randn(4, 4)
    built = outputs.build_results(plan, owned, (caller_x,), [])
    assert torch.equal(built[0], y) and built[1]._base is built[0] and torch.equal(built[1], y[1])
    assert built[2]._base is caller_x and torch.equal(built[2], caller_x[2:]) and built[3] is caller_x
    y.add_(1)  # a replay writes the capture's memory: the results handed out see it, no copy made
    assert torch.equal(built[0], y) and built[0].untyped_storage() is not y.untyped_storage()


def test_liveness_sees_kept_results_and_views_of_them():
    x = torch.randn(3)
    captured = x + 1  # a backend may keep the capture's tensors: that is not the caller holding results
    plan = outputs.describe([captured], (x,), [], x.device)
    buffers, owned = outputs.alias_owned(plan, [captured])
    liveness = outputs.Liveness(buffers, owned)
    assert not liveness.held()
    result = outputs.build_results(plan, owned, (x,), [])[0]
    assert liveness.held()
    view = result[1:]
    del result
    assert liveness.held()
    del view
    assert not liveness.held()


# ---- the wrapper on CPU, with the stand-in runtime --------------------------------------------

@torch.no_grad()
def test_replays_match_eager_as_values_change():
    model = MLP()
    graphed = fake_graphed(model)
    for step in range(5):
        x = torch.randn(4, 8)
        torch.testing.assert_close(graphed(x), model(x), rtol=0, atol=0)
    assert (cg()["warmups"], cg()["recorded"], cg()["replays"]) == (1, 1, 4)
    assert not skips()


@torch.no_grad()
def test_kept_results_keep_their_values():
    model = MLP()
    graphed = fake_graphed(model)
    inputs = [torch.randn(2, 8) for _ in range(6)]
    kept = [graphed(x) for x in inputs]
    for x, result in zip(inputs, kept):
        torch.testing.assert_close(result, model(x), rtol=0, atol=0)
    # Calls 2 and 3 record one instance each; calls 4-6 find both held: copied out of a private one.
    assert cg()["recorded"] == 3 and cg()["replays"] == 5 and cg()["replays_copied_out"] == 3


@torch.no_grad()
def test_feeding_results_back_alternates_two_instances_without_copies():
    model = MLP()
    graphed = fake_graphed(model)
    h, h_eager = torch.randn(2, 8), None
    h_eager = h.clone()
    for _ in range(6):
        h, h_eager = graphed(h), model(h_eager)
    torch.testing.assert_close(h, h_eager, rtol=0, atol=0)
    assert cg()["recorded"] == 2 and cg()["replays_copied_out"] == 0


@torch.no_grad()
def test_dropped_results_reuse_one_recording():
    graphed = fake_graphed(MLP())
    for _ in range(5):
        graphed(torch.randn(2, 8))
    assert cg()["recorded"] == 1 and cg()["replays"] == 4


def test_input_writes_reach_the_callers_tensor():
    def step(x, acc):
        acc.add_(x)
        return acc * 2, acc, acc[1:]

    graphed = fake_graphed(step)
    acc, acc_eager = torch.zeros(3), torch.zeros(3)
    for _ in range(4):
        x = torch.randn(3)
        version = acc._version
        doubled, same, view = graphed(x, acc)
        expected = step(x, acc_eager)
        assert torch.equal(acc, acc_eager) and torch.equal(doubled, expected[0])
        assert same is acc and view._base is acc and acc._version > version
    assert cg()["replays"] == 3


@torch.no_grad()
def test_results_keep_eagers_view_relations_and_layouts():
    class Views(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            y = (x * 2).t()
            return y, (x + 1)[1:], self.weight.t(), self.weight, x[:0] * 3

    model = Views()
    graphed = fake_graphed(model)
    for _ in range(3):
        x = torch.randn(3, 4)
        got, expected = graphed(x), model(x)
        for g, e in zip(got, expected):
            assert torch.equal(g, e) and g.stride() == e.stride() and g._is_view() == e._is_view()
        assert got[2]._base is model.weight and got[3] is model.weight
    assert cg()["replays"] == 2


def test_broadcast_inputs_are_copied_once_per_element():
    graphed = fake_graphed(lambda x: x * 2)
    for _ in range(3):
        x = torch.randn(1, 4).expand(3, 4)
        assert torch.equal(graphed(x), x * 2)
    assert cg()["replays"] == 2 and not skips()


def test_module_buffers_written_in_place_advance_once_per_call():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))

        def forward(self, x):
            self.steps.add_(1)
            return x * self.steps

    model = Counter()
    graphed = cdynamo.compile(model, backend=fake_backend(FakeRuntime()))
    x = torch.ones(2)
    results = [graphed(x).clone() for _ in range(4)]
    assert [r[0].item() for r in results] == [1.0, 2.0, 3.0, 4.0]
    assert model.steps.item() == 4.0 and cg()["replays"] == 3


def test_writes_a_backend_hides_from_version_counters_are_still_copied_back():
    def step(x):
        x.data.add_(1)  # through .data: the caller's version counter does not move
        return x * 1

    graphed = fake_graphed(step)
    x = torch.zeros(2)
    for call in range(1, 4):
        graphed(x)
        assert torch.equal(x, torch.full((2,), float(call)))


@torch.no_grad()
def test_a_new_shape_records_another_graph_up_to_the_limit():
    model = MLP()
    with config.patch(cudagraphs_max_graphs=2):
        graphed = fake_graphed(model)
    for rows in (2, 2, 3, 3, 2):
        x = torch.randn(rows, 8)
        torch.testing.assert_close(graphed(x), model(x), rtol=0, atol=0)
    assert cg()["recorded"] == 2 and cg()["replays"] == 3
    with pytest.warns(UserWarning, match="more than 2 input signatures"):
        torch.testing.assert_close(graphed(x := torch.randn(5, 8)), model(x), rtol=0, atol=0)
    assert list(skips()) == ["more than 2 input signatures (shapes, dtypes, non-tensor values) for one function "
                             "(config.cudagraphs_max_graphs)"]


def test_non_tensor_arguments_select_their_own_recording():
    graphed = cudagraphify(lambda x, scale: x * scale, runtime=FakeRuntime())
    x = torch.randn(3)
    for scale in (2.0, 2.0, 3.0, 3.0, 2.0):
        assert torch.equal(graphed(x, scale), x * scale)
    assert cg()["recorded"] == 2 and cg()["replays"] == 3


@pytest.mark.parametrize("syncing", [
    lambda x: x * x.sum().item(),
    lambda x: torch.nonzero(x > 0).float().sum() + x,
])
def test_graphs_that_sync_run_without_a_graph_and_say_why(syncing):
    runtime = FakeRuntime()
    graphed = fake_graphed(syncing, runtime)
    x = torch.randn(5)
    assert torch.equal(graphed(x), syncing(x))  # warm-up: sees the sync
    with pytest.warns(UserWarning, match="synchronizes with the CPU"):
        assert torch.equal(graphed(x), syncing(x))
    assert torch.equal(graphed(x), syncing(x))
    [(reason, count)] = skips().items()
    assert reason.startswith("the graph synchronizes with the CPU") and count == 2
    assert runtime.captures == runtime.failed_captures == 0  # never tried


def test_a_failed_capture_runs_the_callable_and_says_why():
    runtime = FakeRuntime()

    def forbidden_in_capture(x):
        if runtime.capturing:  # what a stream query or an event wait does under capture
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        return x * 2

    graphed = cudagraphify(forbidden_in_capture, runtime=runtime)
    x = torch.randn(3)
    for _ in range(3):
        assert torch.equal(graphed(x), x * 2)
    [(reason, count)] = skips().items()
    assert reason.startswith("the graph does work that stream capture forbids") and count == 2
    assert runtime.failed_captures == 1 and cg()["recorded"] == 0


def test_training_graphs_are_not_recorded():
    model = MLP()
    graphed = fake_graphed(model)
    x = torch.randn(2, 8)
    for _ in range(3):
        result = graphed(x)
        result.sum().backward()  # eager autograd still works: the callable ran as it is
    assert list(skips()) == [policy.autograd_reason([x.requires_grad_()], True)]
    assert model.fc1.weight.grad is not None and cg()["recorded"] == 0


def test_a_written_input_sharing_memory_with_another_runs_without_a_graph():
    def write_first(a, b):
        a.add_(1)
        return a + b

    graphed = fake_graphed(write_first)
    a, b = torch.zeros(4), torch.ones(4)
    graphed(a, b)
    graphed(a, b)  # recorded: a and b are separate
    base = torch.zeros(4)
    expected_base = base.clone()
    expected = write_first(expected_base, expected_base)
    assert torch.equal(graphed(base, base), expected) and torch.equal(base, expected_base)
    assert any(reason.startswith("an input written in place shares memory") for reason in skips())


@torch.no_grad()
def test_replaced_and_moved_parameters_give_new_recordings():
    model = MLP()
    graphed = fake_graphed(model)
    x = torch.randn(2, 8)
    graphed(x), graphed(x)
    model.fc1.weight = torch.nn.Parameter(torch.randn(8, 8))
    torch.testing.assert_close(graphed(x), model(x), rtol=0, atol=0)
    model.fc2.bias.data = torch.randn(8)
    torch.testing.assert_close(graphed(x), model(x), rtol=0, atol=0)
    for _ in range(2):
        torch.testing.assert_close(graphed(x), model(x), rtol=0, atol=0)
    assert cg()["invalidated: a parameter or buffer was replaced"] == 1
    assert cg()["invalidated: a parameter or buffer moved to other memory"] == 1
    assert cg()["replays"] >= 2


def test_nested_capture_and_keyword_calls_run_the_callable():
    runtime = FakeRuntime()
    graphed = cudagraphify(lambda x, k=1: x + k, runtime=runtime)
    assert torch.equal(graphed(torch.ones(2), k=2), torch.full((2,), 3.0))
    runtime.capturing = True
    assert torch.equal(graphed(torch.ones(2)), torch.full((2,), 2.0))
    assert set(skips()) == {"keyword arguments", "called while another CUDA graph is being captured"}


@torch.no_grad()
def test_frontend_graphs_run_through_the_wrapper():
    model = MLP()
    runtime = FakeRuntime()
    compiled = cdynamo.compile(model, backend=fake_backend(runtime))
    for _ in range(4):
        x = torch.randn(3, 8)
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert cg()["recorded"] == 1 and cg()["replays"] == 3


# ---- the "cudagraphs" backend, modes and options ----------------------------------------------

def test_cudagraphs_backend_is_registered():
    assert "cudagraphs" in cdynamo.list_backends()
    assert cdynamo.lookup_backend("cudagraphs") is cdynamo.cudagraphs.cudagraphs


def test_cpu_graphs_say_why_they_run_without_cuda_graphs():
    fn = cdynamo.compile(lambda x: x.sin() + 1, backend="cudagraphs")
    x = torch.randn(4)
    with pytest.warns(UserWarning, match="CPU tensors in the graph"):
        assert torch.equal(fn(x), x.sin() + 1)
    [(reason, count)] = skips().items()
    assert reason.startswith("CPU tensors in the graph") and count == 1


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
def test_every_torch_mode_compiles_with_the_inductor(mode):
    fn = cdynamo.compile(lambda x: x.cos() * 2, mode=mode)
    x = torch.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(fn(x), x.cos() * 2)
    wrapped = mode in ("reduce-overhead", "max-autotune")
    assert (sum(skips().values()) == 1) == wrapped  # CPU: wrapped, and running without CUDA graphs


def test_modes_set_the_knobs_the_inductor_reads(monkeypatch):
    from cdynamo.inductor import compile_fx as compile_fx_module

    seen = []
    real = compile_fx_module.compile_fx

    def spy(gm, example_inputs):
        seen.append((config.max_autotune, config.cudagraphs))
        return real(gm, example_inputs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", spy)
    for mode in ("max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead", "default"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cdynamo.compile(lambda x: x + 1, mode=mode)(torch.randn(2))
    assert seen == [(True, True), (True, False), (False, True), (False, False)]
    assert (config.max_autotune, config.cudagraphs) == (False, False)  # only while compiling


def test_unknown_modes_and_options_are_clear_errors():
    with pytest.raises(exc.InvalidCompileOption, match="valid modes: 'default', 'reduce-overhead', "
                       "'max-autotune', 'max-autotune-no-cudagraphs'"):
        cdynamo.compile(lambda x: x, mode="fastest")
    with pytest.raises(exc.InvalidCompileOption, match="either mode or options"):
        cdynamo.compile(lambda x: x, mode="reduce-overhead", options={"cudagraphs": True})
    with pytest.raises(exc.InvalidCompileOption, match="unknown option 'epilogue_fusion'; valid options: .*cudagraphs"):
        cdynamo.compile(lambda x: x, options={"epilogue_fusion": True})
    with pytest.raises(exc.InvalidCompileOption, match="'cudagraphs_max_graphs' takes a int"):
        cdynamo.compile(lambda x: x, options={"cudagraphs_max_graphs": True})


def test_options_in_cdynamo_and_torch_spelling_hold_while_the_backend_compiles():
    seen = []

    def backend(gm, example_inputs):
        seen.append((config.cudagraphs, config.max_autotune, config.cudagraphs_max_graphs))
        return gm.forward

    options = {"triton.cudagraphs": True, "max-autotune": True, "cudagraphs_max_graphs": 3}
    cdynamo.compile(lambda x: x * 3, backend=backend, options=options)(torch.ones(1))
    assert seen == [(True, True, 3)] and config.cudagraphs_max_graphs == 8


def test_other_backends_take_a_mode_only_as_a_keyword():
    with pytest.raises(exc.InvalidCompileOption, match="backend 'eager' takes no mode.*backend='cudagraphs'"):
        cdynamo.compile(lambda x: x, backend="eager", mode="reduce-overhead")
    cdynamo.compile(lambda x: x, backend="eager", mode="default")  # nothing to pass on
    modes = []

    def backend(gm, example_inputs, mode=None):
        modes.append(mode)
        return gm.forward

    cdynamo.compile(lambda x: x - 1, backend=backend, mode="max-autotune")(torch.ones(1))
    assert modes == ["max-autotune"]


def test_one_configured_backend_per_setting_so_compiled_entries_are_shared():
    first = cdynamo.compile(lambda x: x, mode="reduce-overhead")._callback[0]
    second = cdynamo.compile(lambda x: x, mode="reduce-overhead")._callback[0]
    assert first is second and first.__name__ == "inductor"


# ---- on a GPU ----------------------------------------------------------------------------------

@requires_cuda
@torch.no_grad()
@pytest.mark.parametrize("how", [dict(backend="cudagraphs"), dict(mode="reduce-overhead")])
def test_cuda_replays_match_eager(how):
    model = MLP(32).cuda()
    compiled = cdynamo.compile(model, **how)
    for _ in range(6):
        x = torch.randn(16, 32, device="cuda")
        torch.testing.assert_close(compiled(x), model(x))
    assert cg()["recorded"] == 1 and cg()["replays"] == 5 and not skips()


@requires_cuda
@torch.no_grad()
def test_cuda_kept_results_keep_their_values():
    model = MLP(32).cuda()
    compiled = cdynamo.compile(model, backend="cudagraphs")
    inputs = [torch.randn(4, 32, device="cuda") for _ in range(5)]
    kept = [compiled(x) for x in inputs]
    for x, result in zip(inputs, kept):
        torch.testing.assert_close(result, model(x))
    assert cg()["replays_copied_out"] == 2


@requires_cuda
def test_cuda_input_writes_reach_the_callers_tensor():
    @cdynamo.optimize("cudagraphs")
    def accumulate(x, acc):
        acc.add_(x)
        return acc * 2

    acc, expected = torch.zeros(8, device="cuda"), torch.zeros(8, device="cuda")
    for _ in range(4):
        x = torch.randn(8, device="cuda")
        expected += x
        torch.testing.assert_close(accumulate(x, acc), expected * 2)
        torch.testing.assert_close(acc, expected)
    assert cg()["replays"] == 3


@requires_cuda
@torch.no_grad()
def test_cuda_new_shape_records_a_second_graph():
    model = MLP(32).cuda()
    compiled = cdynamo.compile(model, backend="cudagraphs", dynamic=False)
    for rows in (4, 4, 8, 8, 4, 8):
        x = torch.randn(rows, 32, device="cuda")
        torch.testing.assert_close(compiled(x), model(x))
    assert cg()["recorded"] == 2 and cg()["replays"] == 4


@requires_cuda
@pytest.mark.parametrize("syncing", [
    lambda x: x * x.sum().item(),
    lambda x: torch.nonzero(x > 0).float().sum() + x,
])
def test_cuda_syncing_graph_runs_without_a_graph(syncing):
    graphed = cdynamo.cudagraphs.cudagraphs(torch.fx.symbolic_trace(syncing), [])
    x = torch.randn(64, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(graphed(x), syncing(x))
    assert any(reason.startswith("the graph synchronizes with the CPU") for reason in skips())
    torch.testing.assert_close((x + 1).sum(), x.sum() + 64)  # the CUDA context still works


@requires_cuda
def test_cuda_failed_capture_leaves_the_device_usable():
    def queries_stream(x):
        torch.cuda.current_stream().query()  # fine eagerly, forbidden under stream capture
        return x * 2

    graphed = cudagraphify(queries_stream)
    x = torch.randn(64, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(graphed(x), x * 2)
    assert any(reason.startswith("the graph does work that stream capture forbids") for reason in skips())
    assert torch.rand(8, device="cuda").max() <= 1  # the random generator left capture mode
    again = cudagraphify(lambda x: x + 1)
    for _ in range(3):
        torch.testing.assert_close(again(x), x + 1)
    assert cg()["recorded"] == 1


@requires_cuda
@torch.no_grad()
def test_cuda_graphs_really_replay_and_keep_held_results_apart():
    model_a, model_b = MLP(32).cuda(), MLP(32).cuda()
    first = cdynamo.compile(model_a, backend="cudagraphs")
    second = cdynamo.compile(model_b, backend="cudagraphs")
    inputs = [torch.randn(4, 32, device="cuda") for _ in range(6)]
    kept = [(first(x), second(x)) for x in inputs]  # every result held: later replays must not touch them
    for x, (a, b) in zip(inputs, kept):
        torch.testing.assert_close(a, model_a(x))
        torch.testing.assert_close(b, model_b(x))
    assert cg()["replays"] == 10 and cg()["replays_copied_out"] == 6  # 2 recordings each, then copies
    del kept, a, b
    copied = cg()["replays_copied_out"]
    for x in inputs[:3]:  # results dropped at once: replays hand out the recording's own memory
        torch.testing.assert_close(first(x), model_a(x))
    assert cg()["replays_copied_out"] == copied


@requires_cuda
def test_cuda_cpu_inputs_say_why():
    fn = cdynamo.optimize("cudagraphs")(lambda x, y: x + y.cuda())
    fn(torch.randn(3, device="cuda"), torch.randn(3))
    assert any(reason.startswith("CPU tensors") for reason in skips())


@torch.no_grad()
def test_reduce_overhead_compiles_a_symbolic_program_once_and_records_per_size(monkeypatch):
    from cdynamo.cudagraphs import runtime as runtime_module

    fake = FakeRuntime()
    monkeypatch.setattr(runtime_module, "cuda_runtime", lambda: fake)
    model = MLP()
    compiled = cdynamo.compile(model, backend="inductor", mode="reduce-overhead")
    with config.patch(graph_cache=False):  # each graph compiled here, never read from disk
        for rows in (2, 3, 5, 3, 5, 9, 3):
            x = torch.randn(rows, 8)
            torch.testing.assert_close(compiled(x), model(x))
    assert counters["dynamic"]["symbolic programs"] == 1
    assert counters["inductor"]["graphs"] == 2  # rows 2, then one program for every size
    # Each size warms up once, then records at its second call and replays from then on.
    assert cg()["recorded"] == 2 and cg()["replays"] == 3
