"""What real modules do in forward, compiled as eager runs it: writes to their own buffers (step
counters, running statistics, BatchNorm in training mode) reach the module's tensors on every call
and never happen while tracing; recurrent layers' nested results are real tensors; x.type(dtype)
converts; a slice of an nn.Sequential is callable. Found by a corpus of GitHub-style modules."""
import copy

import pytest
import torch

import cdynamo
from cdynamo.inductor import compile_fx
from cdynamo.testing import CompileCounter, same


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


class StepCounter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros(2))
        self.register_buffer("running", torch.ones(3))

    def forward(self, x):
        self.step.add_(1)
        self.running.mul_(0.5).add_(x.mean(0))
        return x * self.step.sum() + self.running


def run_both(model, calls, *inputs, backend="inductor"):
    eager, compiled = model, copy.deepcopy(model)
    fn = cdynamo.optimize(backend)(compiled)
    with torch.no_grad():
        for _ in range(calls):
            expected, got = eager(*inputs), fn(*inputs)
            assert same(got, expected)
            for (name, a), (_, b) in zip(eager.state_dict().items(), compiled.state_dict().items()):
                torch.testing.assert_close(b, a, msg=name)  # fused kernels may round differently
    return compiled


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_buffer_writes_reach_the_module_on_every_call(backend):
    run_both(StepCounter(), 3, torch.randn(4, 3), backend=backend)


def test_batchnorm_in_training_mode_updates_its_running_statistics():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).train()
    compiled = run_both(model, 2, torch.randn(2, 3, 8, 8))
    assert compiled[1].num_batches_tracked.item() == 2


def test_tracing_never_writes_the_real_buffer():
    model = StepCounter()
    seen = {}

    def trace_only(gm, example_inputs):
        state = gm.state_dict(keep_vars=True)
        before = {k: v.clone() for k, v in state.items()}
        aten_gm = compile_fx.aten_graph(gm, example_inputs)
        seen["unchanged"] = all(torch.equal(before[k], v) for k, v in state.items())
        seen["written"] = {id(t) for t in aten_gm.meta["written_state"]} == {id(t) for t in state.values()}
        return gm.forward

    with torch.no_grad():
        cdynamo.optimize(trace_only)(model)(torch.randn(4, 3))
    assert seen == {"unchanged": True, "written": True}
    assert torch.equal(model.step, torch.ones(2))  # once: the call itself


@pytest.mark.parametrize("make", [
    lambda: torch.nn.LSTM(3, 2, batch_first=True),
    lambda: torch.nn.LSTM(3, 2, num_layers=2, bidirectional=True),
    lambda: torch.nn.GRU(3, 2),
    lambda: torch.nn.GRU(3, 2, bidirectional=True),  # its h_n is a cat of two [3, 2] buffers
])
@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_recurrent_layers_return_real_states(make, backend):
    torch.manual_seed(0)
    layer = make().eval()
    x = torch.randn(3, 4, 3)
    with torch.no_grad():
        expected = layer(x)
        got = cdynamo.optimize(backend)(lambda x: layer(x))(x)
    assert same(got, expected)
    flat = [got[0], *(got[1] if isinstance(got[1], tuple) else (got[1],))]
    assert all(type(t) is torch.Tensor for t in flat)


def test_type_with_a_dtype_converts_and_without_one_names_the_type():
    fn = lambda x: ((x * 2).type(torch.float64) + 1, x.type())  # noqa: E731
    x = torch.ones(3)
    got = cdynamo.optimize("eager")(fn)(x)
    assert type(got[0]) is torch.Tensor and got[0].dtype == torch.float64 and same(got[0], fn(x)[0])
    assert got[1] == "torch.FloatTensor"


def test_a_slice_of_a_sequential_is_callable():
    seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    fn = lambda x: seq[:2](x) + seq[2:](x)  # noqa: E731
    x = torch.randn(2, 4)
    assert same(cdynamo.optimize("eager")(fn)(x), fn(x))


