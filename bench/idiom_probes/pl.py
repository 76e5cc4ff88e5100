# more python semantics: closures called before and after a rebind, class decorators, dataclass
# variants, enum API, functools caches/wrappers, dunder protocols, stdlib helpers, exceptions
import torch, functools, dataclasses, enum, copy, heapq, bisect, math, operator, itertools, collections
import contextlib, typing, abc
from common import x, xr
import common
P = []
probe = common.collector(P)

# ---- closures and nested functions
@probe(x)
def closure_called_before_and_after_rebind(x):
    k = 2
    def f(t): return t * k
    a = f(x)
    k = 3
    return a, f(x)

@probe(x)
def closure_rebound_inside_loop(x):
    fs = []
    for i in range(3):
        def g(t, i=i): return t + i
        fs.append(g)
    acc = 0
    for g in fs:
        acc = acc + g(x)
    return acc

@probe(x)
def nested_fn_returned_called_with_kwargs(x):
    def outer(scale):
        def inner(t, *, bias=0.0, power=1):
            return (t * scale + bias) ** power
        return inner
    h = outer(2.0)
    return h(x, power=2), h(x, bias=1.0)

@probe(x)
def closure_shared_cell_between_two_fns(x):
    def mk():
        v = [x]
        def put(t): v[0] = t
        def get(): return v[0]
        return put, get
    put, get = mk()
    put(x * 5)
    return get()

@probe(x)
def nonlocal_counter_in_closure_returned(x):
    def mk():
        n = 0
        def bump():
            nonlocal n
            n += 1
            return n
        return bump
    b = mk()
    b(); b()
    return x * b()

class Acc:
    def __init__(self): self.s = 0
    def add(self, v): self.s = self.s + v

@probe(x)
def closure_over_class_instance_method(x):
    a = Acc()
    add = a.add
    for r in x: add(r)
    return a.s

@probe(x)
def recursion_fixed_depth_tree(x):
    def build(t, d):
        if d == 0:
            return t
        return {"l": build(t * 2, d - 1), "r": build(t + 1, d - 1)}
    def total(n):
        return n if isinstance(n, torch.Tensor) else total(n["l"]) + total(n["r"])
    return total(build(x, 3))

@probe(x)
def func_dunder_name_and_defaults(x):
    def f(t, a=2, *, b=3): return t * a + b
    return f(x), f.__name__, f.__defaults__, f.__kwdefaults__, f.__code__.co_argcount

@probe(x)
def lambda_in_dict_dispatch(x):
    ops = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": operator.sub}
    return [ops[k](x, 2) for k in sorted(ops)]

@probe(x)
def args_kwargs_three_level_forward(x):
    def leaf(t, a, b=1, *rest, c=0, **kw):
        return t * a + b + c + sum(rest) + sum(kw.values())
    def mid(*args, **kwargs): return leaf(*args, **kwargs)
    def top(*args, **kwargs):
        kwargs.setdefault("c", 10)
        return mid(*args, **kwargs)
    return top(x, 2, 3, 4, 5, d=6), top(x, 1, c=0)

@probe(x)
def kwonly_defaults_override_and_missing(x):
    def f(t, *, k=1, j=None):
        if j is None:
            j = k * 2
        return t * k + j
    return f(x), f(x, k=3), f(x, j=0.5)

@probe(x)
def default_mutable_list_arg_shared(x):
    def f(t, acc=[]):
        acc.append(1)
        return t * len(acc)
    f(x)
    return f(x)

# ---- class decorators and class machinery
def _add_double(cls):
    def double(self): return self.v * 2
    cls.double = double
    return cls

@_add_double
class Dbl:
    def __init__(self, v): self.v = v

@probe(x)
def class_decorator_added_method(x):
    return Dbl(x).double()

def _register(reg):
    def deco(cls):
        reg[cls.__name__] = cls
        return cls
    return deco
_REG = {}
@_register(_REG)
class Sq:
    def __call__(self, t): return t * t
@_register(_REG)
class Neg:
    def __call__(self, t): return -t

