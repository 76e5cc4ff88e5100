"""Sets and dicts keyed by traced values: tensors and plain objects hash by identity, objects with
their own __hash__/__eq__ are hashed and compared by tracing those. One graph, eager's results."""
import torch
import torch.nn as nn

import cdynamo
from .helpers import explain, one_graph


class Point:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Point) and self.v == other.v

    def __hash__(self):
        return hash(self.v)


class Plain:
    def __init__(self, v):
        self.v = v


def test_set_of_tensors_answers_by_identity():
    def f(x):
        y = x + 1
        z = x + 1  # equal values, another tensor
        s = {x, y}
        s.add(x)
        return x + (x in s) + (z in s) * 10 + len(s)

    x = torch.randn(4)
    assert torch.equal(one_graph(f, x), f(x))


def test_dict_keyed_by_tensors_reads_writes_and_iterates():
    def f(x):
        y = x * 2
        d = {x: 1}
        d[y] = 2
        d[x] = 3  # the same tensor: replaces
        total = x * d[x] + d.get(y, 0) + len(d) + (y in d) + d.get(x * 3, 100)
        for k in d:
            total = total + k
        return total

    x = torch.randn(3)
    assert torch.equal(one_graph(f, x), f(x))


def test_a_set_and_a_dict_of_tensors_leave_the_graph_holding_the_same_tensors():
    def f(x):
        y = x * 2
        return {x: y, y: x}, {x, y}

    x = torch.randn(3)
    d, s = one_graph(f, x)
    keys = list(d)
    assert keys[0] is x and torch.equal(keys[1], x * 2)
    assert torch.equal(d[x], x * 2) and d[keys[1]] is x
    assert len(s) == 2 and x in s and keys[1] in s


def test_user_hash_and_eq_are_traced_for_set_items_and_dict_keys():
    def f(x):
        s = {Point(1), Point(1), Point(2)}
        d = {Point(3): 5}
        d[Point(3)] = 6  # an equal key: the value changes, the first key stays
        return x * (len(s) + d[Point(3)] + (Point(2) in s) + (Point(4) in s) * 10 + len(d))

    x = torch.randn(3)
    assert torch.equal(one_graph(f, x), f(x))


def test_plain_objects_and_modules_are_keys_by_identity():
    lin = nn.Linear(3, 3)

    def f(x):
        a, b = Plain(1), Plain(1)
        d = {a: x, b: x * 2, lin: x * 3}
        return d[a] + d[b] + d[lin] + len({a, b, a})

    x = torch.randn(3)
    assert torch.allclose(one_graph(f, x), f(x))


def test_unhashable_object_raises_type_error_as_in_eager():
    class NoHash:
        def __eq__(self, other):
            return True

    def f(x):
        try:
            {NoHash(): 1}
        except TypeError:
            return x + 1
        return x

    x = torch.randn(3)
    assert torch.equal(one_graph(f, x), f(x))


def test_a_dict_keyed_by_tensors_and_objects_lives_across_a_graph_break():
    def f(x):
        y = x + 1
        p = Point(2)
        d = {x: 1, y: 2, p: 3}
        cdynamo.graph_break()
        return x * d[x] + y * d[y] + d[Point(2)] + d[p]

    x = torch.randn(3)
    out = explain(f, x)
    # The first graph rebuilds the dict with its tensor and object keys at the break (the resume
    # function, handed a dict keyed by tensors, runs as written).
    assert out.graph_count >= 1 and "graph_break()" in out.break_reasons[0]
    assert torch.equal(out.out, f(x))


def test_dict_of_pairs_and_a_dict_subclass_keyed_by_tensors():
    class Registry(dict):
        pass

    def f(x):
        y = x + 1
        d = dict([(x, 1), (y, 2), (x, 3)])  # a repeated key keeps its first place and the last value
        r = Registry()
        r[y] = 5
        r[x] = 6
        return x * d[x] + y * d[y] + len(d) + r[y] + (x in r) + len(r)

    x = torch.randn(3)
    assert torch.equal(one_graph(f, x), f(x))