class _PooledBranch(torch.nn.Sequential):
    """torchvision's ASPPPooling: a Sequential whose own forward resizes what its layers give."""

    def forward(self, x):
        size = x.shape[-2:]
        for layer in self:
            x = layer(x)
        return torch.nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False)


def test_a_sequential_subclass_runs_its_own_forward():
    branch = _PooledBranch(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Conv2d(4, 3, 1), torch.nn.ReLU())
    x = torch.randn(1, 4, 8, 8)
    out = cdynamo.explain(branch)(x)
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.out.shape == (1, 3, 8, 8) and same(out.out, branch(x))
    # Its slices are instances of the subclass: calling one runs that forward too, in eager.
    fn = lambda x: branch[:2](x)  # noqa: E731
    assert same(cdynamo.optimize("eager")(fn)(x), fn(x))


def test_reversed_over_a_module_list_and_a_list_of_tensors():
    from cdynamo.testing import CompileCounter

    blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])

    def fn(x):
        feats = []
        for block in reversed(blocks):
            x = block(x)
            feats.append(x)
        return sum(f * k for k, f in enumerate(reversed(feats)))

    counter = CompileCounter()
    x = torch.randn(2, 4)
    assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert counter.frame_count == 1


@pytest.mark.parametrize("m, n", [(3, 2), (4, 2), (3, 3)])
def test_a_cat_of_two_small_matmul_results(m, n):
    # g++ 12 -O3 -march=native miscompiled this scalar kernel's conditional loads for [3, 2]
    # (the first row of the second part read zeros) until loop if-conversion was turned off.
    a, w1, w2 = torch.randn(m, 4), torch.randn(4, n), torch.randn(4, n)
    fn = lambda a, w1, w2: torch.cat([a @ w1, a @ w2])  # noqa: E731
    with torch.no_grad():
        assert same(cdynamo.optimize("inductor")(fn)(a, w1, w2), fn(a, w1, w2))


class KeepsTensors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("last", torch.zeros(2, 4))

    def forward(self, x):
        y = self.lin(x)
        self.attn = y.softmax(-1)  # kept for visualisation: a plain attribute
        self.last = y.detach() * 2  # a registered buffer, replaced
        return y + self.attn


def test_tensors_assigned_to_module_attributes_and_buffers_as_in_eager():
    from cdynamo.testing import CompileCounter
    from cdynamo.utils import counters

    eager, compiled = KeepsTensors(), KeepsTensors()
    compiled.load_state_dict(eager.state_dict())
    counter = CompileCounter()
    fn = cdynamo.optimize(counter)(compiled)
    x = torch.randn(2, 4)
    for _ in range(2):
        assert same(fn(x), eager(x))
        assert same(compiled.attn, eager.attn) and same(compiled.last, eager.last)
        assert "last" in compiled._buffers and "attn" not in compiled._buffers
    assert counter.frame_count == 1 and not counters["graph_break"]