@probe(x)
def class_registry_lookup_by_name(x):
    return [_REG[n]()(x) for n in ("Neg", "Sq")]

@probe(x)
def class_defined_inside_function(x):
    class Local:
        k = 3
        def f(self, t): return t * self.k
    return Local().f(x)

class WithSlotsBase:
    __slots__ = ("a",)
class WithSlotsChild(WithSlotsBase):
    __slots__ = ("b",)
    def __init__(self, a, b): self.a = a; self.b = b

@probe(x)
def slots_inheritance(x):
    o = WithSlotsChild(x, 2)
    o.b = o.b + 1
    return o.a * o.b

class Radd:
    def __init__(self, v): self.v = v
    def __radd__(self, other): return Radd(other + self.v)
    def __add__(self, other): return Radd(self.v + (other.v if isinstance(other, Radd) else other))
    def __rmul__(self, other): return Radd(other * self.v)

@probe(x)
def reflected_dunders(x):
    r = 3 + Radd(x)
    r2 = 2 * Radd(x)
    return r.v, r2.v, sum([Radd(1), Radd(2)], 0).v

class Idx:
    def __init__(self, i): self.i = i
    def __index__(self): return self.i

@probe(x)
def dunder_index_use(x):
    i = Idx(2)
    return x[i], [10, 20, 30][i], list(range(i)), x.new_zeros(Idx(3)).shape

class Truthy:
    def __init__(self, n): self.n = n
    def __len__(self): return self.n

@probe(x)
def truthiness_via_len(x):
    out = []
    for n in (0, 2):
        out.append(x * 2 if Truthy(n) else x)
    return out, bool(Truthy(0)), not Truthy(1)

class GenIter:
    def __init__(self, t): self.t = t
    def __iter__(self):
        for i in range(self.t.shape[0]):
            yield self.t[i] * i

@probe(x)
def iter_dunder_is_generator(x):
    return torch.stack(list(GenIter(x))), sum(GenIter(x))

class EqNI:
    def __init__(self, v): self.v = v
    def __eq__(self, o):
        if not isinstance(o, EqNI): return NotImplemented
        return self.v == o.v

@probe(x)
def eq_returns_notimplemented(x):
    return x * (EqNI(1) == EqNI(1)), EqNI(1) == 1, EqNI(2) != EqNI(3), EqNI(1) in [EqNI(0), EqNI(1)]

class Vec:
    def __init__(self, *c): self.c = list(c)
    def __getitem__(self, i):
        if isinstance(i, slice): return Vec(*self.c[i])
        return self.c[i]
    def __len__(self): return len(self.c)

@probe(x)
def getitem_slice_object_user(x):
    v = Vec(x, x * 2, x * 3, x * 4)
    s = v[1:3]
    return len(s), s[0] + s[-1], v[::2][1]

class Pt:
    def __init__(self, x, y): self.x, self.y = x, y
    def clone_shifted(self, d): return type(self)(self.x + d, self.y + d)

@probe(x)
def type_self_constructor(x):
    p = Pt(x, 1).clone_shifted(2)
    return p.x, p.y, type(p).__name__, p.__class__ is Pt

class Meth:
    k = 4
    def f(self, t): return t * self.k

@probe(x)
def unbound_method_via_class(x):
    m = Meth()
    return Meth.f(m, x), getattr(Meth, "f")(m, x + 1)

class Cnt:
    _n = 0
    def __init__(self):
        type(self)._n += 1
    @classmethod
    def count(cls): return cls._n

@probe(x, reset=lambda: setattr(Cnt, "_n", 0), state=lambda: Cnt._n)
def classmethod_counter_via_type_self(x):
    Cnt(); Cnt()
    return x * Cnt.count()

class PM:
    def __init__(self, k): self.k = k
    def scale(self, t, m): return t * self.k * m
    triple = functools.partialmethod(scale, m=3)

@probe(x)
def partialmethod_call(x):
    return PM(2).triple(x)

class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
    def describe(self): return f"{type(self).__name__}:{self.area()}"
class Sqr(Shape):
    def __init__(self, s): self.s = s
    def area(self): return self.s * self.s

