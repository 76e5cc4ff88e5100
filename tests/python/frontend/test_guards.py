# The guard tree through _testing.GuardTree: every accessor and leaf passes on matching values and
# fails with a reason in user terms on changed ones. Assumes torch is imported before cdynamo._C.
import gc
import os
import sys

import pytest
import torch

from cdynamo._C import _testing

GuardTree = _testing.GuardTree
UNBOUND = _testing.UNBOUND
G = {}
B = {}


def check(tree, locals_, globals_=G, builtins=B, closure=None):
    ok = tree.check(locals_, globals_, builtins, closure)
    reason = tree.failure_reason(locals_, globals_, builtins, closure)
    # check() and failure_reason() must agree.
    assert ok == (reason == ""), (ok, reason)
    return ok, reason


def assert_fails(tree, locals_, expected_reason, globals_=G, builtins=B, closure=None):
    ok, reason = check(tree, locals_, globals_, builtins, closure)
    assert not ok
    assert reason == expected_reason


# ---- leaf guards ----


def test_equals_match():
    t = GuardTree()
    t.local_equals(1, "n", 3)
    assert check(t, [None, 3]) == (True, "")
    assert_fails(t, [None, 4], "L['n'] == 3 expected, got 4")
    assert_fails(t, [None, 3.0], "type of L['n'] changed: expected int, got float")
    assert_fails(t, [None, True], "type of L['n'] changed: expected int, got bool")
    big = 10**30
    t2 = GuardTree()
    t2.local_equals(0, "s", "abc" * 10)
    t2.local_equals(1, "b", big)
    assert check(t2, ["".join(["abc"] * 10), 10**30]) == (True, "")
    assert_fails(t2, ["abc", big], "L['s'] == '" + "abc" * 10 + "' expected, got 'abc'")


def test_equals_match_exception_in_eq_fails_and_clears():
    class Weird:
        def __eq__(self, other):
            raise ValueError("no")

        __hash__ = object.__hash__

    w = Weird()
    t = GuardTree()
    t.local_equals(0, "w", w)
    assert check(t, [w])[0]  # identity shortcut: __eq__ not called
    assert not t.check([Weird()], G, B)  # raises inside: counted as a failure, error cleared
    assert sys.exc_info() == (None, None, None)


def test_type_match():
    t = GuardTree()
    t.guard(("local", 1, "y"), [], "type_match", torch.Tensor)
    assert check(t, [None, torch.ones(1)])[0]
    assert_fails(t, [None, 3], "type of L['y'] changed: expected Tensor, got int")
    assert_fails(t, [None, torch.nn.Parameter(torch.ones(1))],
                 "type of L['y'] changed: expected Tensor, got Parameter")


def test_id_match_global_and_builtins():
    t = GuardTree()
    t.global_id_match("torch", torch)
    t.global_id_match("len", len)  # found in builtins
    g = {"torch": torch}
    b = {"len": len}
    assert check(t, [], g, b)[0]
    assert_fails(t, [], "G['torch'] is no longer the same object", {"torch": sys}, b)
    assert_fails(t, [], "G['torch'] is missing (no such global or builtin)", {}, b)
    assert_fails(t, [], "G['len'] is missing (no such global or builtin)", g, {})
    # A global shadows the builtin of the same name.
    assert_fails(t, [], "G['len'] is no longer the same object", {"torch": torch, "len": max}, b)


def test_length_check():
    t = GuardTree()
    t.guard(("local", 0, "xs"), [], "length_check", 2)
    for ok_value in ([1, 2], (1, 2), {1: 1, 2: 2}, {1, 2}):
        assert check(t, [ok_value])[0]
    assert_fails(t, [[1, 2, 3]], "len(L['xs']) == 2 expected, got 3")
    assert_fails(t, [5], "L['xs'] is no longer a tuple, list, dict or set (got int)")


# ---- tensor match ----


