# builtins, functools, itertools, operator, namedtuple, dataclasses, enum, typing
import torch, math, functools, itertools, operator, collections, dataclasses, enum, typing
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def map_two_iterables(x):
    return list(map(lambda a, b: a * b, [x, x], [1, 2]))

@probe(x)
def filter_none_lambda(x):
    l = list(filter(None, [0, 1, 2, 0, 3])); m = list(filter(lambda v: v > 1, l))
    return x * sum(m) + len(l)

@probe(x)
def zip_unequal_and_star(x):
    return [a + b for a, b in zip(x, [1, 2])], list(zip(*[(1, 2), (3, 4)]))

@probe(x)
def zip_strict(x):
    return [a * b for a, b in zip(x, range(4), strict=True)]

@probe(x)
def reversed_range_list(x):
    return x * sum(i * j for i, j in zip(reversed(range(3)), reversed([1, 2, 3])))

@probe(x)
def sorted_tuple_key(x):
    l = sorted([(2, "b"), (1, "z"), (2, "a")], key=lambda p: (-p[0], p[1]))
    return x * l[0][0], l

@probe(x)
def min_max_default_key(x):
    return x * (min([], default=5) + max([3, 1, 2], key=lambda v: -v) + min(3, 1, 2) + len(max(["a", "abc", "ab"], key=len)))

@probe(x)
def divmod_round_abs(x):
    q, r = divmod(17, 5); a = round(2.567, 2); b = round(2.5); c = abs(-3); d = round(-7, -1)
    return x * (q + r + a + b + c + d), type(b) is int

@probe(x)
def issubclass_callable(x):
    return x * (issubclass(bool, int) + callable(len) + callable(3) + issubclass(ValueError, (KeyError, Exception)) + callable(x.add))

@probe(x)
def iter_next_list_dict(x):
    it = iter([x, x * 2]); a = next(it); b = next(it); c = next(it, None)
    d = next(iter({"k": 1}))
    return a + b + (c is None), d

@probe(x)
def hasattr_getattr_default_tensor(x):
    return x * (hasattr(x, "shape") + hasattr(x, "nope") + getattr(x, "nope", 3))

class _O: pass

@probe(x)
def setattr_dynamic_names(x):
    o = _O()
    for i in range(3): setattr(o, f"a{i}", i)
    return x * (o.a2 + getattr(o, "a1")) + hasattr(o, "a0")

@probe(x)
def type_identity_checks(x):
    return x * ((type(3) is int) + (type(x) is torch.Tensor) + (type([]) == list) + (type(x.shape) is torch.Size) + (type(None) is type(None)))

@probe(x)
def id_of_same_object(x):
    y = x; l = [1]
    return x * (id(x) == id(y)) + (id(l) != id([1]))

@probe(x)
def hash_builtins(x):
    return x * (hash(1) + (hash("a") == hash("a")) + (hash((1, "a")) == hash((1, "a"))) + hash(True))

@probe(x)
def sum_floats_start(x):
    return x * sum([0.5, 0.25], 1.0) + sum([[1], [2]], []).__len__()

@probe(x)
def numeric_constructors(x):
    return x * (int("12") + float("1.5") + int(3.9) + bool("") + int("ff", 16) + int(-2.5))

@probe(x)
def pow_variants(x):
    return x * (pow(2, 3) + 2 ** -1 + pow(3, 2, 5) + (-2) ** 2 + 2.0 ** 0.5)

@probe(x)
def len_various(x):
    return x * (len(range(2, 10, 3)) + len("abc") + len({1: 2}) + len(x) + len(x.shape) + len(b"ab"))

@probe(x)
def range_attrs_index(x):
    r = range(1, 10, 2)
    return x * (r.start + r.stop + r.step + r[2] + r.index(5) + (7 in r) + r[-1]), list(r[1:3])

@probe(x)
def slice_object(x):
    s = slice(1, None, 2)
    return x[s], [0, 1, 2, 3, 4][s], s.start