@probe(x)
def abc_subclass_and_isinstance(x):
    s = Sqr(3)
    return x * s.area(), s.describe(), isinstance(s, Shape), issubclass(Sqr, abc.ABC)

class InitSub:
    kinds = {}
    def __init_subclass__(cls, kind=None, **kw):
        super().__init_subclass__(**kw)
        InitSub.kinds[kind] = cls
class IS_A(InitSub, kind="a"):
    f = staticmethod(lambda t: t + 1)
class IS_B(InitSub, kind="b"):
    f = staticmethod(lambda t: t * 2)

@probe(x)
def init_subclass_kwargs_dispatch(x):
    return InitSub.kinds["a"].f(x), InitSub.kinds["b"].f(x)

class LazyAttr:
    def __init__(self): self._cache = {}
    def __getattr__(self, name):
        if name.startswith("_"): raise AttributeError(name)
        self._cache[name] = len(name)
        return len(name)

@probe(x)
def getattr_hook_caching(x):
    o = LazyAttr()
    return x * o.abc + o.de, sorted(o._cache.items()), hasattr(o, "_missing")

class Stack:
    def __init__(self): self.items = []
    def push(self, v):
        self.items.append(v)
        return self
    def pop(self): return self.items.pop()

@probe(x)
def fluent_method_chaining(x):
    s = Stack().push(x).push(x * 2).push(x * 3)
    a = s.pop()
    return a + s.pop(), len(s.items)

@probe(x)
def copy_copy_user_object(x):
    p = Pt(x, [1, 2])
    q = copy.copy(p)
    q.y.append(3)
    q.x = q.x + 1
    return p.x, p.y, q.x, q.y is p.y

@probe(x)
def copy_deepcopy_python_containers(x):
    d = {"a": [1, 2], "b": {"c": 3}}
    e = copy.deepcopy(d)
    e["a"].append(9)
    return x * len(d["a"]), d, e

class COneAttr:
    a = 1

@probe(x)
def getattr_default_hasattr_chain(x):
    c = COneAttr()
    return x * getattr(c, "a", 0) + getattr(c, "b", 5), hasattr(c, "a"), hasattr(c, "zz")

# ---- dataclasses
@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    scale: float = 2.0
    name: str = "f"

@probe(x)
def frozen_dataclass_read_hash_eq(x):
    c = FrozenCfg(3.0)
    return x * c.scale, c == FrozenCfg(3.0, "f"), hash(c) == hash(FrozenCfg(3.0)), c.name

@probe(x)
def frozen_dataclass_assign_raises(x):
    c = FrozenCfg()
    try:
        c.scale = 5.0
    except dataclasses.FrozenInstanceError:
        return x * c.scale
    return x

@dataclasses.dataclass
class PostInit:
    a: int
    b: int = 0
    lst: list = dataclasses.field(default_factory=list)
    total: int = dataclasses.field(init=False)
    def __post_init__(self):
        self.total = self.a + self.b
        self.lst.append(self.total)

@probe(x)
def dataclass_post_init_and_factory(x):
    p = PostInit(2, 3)
    q = PostInit(1)
    return x * p.total + q.total, p.lst, q.lst

@probe(x)
def dataclass_replace_and_asdict(x):
    c = FrozenCfg(1.5)
    d = dataclasses.replace(c, name="g")
    return x * d.scale, dataclasses.asdict(d), dataclasses.astuple(c)

@dataclasses.dataclass(order=True)
class Ver:
    major: int
    minor: int = 0

@probe(x)
def dataclass_order_comparisons(x):
    vs = sorted([Ver(1, 2), Ver(0, 9), Ver(1, 0)])
    return x * (Ver(1, 2) > Ver(1, 1)), [(v.major, v.minor) for v in vs]

@dataclasses.dataclass
class TensorBox:
    t: torch.Tensor
    k: typing.ClassVar[int] = 3
    def scaled(self): return self.t * self.k

@probe(x)
def dataclass_classvar_and_method(x):
    b = TensorBox(x)
    return b.scaled(), [f.name for f in dataclasses.fields(b)]