def tensor_tree(x):
    t = GuardTree()
    t.local_tensor_match(0, "x", x)
    return t


def test_tensor_match_passes_on_same_metadata():
    x = torch.randn(3, 4)
    t = tensor_tree(x)
    assert check(t, [x])[0]
    assert check(t, [torch.zeros(3, 4)])[0]  # a different tensor with the same metadata


def test_tensor_match_dtype():
    t = tensor_tree(torch.randn(3))
    assert_fails(t, [torch.randn(3, dtype=torch.float64)],
                 "L['x'] changed dtype: expected torch.float32, got torch.float64")
    assert_fails(t, [torch.ones(3, dtype=torch.bfloat16)],
                 "L['x'] changed dtype: expected torch.float32, got torch.bfloat16")


def test_tensor_match_device():
    t = tensor_tree(torch.randn(3))
    assert_fails(t, [torch.empty(3, device="meta")],
                 "L['x'] changed device: expected cpu, got meta")


def test_tensor_match_shape_and_ndim():
    t = tensor_tree(torch.randn(3, 4))
    assert_fails(t, [torch.randn(4, 4)], "L['x'] changed size at dim 0: expected 3, got 4")
    assert_fails(t, [torch.randn(3, 5)], "L['x'] changed size at dim 1: expected 4, got 5")
    assert_fails(t, [torch.randn(3, 4, 1)],
                 "L['x'] changed number of dimensions: expected 2, got 3")


def test_tensor_match_stride():
    x = torch.randn(3, 3)
    t = tensor_tree(x)
    assert_fails(t, [x.t()], "L['x'] changed stride at dim 0: expected 3, got 1")
    y = torch.randn(3, 6)[:, ::2]  # same sizes, stride (6, 2)
    assert_fails(t, [y], "L['x'] changed stride at dim 0: expected 3, got 6")


def test_tensor_match_requires_grad():
    t = tensor_tree(torch.randn(2))
    assert_fails(t, [torch.randn(2, requires_grad=True)],
                 "L['x'] changed requires_grad: expected False, got True")


def test_tensor_match_python_type():
    class MyTensor(torch.Tensor):
        pass

    p = torch.nn.Parameter(torch.randn(2))
    t = tensor_tree(p)
    assert check(t, [torch.nn.Parameter(torch.randn(2))])[0]
    sub = torch.randn(2).as_subclass(MyTensor).requires_grad_()
    assert_fails(t, [sub], "type of L['x'] changed: expected Parameter, got MyTensor")
    assert_fails(t, [7], "type of L['x'] changed: expected Parameter, got int")
    assert_fails(t, [UNBOUND], "L['x'] is unbound")


def test_tensor_match_dispatch_keys():
    x = torch.randn(2)
    t = tensor_tree(x)
    with torch.inference_mode():
        inference = torch.randn(2)
        # Inside inference mode the thread-local excluded keys change what a dispatch sees.
        ok, reason = check(t, [x])
        assert not ok and reason.startswith("L['x'] changed dispatch keys")
    ok, reason = check(t, [inference])
    assert not ok and reason.startswith("L['x'] changed dispatch keys"), reason
    assert check(t, [x])[0]


def test_tensor_match_rejects_non_tensor():
    with pytest.raises(TypeError, match="non-tensor"):
        GuardTree().local_tensor_match(0, "x", [1])


# ---- global and relational guards ----


def test_grad_mode_guard():
    t = GuardTree()
    t.grad_mode()
    assert check(t, [])[0]
    with torch.no_grad():
        assert_fails(t, [], "grad mode changed: expected enabled, got disabled")
        t2 = GuardTree()
        t2.grad_mode()
        assert check(t2, [])[0]
    assert_fails(t2, [], "grad mode changed: expected disabled, got enabled")
    assert check(t, [])[0]


