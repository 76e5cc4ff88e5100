# held-out style idioms: generator/itertools corners, dict views, set algebra, str formatting,
# class machinery (metaclass, __class_getitem__, __set_name__), functools/contextlib, exceptions,
# torch API objects (Size/dtype/device/finfo), __torch_function__ objects, odd bytecode, guards
import torch, torch.nn as nn, torch.nn.functional as F, collections, functools, itertools, operator
import contextlib, dataclasses, enum, math, types, typing, abc, collections.abc as cabc, copy
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(5)
y = torch.randn(4, 3)
sq = torch.randn(3, 3)

# =========================== generators and itertools
@probe(x)
def gen_stopiteration_value_from_return(x):
    def g():
        yield x
        return x * 7
    it = g()
    first = next(it)
    try:
        next(it)
        v = None
    except StopIteration as e:
        v = e.value
    return first, v

@probe(x)
def gen_throw_uncaught_reaches_caller(x):
    def g():
        yield 1
        yield 2
    it = g()
    next(it)
    try:
        it.throw(ValueError("boom"))
        r = 0
    except ValueError as e:
        r = len(str(e))
    return x * r, list(it)

@probe(x)
def gen_close_then_next_is_exhausted(x):
    def g():
        for i in range(5):
            yield x * i
    it = g()
    a = next(it)
    it.close()
    return a, next(it, "done")

@probe(x)
def gen_finally_runs_on_exhaustion(x):
    log = []
    def g():
        try:
            yield x
            yield x * 2
        finally:
            log.append("fin")
    out = [t for t in g()]
    return out, log

@probe(x)
def gen_coroutine_running_mean(x):
    def avg():
        total, n, mean = 0.0, 0, None
        while True:
            v = yield mean
            total += v
            n += 1
            mean = total / n
    c = avg()
    next(c)
    c.send(1.0)
    c.send(2.0)
    m = c.send(6.0)
    return x * m

@probe(x)
def gen_yield_in_try_except_loop(x):
    def g(vals):
        for v in vals:
            try:
                yield 10 // v
            except ZeroDivisionError:
                yield -1
    return x * sum(g([1, 0, 2, 5]))

@probe(x)
def gen_recursive_flatten_yield_from(x):
    def flat(o):
        if isinstance(o, (list, tuple)):
            for e in o:
                yield from flat(e)
        else:
            yield o
    parts = list(flat([x, (x * 2, [x * 3]), [[x * 4]]]))
    return len(parts), torch.stack(parts).sum(0)

@probe(x)
def gen_iter_of_generator_is_itself(x):
    g = (i for i in range(3))
    return iter(g) is g, x * sum(g)

@probe(x)
def gen_expression_unpack_into_call(x):
    def f(a, b, c): return a * 1 + b * 2 + c * 3
    return f(*(x + i for i in range(3)))

@probe(x)
def gen_yield_from_returns_subresult(x):
    def inner():
        a = yield 1
        b = yield 2
        return (a or 0) + (b or 0)
    def outer():
        r = yield from inner()
        yield r * 10
    it = outer()
    vals = [next(it), it.send(3), it.send(4)]
    return x * vals[-1], vals

@probe(x)
def gen_stopiteration_inside_gen_becomes_runtimeerror(x):
    def g():
        yield 1
        raise StopIteration
    try:
        list(g())
        r = "none"
    except RuntimeError as e:
        r = "runtime"
    return x, r

@probe(x)
def itertools_accumulate_max_and_mul(x):
    a = list(itertools.accumulate([3, 1, 4, 1, 5], max))
    b = list(itertools.accumulate([1, 2, 3, 4], operator.mul))
    return x * a[-1] + b[-1], a, b

@probe(x)
def itertools_islice_start_stop_step(x):
    rows = list(itertools.islice(x.unbind(0), 1, None, 2))
    return len(rows), torch.stack(rows)

@probe(x)
def itertools_zip_longest_generators(x):
    g1 = (x * i for i in range(3))
    g2 = (i for i in range(1))
    out = []
    for a, b in itertools.zip_longest(g1, g2, fillvalue=10):
        out.append(a + b)
    return torch.stack(out)

@probe(x)
def itertools_groupby_key_after_sort(x):
    words = ["bb", "a", "ccc", "dd", "e"]
    groups = {k: list(g) for k, g in itertools.groupby(sorted(words, key=len), key=len)}
    return x * len(groups[2]), groups

@probe(x)
def itertools_combinations_tensor_pairs(x):
    rows = x.unbind(0)
    return torch.stack([a * b for a, b in itertools.combinations(rows, 2)])

@probe(x)
def itertools_repeat_times_zip(x):
    return [a * b for a, b in zip(itertools.repeat(x, 3), [1, 2, 3])]

@probe(x)
def itertools_count_float_step(x):
    out = []
    for c, _ in zip(itertools.count(0.5, 0.25), range(3)):
        out.append(x * c)
    return out

@probe(x)
def itertools_chain_mixed_generator_list(x):
    vals = list(itertools.chain((x * i for i in range(2)), [x * 10], iter([x * 20])))
    return torch.stack(vals)

@probe(x)
def itertools_product_with_unpack_in_loop(x):
    acc = x * 0
    for i, (a, b) in enumerate(itertools.product([1, 2], [3, -1])):
        acc = acc + x * (i * a - b)
    return acc

@probe(x)
def map_partially_consumed_then_list(x):
    m = map(lambda t: t * 2, [x, x + 1, x + 2])
    first = next(m)
    return first, list(m)

# =========================== dict views and ordering
@probe(x)
def dict_items_view_set_ops(x):
    d = {"a": 1, "b": 2, "c": 3}
    common_ = d.items() & {("a", 1), ("b", 5)}
    diff = d.keys() - {"a"}
    return x * len(common_), sorted(diff), ("b", 2) in d.items()

@probe(x)
def dict_reinsert_moves_to_end(x):
    d = {"a": 1, "b": 2, "c": 3}
    d["a"] = 10            # keeps position
    v = d.pop("b")
    d["b"] = v             # moves to end
    return list(d), x * d["a"]

@probe(x)
def dict_popitem_is_lifo(x):
    d = {"a": x, "b": x * 2, "c": x * 3}
    k, v = d.popitem()
    return k, v, list(d)

@probe(x)
def dict_or_and_ior_operators(x):
    a = {"p": 1, "q": 2}
    b = {"q": 20, "r": 30}
    c = a | b
    a |= {"s": 4}
    return c, a, x * c["q"]

@probe(x)
def dict_reversed_keys_values(x):
    d = {"a": 1, "b": 2, "c": 3}
    return list(reversed(d)), list(reversed(d.values())), x * next(reversed(d.values()))

@probe(x)
def dict_view_mapping_attr(x):
    d = {"a": 1, "b": 2}
    m = d.keys().mapping
    return x * m["b"], dict(m)