@probe(x)
def dataclass_make_dataclass_local(x):
    D = dataclasses.make_dataclass("D", [("a", int), ("b", int, dataclasses.field(default=4))])
    d = D(1)
    return x * (d.a + d.b)

# ---- enums
class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3
    def weight(self): return self.value * 10

@probe(x)
def enum_value_lookup_and_len(x):
    return x * Color(2).value, Color["BLUE"].name, len(Color), list(Color)[0].name

@probe(x)
def enum_member_method_and_compare(x):
    c = Color.GREEN
    return x * c.weight(), c is Color.GREEN, c == Color.RED, c in {Color.GREEN}

class Act(enum.Enum):
    RELU = enum.auto()
    TANH = enum.auto()

@probe(x)
def enum_auto_dispatch(x):
    fns = {Act.RELU: torch.relu, Act.TANH: torch.tanh}
    return [fns[a](x) for a in Act], [a.value for a in Act]

class Level(str, enum.Enum):
    LOW = "low"
    HIGH = "high"

@probe(x)
def str_enum_compare_to_str(x):
    l = Level.HIGH
    return x * (2 if l == "high" else 1), l.value.upper(), Level("low") is Level.LOW

class Perm(enum.IntFlag):
    R = 4
    W = 2
    X = 1

@probe(x)
def intflag_membership_and_int(x):
    p = Perm.R | Perm.X
    return x * int(p), bool(p & Perm.W), Perm.R in p

# ---- functools
@functools.lru_cache(maxsize=None)
def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)

@probe(x)
def lru_cache_recursive_helper(x):
    return x * _fib(10)

@functools.cache
def _table(k):
    return tuple(i * k for i in range(4))

@probe(x)
def functools_cache_tuple(x):
    return x * sum(_table(3)), _table(2)

def _timed(fn):
    @functools.wraps(fn)
    def w(*a, **k):
        return fn(*a, **k) + 1
    return w

@_timed
def _base_fn(t, k=2):
    "doc"
    return t * k

@probe(x)
def wraps_decorated_call_and_wrapped(x):
    return _base_fn(x, k=3), _base_fn.__wrapped__(x), _base_fn.__name__, _base_fn.__doc__

@probe(x)
def functools_reduce_dict_merge(x):
    ds = [{"a": x}, {"b": x * 2}, {"a": x * 3}]
    m = functools.reduce(lambda acc, d: {**acc, **d}, ds, {})
    return m

@probe(x)
def partial_positional_and_keyword_merge(x):
    def f(a, b, c=1, d=2): return a * b + c * d
    p = functools.partial(f, x, c=3)
    p2 = functools.partial(p, d=5)
    return p(2), p2(1), p2.keywords

# ---- builtins and stdlib
@probe(x)
def heapq_push_pop_nsmallest(x):
    h = []
    for v in [5, 1, 4, 2, 3]:
        heapq.heappush(h, v)
    first = heapq.heappop(h)
    return x * first, heapq.nsmallest(2, [9, 3, 7, 1]), heapq.nlargest(2, [9, 3, 7, 1]), sorted(h)

@probe(x)
def heapify_tuples_with_tensors(x):
    h = [(3, "c"), (1, "a"), (2, "b")]
    heapq.heapify(h)
    order = [heapq.heappop(h)[1] for _ in range(3)]
    return x * len(order), order

@probe(x)
def bisect_positions(x):
    bounds = [1, 4, 9, 16]
    i = bisect.bisect_left(bounds, 5)
    j = bisect.bisect_right(bounds, 9)
    l = [1, 3]
    bisect.insort(l, 2)
    return x * i + j, l

@probe(x)
def sorted_dict_items_by_value_lambda(x):
    d = {"a": 3, "b": 1, "c": 2}
    ks = [k for k, _ in sorted(d.items(), key=lambda kv: kv[1], reverse=True)]
    return x * d[ks[0]], ks

@probe(x)
def sorted_tensors_by_shape_key(x):
    ts = [x[:3], x[:1], x[:2]]
    ts.sort(key=lambda t: t.shape[0])
    return [t.shape[0] for t in ts], torch.cat(ts)

