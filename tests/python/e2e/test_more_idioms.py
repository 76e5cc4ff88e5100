"""Idioms of TorchDynamo-style unit tests found failing by bench/idiom_probes/pl.py and pm.py, each
fixed by a general mechanism on the Python side: one graph, no break, eager's results."""
import functools
import os

import torch
import torch.nn as nn

import cdynamo
from cdynamo import config, utils
from .helpers import one_graph
from cdynamo.testing import same


def test_traced_library_files_are_met_by_their_symlink_resolved_path_too():
    # A virtual environment reached through a symlink: co_filename may hold either path.
    for entry in config.trace_dirs:
        if entry.endswith(".py"):
            assert os.path.realpath(entry) in config.trace_dirs, entry
    container_py = nn.ParameterDict.values.__code__.co_filename
    for form in (os.path.abspath(container_py), os.path.realpath(container_py)):
        assert utils.inline_refusal(form) is None, form


def test_parameter_dict_values_and_items_generators_are_traced():
    pd = nn.ParameterDict({"b": nn.Parameter(torch.randn(3)), "a": nn.Parameter(torch.randn(3))})

    def f(x):
        return x + sum(pd.values()), [k for k, _ in pd.items()], [v * 2 for _, v in pd.items()]

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1] == want[1] and all(same(g, w) for g, w in zip(got[2], want[2]))


def test_reduce_with_an_initial_dict_or_list_built_in_the_function():
    def f(x):
        parts = [{"a": x}, {"b": x * 2}, {"a": x * 3}]
        merged = functools.reduce(lambda acc, d: {**acc, **d}, parts, {})
        flat = functools.reduce(lambda acc, t: acc + [t.sum()], [x, x], [])
        return merged, flat, functools.reduce(lambda a, b: a * b, [x, x + 1])

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert list(got[0]) == list(want[0]) and all(same(got[0][k], want[0][k]) for k in want[0])
    assert all(same(g, w) for g, w in zip(got[1], want[1])) and same(got[2], want[2])


def test_reduce_errors_are_eagers():
    def f(x):
        try:
            functools.reduce(lambda a, b: a + b, [])
        except TypeError as e:
            return x * len(str(e))

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_cond_on_a_python_predicate_calls_the_branch_it_picks():
    def f(x):
        k = x.mean()
        by_size = torch.cond(x.shape[0] > 2, lambda a, b: a + b + k, lambda a, b: a - b, (x, x * 2))
        by_flag = torch.cond(False, lambda a: a * 2, lambda a: a - k, [x])
        return by_size, by_flag

    x = torch.randn(4, 3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and same(got[1], want[1])


def test_cond_on_a_tensor_predicate_is_captured():
    def f(x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))

    x = torch.randn(4, 3)
    want = f(x)  # eager's torch.cond compiles with torch's own compiler: its imports are made first
    assert same(one_graph(f, x), want)


def test_func_jvp_of_a_torch_function_and_of_a_lambda_is_one_node():
    def f(x):
        _, tangent = torch.func.jvp(torch.sin, (x,), (torch.ones_like(x),))
        out, tangent2 = torch.func.jvp(lambda a, b: a * b, (x, x), (x, torch.ones_like(x)))
        return tangent, out, tangent2

    x = torch.randn(4, 3)
    got, want = one_graph(f, x), f(x)
    assert all(same(g, w) for g, w in zip(got, want))


def test_namedtuple_class_made_in_the_function():
    import collections

    def f(x, k):
        Pair = collections.namedtuple("Pair", ["a", "b"], defaults=[7])
        p = Pair(x, k)
        return p.a * p.b + Pair(1).b, Pair._fields, p._replace(b=3).b, type(p).__name__, len(p)

    x = torch.randn(3)
    got, want = one_graph(f, x, 2), f(x, 2)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_bisect_functions_search_and_insert_as_the_c_ones():
    import bisect

    def f(x, bounds):
        i = bisect.bisect_left(bounds, x.shape[0])
        j = bisect.bisect(bounds, 9, 1)
        k = bisect.bisect_right([(1, "a"), (4, "b")], 2, key=lambda p: p[0])
        bisect.insort(bounds, 5)
        bisect.insort_left(bounds, 0, hi=2)
        named = [("w", 3), ("b", 1)]
        bisect.insort(named, ("c", 2), key=lambda p: p[1])
        try:
            bisect.bisect_left(bounds, 1, -1)
        except ValueError as e:
            message = str(e)
        return x * i + j + k, named, message

    x = torch.randn(4)
    want_bounds, got_bounds = [1, 4, 9, 16], [1, 4, 9, 16]
    want = f(x, want_bounds)
    got = one_graph(f, x, got_bounds)
    assert same(got[0], want[0]) and got[1:] == want[1:] and got_bounds == want_bounds