@probe(x)
def dict_changed_size_during_iteration_caught(x):
    d = {"a": 1, "b": 2}
    try:
        for k in d:
            d[k + "x"] = 0
        r = "no"
    except RuntimeError:
        r = "yes"
    return x, r

@probe(x)
def dict_copy_is_shallow_independent(x):
    d = {"a": [1], "b": 2}
    e = d.copy()
    e["b"] = 20
    e["a"].append(5)
    return d, e, x * len(d["a"])

@probe(x)
def defaultdict_no_factory_raises_keyerror(x):
    d = collections.defaultdict(None, {"a": 1})
    try:
        d["zz"]
        r = 0
    except KeyError:
        r = 1
    return x * (r + d["a"])

@probe(x)
def dict_fromkeys_shared_mutable_value(x):
    d = dict.fromkeys(["a", "b"], [])
    d["a"].append(1)
    return d, x * len(d["b"])

@probe(x)
def dict_nested_setdefault_tree(x):
    tree = {}
    for path in [("a", "b"), ("a", "c"), ("d", "e")]:
        node = tree
        for p in path:
            node = node.setdefault(p, {})
    return tree, x * len(tree["a"])

@probe(x)
def dict_keys_equality_and_in_with_tuples(x):
    d1 = {(1, 2): "a", (3, 4): "b"}
    d2 = {(3, 4): "z", (1, 2): "y"}
    return d1.keys() == d2.keys(), d1.values() == d1.values(), x * ((1, 2) in d1)

@probe(x)
def counter_total_and_most_common_ties(x):
    c = collections.Counter("abracadabra")
    return x * c.total(), c.most_common(2), sorted(c.elements())[:4]

# =========================== set algebra
@probe(x)
def set_operators_full(x):
    a = {1, 2, 3, 4}
    b = {3, 4, 5}
    return (sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b),
            a <= a, {3} < b, a.isdisjoint({9}), x * len(a ^ b))

@probe(x)
def set_update_methods_multiple_args(x):
    s = {1, 2, 3, 4, 5, 6}
    s.intersection_update([1, 2, 3, 4, 9], {1, 2, 3, 7, 4})
    s.difference_update({1}, [2])
    s.symmetric_difference_update({4, 10})
    return sorted(s), x * sum(s)

@probe(x)
def frozenset_set_result_types(x):
    f = frozenset([1, 2])
    s = {2, 3}
    a = f | s
    b = s | f
    return type(a).__name__, type(b).__name__, a == b, x * len(a)

@probe(x)
def set_remove_missing_keyerror(x):
    s = {1, 2}
    try:
        s.remove(5)
        r = 0
    except KeyError as e:
        r = e.args[0]
    return x * r

@probe(x)
def set_of_strings_from_str_methods(x):
    s = set("hello world".split()) | set("world peace".split())
    return sorted(s), x * len(s)

@probe(x)
def set_equality_with_frozenset_and_hash(x):
    a = {1, 2}
    b = frozenset({2, 1})
    d = {b: "v"}
    return a == b, d[frozenset(a)], x * hash(b) * 0 + x

@probe(x)
def set_comprehension_dedup_shapes(x):
    ts = [x, x.t(), x[:2], x.clone()]
    shapes = {tuple(t.shape) for t in ts}
    return sorted(shapes), len(shapes)

# =========================== str methods and formatting
@probe(x)
def str_partition_rpartition(x):
    a = "layer.0.weight".partition(".")
    b = "layer.0.weight".rpartition(".")
    c = "noseparator".partition(":")
    return a, b, c, x * len(b[0])

@probe(x)
def str_center_ljust_rjust_zfill(x):
    return "ab".center(6, "*"), "ab".ljust(4, "-"), "ab".rjust(4), "42".zfill(5), "-7".zfill(4), x

@probe(x)
def str_find_rfind_count_index(x):
    s = "abcabcabc"
    i = s.find("c")
    return i, s.rfind("ab"), s.count("bc"), s.index("ca"), s.find("zz"), x * i

@probe(x)
def str_case_methods(x):
    s = "hello World ßx"
    return s.title(), s.capitalize(), s.swapcase(), s.casefold(), s.upper(), x

@probe(x)
def fstring_self_documenting_and_conversions(x):
    n = 3
    name = "w"
    return f"{n=}", f"{name!r}", f"{name!s:>4}", f"{n:#06b}", f"{3.14159:.3e}", x * n

@probe(x)
def str_startswith_tuple_and_range(x):
    s = "conv2d.weight"
    return s.startswith(("lin", "conv")), s.endswith(("bias",)), s.startswith("weight", 7), x

@probe(x)
def str_split_maxsplit_rsplit(x):
    s = "a.b.c.d"
    return s.split(".", 1), s.rsplit(".", 1), "  a  b ".split(), " x ".strip(" "), x

@probe(x)
def str_percent_dict_formatting(x):
    s = "%(name)s has %(n)03d items (%(f).1f%%)" % {"name": "box", "n": 7, "f": 12.345}
    return s, x * len(s)

@probe(x)
def format_builtin_specs(x):
    return format(3.14159, ".2f"), format(255, "x"), format(1234567, ","), format(0.25, "%"), format("ab", "^6"), x

@probe(x)
def str_format_field_attr_and_index(x):
    s = "{0[1]}-{1.real}-{k[a]}".format([5, 6], 2.5, k={"a": "z"})
    return s, x

@probe(x)
def str_format_with_tensor_shape_fields(x):
    s = "shape={} n={:d} first={}".format(tuple(x.shape), x.shape[0], list(x.shape)[:1])
    return s, x * len(s)

@probe(x)
def str_slicing_reversed_step(x):
    s = "abcdefg"
    return s[::-1], s[1::2], s[-3:], "".join(reversed(s)), x * len(s[::3])

@probe(x)
def str_join_generator_and_map(x):
    parts = "-".join(str(d) for d in x.shape)
    return parts, ",".join(map(str, range(3))), x

@probe(x)
def str_in_and_comparisons_sort(x):
    names = ["beta", "Alpha", "gamma", "alpha"]
    return sorted(names), sorted(names, key=str.lower), "amm" in "gamma", min(names), x

@probe(x)
def str_strip_chars_and_removesuffix(x):
    s = "xx__init__yy"
    return s.strip("xy"), s.lstrip("x"), "model.pt".removesuffix(".pt"), x

# =========================== class machinery
class _Tagged:
    def __class_getitem__(cls, item):
        return f"{cls.__name__}[{item.__name__ if isinstance(item, type) else item}]"

@probe(x)
def class_getitem_user(x):
    return _Tagged[int], _Tagged[3], x

class _CountMeta(type):
    count = 0
    def __call__(cls, *a, **k):
        _CountMeta.count += 1
        return super().__call__(*a, **k)