@probe(x)
def any_all_over_generators_of_shapes(x):
    ts = [x, x[:2], x.t()]
    return x * any(t.shape[0] == 2 for t in ts), all(t.dim() == 2 for t in ts), any(())

@probe(x)
def min_max_with_key_over_tensors_list(x):
    ts = [x[:1], x, x[:2]]
    big = max(ts, key=lambda t: t.numel())
    small = min(ts, key=len)
    return big.sum(), small.sum()

@probe(x)
def dict_comp_with_conditions(x):
    d = {f"k{i}": x * i for i in range(6) if i % 2 == 0 if i > 0}
    e = {k: (v if k.endswith("2") else -v) for k, v in d.items()}
    return e

@probe(x)
def nested_list_comp_with_ifs(x):
    return [[x[i, j] for j in range(3) if (i + j) % 2 == 0] for i in range(4) if i != 2]

@probe(x)
def string_ops_variety(x):
    s = "Layer_Norm.weight"
    a, sep, b = s.partition(".")
    return (x * len(a), s.rsplit("_", 1), sep, b.center(10, "*"), "7".zfill(3), s.title(),
            "ABC".casefold(), s.startswith(("Lay", "x")), s.count("e"), s.find("N"), "a,b,,c".split(","))

@probe(x)
def string_building_join_and_fstring_repr(x):
    names = ["w", "b"]
    s = "|".join(f"{n!r}:{i:>3}" for i, n in enumerate(names))
    return x * len(s), s, "%-4s|%+d" % ("ab", 3), "{0}{1}{0}".format("a", "b")

@probe(x)
def str_isx_predicates(x):
    ss = ["abc", "123", "  ", "A1", "Title Case"]
    return x * sum(s.isalpha() for s in ss), [(s.isalnum(), s.isspace(), s.istitle(), s.isupper()) for s in ss]

@probe(x)
def math_on_sizes(x):
    n, m = x.shape
    return (x * math.prod(x.shape), math.gcd(n, 6), math.comb(n, 2), math.isqrt(n * m),
            math.log(n * m, 2), math.hypot(n, m), math.factorial(m), math.copysign(1, -n))

@probe(x)
def int_from_bytes_and_bit_ops(x):
    v = int.from_bytes(b"\x01\x02", "big")
    return x * (v & 0xff), v >> 4, v ^ 5, ~v, (5).to_bytes(2, "little")

@probe(x)
def round_half_even_and_divmod_negative(x):
    return x * round(2.5), round(3.5), round(-2.5), divmod(-7, 2), -7 // 2, -7 % 2, round(1.2345, 2)

@probe(x)
def collections_counter_arith(x):
    a = collections.Counter("aabbc")
    b = collections.Counter("abd")
    return x * (a - b)["a"], dict(a + b), dict(a & b), sorted((a | b).elements()), a.total()

@probe(x)
def ordered_dict_move_to_end(x):
    d = collections.OrderedDict(a=1, b=2, c=3)
    d.move_to_end("a")
    d.move_to_end("c", last=False)
    return x * list(d.values())[0], list(d)

@probe(x)
def namedtuple_asdict_fields_replace(x):
    P2 = collections.namedtuple("P2", "a b")
    p = P2(x, 2)
    q = p._replace(b=3)
    return q.a * q.b, P2._fields, list(p._asdict().keys()), len(p)

@probe(x)
def itertools_product_dict_grid(x):
    grid = {"a": [1, 2], "b": [10, 20]}
    combos = [dict(zip(grid, v)) for v in itertools.product(*grid.values())]
    return x * sum(c["a"] * c["b"] for c in combos), combos

@probe(x)
def itertools_batched_like_chunks(x):
    it = iter(range(7))
    chunks = []
    while True:
        c = list(itertools.islice(it, 3))
        if not c: break
        chunks.append(c)
    return x * len(chunks), chunks