def test_no_aliasing():
    x, y = torch.randn(2), torch.randn(2)
    t = GuardTree()
    t.no_aliasing([(0, "x"), (2, "y")])
    assert check(t, [x, x, y])[0]  # slot 1 is not part of the relation
    assert_fails(t, [x, None, x],
                 "L['x'] and L['y'] are now the same object (compiled for distinct objects)")


def test_no_aliasing_many_locals_uses_sorted_path():
    ts = [torch.randn(1) for _ in range(40)]
    t = GuardTree()
    t.no_aliasing([(i, f"t{i}") for i in range(40)])
    assert check(t, ts)[0]
    bad = list(ts)
    bad[37] = ts[5]
    assert_fails(t, bad, "L['t5'] and L['t37'] are now the same object "
                         "(compiled for distinct objects)")


# ---- accessors ----


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
        self.register_buffer("running", torch.zeros(2))
        self.scale = 2.0
        self.getattr_calls = 0

    def __getattr__(self, name):
        # Counts calls that reach Module.__getattr__ (which guards must avoid).
        object.__setattr__(self, "getattr_calls", self.__dict__.get("getattr_calls", 0) + 1)
        return super().__getattr__(name)


def test_attr_on_module_reads_dicts_without_getattr():
    m = Net()
    t = GuardTree()
    t.local_attr_id_match(0, "self", ["fc", "weight"], m.fc.weight)
    t.local_attr_id_match(0, "self", ["running"], m.running)
    t.guard(("local", 0, "self"), [("attr", "scale")], "equals_match", 2.0)
    t.guard(("local", 0, "self"), [("attr", "fc"), ("attr", "weight")], "tensor_match", m.fc.weight)
    assert t.size() == 4
    calls_before = m.__dict__["getattr_calls"]
    for _ in range(10):
        assert check(t, [m])[0]
    assert m.__dict__["getattr_calls"] == calls_before
    m.fc.weight = torch.nn.Parameter(torch.randn(2, 2))
    assert_fails(t, [m], "L['self'].fc.weight is no longer the same object")
    m2 = Net()
    m2.scale = 3.0
    ok, reason = check(t, [m2])
    assert not ok


def test_attr_missing_and_class_level():
    m = Net()
    t = GuardTree()
    t.guard(("local", 0, "self"), [("attr", "training")], "equals_match", True)
    t.guard(("local", 0, "self"), [("attr", "forward")], "type_match", type(m.forward))
    assert check(t, [m])[0]
    m.eval()
    assert_fails(t, [m], "L['self'].training == True expected, got False")
    t2 = GuardTree()
    t2.local_attr_id_match(0, "self", ["fc"], m.fc)
    del m.fc
    assert_fails(t2, [m], "L['self'] has no attribute 'fc'")


def test_attr_on_plain_object_uses_getattr():
    class Plain:
        def __init__(self):
            self.a = 1

        @property
        def b(self):
            return self.a + 1

        @property
        def broken(self):
            raise RuntimeError("property raised")

    p = Plain()
    t = GuardTree()
    t.guard(("local", 0, "p"), [("attr", "a")], "equals_match", 1)
    t.guard(("local", 0, "p"), [("attr", "b")], "equals_match", 2)
    assert check(t, [p])[0]
    p.a = 5
    assert_fails(t, [p], "L['p'].a == 1 expected, got 5")
    assert_fails(t, [object()], "L['p'] has no attribute 'a'")
    t2 = GuardTree()
    t2.guard(("local", 0, "p"), [("attr", "broken")], "equals_match", 1)
    assert not t2.check([p], G, B)  # a non-AttributeError is a failure too, and cleared
    assert t2.failure_reason([p], G, B) == "L['p'] has no attribute 'broken'"