class _Counted(metaclass=_CountMeta):
    def __init__(self, v): self.v = v

@probe(x, reset=lambda: setattr(_CountMeta, "count", 0), state=lambda: _CountMeta.count)
def metaclass_call_override(x):
    a = _Counted(x)
    b = _Counted(x * 2)
    return a.v + b.v

class _MetaProp(type):
    @property
    def kind(cls): return cls.__name__.lower()

class _WithMetaProp(metaclass=_MetaProp):
    scale = 3

@probe(x)
def metaclass_property_on_class(x):
    return _WithMetaProp.kind, x * _WithMetaProp.scale

class _Slotted:
    __slots__ = ("a", "b")
    def __init__(self, a): self.a = a

@probe(x)
def slots_unset_attr_raises(x):
    o = _Slotted(x)
    try:
        o.b
        r = 0
    except AttributeError:
        r = 1
    o.b = x * 2
    return o.a + o.b + r

class _Temp:
    def __init__(self): self._c = 0.0
    @property
    def f(self): return self._c * 9 / 5 + 32
    @f.setter
    def f(self, v): self._c = (v - 32) * 5 / 9
    @f.deleter
    def f(self): self._c = -1.0

@probe(x)
def property_setter_and_deleter_local(x):
    t = _Temp()
    t.f = 212
    a = t._c
    del t.f
    return x * a, t._c

@probe(_Temp(), x)
def property_setter_on_input_object(t, x):
    t.f = 50
    return x * t.f, t

class _Base2:
    registry = []
    @classmethod
    def make(cls, v): return cls(v)
    def __init__(self, v): self.v = v

class _Sub2(_Base2):
    @classmethod
    def make(cls, v):
        o = super().make(v * 2)
        o.tag = cls.__name__
        return o

@probe(x)
def super_in_classmethod(x):
    o = _Sub2.make(x)
    return o.v, o.tag, type(o).__name__

@probe(x)
def classmethod_via_instance(x):
    o = _Sub2(x)
    p = o.make(x)
    return p.v, type(p) is _Sub2

class _SupA:
    def f(self, t): return t + 1
class _SupB(_SupA):
    def f(self, t):
        g = lambda: super(_SupB, self).f(t)
        def h(): return super(_SupB, self).f(t * 2)
        return g() + h()

@probe(x)
def super_explicit_inside_lambda_and_nested(x):
    return _SupB().f(x)

class _SetName:
    def __set_name__(self, owner, name):
        self.public = name
        self.private = "_" + name
    def __get__(self, obj, objtype=None):
        if obj is None: return self
        return getattr(obj, self.private) * 10
    def __set__(self, obj, v): setattr(obj, self.private, v)

class _UsesSetName:
    val = _SetName()
    def __init__(self, v): self.val = v

@probe(x)
def descriptor_set_name_get_set(x):
    o = _UsesSetName(x)
    return o.val, _UsesSetName.val.public, o._val

class _NonData:
    def __get__(self, obj, objtype=None): return 5

class _ShadowNonData:
    k = _NonData()

@probe(x)
def nondata_descriptor_shadowed_by_instance(x):
    o = _ShadowNonData()
    a = o.k
    o.k = 7
    return x * a + o.k

@probe(x)
def type_three_arg_dynamic_class(x):
    def m(self, t): return t * self.k
    C = type("Dyn", (object,), {"k": 3, "m": m})
    o = C()
    return o.m(x), C.__name__, isinstance(o, C)

class _Seq:
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        if i < 0: i += self.n
        if not 0 <= i < self.n: raise IndexError(i)
        return i * i

@probe(x)
def user_sequence_negative_and_slice(x):
    s = _Seq(5)
    return s[-1], s[1:4], list(s), 9 in s, x * s[-2]

class _RevOnly:
    def __init__(self, l): self.l = l
    def __iter__(self): return iter(self.l)
    def __reversed__(self): return iter(self.l[::-1] + [100])

@probe(x)
def user_reversed_dunder(x):
    return list(reversed(_RevOnly([1, 2, 3]))), x

class _IterOnly:
    def __iter__(self):
        yield 1; yield 5; yield 9

@probe(x)
def contains_falls_back_to_iter(x):
    o = _IterOnly()
    return 5 in o, 4 in o, x * (9 in o)

class _Falsy:
    def __bool__(self): return False

@probe(x)
def user_bool_in_or_and(x):
    a = _Falsy() or x
    b = _Falsy() and x
    return a, type(b).__name__

@probe(x)
def mro_and_bases_inspection(x):
    return [c.__name__ for c in _Sub2.__mro__], _Sub2.__bases__[0].__name__, issubclass(_Sub2, _Base2), x

class _IS:
    subs = []
    def __init_subclass__(cls, /, scale=1, **kw):
        super().__init_subclass__(**kw)
        cls.scale = scale
        _IS.subs.append(cls.__name__)

@probe(x)
def init_subclass_class_defined_inside(x):
    class Local(_IS, scale=4):
        def f(self, t): return t * self.scale
    r = Local().f(x)
    _IS.subs.remove("Local")
    return r

@probe(x)
def abc_mapping_sequence_isinstance(x):
    return (isinstance({}, cabc.Mapping), isinstance([], cabc.Sequence), isinstance((), cabc.MutableSequence),
            isinstance(x.shape, cabc.Sequence), isinstance(iter([]), cabc.Iterator), x)

class _Dispatch:
    @functools.singledispatchmethod
    def go(self, arg): return "other"
    @go.register
    def _(self, arg: int): return "int"
    @go.register
    def _(self, arg: str): return "str"

@probe(x)
def singledispatchmethod_dispatch(x):
    d = _Dispatch()
    return d.go(1), d.go("s"), d.go(2.0), x

class _Lazy:
    def __init__(self, t): self.t = t; self.calls = 0
    @functools.cached_property
    def heavy(self):
        self.calls += 1
        return self.t * 3

@probe(x)
def cached_property_invalidate_by_del(x):
    o = _Lazy(x)
    a = o.heavy; b = o.heavy
    del o.heavy
    c = o.heavy
    return a, c, o.calls, a is b

@probe(x)
def obj_dict_update_direct(x):
    o = types.SimpleNamespace()
    o.__dict__.update(a=x, b=2)
    return o.a * o.b, sorted(vars(o))

@dataclasses.dataclass(frozen=True)
class _FrozenPost:
    a: int
    b: int = 0
    def __post_init__(self):
        object.__setattr__(self, "b", self.a * 2)

@probe(x)
def frozen_dataclass_post_init_object_setattr(x):
    f = _FrozenPost(3)
    return x * f.b, f

@dataclasses.dataclass
class _Pt:
    x: int
    y: int