@probe(x)
def zip_star_transpose_of_pairs(x):
    pairs = [(x, 1), (x * 2, 2), (x * 3, 3)]
    ts, ks = zip(*pairs)
    return torch.stack(ts).sum(0), ks

@probe(x)
def enumerate_over_zip_with_unpack(x):
    out = 0
    for i, (a, b) in enumerate(zip(x, x.flip(0))):
        out = out + (a - b) * i
    return out

@probe(x)
def typing_cast_and_optional_check(x):
    y: typing.Optional[torch.Tensor] = None
    y = typing.cast(torch.Tensor, x * 2)
    return y if y is not None else x

@probe(x)
def id_based_dict_of_objects(x):
    a, b = object(), object()
    d = {id(a): 1, id(b): 2}
    return x * d[id(b)], len(d)

# ---- global state
_GCOUNT = 0
def _bump():
    global _GCOUNT
    _GCOUNT += 1
    return _GCOUNT
def _gc_reset():
    global _GCOUNT
    _GCOUNT = 0

@probe(x, reset=_gc_reset, state=lambda: _GCOUNT)
def global_counter_via_helper(x):
    _bump(); _bump()
    return x * _bump()

_GLOBAL_CFG = {"scale": 2, "layers": [1, 2]}

@probe(x)
def global_nested_config_read(x):
    return x * _GLOBAL_CFG["scale"] + sum(_GLOBAL_CFG["layers"])

_GSEEN = []
@probe(x, reset=lambda: _GSEEN.clear(), state=lambda: list(_GSEEN))
def global_list_extend_and_read_back(x):
    _GSEEN.extend(["a", "b"])
    _GSEEN.append(len(_GSEEN))
    return x * _GSEEN[-1]

# ---- exceptions
class AppError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code

@probe(x)
def custom_exception_init_super_and_attrs(x):
    try:
        raise AppError("bad", 7)
    except AppError as e:
        return x * e.code, str(e), e.args

class ErrA(Exception): pass
class ErrB(ErrA, ValueError): pass

@probe(x)
def exception_multiple_inheritance_catch(x):
    out = []
    for exc in (ErrB, ErrA):
        try:
            raise exc("m")
        except ValueError:
            out.append("v")
        except ErrA:
            out.append("a")
    return x * len(out), out

@probe(x)
def try_except_else_finally_all(x):
    log = []
    for bad in (False, True):
        try:
            if bad: raise KeyError("k")
            log.append("body")
        except KeyError:
            log.append("except")
        else:
            log.append("else")
        finally:
            log.append("finally")
    return x * len(log), log

@probe(x)
def return_in_except_then_finally(x):
    log = []
    def f():
        try:
            raise ValueError
        except ValueError:
            log.append("e")
            return x * 2
        finally:
            log.append("f")
    return f(), log

@probe(x)
def exception_in_finally_replaces(x):
    try:
        try:
            raise KeyError("a")
        finally:
            raise ValueError("b")
    except ValueError as e:
        return x * 2, type(e.__context__).__name__
    except KeyError:
        return x, "key"

@probe(x)
def lookup_error_base_catch(x):
    out = []
    for f in (lambda: [1][3], lambda: {}["z"]):
        try:
            f()
        except LookupError as e:
            out.append(type(e).__name__)
    return x * len(out), out

@probe(x)
def valueerror_from_int_parse(x):
    vals = []
    for s in ("3", "x", "5"):
        try:
            vals.append(int(s))
        except ValueError:
            vals.append(-1)
    return x * sum(vals), vals

class NIBase:
    def f(self, t): raise NotImplementedError("sub")
class NIImpl(NIBase):
    def f(self, t): return t + 1

@probe(x)
def notimplementederror_from_abstract(x):
    out = []
    for o in (NIBase(), NIImpl()):
        try:
            out.append(o.f(x))
        except NotImplementedError:
            out.append(x * 0)
    return out

@probe(x)
def manual_stopiteration_while_loop(x):
    it = iter([x, x * 2, x * 3])
    acc = 0
    while True:
        try:
            acc = acc + next(it)
        except StopIteration:
            break
    return acc

