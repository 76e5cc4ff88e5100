"""Capture of idioms found by the twelfth session's corpus: sentinels compared with `is`,
missing attributes of Python modules, cache keys holding dtypes and devices, custom ops."""
import dataclasses
import warnings
import types

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same


_MISSING = object()


@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    masks: dict = dataclasses.field(default_factory=dict)


def test_a_container_the_trace_made_is_not_a_sentinel():
    # A dataclass's __init__ compares each default_factory field's value with its sentinel.
    def fn(x, given):
        d, items = {"a": x}, [x]
        batch, passed = Batch(x * 2, {"m": x}), Batch(x, given)  # a dict from the caller, too
        return x + (d is _MISSING) + (items is not _MISSING) * 2 + (given is _MISSING), batch.masks["m"], passed.masks

    counter = CompileCounter()
    given = {"k": torch.ones(2)}
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(torch.ones(2), given), fn(torch.ones(2), given))
    assert counter.frame_count == 1


def test_missing_attributes_of_python_modules_answer_hasattr_and_getattr_defaults():
    import math

    import torch.nn.functional as F

    user_module = types.ModuleType("plugins")

    def fn(x):
        extra = getattr(user_module, "scale", 1.0)
        return x * extra + hasattr(torch, "no_such_backend") + getattr(math, "no_such", 3), getattr(F, "missing", None)

    counter = CompileCounter()
    compiled = cdynamo.compile(fn, backend=counter, fullgraph=True)
    assert same(compiled(torch.ones(2)), fn(torch.ones(2)))
    user_module.scale = 5.0  # the trace relied on its absence: the next call recompiles
    assert same(compiled(torch.ones(2)), fn(torch.ones(2)))
    assert counter.frame_count == 2


def test_a_cache_keyed_by_length_device_and_dtype():
    cache = {}

    def masked(x):
        key = (x.shape[1], x.device, x.dtype, 0.5)
        if key not in cache:
            cache[key] = torch.full((x.shape[1], x.shape[1]), float("-inf"), dtype=x.dtype).triu(1)
        return x @ x.transpose(-1, -2) + cache[key]

    counter = CompileCounter()
    compiled = cdynamo.compile(masked, backend=counter, fullgraph=True)
    for length in (5, 5, 7):
        x = torch.randn(2, length, 3)
        assert same(compiled(x), masked(x))
    assert len(cache) == 2


@torch.library.custom_op("cdynamo_tests::bias_gelu", mutates_args=())
def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + bias)


@bias_gelu.register_fake
def _(x, bias):
    return torch.empty_like(x)


@torch.library.custom_op("cdynamo_tests::scale_into", mutates_args=("out",))
def scale_into(x: torch.Tensor, s: float, out: torch.Tensor) -> None:
    out.copy_(x * s)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_custom_op_called_as_itself_is_a_graph_node(backend):
    def fn(x, b):
        return bias_gelu(x, b) * 2

    x, b = torch.randn(4), torch.randn(4)
    assert same(cdynamo.compile(fn, backend=backend, fullgraph=True)(x, b), fn(x, b))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_custom_op_writing_an_argument_stays_in_the_graph(backend):
    # It returns nothing: its node is kept for what it writes.
    def fn(x):
        out = torch.empty_like(x)
        scale_into(x, 3.0, out)
        torch.ops.cdynamo_tests.scale_into(out, 2.0, out)
        return out + 1

    x = torch.randn(4)
    assert same(cdynamo.compile(fn, backend=backend, fullgraph=True)(x), fn(x))


class _LogTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


class _LogTensorChild(_LogTensor):
    pass


