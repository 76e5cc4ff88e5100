"""nn.Module.__call__'s hooks under cdynamo, as eager runs them: forward pre-hooks and forward
hooks traced into the graph (their Python side effects made once, with real tensors), hooks
registered or removed after compiling seen from the next call on (a recompile), backward hooks
outside the graph; compiled modules and functions called from compiled code."""
import functools

import pytest
import torch
from torch import nn

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x).relu()


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) + 1


def test_hooks_registered_and_removed_after_compiling_take_effect_on_the_next_call():
    model, counter = Outer(), CompileCounter()
    compiled = cdynamo.optimize(counter)(model)
    x = torch.randn(2, 3)
    assert same(compiled(x), model(x)) and counter.frame_count == 1
    zeroing = model.block.register_forward_hook(lambda module, args, out: out * 0)
    assert same(compiled(x), model(x)) and same(compiled(x), torch.ones(2, 3))
    doubling = model.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
    assert same(compiled(x), model(x))
    assert counter.frame_count == 3
    zeroing.remove()
    doubling.remove()
    assert same(compiled(x), model(x))
    assert not counters["graph_break"]


def test_a_hook_on_a_layer_records_real_tensors_once():
    model, counter = Outer(), CompileCounter()
    features = []
    model.block.linear.register_forward_hook(lambda module, args, out: features.append(out))
    compiled = cdynamo.optimize(counter)(model)
    x = torch.randn(2, 3)
    result = compiled(x)
    assert len(features) == 1 and type(features[0]) is torch.Tensor
    assert same(features[0], model.block.linear(x)) and same(result, model(x))
    assert counter.frame_count == 1 and not counters["graph_break"]


def test_hooks_with_keyword_arguments_and_global_hooks():
    model, counter = Outer(), CompileCounter()
    model.block.linear.register_forward_pre_hook(lambda module, args, kwargs: ((args[0] * 3,), kwargs), with_kwargs=True)
    model.block.register_forward_hook(lambda module, args, kwargs, out: out - args[0].sum(), with_kwargs=True)
    handle = nn.modules.module.register_module_forward_hook(
        lambda module, args, out: out * 2 if isinstance(module, nn.Linear) else None)
    try:
        x = torch.randn(2, 3)
        assert same(cdynamo.optimize(counter)(model)(x), model(x))
        assert counter.frame_count == 1 and not counters["graph_break"]
    finally:
        handle.remove()


def test_a_backward_hook_keeps_the_module_call_outside_the_graph():
    model = Outer()
    grads = []
    model.block.register_full_backward_hook(lambda module, grad_in, grad_out: grads.append(grad_out[0]))
    x = torch.randn(2, 3, requires_grad=True)
    cdynamo.optimize("eager")(model)(x).sum().backward()
    assert len(grads) == 1 and same(grads[0], torch.ones(2, 3))
    assert any("has backward hooks" in reason for reason in counters["graph_break"])


def test_compiled_functions_and_modules_called_from_compiled_code_join_its_graph():
    layer = cdynamo.compile(nn.Linear(3, 3), backend="eager")
    sine = cdynamo.optimize("eager")(lambda x: x.sin() * 2)

    def fn(x):
        return layer(x) + sine(x) + 1

    counter = CompileCounter()
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert counter.frame_count == 1 and counter.op_count == 5 and not counters["graph_break"]


class Reparametrized(nn.Module):
    """weight_norm and spectral_norm: forward pre-hooks that are callable objects of torch's."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(2, 4, 3, padding=1))
        self.fc = nn.utils.spectral_norm(nn.Linear(4 * 6, 3), n_power_iterations=2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_weight_norm_and_spectral_norm_hooks_are_traced():
    torch.manual_seed(0)
    eager = Reparametrized().train()
    torch.manual_seed(0)  # weight_norm'd modules cannot be deep-copied: the same seed instead
    compiled_model = Reparametrized().train()
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(compiled_model)
    for _ in range(2):  # spectral_norm's power iteration updates its u and v buffers each call
        x = torch.randn(2, 2, 6)
        assert same(compiled(x), eager(x))
    assert counter.frame_count == 1
    for (name, a), (_, b) in zip(eager.named_buffers(), compiled_model.named_buffers()):
        assert same(a, b), name


class _PicksItsForward(torch.nn.Module):
    """timm's FasterNet Partial_conv3: __init__ stores one of its methods as self.forward."""

    def __init__(self, mode):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.forward = self.forward_shifted if mode == "shifted" else self.forward_scaled

    def forward_shifted(self, x):
        return self.linear(x) + 1

    def forward_scaled(self, x):
        return self.linear(x) * 2