@probe(x)
def isinstance_misc(x):
    return x * (isinstance(True, int) + isinstance(1.0, (int, float)) + isinstance("s", str) + isinstance(x.shape, tuple)
                + isinstance(None, type(None)) + isinstance(3, ((str, float), int)))

@probe(x)
def bin_hex_oct(x):
    return x * len(bin(5) + hex(255) + oct(8)), bin(5)

@probe(x)
def int_float_methods(x):
    return x * ((5).bit_length() + (2.5).is_integer() + (4.0).is_integer() + (7).bit_count() + (3).conjugate() + int.from_bytes(b"\x01\x00", "little")), (0.75).as_integer_ratio()

@probe(x)
def map_builtin_types(x):
    return x * sum(map(len, ["a", "bb"])), list(map(str, range(3))), list(map(int, ["1", "2"]))

@probe(x)
def enumerate_start_reversed(x):
    return [i * t for i, t in enumerate(reversed(list(x)), 5)]

@probe(x)
def all_any_empty_and_mixed(x):
    return x * (all([]) + any([0, 0.0, ""]) + all(v > 0 for v in x.shape))

@probe(x)
def type_call_same_type(x):
    l = [3, 1]; t = type(l)(reversed(l)); d = type({})(a=1)
    return x * t[0] + d["a"], t

@probe(x)
def max_builtin_on_python_floats_ints(x):
    return x * max(1, 2.5, 2) + min(x.shape[0], 10) + max(x.shape)

@probe(x)
def abs_on_user_dunder(x):
    return abs(Neg(x)) + x

class Neg:
    def __init__(self, t): self.t = t
    def __abs__(self): return self.t.abs()

@probe(x)
def globals_dict_read(x):
    return x * globals()["_GCONST"]

_GCONST = 7

# functools
@probe(x)
def partial_nested_kwargs(x):
    def f(a, b, c=0): return a * b + c
    p = functools.partial(f, c=3); q = functools.partial(p, x)
    return q(2) + p.keywords["c"] + len(q.args)

@probe(x)
def reduce_initial_tensors(x):
    return functools.reduce(lambda a, b: a + b, [x, x, x], torch.zeros_like(x))

@probe(x)
def reduce_operator_mul(x):
    return x * functools.reduce(operator.mul, [1, 2, 3, 4])

@functools.lru_cache(maxsize=None)
def _cached_sq(n): return n * n

@probe(x)
def lru_cache_call(x):
    return x * _cached_sq(4)

class CP:
    def __init__(self, v): self.v = v
    @functools.cached_property
    def sq(self): return self.v * self.v

@probe(x)
def cached_property_access(x):
    c = CP(3)
    return x * c.sq + c.sq + ("sq" in c.__dict__)

@probe(x)
def partial_of_tensor_method(x):
    p = functools.partial(torch.Tensor.add, alpha=2)
    return p(x, x)

@probe(x)
def cmp_to_key(x):
    l = sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a))
    return x * l[0], l

@functools.total_ordering
class Ver:
    def __init__(self, v): self.v = v
    def __eq__(self, o): return self.v == o.v
    def __lt__(self, o): return self.v < o.v

@probe(x)
def total_ordering(x):
    return x * ((Ver(2) >= Ver(1)) + (Ver(1) <= Ver(1)) + (max(Ver(3), Ver(5)).v))

@functools.singledispatch
def _sd(a): return 0
@_sd.register
def _(a: int): return 1
@_sd.register
def _(a: str): return 2

@probe(x)
def singledispatch(x):
    return x * (_sd(1) + _sd("a") + _sd(1.0))

@probe(x)
def partial_as_callback_in_map(x):
    return list(map(functools.partial(torch.mul, other=2), [x, x + 1]))

@probe(x)
def wraps_preserves_attrs(x):
    def deco(fn):
        @functools.wraps(fn)
        def w(*a): return fn(*a)
        return w
    @deco
    def named(t):
        "doc"
        return t
    return x * len(named.__doc__ + named.__wrapped__.__name__)

# itertools
@probe(x)
def chain_from_iterable(x):
    return x * sum(itertools.chain.from_iterable([[1, 2], [3]])), list(itertools.chain([1], (2, 3)))

