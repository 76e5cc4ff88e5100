"""The match statement (sequence, mapping, class and literal patterns, guards), a failing
assert caught by the function, f(*iterator) calls, and __eq__ that declines with NotImplemented:
one graph, eager's results. PYTEST_DONT_REWRITE: the asserts compiled here must be Python's own."""
import dataclasses
import typing

import torch

import cdynamo
from cdynamo.testing import same

from .helpers import one_graph


@dataclasses.dataclass
class Box:
    w: int
    h: int


def classify(value):
    match value:
        case 0:
            return 10
        case [a, b]:
            return a + b
        case [first, *rest]:
            return first + sum(rest) + 1000
        case {"k": found}:
            return found
        case Box(w=w, h=2):
            return w * 100
        case Box(w, h):
            return w + h
        case str() as text if len(text) > 2:
            return len(text)
        case int(n) | float(n):
            return n * 2
        case _:
            return -1


def test_match_statements_take_eagers_branches():
    values = [0, [1, 2], [1, 2, 3], {"k": 5}, Box(3, 2), Box(3, 4), "abcd", 7, 1.5, None]

    def f(x):
        scores = [classify(v) for v in values]
        match x.shape:
            case (rows, cols) if rows > cols:
                shape_case = "tall"
            case (rows, cols):
                shape_case = "wide"
        return x * sum(scores), scores, shape_case

    x = torch.randn(2, 3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_failed_assert_star_calls_and_declined_equality():
    class Point:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return self.v == other.v
            return NotImplemented

    def f(x):
        try:
            assert x.shape[0] == 5, f"expected 5 rows, got {x.shape[0]}"
            message = ""
        except AssertionError as e:
            message = str(e)
        y = x.unsqueeze(0)
        flipped = y.permute(*reversed(range(y.dim())))
        p = Point(1)
        return flipped, message, p == 0, 0 == p, p == Point(1), p != 0

    x = torch.randn(2, 3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


class Pair(typing.NamedTuple):
    left: torch.Tensor
    right: int

    def scaled(self):
        return self.left * self.right


class Plain:
    def __init__(self, a):
        self.a = a


def test_namedtuples_passed_in_list_edits_vars_and_delattr():
    sentinel = object()

    def f(pair, x):
        left, right = pair
        made = Pair(x, 3)
        items = [x, x + 1, x + 2, x + 3, x + 4]
        del items[::2]
        items.remove(items[0])
        holder = Plain(x)
        vars(holder)["b"] = 2
        delattr(holder, "a")
        return (left * right + pair.scaled() + made.scaled(), pair[1], len(items), hasattr(holder, "a"), holder.b,
                vars(holder).keys().__len__(), (1, 2) is sentinel)

    pair, x = Pair(torch.randn(2), 2), torch.randn(2)
    got, want = one_graph(f, pair, x), f(pair, x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


class Missing(dict):
    def __missing__(self, key):
        return len(key)


class Tracked:
    made = []

    def __new__(cls, value):
        obj = super().__new__(cls)
        obj.fresh = True
        return obj

    def __init__(self, value):
        self.value = value
        type(self).made.append(value)


def test_missing_keys_python_new_and_class_level_lists():
    import collections

    def f(x):
        counts = collections.Counter("aabbc") - collections.Counter("a")
        first, second = Tracked(2), Tracked(3)
        return (x * (Missing(a=1)["xyz"] + counts["a"] + counts["zz"]), first.fresh, second.value,
                list(Tracked.made))

    x = torch.randn(2)
    Tracked.made.clear()
    want = f(x)
    Tracked.made.clear()
    got = one_graph(f, x)
    assert same(got[0], want[0]) and got[1:] == want[1:] and Tracked.made == [2, 3]


class Tracker:
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("in")
        return self

    def __exit__(self, *exc):
        self.log.append("out")
        return False


def test_exit_stack_exc_info_and_container_methods_by_name():
    import contextlib
    import sys

    def f(x):
        trackers = [Tracker(), Tracker()]
        with contextlib.ExitStack() as stack:
            for t in trackers:
                stack.enter_context(t)
            y = x + 1
        try:
            raise KeyError("k")
        except KeyError:
            kind = sys.exc_info()[0].__name__
        d = {}
        dict.__setitem__(d, "a", 3)
        return y * d["a"], [t.log for t in trackers], kind, sys.exc_info()[0], sum([[1], [2]], []).__len__()

    x = torch.randn(2)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_grad_and_is_leaf_of_arguments_parameters_and_results():
    layer = torch.nn.Linear(3, 3)

    def f(x):
        detached = x.detach()
        return (x * sum(p.grad is None for p in layer.parameters()), x.is_leaf, (x * 2).is_leaf, detached.is_leaf,
                detached.grad is None, (x * 2).requires_grad)

    x = torch.randn(2, 3, requires_grad=True)
    compiled = cdynamo.optimize("eager")(f)
    got, want = compiled(x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    layer(x).sum().backward()  # the parameters get .grad: the guard on p.grad retraces
    got, want = compiled(x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


class Doubling:
    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, obj, objtype=None):
        return getattr(obj, self.slot, 0) * 10

    def __set__(self, obj, value):
        setattr(obj, self.slot, value + 1)


class WithDescriptor:
    v = Doubling()


class Countdown:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError
        return i * 2


def test_descriptors_sequence_protocol_dict_merge_bound_methods_and_submodules():
    tree = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())

    def f(x):
        obj = WithDescriptor()
        obj.v = 2
        d = {"a": 1}
        merged = d | {"b": 2}
        d |= {"a": 10}
        bound = Countdown(2).__getitem__
        return (x * obj.v + sum(Countdown(4)) + x.__len__(), list(Countdown(3)), merged, d, bound.__self__.n,
                tree.get_submodule("0")(x), tree.get_parameter("0.bias"))

    x = torch.randn(2, 3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:5] == want[1:5]
    assert same(got[5], want[5]) and same(got[6], want[6])


def test_dict_views_compare_and_combine_as_views():
    def f(x):
        a, b = {"a": 1, "b": 2}, {"b": 3, "c": 4}
        return (x + 1, a.keys() == {"a", "b"}, a.keys() == ["a", "b"], ("a", 1) in a.items(), 2 in a.values(),
                a.keys() & b.keys(), a.keys() | b.keys(), a.items() == {("a", 1), ("b", 2)}, type(a.keys()).__name__,
                "a" in a.keys(), a.keys().__contains__("z"))

    x = torch.randn(2)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]