def test_assigning_a_tensor_to_a_parameter_raises_as_in_eager():
    lin = torch.nn.Linear(2, 2)

    def fn(x):
        lin.weight = x * 2
        return x

    with pytest.raises(TypeError, match="cannot assign"):
        fn(torch.randn(2, 2))
    with cdynamo.config.patch(suppress_errors=True), pytest.raises(TypeError, match="cannot assign"):
        cdynamo.optimize("eager")(fn)(torch.randn(2, 2))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_non_reentrant_checkpointing_counts_only_the_forwards_saved_tensors(backend):
    # The trace's fake runs happened inside the checkpoint's saved-tensor hooks: counted 6, not 3.
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    fn = lambda x: checkpoint(block, x, use_reentrant=False) * 2  # noqa: E731
    x = torch.randn(2, 4, requires_grad=True)
    fn(x).sum().backward()
    expected = [p.grad.clone() for p in block.parameters()]
    block.zero_grad(set_to_none=True)
    with cdynamo.config.patch(suppress_errors=True):
        cdynamo.optimize(backend)(fn)(x).sum().backward()
    assert all(same(p.grad, e) for p, e in zip(block.parameters(), expected))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_sequential_is_one_graph_with_eagers_gradients(backend):
    from torch.utils.checkpoint import checkpoint_sequential

    torch.manual_seed(0)
    seq = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()) for _ in range(4)])
    fn = lambda x: checkpoint_sequential(seq, 2, x, use_reentrant=False) * 2  # noqa: E731
    x = torch.randn(3, 4, requires_grad=True)
    fn(x).sum().backward()
    expected = [p.grad.clone() for p in seq.parameters()] + [x.grad.clone()]
    seq.zero_grad(set_to_none=True)
    x.grad = None
    explained = cdynamo.explain(fn)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    cdynamo.compile(fn, backend=backend, fullgraph=True)(x).sum().backward()
    assert all(same(a, b) for a, b in zip([p.grad for p in seq.parameters()] + [x.grad], expected))


class EmaCodebook(torch.nn.Module):
    """A VQ-VAE codebook's EMA update: writes through `.data` (a graph input sharing the buffer's
    memory), then reads the buffer itself in the same graph."""

    def __init__(self):
        super().__init__()
        self.register_buffer("avg", torch.randn(8, 4))
        self.register_buffer("counts", torch.tensor([0.2, 0.0, 0.4, 0.0, 0.0, 0.3, 0.1, 0.0]))
        self.register_buffer("embed", torch.zeros(8, 4))

    def forward(self, x):
        self.avg.data.mul_(0.9).add_(x, alpha=0.1)
        n = self.counts.sum()
        smoothed = (self.counts + 1e-5) / (n + 8e-5) * n
        self.embed.copy_(self.avg / smoothed.unsqueeze(1))
        return self.embed.sum()


def test_a_buffer_written_through_data_and_read_in_one_graph():
    torch.manual_seed(0)
    run_both(EmaCodebook(), 3, torch.randn(8, 4))


class FreezesItsBatchNorm(torch.nn.Module):
    """Detection backbones switch batch norms to eval inside forward."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.frozen = torch.nn.BatchNorm2d(4)
        self.live = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        for name, m in self.named_modules():
            if isinstance(m, torch.nn.BatchNorm2d) and name == "frozen":
                m.eval()
        return self.live(self.frozen(self.conv(x))), self.frozen.training


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_module_eval_inside_forward_applies_to_the_layers_called_after_it(backend):
    model = FreezesItsBatchNorm()
    reference = copy.deepcopy(model)
    compiled = cdynamo.compile(model, backend=backend, fullgraph=True)
    for _ in range(2):
        x = torch.randn(2, 3, 5, 5)
        got, want = compiled(x), reference(x)
        assert same(got[0], want[0]) and got[1] is want[1] is False
    assert not model.frozen.training and model.live.training
    for name, buffer in reference.named_buffers():
        assert same(dict(model.named_buffers())[name], buffer), name  # the frozen one's stats never move


class RenormalisesItsWeight(torch.nn.Module):
    """ArcFace/NormFace heads renormalise their weight through .data in forward."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(5, 8))

    def forward(self, x):
        self.weight.data = torch.nn.functional.normalize(self.weight.data, dim=1)
        return torch.nn.functional.linear(x, self.weight) * 2


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_assigning_tensor_data_in_forward_is_one_graph_with_eagers_values_and_gradients(backend):
    model = RenormalisesItsWeight()
    reference = copy.deepcopy(model)
    compiled = cdynamo.compile(model, backend=backend, fullgraph=True)
    for _ in range(2):
        x = torch.randn(3, 8)
        compiled(x).sum().backward()
        reference(x).sum().backward()
        assert same(model.weight, reference.weight) and same(model.weight.grad, reference.weight.grad)