def test_sorted_and_min_of_a_dict_whose_values_are_functions_read_its_keys():
    # sorted(d) iterates the keys only: the functions never need to be Python constants.
    def f(x):
        ops = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b}
        return [ops[k](x, 2) for k in sorted(ops)], min(ops), max(ops), sorted(ops, reverse=True)

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_mutable_default_of_a_function_made_in_the_trace_is_shared_by_its_calls():
    def f(x):
        def g(t, acc=[], *, seen={}):
            acc.append(len(acc))
            seen[len(seen)] = t.sum()
            return t * len(acc), acc, seen

        g(x)
        a, acc, seen = g(x)
        b, acc2, _ = g(x, [])  # an explicit argument in place of the default
        return a, acc, len(seen), b, acc2, acc is g.__defaults__[0]

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and same(got[3], want[3])
    assert got[1] == want[1] == [0, 1] and got[2] == want[2] == 3 and got[4] == want[4] == [0]
    assert got[5] is want[5] is True


def test_assigning_a_frozen_dataclass_field_raises_frozen_instance_error_inside_the_trace():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        scale: float = 2.0

    def f(x, outer):
        c = Cfg()
        caught = []
        for target in (c, outer):  # one the trace made, one passed in
            try:
                target.scale = 5.0
            except dataclasses.FrozenInstanceError as e:
                caught.append(str(e))
        return x * c.scale * outer.scale, caught

    x = torch.randn(3)
    got, want = one_graph(f, x, Cfg(3.0)), f(x, Cfg(3.0))
    assert same(got[0], want[0]) and got[1] == want[1] and len(got[1]) == 2


def test_dataclasses_replace_asdict_astuple_of_a_frozen_dataclass():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        scale: float = 2.0
        name: str = "f"

    def f(x):
        c = Cfg(1.5)
        d = dataclasses.replace(c, name="g")
        return x * d.scale, dataclasses.asdict(d), dataclasses.astuple(c), d

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_dict_of_a_counter_copies_its_counts():
    import collections

    def f(x):
        a = collections.Counter("aabbc")
        b = collections.Counter("abd")
        return x * (a - b)["a"], dict(a + b), dict(a & b), dict(a)

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    assert all(type(d) is dict for d in got[1:])


def test_tensor_base_of_views_the_graph_made():
    def f(x):
        y = x.clone()
        v = y.view(12)[3:9].view(2, 3)
        before = v._base is y
        y.add_(1)  # the in-place result is y: still v's base
        return v, v._base is None, before, v._base is y, y._base is None, y.t()._base is y, v._base

    x = torch.randn(3, 4)
    got, want = one_graph(f, x), f(x)
    assert got[1:6] == want[1:6] == (False, True, True, True, True)
    assert same(got[0], want[0]) and same(got[6], want[6])


def test_tensor_base_of_an_input_or_its_view_is_not_answered_by_the_trace():
    # The input may be a view of a tensor the trace never saw: eager's answer is not knowable.
    def f(x):
        return x[0]._base is x, x._base is None

    base = torch.randn(4, 3)
    for x in (base, base[1:]):
        out = cdynamo.explain(f)(x)
        assert out.graph_break_count >= 1 and out.out == f(x)


def test_a_callable_argument_of_a_graph_node_breaks_the_graph_instead_of_failing_to_compile():
    # fx would write the function into the graph's code as its repr, which is not Python.
    def f(x):
        y = x.cos()
        return y, torch.Tensor.map_(y.clone(), y, lambda a, b: a + b)

    x = torch.randn(3)
    out = cdynamo.explain(f)(x)
    assert out.graph_break_count >= 1 and "cannot be passed into a graph" in str(out.break_reasons[0])
    got = cdynamo.optimize("eager")(f)(x)
    assert same(got[0], f(x)[0]) and same(got[1], f(x)[1])


class _Scaled:
    """A non-data descriptor written in Python: a value per instance, another on the class."""

    def __get__(self, obj, objtype=None):
        return obj.v * 10 if obj is not None else -1


class _WithDescriptors:
    scaled = _Scaled()

    def __init__(self, v):
        self.v = v
        self.calls = 0

    @functools.cached_property
    def square(self):
        self.calls += 1
        return self.v * self.v


def test_python_descriptors_and_cached_property_on_objects_the_trace_makes():
    def f(x):
        o = _WithDescriptors(3)
        first, second = o.square, o.square  # computed once, then read from the instance's __dict__
        return x * first + second + o.scaled + _WithDescriptors.scaled, o.calls, "square" in o.__dict__, o

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:3] == want[1:3] == (1, True)
    assert vars(got[3]) == vars(want[3]) == {"v": 3, "calls": 1, "square": 9}