@probe(x)
def match_dataclass_positional_and_guard(x):
    out = []
    for p in [_Pt(0, 1), _Pt(2, 2), _Pt(3, -1)]:
        match p:
            case _Pt(0, yy):
                out.append(yy)
            case _Pt(a, b) if a == b:
                out.append(a * 10)
            case _Pt(x=a):
                out.append(-a)
    return x * sum(out), out

@probe(x)
def match_or_as_and_mapping_rest(x):
    res = []
    for v in [1, 2, {"k": 1, "z": 2}, [1, 2, 3], "s"]:
        match v:
            case 1 | 2 as n:
                res.append(n)
            case {"k": kk, **rest}:
                res.append(kk + len(rest))
            case [first, *others]:
                res.append(first + len(others))
            case str():
                res.append(100)
    return x * sum(res), res

@probe(x)
def match_tensor_isinstance_class_pattern(x):
    def kind(o):
        match o:
            case torch.Tensor() if o.dim() == 2:
                return o.sum(1)
            case (a, b):
                return a + b
            case _:
                return None
    return kind(x), kind((x, x)), kind(3)

# =========================== functools
def _logged(fn):
    @functools.wraps(fn)
    def w(*a, **k):
        """wrapper doc"""
        return fn(*a, **k) * 2
    return w

class _Wrapped:
    @_logged
    def meth(self, t):
        """meth doc"""
        return t + 1

@probe(x)
def wraps_on_method(x):
    o = _Wrapped()
    return o.meth(x), _Wrapped.meth.__name__, _Wrapped.meth.__doc__, _Wrapped.meth.__wrapped__(o, x)

@probe(x)
def partial_of_partial_attrs(x):
    def f(a, b, c=0, d=0): return a * b + c - d
    p1 = functools.partial(f, x, c=1)
    p2 = functools.partial(p1, 2, d=3)
    return p2(), len(p2.args), sorted(p2.keywords), p2.func is f

@probe(x)
def update_wrapper_manual(x):
    def base(t):
        "doc"
        return t * 2
    def w(t): return base(t) + 1
    functools.update_wrapper(w, base)
    return w(x), w.__name__, w.__doc__

@probe(x)
def lru_cache_local_function(x):
    calls = []
    @functools.lru_cache(maxsize=None)
    def f(n):
        calls.append(n)
        return n * n
    s = f(3) + f(3) + f(4)
    return x * s, calls

@probe(x)
def reduce_with_lambda_over_shapes(x):
    n = functools.reduce(lambda a, b: a * b, x.shape, 1)
    m = functools.reduce(operator.add, [x, x * 2, x * 3])
    return n, m

@probe(x)
def partial_method_on_tensor_class(x):
    f = functools.partial(torch.Tensor.sum, dim=1)
    g = functools.partial(torch.clamp, min=-0.5, max=0.5)
    return f(x), g(x)

@probe(x)
def cmp_to_key_custom_order(x):
    def cmp(a, b): return (len(a) - len(b)) or ((a > b) - (a < b))
    l = sorted(["bb", "a", "ccc", "ab", "b"], key=functools.cmp_to_key(cmp))
    return l, x * len(l[0])

# =========================== contextlib
@contextlib.contextmanager
def _log_cm(log, name):
    log.append("enter " + name)
    try:
        yield name
    finally:
        log.append("exit " + name)

@probe(x)
def nested_contextmanagers_order(x):
    log = []
    with _log_cm(log, "a") as a, _log_cm(log, "b") as b:
        log.append(a + b)
        r = x * 2
    return r, log

@probe(x)
def contextmanager_as_decorator(x):
    log = []
    @_log_cm(log, "d")
    def f(t):
        log.append("body")
        return t + 1
    return f(x), log

@probe(x)
def exitstack_enter_context_and_exception(x):
    log = []
    try:
        with contextlib.ExitStack() as st:
            n1 = st.enter_context(_log_cm(log, "1"))
            st.callback(log.append, "cb")
            n2 = st.enter_context(_log_cm(log, "2"))
            raise ValueError(n1 + n2)
    except ValueError as e:
        log.append(str(e))
    return x, log

@probe(x)
def suppress_multiple_types_in_loop(x):
    acc = x * 0
    for d in [{"a": 1}, {}, None]:
        with contextlib.suppress(KeyError, TypeError):
            acc = acc + x * d["a"]
            continue
        acc = acc - 1
    return acc

class _Res:
    def __init__(self): self.closed = False
    def close(self): self.closed = True

@probe(x)
def contextlib_closing(x):
    r = _Res()
    with contextlib.closing(r) as rr:
        same_ = rr is r
        a = r.closed
    return x, same_, a, r.closed

@contextlib.contextmanager
def _translate():
    try:
        yield
    except KeyError as e:
        raise ValueError("translated") from e

@probe(x)
def contextmanager_translates_exception(x):
    try:
        with _translate():
            {}["k"]
        r = "no"
    except ValueError as e:
        r = type(e.__cause__).__name__ + str(e)
    return x, r

@probe(x)
def contextmanager_yield_tensor_modified_after(x):
    @contextlib.contextmanager
    def scaled(t):
        box = [t]
        yield box
        box[0] = box[0] * 10
    with scaled(x) as b:
        b[0] = b[0] + 1
    return b[0]

@probe(xr)
def enable_grad_decorator_on_inner_under_no_grad(x):
    @torch.enable_grad()
    def inner(t): return t * 2
    with torch.no_grad():
        a = inner(x)
        b = x * 2
    return a.requires_grad, b.requires_grad, a.detach() + b

@probe(xr)
def set_grad_enabled_as_decorator(x):
    @torch.set_grad_enabled(False)
    def inner(t): return t * 3
    r = inner(x)
    return r.requires_grad, torch.is_grad_enabled(), r

@probe(xr)
def no_grad_object_reused_twice(x):
    ng = torch.no_grad()
    with ng:
        a = x * 2
    b = x * 2
    with ng:
        c = x * 3
    return a.requires_grad, b.requires_grad, c.requires_grad