@probe(x)
def permutations_combinations_wr(x):
    return x * (len(list(itertools.permutations(range(3), 2))) + len(list(itertools.combinations_with_replacement("ab", 2))))

@probe(x)
def zip_longest_fill(x):
    return [a + (b or 0) for a, b in itertools.zip_longest([x, x], [1])], list(itertools.zip_longest("ab", "c", fillvalue="-"))

@probe(x)
def groupby_runs(x):
    g = [(k, len(list(v))) for k, v in itertools.groupby("aabbbc")]
    return x * g[1][1], g

@probe(x)
def count_islice_repeat(x):
    c = list(itertools.islice(itertools.count(5, 2), 3)); r = list(itertools.repeat(x, 2))
    return x * sum(c) + r[1]

@probe(x)
def accumulate_func_initial(x):
    return list(itertools.accumulate([x, x, x], operator.mul)), list(itertools.accumulate([1, 2, 3], initial=10))

@probe(x)
def pairwise(x):
    return [b - a for a, b in itertools.pairwise([x, x * 2, x * 4])]

@probe(x)
def starmap_cycle(x):
    s = list(itertools.starmap(operator.mul, [(1, 2), (3, 4)]))
    cy = list(itertools.islice(itertools.cycle([1, 2]), 5))
    return x * sum(s) + sum(cy)

@probe(x)
def takewhile_dropwhile_compress(x):
    a = list(itertools.takewhile(lambda v: v < 3, [1, 2, 3, 1]))
    b = list(itertools.dropwhile(lambda v: v < 3, [1, 2, 3, 1]))
    c = list(itertools.compress("abc", [1, 0, 1]))
    return x * (sum(a) + sum(b)), c

@probe(x)
def product_repeat(x):
    return x * len(list(itertools.product([0, 1], repeat=3)))

@probe(x)
def tee_and_filterfalse(x):
    a, b = itertools.tee([1, 2, 3])
    return x * (sum(a) + sum(b)) + sum(itertools.filterfalse(lambda v: v % 2, range(5)))

@probe(x)
def islice_over_tensor(x):
    return list(itertools.islice(x, 1, None, 2))

# operator
@probe(x)
def methodcaller(x):
    return operator.methodcaller("mul", 3)(x) + operator.methodcaller("sum", dim=0)(x)

@probe(x)
def operator_funcs_tensors(x):
    return operator.add(x, 1), operator.mul(x, x), operator.neg(x), operator.getitem(x, 0), operator.truediv(x, 2), operator.matmul(x, x.t())

@probe(x)
def itemgetter_multi_tensor(x):
    a, b = operator.itemgetter(0, 2)(x)
    return a + b

@probe(x)
def attrgetter_dotted(x):
    o = _O(); o.inner = _O(); o.inner.val = 5
    return x * operator.attrgetter("inner.val")(o)

@probe(x)
def operator_contains_truth_not_index(x):
    return x * (operator.contains([1, 2], 2) + operator.truth(0) + operator.not_(0) + operator.index(3) + operator.is_(None, None))

@probe(x)
def operator_iadd(x):
    y = x.clone(); y = operator.iadd(y, 1); l = [1]; l = operator.iadd(l, [2])
    return y * len(l)

@probe(x)
def operator_setitem_delitem(x):
    d = {"a": 1, "b": 2}; operator.setitem(d, "c", 3); operator.delitem(d, "a")
    return x * sum(d.values())

@probe(x)
def itemgetter_sort_key(x):
    l = sorted([{"n": 2}, {"n": 1}], key=operator.itemgetter("n"))
    return x * l[0]["n"]

# namedtuple
P3 = collections.namedtuple("P3", ["a", "b", "c"], defaults=[0])

@probe(x)
def namedtuple_defaults_make(x):
    p = P3(1, 2); q = P3._make([x, 2, 3])
    return q.a * p.b + p.c + len(P3._fields)

class NTSub(typing.NamedTuple):
    a: torch.Tensor
    b: int = 2
    def scaled(self): return self.a * self.b