def test_closure_cells_of_a_function_the_trace_made_show_their_current_contents():
    def f(x):
        k = 4

        def g():
            return k * x

        first = g.__closure__[0].cell_contents
        k = 5  # the cell is shared: its contents change
        names = g.__code__.co_freevars
        return x * first, {n: c.cell_contents for n, c in zip(names, g.__closure__) if n == "k"}, len(g.__closure__)

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:] == ({"k": 5}, 2)


def test_dataclass_repr_and_format_of_constants():
    import dataclasses

    @dataclasses.dataclass
    class Point:
        a: int
        b: str = "s"

    def f(x):
        p = Point(1)
        text = format(3.14159, ".3f") + format(42, "05d") + format(255, "x")
        return x * (p == Point(1)) + len(dataclasses.astuple(Point(2))), repr(p), text, f"{p!r}"

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


ATOMIC_TYPES = frozenset({type(None), bool, int, float, str, type})  # as dataclasses' (Python 3.12)


def test_in_on_a_global_frozenset():
    def f(x):
        kinds = [type(o) in ATOMIC_TYPES for o in (x, 3, "s", [1], torch.float32, int)]
        return x + sum(kinds), kinds, 3 in ATOMIC_TYPES, float in ATOMIC_TYPES

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_functools_cmp_to_key_with_sorted_min_and_max():
    def f(x, words):
        calls = []

        def by_length_then_text(a, b):
            calls.append(1)
            return (len(a) - len(b)) or ((a > b) - (a < b))

        key = functools.cmp_to_key(by_length_then_text)
        ordered = sorted(words, key=key)
        backwards = sorted(words, key=key, reverse=True)
        counted = []

        def counting_key(w):
            counted.append(w)
            return key(w)

        shortest = min(words, key=counting_key)
        return x * len(ordered[0]), ordered, backwards, shortest, max(words, key=key), len(counted), len(calls) > 0

    x, words = torch.randn(3), ["ccc", "a", "bb", "aa", "b"]
    got, want = one_graph(f, x, words), f(x, words)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    assert got[5] == len(words)  # each key computed once


def test_simple_namespace_made_changed_compared_and_returned():
    import types

    def f(x, given):
        ns = types.SimpleNamespace(a=1, b=x)
        ns.c = 3
        del_me = types.SimpleNamespace(k=2)
        return (ns.b * ns.a + ns.c, ns, isinstance(ns, types.SimpleNamespace), type(ns) is types.SimpleNamespace,
                del_me == types.SimpleNamespace(k=2), del_me == given, repr(del_me), vars(del_me))

    x = torch.randn(3)
    got, want = one_graph(f, x, types.SimpleNamespace(k=2)), f(x, types.SimpleNamespace(k=2))
    assert same(got[0], want[0]) and got[2:] == want[2:]
    assert type(got[1]) is types.SimpleNamespace and sorted(vars(got[1])) == ["a", "b", "c"]
    assert got[1].b is x and got[1].c == 3


class _Magic:
    def __init__(self):
        self.a = 1

    def __getattribute__(self, name):
        if name == "magic":
            return 42
        return object.__getattribute__(self, name)

    def double(self):
        return self.a * 2


def test_getattribute_written_in_python_answers_every_read_of_an_object_the_trace_makes():
    def f(x):
        g = _Magic()
        try:
            missing = g.missing
        except AttributeError as e:
            missing = str(e)
        return x * (g.magic + g.a + g.double()), missing, getattr(g, "magic"), hasattr(g, "nope")

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


class _Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, t, m):
        return t * self.k * m

    triple = functools.partialmethod(scale, m=3)


def test_partialmethod_and_identity_of_bound_methods():
    def f(x):
        s = _Scaler(2)
        bound = _Scaler.scale.__get__(s, _Scaler)  # function.__get__ binds, as attribute lookup does
        method = s.scale
        return (s.triple(x), bound(x, 1), method is _Scaler.scale, method is method, s.scale is s.scale,
                type(method) is type(bound), bound.__self__ is s)

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and same(got[1], want[1])
    assert got[2:] == want[2:] == (False, True, False, True, True)


class _History(list):
    """A list subclass with state of its own and methods written in Python."""

    def __init__(self, items, tag):
        super().__init__(items)
        self.tag = tag

    def total(self):
        return sum(self)

    def push(self, value):
        self.append(value)
        return self


def test_list_subclass_made_changed_and_returned():
    def f(x):
        h = _History([1, 2, 3], "h")
        h.push(4).extend([5, 6])
        last = h.pop()
        h[0] = 10
        del h[1]
        h.sort(reverse=True)
        plain = h[1:3]
        h += [0]  # list's own +=: the object itself, extended
        added, doubled = h + [1], h * 2  # list's own + and *: plain lists
        return (x * h.total() + len(h), h, last, plain, type(plain) is list, isinstance(h, list), 4 in h,
                [v * 2 for v in h], h.index(4), h.tag, added, type(added) is list, doubled, h == [10, 5, 4, 3, 0],
                [0] < h, h != [1])

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[2:] == want[2:]
    assert type(got[1]) is _History and list(got[1]) == list(want[1]) == [10, 5, 4, 3, 0] and got[1].tag == "h"


