"""The code cache and its guards: hits, recompiles on each guarded property (with the reason
recorded in user terms), reset(), and config.cache_size_limit."""
import math
import warnings

import pytest
import torch

import cdynamo
from cdynamo import config
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters


def add_one(x):
    return x + 1


def scale(x, factor):
    return x * factor


def recompile_reasons():
    return list(counters["recompiles"])


def compile_static(fn, counter):
    # dynamic=False: a new shape must recompile, today and once automatic dynamic shapes exist.
    return cdynamo.optimize(counter, dynamic=False)(fn)


def test_second_call_hits_cache():
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    for _ in range(5):
        x = torch.randn(3, 4)  # new values, same metadata
        assert same(compiled(x), add_one(x))
    assert counter.frame_count == 1
    assert counters["recompiles"] == {}


@pytest.mark.parametrize(
    "first, second, property_names",
    [
        (torch.randn(3, 4), torch.randn(3, 4, dtype=torch.float64), ("dtype",)),
        (torch.randn(3, 4), torch.randn(5, 4), ("size", "shape")),
        (torch.randn(3, 4), torch.randn(3, 4).requires_grad_(), ("requires_grad",)),
        (torch.randn(4, 4), torch.randn(4, 4).t(), ("stride",)),
        (torch.randn(3, 4), torch.randn(3), ("dim", "rank", "size", "shape")),
    ],
    ids=["dtype", "shape", "requires_grad", "strides", "rank"],
)
def test_change_of_tensor_property_recompiles_exactly_once(first, second, property_names):
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    assert same(compiled(first), add_one(first))
    assert same(compiled(second), add_one(second))
    assert counter.frame_count == 2

    (reason,) = recompile_reasons()
    assert any(name in reason for name in property_names), reason

    # Both versions are cached now: alternating between them compiles nothing more.
    for x in (first, second, first, second):
        assert same(compiled(x), add_one(x))
    assert counter.frame_count == 2
    assert sum(counters["recompiles"].values()) == 1


def test_requires_grad_recompile_keeps_autograd_working():
    def fn(x):
        return (x.sin() * 2).sum()

    counter = CompileCounter()
    compiled = compile_static(fn, counter)
    compiled(torch.randn(4))

    x = torch.randn(4, requires_grad=True)
    compiled(x).backward()
    assert counter.frame_count == 2
    assert same(x.grad, 2 * x.detach().cos())


def test_int_argument_is_specialised():
    counter = CompileCounter()
    compiled = compile_static(scale, counter)
    x = torch.randn(4)
    assert same(compiled(x, 2), x * 2)
    assert same(compiled(x, 2), x * 2)
    assert counter.frame_count == 1
    assert same(compiled(x, 3), x * 3)
    assert counter.frame_count == 2


def test_argument_type_is_guarded():
    counter = CompileCounter()
    compiled = compile_static(scale, counter)
    x = torch.randn(4)
    assert same(compiled(x, 2), x * 2)
    assert same(compiled(x, 2.0), x * 2.0)
    assert same(compiled(x, torch.tensor(2.0)), x * 2.0)
    assert counter.frame_count == 3


def test_global_grad_mode_is_guarded():
    def fn(x, w):
        return x @ w

    counter = CompileCounter()
    compiled = compile_static(fn, counter)
    x, w = torch.randn(2, 3), torch.randn(3, 3, requires_grad=True)
    with torch.no_grad():
        out_no_grad = compiled(x, w)
    out_grad = compiled(x, w)
    assert not out_no_grad.requires_grad
    assert out_grad.requires_grad
    assert counter.frame_count == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_change_of_device_recompiles():
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    x = torch.randn(4)
    assert same(compiled(x), add_one(x))
    assert same(compiled(x.cuda()), add_one(x.cuda()))
    assert counter.frame_count == 2
    (reason,) = recompile_reasons()
    assert "device" in reason


def test_recompile_reason_names_the_function():
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    compiled(torch.randn(2))
    compiled(torch.randn(2, dtype=torch.float64))
    (reason,) = recompile_reasons()
    assert "add_one" in reason


def test_reset_empties_caches():
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    x = torch.randn(3)
    compiled(x)
    cdynamo.reset()
    assert same(compiled(x), add_one(x))
    assert counter.frame_count == 2
    # A fresh start, not a recompile: reset forgot the first entry.
    assert counters["recompiles"] == {}


def _cache_limit_warnings(caught):
    return [w for w in caught if "cache_size_limit" in str(w.message)]


def test_cache_size_limit_falls_back_with_one_warning():
    counter = CompileCounter()
    compiled = compile_static(add_one, counter)
    with config.patch(cache_size_limit=3), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # so a second warning would be seen, not deduplicated
        for size in range(1, 8):
            x = torch.randn(size)
            assert same(compiled(x), add_one(x))
        # Sizes that got an entry before the limit still hit their cache entries.
        for size in range(1, 4):
            x = torch.randn(size)
            assert same(compiled(x), add_one(x))
    assert counter.frame_count == 3
    (warning,) = _cache_limit_warnings(caught)
    message = str(warning.message)
    assert "add_one" in message
    assert "size" in message or "shape" in message  # the guard that kept failing