def test_item_accessor_tuple_and_list():
    a, b = torch.randn(2), torch.randn(3)
    t = GuardTree()
    t.guard(("local", 0, "xs"), [], "length_check", 2)
    t.guard(("local", 0, "xs"), [("item", 1)], "tensor_match", b)
    t.guard(("local", 0, "xs"), [("item", 0)], "id_match", a)
    assert check(t, [(a, b)])[0]
    assert check(t, [[a, torch.zeros(3)]])[0]
    assert_fails(t, [(a, torch.zeros(4))], "L['xs'][1] changed size at dim 0: expected 3, got 4")
    t2 = GuardTree()
    t2.guard(("local", 0, "xs"), [("item", 2)], "equals_match", 1)
    assert_fails(t2, [(1, 2)], "L['xs'] has no item 2 (length 2)")
    assert_fails(t2, [{2: 1}], "L['xs'] is no longer a tuple or list (got dict)")
    t3 = GuardTree()
    t3.guard(("local", 0, "xs"), [("item", -1)], "equals_match", 9)
    assert check(t3, [[1, 9]])[0]


def test_dict_item_accessor():
    class Key:
        def __hash__(self):
            return 7

        def __eq__(self, other):
            return isinstance(other, Key)

    t = GuardTree()
    t.guard(("local", 0, "d"), [("dict_item", "lr")], "equals_match", 0.1)
    t.guard(("local", 0, "d"), [("dict_item", 3)], "equals_match", "three")
    t.guard(("local", 0, "d"), [("dict_item", Key())], "equals_match", 7)
    good = {"lr": 0.1, 3: "three", Key(): 7}
    assert check(t, [good])[0]
    assert_fails(t, [dict(good, lr=0.2)], "L['d']['lr'] == 0.1 expected, got 0.2")
    assert_fails(t, [{"lr": 0.1, Key(): 7}], "L['d'] has no key 3")
    assert_fails(t, [[1]], "L['d'] is no longer a dict (got list)")


def test_closure_cell_and_cell_contents():
    def make(n, fn):
        def inner():
            return n, fn

        return inner

    f = make(3, torch.relu)
    t = GuardTree()
    t.guard(("closure", 0, "fn"), [], "id_match", torch.relu)
    t.guard(("closure", 1, "n"), [], "equals_match", 3)
    assert check(t, [], closure=f.__closure__)[0]
    assert_fails(t, [], "L['n'] == 3 expected, got 4", closure=make(4, torch.relu).__closure__)
    # L['n'] failed last time, so it is checked (and reported) first now.
    assert_fails(t, [], "L['n'] (a closure variable) is unbound", closure=None)

    t2 = GuardTree()  # a cell reached through a local (e.g. a function's __closure__)
    t2.guard(("local", 0, "c"), [("item", 1), ("cell_contents",)], "equals_match", 3)
    assert check(t2, [f.__closure__])[0]
    assert_fails(t2, [(None, 5)], "L['c'][1] is no longer a cell")
    import types
    assert_fails(t2, [(None, types.CellType())], "L['c'][1] is an empty cell")


def test_accessors_are_shared():
    t = GuardTree()
    for v in (1, 2):
        t.guard(("local", 0, "self"), [("attr", "a"), ("item", 0)], "type_match", int)
        t.guard(("global", "g"), [("dict_item", "k")], "type_match", int)
    assert t.size() == 4
    assert t.dump().count("L['self'].a[0]\n") == 1
    assert t.dump().count("G['g']['k']\n") == 1


def test_unbound_local():
    t = GuardTree()
    t.local_equals(3, "z", None)
    assert check(t, [1, 2, 3, None])[0]
    assert_fails(t, [1, 2, 3, UNBOUND], "L['z'] is unbound")
    assert_fails(t, [], "L['z'] is unbound")  # slots past the end are unbound


# ---- ordering, re-entrancy, leaks, speed ----


