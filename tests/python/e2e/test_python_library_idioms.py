"""Idioms of HuggingFace-style library code and the standard library, captured without graph breaks: is_compiling(),
torch.nn layer subclasses, context variables, namedtuples and enums, numpy on constants, relative imports, builtins."""
import collections
import contextvars
import sys
from collections import namedtuple

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

from .helpers import explain


def test_is_compiling_is_true_while_traced():
    def f(x):
        if torch.compiler.is_compiling():
            return x + 1
        return x - 1

    x = torch.zeros(2)
    assert same(cdynamo.optimize("eager")(f)(x), x + 1)
    assert same(f(x), x - 1)


def set_operations(x, names):
    seen = set()
    for name in names:
        seen.add(name)
    both = seen | {"extra"}
    alias = seen
    alias |= {"late"}  # in place: `seen` sees it too
    common = {n for n in names if n.startswith("a")}
    if "late" in seen and "extra" not in seen and len(both) == 3:
        x = x + 1
    return x * len(common), seen


def test_set_construction_mutation_and_membership():
    x = torch.randn(3)
    out = explain(set_operations, x, ("a1", "b2"))
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    expected = set_operations(x, ("a1", "b2"))
    assert same(out.out[0], expected[0])
    assert out.out[1] == expected[1] and type(out.out[1]) is set


def chunked(fn, x):
    import inspect

    if len(inspect.signature(fn).parameters) != 1:
        raise ValueError("one argument expected")
    return fn(x[slice(0, 2)])


class Chunker(torch.nn.Module):
    def chunk(self, t):
        return t * 2

    def forward(self, x):
        return chunked(self.chunk, x)


def test_inspect_signature_of_a_bound_method_and_slice():
    x = torch.randn(4)
    out = explain(Chunker(), x)
    assert out.graph_break_count == 0, out
    assert same(out.out, x[:2] * 2)


class PositionalEmbedding(torch.nn.Embedding):
    """A torch.nn layer subclass whose forward calls the layer's own through super() (OPT)."""

    def forward(self, positions, offset=2):
        return super().forward(positions + offset)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
        self.pos = PositionalEmbedding(10, 4)

    @staticmethod
    def bucket(t, scale=2):  # a staticmethod called through self (RoBERTa, T5)
        return t * scale

    @classmethod
    def name(cls):
        return cls.__name__

    @property
    def depth(self):
        return len(self.layers)

    def forward(self, x):
        total = 0
        for layer in self.layers[: self.depth - 1]:  # a ModuleList slice
            x = layer(x)
            total += x  # a number += a tensor
        low = torch.finfo(x.dtype).min
        return self.bucket(total).clamp(min=low) + self.pos(torch.tensor([1])), self.name()


def test_module_staticmethod_classmethod_property_slice_and_nn_layer_super():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(1, 4)
    out = explain(block, x)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    expected = block(x)
    assert same(out.out[0], expected[0]) and out.out[1] == "Block"


SCALE = contextvars.ContextVar("scale", default=2)


def reads_context_var(x):
    return x * SCALE.get()


def test_context_var_get_is_guarded_on_the_current_value():
    compiled = cdynamo.optimize("eager")(reads_context_var)
    x = torch.ones(2)
    assert same(compiled(x), x * 2)
    token = SCALE.set(5)
    try:
        assert same(compiled(x), x * 5)
    finally:
        SCALE.reset(token)
    assert same(compiled(x), x * 2)
    assert cdynamo.explain(reads_context_var)(x).graph_break_count == 0


Pair = namedtuple("Pair", ["first", "second"], defaults=[0])


def makes_namedtuple(x):
    p = Pair(x + 1, second=x * 2)
    q = Pair(x)
    first, second = p
    return Pair(first + q.first, p.second), isinstance(p, Pair), q.second


def test_namedtuple_made_in_the_trace():
    x = torch.randn(2)
    out = explain(makes_namedtuple, x)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    expected = makes_namedtuple(x)
    assert type(out.out[0]) is Pair and same(out.out[0].first, expected[0].first)
    assert same(out.out[0].second, expected[0].second) and out.out[1:] == (True, 0)


# ---- layers that override __call__ (transformers' GradientCheckpointingLayer) -----------------

class _CheckpointingLayer(torch.nn.Module):
    gradient_checkpointing = False

    def __call__(self, *args, **kwargs):
        if self.gradient_checkpointing and self.training:
            raise AssertionError("not taken")
        return super().__call__(*args, **kwargs)


class _Block(_CheckpointingLayer):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        return torch.relu(self.lin(x)) * scale


class _ExplicitCall(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _Block()

    def __call__(self, x):
        return torch.nn.Module.__call__(self, x) + 1

    def forward(self, x):
        return self.block(x, scale=2.0)


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([_Block(), _Block()])
        self.tail = _ExplicitCall()

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, scale=0.5)
        return self.tail(x)