class _Negating(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        result = super().__torch_function__(func, types, args, kwargs or {})
        return -result if func is torch.Tensor.sum else result


def test_results_of_ops_on_a_tensor_subclass_are_of_the_subclass_in_the_trace():
    def fn(t, u, plain):
        r = t.sin() + plain
        return (type(r).__name__, isinstance(r, _LogTensor), type(t.mean()).__name__, type(t[1:]).__name__,
                type(t + u).__name__, type(plain * 2).__name__, r)

    t, u = torch.randn(4, 3).as_subclass(_LogTensor), torch.randn(4, 3).as_subclass(_LogTensorChild)
    plain = torch.randn(4, 3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(t, u, plain), fn(t, u, plain))
    assert counter.frame_count == 1


_dispatched = []


class _Recording(torch.Tensor):
    """Logs each function torch gives its __torch_function__, and adds 1 to every add's result."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _dispatched.append(func.__name__)
        result = super().__torch_function__(func, types, args, kwargs or {})
        if func in (torch.add, torch.Tensor.add):
            with torch._C.DisableTorchFunctionSubclass():
                result = result + 1
        return result

    def doubled(self):
        return self * 2

    @property
    def rows(self):
        return self.shape[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_tensor_subclass_own_torch_function_is_traced(backend):
    # Its code runs in the trace for each operator, function and method (the log it writes is
    # replayed); the graph runs on plain tensors and its outputs are given their classes.
    def fn(t, plain):
        a = torch.add(t, plain)
        b = t.sum() * 2 + plain
        c = -t[1:]
        return a, b, c, t.doubled(), t.rows, type(a).__name__, type(c).__name__

    r, plain = torch.randn(4, 3).as_subclass(_Recording), torch.randn(4, 3)
    _dispatched.clear()
    expected, expected_log = fn(r, plain), list(_dispatched)
    _dispatched.clear()
    got = cdynamo.compile(fn, backend=backend, fullgraph=True)(r, plain)
    assert _dispatched == expected_log  # before same(), whose reads dispatch too
    assert same(got, expected) and [type(v) for v in got] == [type(v) for v in expected]

    def negated_sum(t):
        return t.sum() + 1, (t * 2).sum()

    t = torch.randn(3).as_subclass(_Negating)
    counter = CompileCounter()
    assert same(cdynamo.compile(negated_sum, backend=counter, fullgraph=True)(t), negated_sum(t))
    assert counter.frame_count == 1


def test_as_subclass_inside_the_function_and_a_disabled_block():
    def fn(x):
        t = x.as_subclass(_Recording)
        a = torch.add(t, 1)
        with torch._C.DisableTorchFunctionSubclass():
            plain = torch.add(t, 1)
        back = a.as_subclass(torch.Tensor)
        return a, plain, back, type(t).__name__, type(plain).__name__, type(back).__name__

    x = torch.randn(3)
    _dispatched.clear()
    expected, expected_log = fn(x), list(_dispatched)
    _dispatched.clear()
    got = cdynamo.compile(fn, backend="eager", fullgraph=True)(x)
    assert _dispatched == expected_log
    assert same(got, expected) and [type(v) for v in got] == [type(v) for v in expected]


def test_a_tensor_subclass_own_torch_function_is_refused_where_the_trace_cannot_run_it():
    # A layer kept as one node would run without it.
    layer = torch.nn.Linear(3, 3)

    def fn(t):
        return layer(t)

    t = torch.randn(2, 3).as_subclass(_Recording)
    with pytest.raises(cdynamo.exc.Unsupported, match="own __torch_function__"):
        cdynamo.compile(fn, backend="eager", fullgraph=True)(t)


def test_an_operator_given_a_generator_takes_what_it_yields():
    def clip(model):
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        return norm, torch.nn.utils.parameters_to_vector(p.grad for p in model.parameters())

    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
        for p in model.parameters():
            p.grad = torch.randn_like(p) * 5
        return model

    eager_model, model = make(), make()
    counter = CompileCounter()
    assert same(cdynamo.compile(clip, backend=counter, fullgraph=True)(model), clip(eager_model))
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(model.parameters(), eager_model.parameters()))
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_tensor_subclass_input_gives_results_of_its_class_on_every_backend(backend):
    # AOTAutograd's graphs would run its operations without its __torch_function__ (they raised):
    # a graph with such an input runs as captured.
    t = torch.randn(4).as_subclass(_LogTensor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = cdynamo.compile(lambda x: x.sin() + 1, backend=backend)(t)
    assert type(result) is _LogTensor and torch.equal(result.as_subclass(torch.Tensor), (t.sin() + 1).as_subclass(torch.Tensor))


class _ClampGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


_clamp_grad = _ClampGrad.apply  # tabnet's `sparsemax = SparsemaxFunction.apply`


class _AppliesAliases(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = _ClampGrad.apply

    def forward(self, x):
        return _clamp_grad(x) + self.fn(x * 2)


def test_an_autograd_function_apply_held_in_a_global_or_attribute_is_one_node():
    x = torch.randn(3, 4, requires_grad=True)
    m = _AppliesAliases()
    counter = CompileCounter()
    got = cdynamo.compile(m, backend=counter, fullgraph=True)(x)
    expected = m(x)
    assert same(got, expected) and counter.frame_count == 1
    (grad,) = torch.autograd.grad(got.sum(), x)
    (expected_grad,) = torch.autograd.grad(expected.sum(), x)
    assert same(grad, expected_grad)