def test_fail_count_reordering_keeps_results():
    x = torch.randn(2)
    t = GuardTree()
    t.local_equals(0, "a", 1)
    t.local_equals(1, "b", 2)
    t.local_tensor_match(2, "x", x)
    t.grad_mode()
    good = [1, 2, x]
    bad_x = [1, 2, torch.randn(3)]
    assert t.dump().index("L['a']") < t.dump().index("L['x']")
    for _ in range(5):
        assert not t.check(bad_x, G, B)
    dump = t.dump()
    assert dump.index("L['x']") < dump.index("L['a']"), dump  # the failing one moved first
    assert check(t, good)[0]
    assert_fails(t, bad_x, "L['x'] changed size at dim 0: expected 2, got 3")
    assert_fails(t, [1, 3, x], "L['b'] == 2 expected, got 3")
    # Two failing values: the one that failed more often is reported.
    assert_fails(t, [1, 3, torch.randn(3)], "L['x'] changed size at dim 0: expected 2, got 3")


def test_reentrant_check_from_user_eq():
    t = GuardTree()
    inner_results = []

    class Reenter:
        def __eq__(self, other):
            inner_results.append(t.check([1, other, 5], G, B))
            return True

        __hash__ = object.__hash__

    r = Reenter()
    t.local_equals(0, "a", 1)
    t.local_equals(1, "r", r)
    t.local_equals(2, "c", 4)
    # The outer check calls __eq__, which checks the same tree (failing at c) re-entrantly. Had
    # the inner failure reordered the guards under the outer loop, the outer check would skip c.
    assert t.check([1, Reenter(), 4], G, B)
    assert inner_results == [False]
    assert not t.check([1, Reenter(), 5], G, B)
    assert t.failure_reason([1, Reenter(), 5], G, B) == "L['c'] == 4 expected, got 5"
    assert t.check([1, Reenter(), 4], G, B)


def test_no_reference_leaks():
    x = torch.randn(3)
    obj = object()
    n = 7
    t = GuardTree()
    t.local_tensor_match(0, "x", x)
    t.local_equals(1, "n", n)
    t.global_id_match("obj", obj)
    t.guard(("local", 2, "xs"), [("item", 0)], "id_match", obj)
    t.guard(("local", 3, "m"), [("attr", "fc"), ("attr", "weight")], "tensor_match",
            torch.randn(2, 2))
    m = torch.nn.Linear(2, 2)
    m.fc = torch.nn.Linear(2, 2)
    t.grad_mode()
    t.no_aliasing([(0, "x"), (3, "m")])
    g = {"obj": obj}
    frames = [[x, n, (obj,), m], [x.double(), n, (obj,), m], [x, n, [obj], m.fc]]
    watched = [x, obj, m, m.fc, m.fc.weight, g, frames[0][2]]
    gc.collect()
    before = [sys.getrefcount(w) for w in watched]
    for frame in frames:
        for _ in range(10_000):
            t.check(frame, g, B)
        t.failure_reason(frame, g, B)
        t.time_check(1000, frame, g, B)
    gc.collect()
    assert [sys.getrefcount(w) for w in watched] == before


def test_guard_cost():
    xs = [torch.randn(8, 8) for _ in range(10)]
    one = GuardTree()
    one.local_tensor_match(0, "x", xs[0])
    one.grad_mode()
    ten = GuardTree()
    for i, x in enumerate(xs):
        ten.local_tensor_match(i, f"x{i}", x)
    ten.local_equals(10, "n", 3)
    ten.grad_mode()
    frame = xs + [3]
    assert one.check(frame[:1], G, B) and ten.check(frame, G, B)
    one_ns = min(one.time_check(200_000, frame[:1], G, B) for _ in range(5))
    ten_ns = min(ten.time_check(100_000, frame, G, B) for _ in range(5))
    print(f"\nguard check: 1 tensor + grad mode {one_ns:.1f} ns; "
          f"10 tensors + int + grad mode {ten_ns:.1f} ns")
    if "asan" not in os.environ.get("LD_PRELOAD", ""):  # sanitizer builds are debug builds
        assert one_ns < 5000 and ten_ns < 5000