@probe(x)
def typing_namedtuple_method(x):
    n = NTSub(x)
    return n.scaled() + n[1], n

@probe(x)
def namedtuple_unpack_index(x):
    a, b, c = P3(x, 1, 2)
    return a * P3(x, 1, 2)[-1] + b

@probe(x)
def namedtuple_return(x):
    return P3(x, x + 1, c=x * 2)

@probe(x)
def namedtuple_isinstance_len(x):
    return x * isinstance(P3(1, 2), tuple) + len(P3(1, 2)) + (P3(1, 2) == (1, 2, 0))

@probe(P3(x, 2, 3))
def namedtuple_input(p):
    return p.a * p.b + p.c, p._replace(b=5)

# dataclasses
@dataclasses.dataclass
class DC:
    a: torch.Tensor
    b: int = 1
    l: list = dataclasses.field(default_factory=list)

@probe(x)
def dataclass_construct_mutate(x):
    d = DC(x); d.l.append(3); d.b += 1
    return d.a * d.b + sum(d.l)

@probe(x)
def dataclass_fields_names(x):
    return x * len([f.name for f in dataclasses.fields(DC)])

@probe(DC(x, 2))
def dataclass_input_mutation(d):
    d.b = 5; d.a = d.a * 2
    return d.a + 1

@probe(x)
def dataclass_return(x):
    return DC(x * 2, 3)

@dataclasses.dataclass
class IntDC:
    a: int
    b: str = "s"

@probe(x)
def dataclass_eq_repr_astuple(x):
    return x * (IntDC(1) == IntDC(1)) + len(dataclasses.astuple(IntDC(2))), repr(IntDC(1))

@probe(x)
def dataclass_is_dataclass(x):
    return x * (dataclasses.is_dataclass(IntDC) + dataclasses.is_dataclass(IntDC(1)) + dataclasses.is_dataclass(3))

@dataclasses.dataclass
class ChildDC(IntDC):
    c: int = 3
    def total(self): return self.a + self.c

@probe(x)
def dataclass_inheritance(x):
    return x * ChildDC(1).total() + len(dataclasses.fields(ChildDC))

# enum
class Mode(enum.Enum):
    A = "a"
    B = "b"
    def up(self): return self.value.upper()

class IFlag(enum.IntEnum):
    X = 1
    Y = 2

class Perm(enum.IntFlag):
    R = 4
    W = 2

@probe(x)
def enum_dict_key_lookup(x):
    d = {Mode.A: 1, Mode.B: 2}; m = Mode("b")
    return x * d[m] + (m == Mode.B) + (Mode.A in d)

@probe(x)
def intenum_arith(x):
    return x * (IFlag.X + IFlag.Y) + int(IFlag.Y) + (IFlag.X == 1)

@probe(x)
def enum_iteration(x):
    return x * len(list(Mode)) + len(Mode), [m.value for m in Mode]

@probe(x)
def enum_by_name_and_method(x):
    return x * len(Mode["A"].value), Mode.B.up()

@probe(x)
def intflag_ops(x):
    return x * int(Perm.R | Perm.W) + bool(Perm.R & Perm.W) + (Perm.R in (Perm.R | Perm.W))

@probe(x)
def enum_isinstance_identity(x):
    m = Mode.A
    return x * (isinstance(m, Mode) + (m is Mode.A) + (m is not Mode.B))

@probe(x, args2=(x * 2,))
def enum_branch(x, mode=Mode.B):
    if mode is Mode.A: return x + 1
    elif mode == Mode.B: return x - 1
    return x

# typing
@probe(x)
def typing_annotated_inner(x):
    def f(t: torch.Tensor, n: typing.Optional[int] = None) -> typing.List[torch.Tensor]:
        return [t] * (n or 2)
    return f(x)

@probe(x)
def typing_type_checking_const(x):
    if typing.TYPE_CHECKING:
        return x
    return x + 1

@probe(x)
def typing_isinstance_generic_alias_origin(x):
    return x * (typing.get_origin(typing.List[int]) is list) + len(typing.get_args(typing.Dict[str, int]))