def test_cache_size_limit_is_per_code_object():
    def add_two(x):
        return x + 2

    counter = CompileCounter()
    first, second = compile_static(add_one, counter), compile_static(add_two, counter)
    with config.patch(cache_size_limit=2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in range(1, 4):
            first(torch.randn(size))
        for size in range(1, 3):
            second(torch.randn(size))
    assert counter.frame_count == 4
    assert len(_cache_limit_warnings(caught)) == 1


def test_cache_limit_counts_per_module_instance():
    import torch.nn as nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).relu()

    class Stack(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(n)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
                print("break between layers")
            return x

    model = Stack(12)
    counter = CompileCounter()
    with config.patch(cache_size_limit=2):
        compiled = cdynamo.compile(model, backend=counter)
        with torch.no_grad():
            x = torch.randn(2, 4)
            assert same(compiled(x), model(x))
            assert same(compiled(x), model(x))
    # every layer's forward got its own entry: none was pushed out by the limit of 2
    assert counters["stats"].get("cache_limit_hits", 0) == 0


class _Settings:
    scale = 2

    def shift(self, t):
        return t + 1

    @classmethod
    def make(cls, t):
        return t * cls.scale


def _with_defaults(t, k=2):
    return t * k


def test_class_attributes_methods_defaults_and_dict_order_are_guarded():
    # Each of these changes between calls must give eager's result on the second call.
    holder = _Settings()
    weights = torch.nn.Linear(3, 3)

    def f(x, d):
        return (x * _Settings.scale + _Settings().shift(x) + holder.shift(x) + _Settings.make(x) + _with_defaults(x),
                [x * v for v in d.values()], list(d), weights(x).requires_grad)

    def change():
        _Settings.scale = 5
        _Settings.shift = lambda self, t: t - 100
        holder.shift = lambda t: t * 0
        _with_defaults.__defaults__ = (7,)
        weights.weight.requires_grad_(False)
        weights.bias.requires_grad_(False)

    original = (_Settings.scale, _Settings.shift, _with_defaults.__defaults__)
    try:
        compiled = cdynamo.optimize("eager")(f)
        x = torch.randn(3)
        for d in ({"a": 1, "b": 2}, {"b": 2, "a": 1}):
            got, want = compiled(x, d), f(x, d)
            assert same(got[0], want[0]) and got[2:] == want[2:] and all(same(a, b) for a, b in zip(got[1], want[1]))
            change()
        reasons = " | ".join(recompile_reasons())
        assert "_Settings" in reasons or "holder" in reasons or "__defaults__" in reasons, reasons
    finally:
        _Settings.scale, _Settings.shift, _with_defaults.__defaults__ = original


def helper_called(t):
    return t + 1


def helper_replacement(t):
    return t * 100


def keyword_scaled(t, *, k=2):
    return t * k


def calls_helpers(x):
    return helper_called(x), keyword_scaled(x)


def test_a_swapped_code_object_and_changed_keyword_defaults_recompile():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(calls_helpers)
    x = torch.randn(3)
    original_code = helper_called.__code__
    try:
        assert same(compiled(x), calls_helpers(x))
        helper_called.__code__ = helper_replacement.__code__
        assert same(compiled(x), calls_helpers(x))
        keyword_scaled.__kwdefaults__["k"] = 7
        assert same(compiled(x), calls_helpers(x))
    finally:
        helper_called.__code__ = original_code
        keyword_scaled.__kwdefaults__["k"] = 2
    assert counter.frame_count == 3
    reasons = " ".join(recompile_reasons())
    assert "__code__" in reasons and "__kwdefaults__" in reasons, reasons


def sign_and_text(x, f):
    return x + math.copysign(1.0, f), str(f), 1.0 / f if f != 0.0 else None


@pytest.mark.parametrize("order", [(0.0, -0.0, 0.5), (-0.0, 0.0, float("inf")), (2.5, float("nan"), -0.0)])
def test_negative_zero_infinities_and_nan_keep_what_tells_them_apart(order):
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(sign_and_text)
    x = torch.randn(3)
    for f in order:
        got, want = compiled(x, f), sign_and_text(x, f)
        assert same(got[0], want[0]) and got[1] == want[1], (f, got, want)
        assert (got[2] == want[2]) or (got[2] != got[2] and want[2] != want[2]), (f, got, want)


frequencies = [2.0 ** torch.tensor(float(k)) for k in range(3)]  # 0-d tensors, as iterating a tensor gives
encoders = [lambda x, freq=freq: torch.sin(x * freq) for freq in frequencies]
keyword_encoder = lambda x, *, freq=frequencies[1]: x * freq  # noqa: E731


def encode(x):
    return torch.cat([fn(x) for fn in encoders], -1) + keyword_encoder(x).sum()


def test_tensor_default_arguments_are_graph_inputs_read_at_each_call():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(encode)
    x = torch.randn(4, 3)
    assert same(compiled(x), encode(x))
    frequencies[1].fill_(10.0)  # the default is the same tensor: its new value is read
    assert same(compiled(x), encode(x))
    assert counter.frame_count == 1