def test_layers_overriding_call_are_traced_in_one_graph():
    from cdynamo.utils import counters

    model = _Stack()
    x = torch.randn(2, 4)
    compiled = cdynamo.compile(model, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(x), model(x))
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]


def test_numpy_on_constants_folds_and_numpy_scalars_are_numbers():
    import numpy as np

    from cdynamo.testing import CompileCounter
    from cdynamo.utils import counters

    d_k = np.int64(4)

    def fn(x):
        scale = 1.0 / np.sqrt(x.shape[-1])  # a numpy.float64
        count = np.prod(x.shape)  # a numpy.int64
        return x * scale + count + np.float32(0.5) * 2 + np.maximum(2, 3) + d_k

    counter = CompileCounter()
    x = torch.randn(3, 4)
    for _ in range(2):
        assert same(cdynamo.optimize(counter)(fn)(x), fn(x))
    assert counter.frame_count == 1 and not counters["graph_break"]


def test_numpy_arrays_and_numpy_random_end_the_graph_with_a_reason():
    import numpy as np

    from cdynamo.utils import counters

    def fn(x):
        y = x + 1
        noise = np.ones(70000)  # past the elements a graph makes from constants: not traced
        return y * 2 + torch.from_numpy(noise).float()

    x = torch.randn(70000)
    assert same(cdynamo.optimize("eager")(fn)(x), fn(x))
    assert any("returned a numpy.ndarray, not a number" in reason for reason in counters["graph_break"])
    cdynamo.reset()
    counters.clear()
    from cdynamo import _call_policy

    assert _call_policy.classify_callable(np.random.rand).startswith("unsupported")
    assert _call_policy.classify_callable(np.sqrt) == "fold_numpy"


class _Activation(torch.nn.Module):
    def __init__(self, slope=0.5):
        super().__init__()
        self.slope = slope
        self.inner = torch.nn.Tanh()

    def forward(self, x):
        return self.inner(x) * self.slope


ACTIVATIONS = {"tanh": (_Activation, {"slope": 2.0}), "relu": (torch.nn.ReLU, {})}


def test_stateless_modules_made_inside_forward_and_quiet_logging():
    import logging

    logger = logging.getLogger("cdynamo.test.quiet")
    logger.setLevel(logging.WARNING)

    def fn(x):
        logger.debug("shape %s", x.shape)  # not emitted at WARNING: no graph break
        for i, name in enumerate(ACTIVATIONS, start=1):
            cls, kwargs = ACTIVATIONS[name]
            x = cls(**kwargs)(x) * i
        return x

    counter = CompileCounter()
    x = torch.randn(4)
    compiled = cdynamo.optimize(counter)(fn)
    assert same(compiled(x), fn(x)) and counter.frame_count == 1 and not counters["graph_break"]
    logger.setLevel(logging.DEBUG)  # now it would log: the guard fails, and the call breaks the graph
    assert same(compiled(x), fn(x)) and counter.frame_count > 1
    # One with parameters is made for the call whose trace made it (test_made_modules.py).
    make_linear = lambda x: torch.nn.Linear(4, 4)(x)  # noqa: E731
    torch.manual_seed(3)
    expected = make_linear(x)
    torch.manual_seed(3)
    assert same(cdynamo.compile(make_linear, backend="eager", fullgraph=True)(x), expected)


Span = collections.namedtuple("Span", "p q")


class Shade(__import__("enum").Enum):
    LIGHT = 1
    DARK = 2


def key_builtins(x):
    order = sorted([3, 1, 2], key=lambda v: -v)
    widest = max(["ab", "abc", "a"], key=len)
    first_shortest = min(["bb", "a", "c"], key=len)
    return x * order[0] + len(widest) + len(first_shortest) + max([], key=len, default=7)


def list_and_dict_methods(x):
    items = [3, 1, 2, 1]
    items.sort(reverse=True)
    items.remove(1)
    del items[0]
    scores = {"a": 1, "b": 2}
    scores.update({"c": 3}, d=4)
    del scores["a"]
    return x * sum(items) + sum(scores.values()) + len(",".join(str(i) for i in items))


def namedtuple_and_enum(x):
    span = Span(x, 2)._replace(q=5)
    return span.p * span.q + span._asdict()["q"] + Shade(2).value + (Shade(1) is Shade.LIGHT)


def itertools_and_getters(x):
    import itertools
    import operator

    total = sum(a * b for a, b in itertools.product([1, 2], [3, 4]))
    running = list(itertools.accumulate([1, 2, 3]))
    pairs = list(itertools.combinations(range(4), 2)) + list(itertools.permutations("ab"))
    second = operator.itemgetter(1)
    return x * total + running[-1] + len(pairs) + second([5, 6]) + operator.attrgetter("shape")(x)[0]