def test_a_forward_stored_on_the_instance_is_the_one_called():
    picked = _PicksItsForward("scaled")
    outer = torch.nn.Sequential(_PicksItsForward("shifted"), picked)
    hook = picked.register_forward_hook(lambda module, args, out: out - 1)
    x = torch.randn(2, 4)
    try:
        explained = cdynamo.explain(outer)(x)
        assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons
        assert torch.allclose(explained.out, outer(x))
    finally:
        hook.remove()


def test_a_hook_that_is_a_method_of_a_module_writes_its_attributes_on_every_call():
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.count = torch.nn.Linear(3, 3), 0
            self.lin.register_forward_hook(self._double)

        def _double(self, module, args, output):
            self.count += 1
            return output * 2

        def forward(self, x):
            return self.lin(x)

    torch.manual_seed(0)
    model = Counting()
    expected = model.lin(torch.ones(2, 3))  # the hook runs: doubled, count 1
    model.count = 0
    compiled = cdynamo.compile(lambda x: (model(x), model.count), backend="eager", fullgraph=True)
    for call in (1, 2, 3):  # (the count is an int the trace reads: each new value recompiles, as in torch.compile)
        out, count = compiled(torch.ones(2, 3))
        assert same(out, expected) and count == call and model.count == call


_hooked_gradients = []


def _record_and_double(grad):
    _hooked_gradients.append(grad.clone())
    return grad * 2


def _scaled(factor, grad):
    return grad * factor


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_tensor_hooks_registered_in_the_function_run_in_backward(backend):
    # On an input: registered after the graph. On a tensor the graph computes: a node whose
    # backward runs the hooks, in the order they were registered.
    def fn(x, w):
        x.register_hook(lambda g: g + 1)
        h = x * w
        h.register_hook(_record_and_double)
        h.register_hook(lambda g: g - 0.5)
        h.register_hook(functools.partial(_scaled, 0.25))  # a partial the function makes
        return h.sin().sum()

    def run(compiled):
        torch.manual_seed(0)
        x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
        _hooked_gradients.clear()
        compiled(x, w).backward()
        return x.grad, w.grad, list(_hooked_gradients)

    expected = run(fn)
    counter = CompileCounter()
    assert same(run(cdynamo.compile(fn, backend=backend, fullgraph=True)), expected)
    cdynamo.reset()
    assert same(run(cdynamo.compile(fn, backend=counter, fullgraph=True)), expected) and counter.frame_count == 1


def test_a_tensor_hook_on_an_already_used_tensor_breaks_the_graph():
    def fn(x):
        h = x * 2
        first = h.sum()
        h.register_hook(lambda g: g * 10)  # eager's hook sees first's gradient too
        return first + h.cos().sum()

    with pytest.raises(cdynamo.exc.Unsupported, match="already used"):
        cdynamo.compile(fn, backend="eager", fullgraph=True)(torch.randn(3, requires_grad=True))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_tensor_hook_closing_over_tensors_the_function_computes(backend):
    # The hook's closure holds w and k (graph values): the hook node takes them as arguments and
    # the hook sees them when backward runs.
    def fn(x):
        w = torch.linspace(0, 1, 3)
        k = x.sum().detach()
        h = x * 2
        h.register_hook(lambda g: g * w + k)
        return h.cos().sum()

    def run(compiled):
        x = torch.arange(3.0, requires_grad=True)
        compiled(x).backward()
        return x.grad

    counter = CompileCounter()
    assert same(run(cdynamo.compile(fn, backend=backend, fullgraph=True)), run(fn))
    cdynamo.reset()
    assert same(run(cdynamo.compile(fn, backend=counter, fullgraph=True)), run(fn)) and counter.frame_count == 1

    def closes_over_a_module(m, x):
        h = x * 2
        h.register_hook(lambda g: m(g))
        return h.sum()

    with pytest.raises(cdynamo.exc.Unsupported, match="closes over a module"):
        cdynamo.compile(closes_over_a_module, backend="eager", fullgraph=True)(nn.Linear(3, 3), torch.randn(3, requires_grad=True))