def test_grad_fn_of_tensors_that_do_not_require_grad_is_none():
    def f(x, w):
        y = x * 2
        with torch.no_grad():
            z = w * 2
        return y, y.grad_fn is None, x.grad_fn is None, z.grad_fn is None

    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    got, want = one_graph(f, x, w), f(x, w)
    assert same(got[0], want[0]) and got[1:] == want[1:] == (True, True, True)

    def g(w):
        return (w * 2).grad_fn is None  # an autograd node of eager's graph: told from None only

    assert one_graph(g, w) is False


# Found failing by bench/idiom_probes/pp.py (eleventh session).


class ReversedOnly:
    def __reversed__(self):
        return iter([3, 2, 1])


class IterOnly:
    def __iter__(self):
        yield 1
        yield 5


class IndexOnly:
    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i * 2


def test_reversed_and_in_follow_the_protocols_an_object_defines():
    def f(x):
        d = {"a": 1, "b": 2, "c": 3}
        gen = (i for i in range(6))
        return (x * list(reversed(ReversedOnly()))[0], next(reversed(d.values())), list(reversed(d)),
                5 in IterOnly(), 4 in IndexOnly(), 7 in IndexOnly(), 3 in gen, list(gen))

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_iterators_and_generators_keep_their_identity_and_abc_types():
    import collections.abc as abc

    def f(x):
        g = (i for i in range(3))
        it = iter([1, 2])
        return (x * 1, iter(g) is g, iter(it) is it, isinstance(it, abc.Iterator), isinstance(g, abc.Generator),
                isinstance(it, abc.Iterable), isinstance(map(abs, [1]), abc.Iterator))

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_a_generators_return_value_rides_on_stop_iteration():
    def f(x):
        def g():
            yield 1
            return 7

        it = g()
        next(it)
        try:
            next(it)
        except StopIteration as stop:
            return x * stop.value
        return None

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_set_grad_enabled_as_a_decorator_inside_the_function():
    def f(x):
        @torch.set_grad_enabled(False)
        def inner(t):
            return t * 3

        r = inner(x)
        return r, r.requires_grad, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def lookup(table, key):
    return table[key]


def test_a_helper_raising_into_the_callers_handler_in_a_frame_without_operations():
    def f(x):
        try:
            lookup({}, "a")
        except KeyError:
            pass
        try:
            [].pop()
        except IndexError:
            pass
        return x

    compiled = cdynamo.optimize("eager", nopython=True)(f)
    x = torch.randn(2)
    assert compiled(x) is x


class Countdown:
    """An iterator class: __iter__ returns self, items from __next__."""

    def __init__(self, n):
        self.i = 0
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i


def test_an_iterator_class_is_stepped_one_next_at_a_time():
    def f(x):
        total = 0
        it = Countdown(5)
        for v in it:
            total += v
            if v == 2:
                break  # the iterator stays where eager leaves it
        rest = list(it)
        return x * total, rest, next(iter(Countdown(3))), next(it, "done"), it.i, sum(Countdown(4))

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_fromkeys_shares_one_mutable_value_and_properties_delete_through_their_deleter():
    class Holder:
        def __init__(self):
            self._value = 1.0

        @property
        def value(self):
            return self._value

        @value.deleter
        def value(self):
            self._value = -1.0

    def f(x):
        d = dict.fromkeys(["a", "b"], [])
        d["a"].append(1)
        h = Holder()
        del h.value
        return x * len(d["b"]) * h.value, d["a"] is d["b"]

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


def test_dict_of_a_mapping_object_reads_its_keys_and_items():
    import collections

    def f(x):
        d = collections.UserDict(a=1)
        d["b"] = 2
        return x * d["a"], dict(d), dict(d, a=5)

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


class Scaled:
    """Not a tensor: an object taking part in torch's override protocol."""

    def __init__(self, t):
        self.t = t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = [a.t if isinstance(a, Scaled) else a for a in args]
        return func(*args, **(kwargs or {})) * 2


def test_torch_function_of_an_object_that_is_not_a_tensor():
    def f(x):
        return torch.add(Scaled(x), 1), torch.mul(Scaled(x), other=3), torch.mul(x, other=2)

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))


class Bracketed:
    def __format__(self, spec):
        return "<" + spec + ">"


def test_f_strings_call_a_classes_own_format():
    def f(x):
        return f"{Bracketed():.2f}|{Bracketed()}", format(Bracketed(), "x"), format(3.14159, ".2f"), x * 1

    x = torch.randn(3)
    assert same(one_graph(f, x), f(x))