def test_assigning_tensor_data_of_another_shape_breaks_the_graph_with_the_reason():
    class Grows(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("memory", torch.zeros(2))

        def forward(self, x):
            self.memory.data = torch.cat([self.memory, x.sum().reshape(1)])
            return self.memory * 2

    model, reference = Grows(), Grows()
    x = torch.randn(3, 1)
    assert same(cdynamo.compile(model, backend="eager")(x), reference(x))
    assert model.memory.shape == reference.memory.shape == (3,)
    with pytest.raises(cdynamo.exc.Unsupported, match="another shape"):
        cdynamo.reset()
        cdynamo.compile(Grows(), backend="eager", fullgraph=True)(x)


class LazyLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.LazyConv2d(4, 3)
        self.fc = torch.nn.LazyLinear(5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_lazy_modules_initialise_on_the_first_call_as_in_eager_and_stay_one_graph():
    torch.manual_seed(0)
    eager = LazyLayers()
    torch.manual_seed(0)
    compiled_model = LazyLayers()
    x = torch.randn(2, 3, 6, 6)
    counter = CompileCounter()
    compiled = cdynamo.compile(compiled_model, backend=counter, fullgraph=True)
    torch.manual_seed(1)
    want = eager(x)
    torch.manual_seed(1)
    got = compiled(x)
    torch.testing.assert_close(got, want)  # the same parameters, drawn in the same order
    assert type(compiled_model.fc) is torch.nn.Linear and type(compiled_model.conv) is torch.nn.Conv2d
    torch.testing.assert_close(compiled(x), eager(x))
    assert counter.frame_count == 1


class QuantReady(torch.nn.Module):
    """Eager-mode quantization's markers in a float model before prepare/convert."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.dequant = torch.ao.quantization.DeQuantStub()
        self.skip = torch.ao.nn.quantized.FloatFunctional()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.quant(x)
        y = self.skip.add(self.fc(x), x)
        return self.dequant(self.skip.mul_scalar(y, 0.5))


def test_quantization_stubs_and_float_functional_are_traced():
    model, x = QuantReady().eval(), torch.randn(3, 4)
    counter = CompileCounter()
    torch.testing.assert_close(cdynamo.compile(model, backend=counter, fullgraph=True)(x), model(x))
    assert counter.frame_count == 1


class Delegating(torch.nn.Module):
    """A wrapper whose __getattr__ hands unknown names to the module it wraps (PEFT's style)."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(3, 3)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)

    def forward(self, x):
        return x @ self.weight.t() + self.bias, self.out_features


def test_module_getattr_delegation_returns_the_wrapped_modules_parameters():
    m = Delegating()
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(m)
    x = torch.randn(2, 3)
    out, features = compiled(x)
    want, want_features = m(x)
    assert same(out, want) and features == want_features == 3 and counter.frame_count == 1
    # They stay parameters of the graph: gradients reach them, and an in-place update is seen.
    out.sum().backward()
    assert m.inner.weight.grad is not None and same(m.inner.weight.grad, x.sum(0).expand(3, 3))
    with torch.no_grad():
        m.inner.bias.add_(1)
    assert same(compiled(x)[0], m(x)[0]) and counter.frame_count == 1
    # A parameter of that name on the wrapper itself now wins, as in eager: the trace is redone.
    m._parameters["weight"] = torch.nn.Parameter(torch.eye(3))  # (register_parameter refuses: hasattr finds it)
    assert same(compiled(x)[0], m(x)[0]) and counter.frame_count == 2


class GrowingRotaryCache(torch.nn.Module):
    """Rotary embeddings' cache, rebuilt with register_buffer when a longer sequence arrives."""

    def __init__(self):
        super().__init__()
        self.cached = 2
        self.register_buffer("cos_cached", torch.arange(2.0).cos(), persistent=False)

    def forward(self, x):
        n = x.shape[0]
        if n > self.cached:
            self.cached = n
            self.register_buffer("cos_cached", torch.arange(n, dtype=x.dtype).cos(), persistent=False)
        return x * self.cos_cached[:n]


def test_register_buffer_replacing_a_buffer_in_forward_is_traced():
    eager, compiled_module = GrowingRotaryCache(), GrowingRotaryCache()
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(compiled_module)
    for n in (2, 5, 3, 7):
        x = torch.randn(n)
        assert same(compiled(x), eager(x))
        assert compiled_module.cached == eager.cached
        assert same(compiled_module.cos_cached, eager.cos_cached)
    assert "cos_cached" not in compiled_module.state_dict()


class LateBuffer(torch.nn.Module):
    def forward(self, x):
        if not hasattr(self, "late"):
            self.register_buffer("late", x.sum().reshape(1))
        return x + self.late


def test_register_buffer_of_a_new_name_breaks_and_registers_it():
    eager, compiled_module = LateBuffer(), LateBuffer()
    compiled = cdynamo.optimize(CompileCounter())(compiled_module)
    x = torch.randn(3)
    assert same(compiled(x), eager(x))
    assert [name for name, _ in compiled_module.named_buffers()] == ["late"]
    assert same(compiled_module.late, eager.late)


def test_a_slice_of_a_container_module_is_of_its_class_inside_and_outside():
    import collections

    seq = torch.nn.Sequential(collections.OrderedDict(a=torch.nn.Linear(3, 3), b=torch.nn.ReLU(), c=torch.nn.Linear(3, 2)))
    layers = torch.nn.ModuleList([torch.nn.Linear(3, 3), torch.nn.ReLU()])

    def fn(x):
        head, rest = seq[:1], layers[1:]
        facts = (type(head).__name__, isinstance(head, torch.nn.Sequential), isinstance(head, torch.nn.Module),
                 type(rest).__name__, isinstance(rest, torch.nn.ModuleList), len(head))
        return facts, head(x), seq[1:]

    counter = CompileCounter()
    x = torch.randn(4, 3)
    facts, out, tail = cdynamo.compile(fn, backend=counter, fullgraph=True)(x)
    eager_facts, eager_out, eager_tail = fn(x)
    assert facts == eager_facts and same(out, eager_out)
    assert type(tail) is torch.nn.Sequential and list(tail._modules) == ["b", "c"] and tail.c is seq.c
    assert counter.frame_count == 1


@pytest.mark.parametrize("shadowed", [False, True])
def test_a_class_level_value_a_module_reads_is_guarded(shadowed):
    # The value comes from the class: changed there, or shadowed by an instance attribute, between
    # calls, the next call reads the new value (a recompile), as eager does.
    class Scaled(torch.nn.Module):
        scale = 2.0
        use_bias = False

        def forward(self, x):
            return x * self.scale + (1 if self.use_bias else 0)

    model = Scaled()
    counter = CompileCounter()
    compiled = cdynamo.compile(lambda x: model(x), backend=counter)
    x = torch.ones(2)
    assert same(compiled(x), model(x))
    if shadowed:
        model.scale, model.use_bias = 9.0, True
    else:
        Scaled.scale, Scaled.use_bias = 5.0, True
    assert same(compiled(x), model(x))
    assert counter.frame_count == 2


def test_a_method_patched_on_the_module_class_between_calls_recompiles():
    class Helper(torch.nn.Module):
        def scale(self, x):
            return x * 2

        def forward(self, x):
            return self.scale(x) + 1

    model = Helper()
    counter = CompileCounter()
    compiled = cdynamo.compile(lambda x: model(x), backend=counter)
    x = torch.ones(2)
    assert same(compiled(x), model(x))
    Helper.scale = lambda self, x: x * 5
    assert same(compiled(x), model(x))
    assert counter.frame_count == 2