# =========================== exceptions
@probe(x)
def raise_from_none_suppress_context(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            raise ValueError("v") from None
    except ValueError as e:
        r = (e.__suppress_context__, e.__cause__ is None, type(e.__context__).__name__)
    return x, r

@probe(x)
def finally_return_swallows_exception(x):
    def f(t):
        try:
            raise KeyError("lost")
        finally:
            return t * 2
    return f(x)

@probe(x)
def try_except_in_loop_break_continue_else(x):
    acc = x * 0
    for i in range(6):
        try:
            if i == 1:
                continue
            if i == 4:
                break
            if i == 2:
                raise ValueError
            acc = acc + i
        except ValueError:
            acc = acc + 100
        else:
            acc = acc + 0.5
        finally:
            acc = acc + 0.01
    else:
        acc = acc * 1000
    return acc

class _StrExc(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code
    def __str__(self): return f"E{self.code:03d}"

@probe(x)
def custom_exception_str_and_attrs(x):
    try:
        raise _StrExc(7)
    except _StrExc as e:
        return x * e.code, str(e), e.args, repr(e)

@probe(x)
def reraise_modified_exception_args(x):
    try:
        try:
            raise ValueError("a")
        except ValueError as e:
            e.args = ("b",) + e.args
            raise
    except ValueError as e2:
        return x, e2.args

@probe(x)
def exception_context_chain_implicit(x):
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise IndexError("i")
    except IndexError as e:
        return x, type(e.__context__).__name__, e.__cause__ is None

@probe(x)
def list_pop_empty_and_index_errors(x):
    r = []
    for fn in [lambda: [].pop(), lambda: [1].index(5), lambda: (1,)[3], lambda: int("x")]:
        try:
            fn()
        except (IndexError, ValueError) as e:
            r.append(type(e).__name__)
    return x, r

@probe(x)
def exception_in_generator_then_exhausted(x):
    def g():
        yield 1
        raise ValueError("g")
        yield 2
    it = g()
    vals = [next(it)]
    try:
        next(it)
    except ValueError:
        vals.append("err")
    vals.append(next(it, "end"))
    return x, vals

@probe(x)
def exception_group_catch_plain(x):
    try:
        raise ExceptionGroup("grp", [ValueError("a"), KeyError("b")])
    except ExceptionGroup as eg:
        names = [type(e).__name__ for e in eg.exceptions]
        m = eg.message
    return x, names, m

@probe(x)
def except_star_split(x):
    got = []
    try:
        raise ExceptionGroup("g", [ValueError(1), TypeError(2), ValueError(3)])
    except* ValueError as eg:
        got.append(len(eg.exceptions))
    except* TypeError as eg:
        got.append(-len(eg.exceptions))
    return x, got

@probe(x)
def exception_var_unbound_after_except(x):
    e = 5
    try:
        raise ValueError
    except ValueError as e:
        pass
    try:
        e
        r = "bound"
    except NameError:
        r = "unbound"
    return x, r

@probe(x)
def nested_function_raises_caught_with_finally_counter(x):
    cnt = [0]
    def risky(i):
        try:
            if i % 2:
                raise RuntimeError(i)
            return i
        finally:
            cnt[0] += 1
    tot = 0
    for i in range(5):
        try:
            tot += risky(i)
        except RuntimeError as e:
            tot -= e.args[0]
    return x * tot, cnt

# =========================== torch API objects
@probe(x)
def torch_size_arith_types(x):
    s = x.shape
    a = s + (5,)
    b = (1,) + s
    c = s * 2
    d = s[1:]
    return type(a).__name__, type(b).__name__, type(c).__name__, type(d).__name__, a, c, d

@probe(x)
def torch_size_constructor_and_numel(x):
    s = torch.Size([2, 6])
    return x.reshape(s), s.numel(), s == (2, 6), torch.Size(reversed(x.shape)), x.shape.count(3)

@probe(x)
def dtype_object_attributes(x):
    d = x.dtype
    return (d.is_floating_point, d.is_complex, d.itemsize, d.is_signed, d.to_complex(),
            torch.complex64.to_real(), x.to(d.to_complex()).real)

@probe(x)
def device_object_attributes(x):
    d = x.device
    e = torch.device("cpu", 0) if False else torch.device("cpu")
    return d.type, d.index, d == e, str(d), d == torch.device(str(d)), x.to(d)

@probe(x)
def finfo_bf16_half_clamp(x):
    fb = torch.finfo(torch.bfloat16)
    fh = torch.finfo(torch.float16)
    return x.clamp(min=-fh.max, max=fh.max), fb.eps, fh.tiny, fb.bits, torch.iinfo(torch.uint8).max

@probe(x)
def new_zeros_reversed_shape_requires_grad(x):
    a = x.new_zeros(x.shape[::-1], requires_grad=True)
    b = x.new_full((2,), 3, dtype=torch.int64)
    c = x.new_empty(0)
    return a.shape, a.requires_grad, b, c.numel()

@probe(x)
def torch_result_type_promote_can_cast(x):
    i = x.to(torch.int32)
    return (torch.result_type(i, 2.5), torch.promote_types(torch.int32, torch.float16),
            torch.can_cast(torch.float32, torch.int32), torch.result_type(i, 2), torch.is_floating_point(i))

@probe(xr)
def autograd_grad_inside(x):
    y = (x * x).sum()
    (g,) = torch.autograd.grad(y, x)
    return g

@probe(xr)
def autograd_grad_create_graph_second_order(x):
    y = (x ** 3).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    return gg

@probe(x)
def nn_functional_odd_args(x):
    lab = torch.tensor([0, 2, 1, 2])
    return (F.normalize(x, p=1.0, dim=0), F.gelu(x, approximate="tanh"),
            F.cross_entropy(x, lab, label_smoothing=0.1, ignore_index=1),
            F.one_hot(lab, num_classes=4), F.pad(x.unsqueeze(0), (1, 1), mode="reflect"),
            F.softmax(x, dim=-1, dtype=torch.float64))

@probe(x)
def embedding_padding_idx_and_max_norm_free(x):
    w = torch.arange(12.0).reshape(4, 3)
    idx = torch.tensor([[0, 2], [3, 0]])
    return F.embedding(idx, w, padding_idx=0), F.embedding_bag(idx, w, mode="max")

@probe(x)
def inplace_metadata_ops_on_clone(x):
    y = x.clone()
    y.unsqueeze_(0)
    y.transpose_(1, 2)
    y.squeeze_(0)
    return y, y.shape, y.is_contiguous()

@probe(x)
def inplace_on_column_view_and_as_strided(x):
    y = x.clone()
    y[:, 0].mul_(10)
    y.t()[1].add_(100)
    z = y.as_strided((2, 2), (1, 3))
    return y, z

@probe(x)
def view_as_expand_as_unflatten_repeat_interleave(x):
    a = x.flatten().view_as(x)
    b = x[:1].expand_as(x)
    c = x.reshape(12).unflatten(0, (3, 4))
    d = x.repeat_interleave(2, dim=0)
    return a, b, c, d.shape

class _TF:
    """plain object that overrides torch functions"""
    def __init__(self, t): self.t = t
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args = [a.t if isinstance(a, _TF) else a for a in args]
        return func(*args, **kwargs) * 2

@probe(x)
def torch_function_on_plain_object(x):
    o = _TF(x)
    return torch.add(o, 1), torch.mul(x, o)

@probe(x)
def torch_overrides_has_torch_function(x):
    o = _TF(x)
    return torch.overrides.has_torch_function((o,)), torch.overrides.has_torch_function((x,)), x

@probe(x)
def torch_tensor_from_python_list_of_shape_math(x):
    t = torch.tensor([x.shape[0] * 1.5, x.shape[1] / 2, len(x)])
    return x * t[1], t

@probe(x)
def tensor_item_in_python_control_then_tensor(x):
    s = torch.tensor([1.0, 2.0, 3.0])
    n = int(s.sum().item())
    return x * n, [i for i in range(n) if i % 2]

@probe(x)
def torch_where_single_arg_and_nonzero_tuple(x):
    m = torch.tensor([[True, False], [False, True]])
    return torch.where(m), m.nonzero(as_tuple=True)

@probe(x)
def tensor_new_tensor_and_as_tensor(x):
    a = x.new_tensor([1, 2])
    b = torch.as_tensor([1.5, 2.5], dtype=x.dtype)
    c = torch.as_tensor(x)
    return a, b, c is x

@probe(x)
def torch_size_index_sum_and_reversed_loop(x):
    tot = 0
    for d in reversed(x.shape):
        tot = tot * 10 + d
    return tot, sum(x.shape), x.shape.index(3), max(x.shape)

# =========================== unusual bytecode
@probe(x)
def nested_comprehension_lambdas_capture(x):
    fs = [[lambda t, i=i: t * i * j for j in range(1, 3)] for i in range(1, 3)]
    return [f(x) for row in fs for f in row]

@probe(x)
def nested_comprehension_late_binding_closure(x):
    fs = [lambda t: t * i for i in range(3)]
    return [f(x) for f in fs]

@probe(x)
def star_unpacking_variants(x):
    rows = list(x.unbind(0))
    a, *mid, b = rows
    (c, d), *rest = [(1, 2), (3, 4), (5, 6)]
    *init, last = range(4)
    return a + b + sum(mid), c, d, rest, init, last

@probe(x)
def while_else_and_for_else_break(x):
    i = 0
    r = []
    while i < 3:
        i += 1
    else:
        r.append("w-else")
    for j in range(5):
        if j == 2:
            break
    else:
        r.append("f-else")
    return x * i, r, j

_G_COUNT = 0
@probe(x, reset=lambda: globals().__setitem__("_G_COUNT", 0), state=lambda: _G_COUNT)
def global_rebind_then_read_same_call(x):
    global _G_COUNT
    _G_COUNT = _G_COUNT + 5
    return x * _G_COUNT

@probe(x)
def nonlocal_in_loop_defined_closures(x):
    total = 0
    def make(k):
        def add():
            nonlocal total
            total += k
        return add
    for k in range(4):
        make(k)()
    return x * total

@probe(x)
def del_local_then_reassign(x):
    a = x * 2
    b = a + 1
    del a
    a = b * 3
    del b
    return a

@probe(x)
def del_in_loop_and_list_items(x):
    l = [x, x * 2, x * 3, x * 4]
    for _ in range(2):
        del l[0]
    del l[-1:]
    return l

@probe(x)
def comprehension_in_class_body(x):
    class K:
        vals = [i * i for i in range(4)]
        total = sum(vals)
    return x * K.total, K.vals

@probe(x)
def walrus_leaks_from_comprehension(x):
    ys = [last := v * 2 for v in range(4)]
    return x * last, ys

@probe(x)
def augassign_on_attr_subscript(x):
    o = types.SimpleNamespace(d={"k": x}, l=[1, 2])
    o.d["k"] += 1
    o.l[0] *= 5
    o.l += [3]
    return o.d["k"], o.l

@probe(x)
def chained_assignment_shared_list(x):
    a = b = []
    a.append(x)
    c, d = e = (1, 2)
    return len(b), a is b, e, c + d

@probe(x)
def dict_unpack_in_call_and_literal(x):
    base = {"alpha": 2}
    def f(t, alpha=1, beta=0): return t * alpha + beta
    cfg = {**base, "beta": 3}
    return f(x, **cfg), f(x, **base, beta=-1), {**cfg, **{"alpha": 0}}

@probe(x)
def lambda_star_args_kwargs(x):
    f = lambda *a, **k: (len(a), sorted(k), sum(a[1:]) + a[0])
    return f(x, 1, 2, p=1, q=2)

@probe(x)
def enumerate_items_nested_unpack(x):
    d = {"a": (1, 2), "b": (3, 4)}
    acc = x * 0
    for i, (k, (p, q)) in enumerate(d.items()):
        acc = acc + i * p + q
    return acc

@probe(x)
def conditional_import_inside(x):
    if x.dim() == 2:
        import math as m
    else:
        import cmath as m
    from operator import mul as _mul
    return _mul(x, m.pi)

@probe(x)
def lambda_recursive_via_name(x):
    fact = lambda n: 1 if n <= 1 else n * fact(n - 1)
    return x * fact(4)

@probe(x)
def closure_over_loop_var_after_loop(x):
    fs = []
    for i in range(3):
        fs.append(lambda: i)
    i = 10
    return x * sum(f() for f in fs)

@probe(x)
def try_finally_in_while_with_continue(x):
    i = 0
    log = []
    while i < 4:
        try:
            i += 1
            if i % 2:
                continue
            log.append(i)
        finally:
            log.append(-i)
    return x * sum(log), log

@probe(x)
def nested_functions_with_defaults_from_enclosing(x):
    k = 3
    def f(t, k=k):
        def g(u, j=k * 2): return u * j
        return g(t)
    k = 100
    return f(x)

@probe(x)
def bool_ops_return_operands(x):
    a = [] or [1]
    b = 0 and x
    c = None or 0 or "z"
    d = x.shape and x.shape[0]
    return a, b, c, d

@probe(x)
def is_and_is_not_on_singletons(x):
    n = None
    e = ...
    return n is None, e is Ellipsis, NotImplemented is not None, type(e).__name__, x

# =========================== guards across calls
_GS = {1, 2}
def _gs_reset():
    _GS.clear(); _GS.update({1, 2})
@probe(x, reset=_gs_reset, between=lambda: _GS.add(7), args2=(x,))
def guard_global_set_mutated(x):
    return x * sum(_GS), 7 in _GS

@probe(x, {"a": 1}, args2=(x, {"a": 1, "b": 2}))
def guard_kwargs_dict_keys_change(x, d):
    def f(t, a=0, b=0): return t * a + b
    return f(x, **d)

@probe(x, {"l": [1, 2]}, args2=(x, {"l": [1, 2, 3]}))
def guard_nested_list_in_dict_len(x, d):
    return x * len(d["l"]) + sum(d["l"])

class _KA:
    def __init__(self): self.k = 2
    def f(self, t): return t * self.k
class _KB:
    def __init__(self): self.k = 2
    def f(self, t): return t - self.k

@probe(x, _KA(), args2=(x, _KB()))
def guard_object_class_changes(x, o):
    return o.f(x)

@probe(x, [x, x], args2=(x, [x, x, x]))
def guard_tensor_list_length(x, l):
    return sum(l) * len(l)

def _mk_cell():
    v = 2
    def get(): return v
    def set_(n):
        nonlocal v
        v = n
    return get, set_
_CG, _CS = _mk_cell()
@probe(x, reset=lambda: _CS(2), between=lambda: _CS(9), args2=(x,))
def guard_cell_changed_by_other_closure(x):
    return x * _CG()

_GP = functools.partial(torch.mul, other=2)
def _gp_reset():
    global _GP
    _GP = functools.partial(torch.mul, other=2)
def _gp_between():
    global _GP
    _GP = functools.partial(torch.mul, other=5)
@probe(x, reset=_gp_reset, between=_gp_between, args2=(x,))
def guard_global_partial_rebound(x):
    return _GP(x)

_GDT = torch.float32
def _gdt_set(d):
    global _GDT
    _GDT = d
@probe(x, reset=lambda: _gdt_set(torch.float32), between=lambda: _gdt_set(torch.float64), args2=(x,))
def guard_global_dtype_changed(x):
    return x.to(_GDT)

_GDEL = {"a": 1, "b": 2}
def _gdel_reset():
    _GDEL.clear(); _GDEL.update({"a": 1, "b": 2})
@probe(x, reset=_gdel_reset, between=lambda: _GDEL.pop("b"), args2=(x,))
def guard_global_dict_key_deleted(x):
    return x * _GDEL.get("b", 100)

@probe(x, float("nan"), args2=(x, 1.5))
def guard_float_nan_then_value(x, f):
    if math.isnan(f):
        return x * 0
    return x * f

@probe(x, -0.0, args2=(x, 0.0))
def guard_negative_zero_float(x, f):
    return x * math.copysign(1.0, f)

@probe(x, 0.0, args2=(x, -0.0))
def guard_zero_then_negative_zero(x, f):
    return x + math.copysign(1.0, f), str(f)

@probe(x, 0, args2=(x, 5))
def guard_int_zero_then_nonzero(x, n):
    if n:
        return x * n
    return x - 1

@probe(x, 1, args2=(x, 2))
def guard_int_one_then_two_range(x, n):
    return [x * i for i in range(n)]

@probe(x, True, args2=(x, 1))
def guard_bool_then_int_same_value(x, b):
    return x * b, type(b).__name__, str(b)

@probe((x, x.double()), args2=((x.double(), x),))
def guard_tuple_tensor_dtypes_swap(t):
    a, b = t
    return a + 1, b.dtype

@probe(x, "mean", args2=(x, "sum"))
def guard_str_reduction_kind(x, how):
    return getattr(x, how)(0), how.upper()

@probe(x, None, args2=(x, {"s": 2}))
def guard_none_then_dict(x, cfg):
    cfg = cfg or {}
    return x * cfg.get("s", 1)

@probe(x, [1, 2, 3], args2=(x, [1, 2, 4]))
def guard_list_int_value_change(x, l):
    return x[:, :l[-1] - 1] if l[-1] < 4 else x * sum(l)

@probe(x, 2, args2=(x, 2.0))
def guard_int_then_float_type_name(x, k):
    return x * k, type(k).__name__, k / 3

_EN = enum.Enum("_EN", "A B")
@probe(x, _EN.A, args2=(x, _EN.B))
def guard_enum_member_arg(x, e):
    return x * e.value, e.name

class _ModeMod(nn.Module):
    def __init__(self):
        super().__init__(); self.lin = nn.Linear(3, 3); self.mode = "a"
    def forward(self, t):
        if self.mode == "a":
            return self.lin(t)
        return self.lin(t).relu()

_MM = _ModeMod()
@probe(x, reset=lambda: setattr(_MM, "mode", "a"), between=lambda: setattr(_MM, "mode", "b"), args2=(x,))
def guard_global_module_str_attr(x):
    return _MM(x)

_LEN_LIST = [1]
def _ll_reset():
    _LEN_LIST[:] = [1]
@probe(x, reset=_ll_reset, between=lambda: _LEN_LIST.extend([2, 3]), args2=(x,))
def guard_global_list_len_loop(x):
    acc = x
    for v in _LEN_LIST:
        acc = acc * v
    return acc

def _with_kwdefaults(t, *, k=2): return t * k
def _kwd_reset(): _with_kwdefaults.__kwdefaults__ = {"k": 2}
@probe(x, reset=_kwd_reset, between=lambda: _with_kwdefaults.__kwdefaults__.__setitem__("k", 7), args2=(x,))
def guard_kwdefaults_changed(x):
    return _with_kwdefaults(x)

class _CfgDC:
    pass
_CFG = _CfgDC(); _CFG.layers = [1, 2]
def _cfg_reset(): _CFG.layers = [1, 2]
@probe(x, reset=_cfg_reset, between=lambda: _CFG.layers.append(3), args2=(x,))
def guard_attr_list_appended(x):
    return x * len(_CFG.layers)

@probe(x, args2=(torch.randn(5, 3),))
def guard_shape_change_python_list_ops(x):
    n = x.shape[0]
    idx = list(range(n))[::-1]
    return x[idx], n % 2 == 0, [i * 2 for i in idx][:2]

# =========================== batch 2: builtin exceptions raised inside inlined helpers
def _kget(d, k): return d[k]
def _attr(o): return o.missing
def _div(a, b): return a / b
def _nxt(it): return next(it)

@probe(x)
def helper_keyerror_caught_by_caller_pass(x):
    try:
        _kget({}, "a")
    except KeyError:
        pass
    return x

@probe(x)
def helper_attributeerror_caught_by_caller(x):
    try:
        _attr(object())
        r = 0
    except AttributeError:
        r = 1
    return x * r

@probe(x)
def helper_zerodivision_caught_flag(x):
    ok = True
    try:
        _div(1, 0)
    except ZeroDivisionError:
        ok = False
    return x, ok

@probe(x)
def helper_next_empty_stopiteration_caught(x):
    try:
        _nxt(iter([]))
        r = "got"
    except StopIteration:
        r = "stop"
    return x, r

@probe(x)
def builtin_int_parse_in_helper_caught(x):
    def parse(s):
        return int(s)
    vals = []
    for s in ["1", "x", "3"]:
        try:
            vals.append(parse(s))
        except ValueError:
            vals.append(0)
    return x * sum(vals), vals

# =========================== batch 2: float sign / number corners
@probe(x)
def negative_zero_constant_sign(x):
    z = -0.0
    return x * math.copysign(1.0, z), str(z), 1 / float("-inf") == 0

@probe(x, -0.0)
def negative_zero_arg_str(x, f):
    return str(f), x + f

@probe(x)
def float_hex_and_ratio(x):
    return float.fromhex("0x1.8p1"), (2.5).hex(), (0.125).as_integer_ratio(), x * float.fromhex("0x1p-1")

@probe(x)
def python_complex_numbers(x):
    c = complex(3, 4)
    d = c * (1 - 2j)
    return x * abs(c), d.real, d.imag, c.conjugate()

@probe(x)
def operator_length_hint_and_index(x):
    return operator.length_hint([1, 2, 3]), operator.length_hint(iter(range(5))), operator.index(7), x

# =========================== batch 2: user protocols
class _Fmt:
    def __init__(self, v): self.v = v
    def __format__(self, spec):
        return f"<{self.v:{spec}}>" if spec else f"<{self.v}>"

@probe(x)
def user_format_dunder_in_fstring(x):
    o = _Fmt(3.14159)
    return f"{o}|{o:.2f}", format(o, ".1f"), x

class _It:
    def __init__(self, n): self.i = 0; self.n = n
    def __iter__(self): return self
    def __next__(self):
        if self.i >= self.n: raise StopIteration
        self.i += 1
        return self.i

@probe(x)
def iterator_class_break_then_resume(x):
    it = _It(5)
    first = []
    for v in it:
        first.append(v)
        if v == 2:
            break
    rest = list(it)
    return x * sum(rest), first, rest

class _Grid:
    def __getitem__(self, key):
        r, c = key
        return (r.start or 0, r.stop, c)

@probe(x)
def user_getitem_tuple_slice_key(x):
    g = _Grid()
    return g[1:3, 2], g[:5, -1], x

class _UD(collections.UserDict):
    def __missing__(self, key): return len(key)

@probe(x)
def userdict_subclass_missing(x):
    d = _UD(a=1)
    return x * (d["a"] + d["long"]), dict(d), "long" in d

@probe(x)
def userlist_basic(x):
    l = collections.UserList([3, 1, 2])
    l.append(5)
    l.sort()
    return x * l[-1], list(l), len(l)

class _DefMissing(dict):
    def __missing__(self, k): return "{" + k + "}"

@probe(x)
def str_format_map_with_missing(x):
    s = "{a}-{b}".format_map(_DefMissing(a="A"))
    return s, x * len(s)

@probe(x)
def gen_send_none_same_as_next(x):
    def g():
        v = yield 1
        yield v
    it = g()
    a = it.send(None)
    b = it.send(None)
    return x * a, b

@probe(x)
def gen_close_nested_yield_from_finally(x):
    log = []
    def inner():
        try:
            yield 1
            yield 2
        finally:
            log.append("inner")
    def outer():
        try:
            yield from inner()
        finally:
            log.append("outer")
    g = outer()
    next(g)
    g.close()
    return x, log

@probe(x)
def zip_stops_generator_state_after(x):
    g = iter(range(10))
    pairs = list(zip(g, "ab"))
    return x * next(g), pairs

@probe(x)
def enumerate_shared_generator_interleaved(x):
    g = (x * i for i in range(6))
    e = enumerate(g)
    a = next(e)
    b = next(g)
    c = next(e)
    return a[0], c[0], a[1] + b + c[1]

# =========================== batch 2: guards
def _code_a(t): return t + 1
def _code_b(t): return t * 100
def _user_fn(t): return t + 1
_ORIG_CODE = _user_fn.__code__
def _code_reset(): _user_fn.__code__ = _ORIG_CODE
@probe(x, reset=_code_reset, between=lambda: setattr(_user_fn, "__code__", _code_b.__code__), args2=(x,))
def guard_function_code_swapped(x):
    return _user_fn(x)

class _Sw:
    def f(self, t): return t + 1
_SW = _Sw()
def _sw_reset(): _SW.__class__ = _Sw
class _Sw2(_Sw):
    def f(self, t): return t * 7
@probe(x, reset=_sw_reset, between=lambda: setattr(_SW, "__class__", _Sw2), args2=(x,))
def guard_instance_class_reassigned(x):
    return _SW.f(x)

_GFLOAT = [1.5]
@probe(x, reset=lambda: _GFLOAT.__setitem__(0, 1.5), between=lambda: _GFLOAT.__setitem__(0, -0.0), args2=(x,))
def guard_global_list_float_to_negzero(x):
    return x * math.copysign(2.0, _GFLOAT[0])

_GTUP = (1, 2)
def _gtup_set(v):
    global _GTUP
    _GTUP = v
@probe(x, reset=lambda: _gtup_set((1, 2)), between=lambda: _gtup_set((1, 2, 3)), args2=(x,))
def guard_global_tuple_rebound(x):
    a, *rest = _GTUP
    return x * a + len(rest)

@probe(x, {"k": x}, args2=(x, {"k": None}))
def guard_dict_value_tensor_then_none(x, d):
    return x if d["k"] is None else x + d["k"]

@probe(x, [x, 2], args2=(x, [2, x]))
def guard_list_element_order_types(x, l):
    return [v * 2 for v in l][0]

# =========================== batch 2: torch misc
@probe(x)
def tensor_contains_scalar(x):
    y = torch.tensor([0.5, 1.0, 2.0])
    return 1.0 in y, 3.0 in y, x

@probe(x)
def distributions_normal_log_prob(x):
    d = torch.distributions.Normal(torch.zeros(3), torch.ones(3))
    return d.log_prob(x), d.mean, d.stddev

@probe(x)
def parameters_to_vector_and_back(x):
    lin = nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.fill_(0.5); lin.bias.fill_(0.1)
    v = torch.nn.utils.parameters_to_vector(lin.parameters())
    return v, lin(x)

@probe(x)
def module_apply_init_inside(x):
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    def init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.1)
            nn.init.zeros_(mod.bias)
    m.apply(init)
    return m(x)

@probe(xr)
def no_grad_inside_generator(x):
    def g():
        with torch.no_grad():
            yield x * 2
        yield x * 3
    a, b = list(g())
    return a.requires_grad, b.requires_grad, a + b

@probe(x)
def interpolate_scale_factor_modes(x):
    t = x.reshape(1, 1, 4, 3)
    return (F.interpolate(t, scale_factor=2, mode="nearest"),
            F.interpolate(t, size=(2, 2), mode="bilinear", align_corners=False),
            F.interpolate(t, scale_factor=1.5, mode="bicubic", recompute_scale_factor=True).shape)

@probe(x)
def torch_zeros_star_size_and_empty_like_format(x):
    a = torch.zeros(*x.shape, dtype=torch.int32)
    b = torch.ones_like(x, memory_format=torch.contiguous_format)
    c = x.new_ones(())
    return a, b, c, c.dim()

@probe(x)
def tensor_bool_any_all_in_python_if(x):
    y = torch.tensor([1.0, 2.0])
    if (y > 0).all():
        r = x + 1
    else:
        r = x - 1
    return r, bool((y > 1.5).any())