class CodedError(RuntimeError):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def exceptions_numbers_and_ordered_dicts(x):
    try:
        raise CodedError("bad", 3)  # an exception class with its own __init__
    except CodedError as error:
        scale = error.code + len(error.args)
    order = collections.OrderedDict(a=1, b=2)
    order.move_to_end("a")
    order.move_to_end("b", last=False)
    return x * scale + complex(1, 2).imag + abs(3 + 4j) + list(order).index("a")


@pytest.mark.parametrize("fn", [key_builtins, list_and_dict_methods, namedtuple_and_enum, itertools_and_getters,
                                exceptions_numbers_and_ordered_dicts],
                         ids=lambda fn: fn.__name__)
def test_python_idioms_are_one_graph(fn):
    x = torch.randn(4, 3)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(fn)(x)
    assert torch.allclose(got, fn(x)) and counter.frame_count == 1


def test_an_enum_value_that_does_not_exist_raises_eagers_error():
    def f(x):
        try:
            return x * Shade(3).value
        except ValueError:
            return x - 1

    x = torch.randn(2)
    counter = CompileCounter()
    assert torch.equal(cdynamo.optimize(counter, nopython=True)(f)(x), f(x)) and counter.frame_count == 1


def test_max_and_min_of_one_element_tensors_are_graph_operations():
    def f(x):
        total, mean = x.sum(), x.mean()
        return max(total, mean) + min(total, mean)

    x = torch.randn(5)
    counter = CompileCounter()
    assert torch.allclose(cdynamo.optimize(counter, nopython=True)(f)(x), f(x)) and counter.frame_count == 1


def test_relative_imports_of_imported_modules_are_traced(tmp_path, monkeypatch):
    package = tmp_path / "relpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("SCALE = 3\ndef double(x):\n    return x * 2\n")
    (package / "later.py").write_text("def triple(x):\n    return x * 3\n")
    (package / "mod.py").write_text(
        "def uses_imports(x):\n"
        "    from . import helper\n"
        "    from .helper import SCALE\n"
        "    return helper.double(x) * SCALE\n"
        "def imports_a_new_module(x):\n"
        "    from .later import triple\n"
        "    return triple(x.sin())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mod = importlib.import_module("relpkg.mod")
    importlib.import_module("relpkg.helper")
    x = torch.randn(4)
    out = explain(mod.uses_imports, x)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    assert torch.equal(out.out, mod.uses_imports(x))
    # A module not imported yet would run its code at trace time: the import breaks the graph.
    out = explain(mod.imports_a_new_module, x)
    assert out.graph_break_count == 1 and "not imported yet" in str(out.break_reasons[0])
    assert torch.allclose(out.out, (x.sin() * 3))
    monkeypatch.delitem(sys.modules, "relpkg.later", raising=False)
    for name in ("relpkg.mod", "relpkg.helper", "relpkg"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_folded_list_joins_a_traced_one():
    def f(x):  # timm's Hiera: the shape list mixes a traced list and sum()'s folded one
        batch, _, channels = x.shape
        sizes = [i // s for i, s in zip([4, 4], [2, 2])]
        shape = [batch] + sum([[i, 2] for i in sizes], []) + [channels]
        more = [batch]
        more += sum([[1], [2]], [])
        return x.view(shape), tuple(more)

    x = torch.randn(2, 16, 3)
    out = explain(f, x)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    assert torch.equal(out.out[0], f(x)[0]) and out.out[1] == (2, 1, 2)


def test_functools_wraps_inside_the_compiled_function():
    import functools

    def f(x):
        def plus_one(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs) + 1

            return wrapper

        @plus_one
        def doubled(t):
            """Twice t."""
            return t * 2

        return doubled(x) + len(doubled.__name__), doubled.__doc__, doubled.__wrapped__(x)

    x = torch.randn(3)
    out = explain(f, x)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    expected = f(x)
    assert torch.equal(out.out[0], expected[0]) and out.out[1] == "Twice t."
    assert torch.equal(out.out[2], expected[2])


KEY_VALUE = __import__("re").compile(r"(\w+)=(\d+)")


def parse_and_scale(x, spec="a=1 b=22"):
    import re

    groups = re.findall(r"\([^)]*\)|\w+", "b n (h d)")  # a vendored einops pattern parser
    match = KEY_VALUE.match(spec)
    total = sum(int(v) for _, v in KEY_VALUE.findall(spec))
    return (x * total + len(groups) + int(match.group(2)), match.span(), re.sub(r"\d", "#", spec),
            re.split(r"\s+", spec), bool(re.fullmatch(r"[a-z= 0-9]+", spec)))


def test_regular_expressions_on_constant_strings_fold():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(parse_and_scale)
    x = torch.randn(3)
    assert same(compiled(x), parse_and_scale(x))
    assert same(compiled(x, "c=5"), parse_and_scale(x, "c=5"))
    assert counter.frame_count == 2  # the string is a constant of each graph