@probe(x)
def exception_from_generator_propagates(x):
    def g():
        yield x
        raise RuntimeError("stop")
    got = []
    try:
        for v in g():
            got.append(v)
    except RuntimeError as e:
        got.append(x * len(str(e)))
    return got

@probe(x)
def break_in_except_inside_loop(x):
    acc = x
    for i in range(5):
        try:
            if i == 3: raise IndexError
            acc = acc + i
        except IndexError:
            break
    return acc

class RaisingExitCM:
    def __enter__(self): return self
    def __exit__(self, *a): raise KeyError("exit")

@probe(x)
def exception_raised_in_user_exit_propagates(x):
    try:
        with RaisingExitCM():
            y = x + 1
    except KeyError:
        return y * 2
    return y

@probe(x)
def assert_message_caught(x):
    try:
        assert x.shape[0] == 5, f"rows={x.shape[0]}"
    except AssertionError as e:
        return x * 2, str(e)
    return x, ""

@probe(x)
def exception_isinstance_dispatch(x):
    errs = [KeyError("a"), ValueError("b"), TypeError("c")]
    codes = []
    for e in errs:
        if isinstance(e, (KeyError, IndexError)): codes.append(1)
        elif isinstance(e, ValueError): codes.append(2)
        else: codes.append(3)
    return x * sum(codes), [str(e) for e in errs]

# ---- context managers (python)
@probe(x)
def contextmanager_yield_value_and_cleanup(x):
    log = []
    @contextlib.contextmanager
    def scope(name):
        log.append("enter " + name)
        try:
            yield name.upper()
        finally:
            log.append("exit " + name)
    with scope("a") as a, scope("b") as b:
        y = x * len(a + b)
    return y, log

@probe(x)
def exitstack_callback_order(x):
    log = []
    with contextlib.ExitStack() as st:
        st.callback(log.append, 1)
        st.callback(log.append, 2)
        y = x + 1
    return y, log

class CountCM:
    def __init__(self): self.n = 0
    def __enter__(self):
        self.n += 1
        return self
    def __exit__(self, *a): return False

@probe(x)
def reused_cm_object_twice(x):
    c = CountCM()
    with c: pass
    with c: y = x * c.n
    return y

class SupZeroDiv:
    def __enter__(self): return self
    def __exit__(self, et, ev, tb): return et is ZeroDivisionError

@probe(x)
def cm_exit_suppress_in_loop_continue(x):
    Sup = SupZeroDiv
    acc = x
    for i in range(4):
        with Sup():
            acc = acc + 1 / (i - 2)
    return acc

@probe(x)
def redirect_style_cm_with_state_swap(x):
    state = {"mode": "a"}
    @contextlib.contextmanager
    def mode(m):
        old = state["mode"]
        state["mode"] = m
        try:
            yield
        finally:
            state["mode"] = old
    out = []
    with mode("b"):
        out.append(state["mode"])
        with mode("c"):
            out.append(state["mode"])
    out.append(state["mode"])
    return x * len(out), out

# ---- match/generators
@probe(x)
def generator_with_inside_with_block(x):
    log = []
    @contextlib.contextmanager
    def cm():
        log.append("in"); yield; log.append("out")
    def g():
        with cm():
            yield x
            yield x * 2
    s = sum(g())
    return s, log

@probe(x)
def generator_expression_next_default(x):
    g = (t for t in x if t.shape[0] > 5)
    first = next(g, None)
    return x if first is None else first

@probe(x)
def match_class_pattern_with_attrs(x):
    out = []
    for o in (Pt(1, 2), Pt(0, 5), (1, 2)):
        match o:
            case Pt(x=0, y=yy):
                out.append(yy)
            case Pt(x=xx):
                out.append(xx * 10)
            case (a, b):
                out.append(a + b)
    return x * sum(out), out

@probe(x)
def match_mapping_pattern(x):
    cfg = {"type": "scale", "k": 3, "extra": 1}
    match cfg:
        case {"type": "shift", "k": k}:
            return x + k
        case {"type": "scale", "k": k, **rest}:
            return x * k, rest
    return x
