# misc syntax: match, walrus, chained compare, args forms, globals, imports, math; guards across calls
import torch, math, sys, os, collections, dataclasses, torch.nn as nn
from common import x, xr
import common
P = []
probe = common.collector(P)

Pt = collections.namedtuple("Pt", "a b")

@dataclasses.dataclass
class Box:
    w: int
    h: int

def _match(v):
    match v:
        case 0:
            return 10
        case [a, b]:
            return a + b
        case {"k": kv}:
            return kv
        case Box(w=w, h=2):
            return w * 100
        case str() as s if len(s) > 2:
            return len(s)
        case int(n) | float(n):
            return n * 2
        case _:
            return -1

@probe(x)
def match_statement_variety(x):
    return x * sum(_match(v) for v in [0, [1, 2], {"k": 5}, Box(3, 2), "abcd", 7, 1.5, None])

@probe(x)
def match_on_tensor_shape(x):
    match x.shape:
        case (a, b) if a > b:
            return x * a
        case (a, b):
            return x * b
        case _:
            return x

@probe(x)
def match_namedtuple_positional(x):
    match Pt(x, 2):
        case Pt(t, 2):
            return t * 2
    return x

@probe(x)
def match_sequence_star(x):
    match [1, 2, 3, 4]:
        case [first, *rest]:
            return x * first + sum(rest)

@probe(x)
def walrus_in_if_and_while(x):
    n = 0
    if (k := x.shape[0]) > 2:
        n += k
    it = iter([1, 2, 3])
    while (v := next(it, None)) is not None:
        n += v
    return x * n

@probe(x)
def chained_comparison_shapes(x):
    return x * (0 < x.shape[0] <= 4 < 10) + (1 < 2 > 3) + (x.shape[1] == 3 == len(x[0]))

@probe(x)
def nested_ternary(x):
    n = x.shape[0]
    k = "big" if n > 10 else "mid" if n > 3 else "small"
    return x * len(k), k

@probe(x)
def for_else_while_else(x):
    out = 0
    for i in range(3):
        if i == 10: break
    else:
        out += 1
    j = 0
    while j < 2:
        j += 1
    else:
        out += 10
    return x * out

@probe(x)
def augmented_assign_targets(x):
    d = {"a": 1}; l = [1, 2]; o = Box(1, 2)
    d["a"] += 1; l[0] -= 5; o.w *= 3; l[-1] **= 2
    return x * (d["a"] + l[0] + o.w + l[1])

_COUNTER = 0

def _reset_counter():
    global _COUNTER
    _COUNTER = 0

@probe(x, reset=_reset_counter, state=lambda: _COUNTER)
def global_counter_increment(x):
    global _COUNTER
    _COUNTER += 1
    _COUNTER += 1
    return x * _COUNTER

_GLIST = []

@probe(x, reset=lambda: _GLIST.clear(), state=lambda: list(_GLIST))
def global_list_append(x):
    _GLIST.append(x.shape[0])
    _GLIST.append(x * 2)
    return x + len(_GLIST)

_GDICT = {}

@probe(x, reset=lambda: _GDICT.clear(), state=lambda: dict(_GDICT))
def global_dict_cache_write(x):
    if "k" not in _GDICT:
        _GDICT["k"] = x * 3
    return _GDICT["k"] + 1

@probe(x)
def del_slice_and_attr(x):
    l = list(range(5)); del l[1:3]
    o = Box(1, 2); del o.h
    return x * len(l) + hasattr(o, "h")

@probe(x)
def kwonly_posonly(x):
    def f(a, b=2, /, c=3, *, d, e=5):
        return a * b + c + d + e
    return f(x, d=1), f(x, 3, 4, d=0, e=0)

@probe(x)
def args_kwargs_forward_override(x):
    def inner(t, a=1, b=2, *rest, c=3, **kw):
        return t * a + b + sum(rest) + c + sum(kw.values())
    def outer(*args, **kwargs):
        kwargs.setdefault("c", 10)
        return inner(*args, **kwargs)
    return outer(x, 2, 3, 4, 5, z=6)

@probe(x)
def star_call_with_dict_and_tuple(x):
    def f(a, b, c): return a * b - c
    t = (x,); d = {"c": 1}
    return f(*t, 2, **d), f(*[x, 3], *(), c=0)

@probe(x)
def default_evaluated_at_def(x):
    def mk(k):
        def f(t, k=k): return t * k
        return f
    fs = [mk(i) for i in range(3)]
    return sum(f(x) for f in fs)

@probe(x)
def return_star_tuple(x):
    l = [x, x + 1]
    return (*l, x * 2)

@probe(x)
def import_inside_function(x):
    import math as m2
    from collections import OrderedDict as OD
    return x * m2.floor(2.5) + len(OD(a=1))

@probe(x)
def sys_version_branch(x):
    if sys.version_info >= (3, 8):
        return x * sys.maxsize.bit_length()
    return x

@probe(x)
def os_environ_get(x):
    if os.environ.get("NON_EXISTENT_PROBE_VAR", "0") == "1":
        return x * 2
    return x + 1

@probe(x)
def math_module_variety(x):
    v = (math.isclose(0.1 + 0.2, 0.3) + math.isfinite(1.0) + math.isnan(float("nan")) + math.ceil(2.1) + math.trunc(-2.7)
         + math.copysign(2, -1) + math.hypot(3, 4) + math.comb(5, 2) + math.perm(4, 2) + math.radians(180) + math.atan2(1, 1)
         + math.fsum([0.1] * 10) + math.log2(8) + math.exp(0) + math.log10(100) + math.log(8, 2) + math.pi + math.tau
         + math.factorial(4) + math.isinf(math.inf) + math.fabs(-2) + math.lcm(4, 6) + math.dist((0, 0), (3, 4)))
    return x * v

@probe(x)
def math_on_tensor_size_floats(x):
    d = x.shape[-1]
    return x / math.sqrt(d) + math.log(d) * math.cos(0) + math.ceil(d / 2)

@probe(x)
def float_special_values(x):
    inf, nan = float("inf"), float("nan")
    return x.clamp(-inf, inf), (nan != nan), math.isnan(nan), -inf < 0, x + (1e-12 if inf > 0 else 0)

@probe(x)
def string_key_building_loop(x):
    out = {}
    for i, part in enumerate("q k v".split()):
        out[f"{part}_proj.{i}"] = x[:, i]
    return out

@probe(x)
def unpack_in_for_nested(x):
    s = 0
    for (a, b), c in [((1, 2), 3), ((4, 5), 6)]:
        s += a * b + c
    for i, (u, *w) in enumerate([(1, 2, 3), (4, 5)]):
        s += i * u + len(w)
    return x * s

@probe(x)
def swap_and_multiple_assignment(x):
    a, b = x, x * 2
    a, b = b, a
    c = d = 3
    return a - b + c + d

@probe(x)
def assert_with_message_on_shapes(x):
    assert x.dim() == 2 and x.shape[1] == 3, f"bad shape {x.shape}"
    assert isinstance(x, torch.Tensor)
    return x.relu()

@probe(x)
def is_none_optional_args(x):
    def f(t, mask=None, bias=None):
        if mask is not None:
            t = t * mask
        if bias is None:
            bias = 1
        return t + bias
    return f(x), f(x, mask=x > 0), f(x, bias=x)

@probe(x)
def lambda_sort_and_closure_over_tensor(x):
    ws = [3, 1, 2]
    order = sorted(range(3), key=lambda i: ws[i])
    return x[:, order], order

@probe(x)
def bytes_and_bytearray(x):
    b = bytearray(b"ab"); b.append(99)
    return x * len(b) + (b"a" in bytes(b)), bytes(b)

@probe(x)
def int_str_round_trip_and_format(x):
    s = format(3.14159, ".3f") + format(42, "05d") + format(255, "x")
    return x * float(s[:5]), s

@probe(x)
def nested_functions_default_kwarg_tensor(x):
    def f(t, w=None):
        w = t if w is None else w
        return t @ w.t()
    return f(x), f(x, w=x * 2)

# ---- guards / recompilation across calls (same compiled fn, second call with different args)
@probe(x, 2, args2=(x, 3))
def guard_python_int_arg(x, n):
    return x * n + n

@probe(x, 0.5, args2=(x, 1.5))
def guard_python_float_arg(x, f):
    return x * f

@probe(x, args2=(torch.randn(6, 3),))
def guard_shape_change(x):
    return x.reshape(-1, x.shape[0]) * x.shape[0]

@probe(x, [1, 2], args2=(x, [1, 2, 3]))
def guard_list_len_change(x, l):
    return x * len(l) + sum(l)

@probe(x, {"a": 1}, args2=(x, {"b": 2}))
def guard_dict_keys_change(x, d):
    return x * d.get("a", 10) + len(d)

@probe(x, True, args2=(x, False))
def guard_bool_flag(x, flag):
    return x + 1 if flag else x - 1

@probe(x, "relu", args2=(x, "tanh"))
def guard_string_arg(x, act):
    return getattr(torch, act)(x)

@probe(x, None, args2=(x, x * 2))
def guard_none_vs_tensor(x, y):
    return x if y is None else x + y

@probe(x, args2=(x.double(),))
def guard_dtype_change(x):
    return x * (2 if x.dtype == torch.float32 else 3)

@probe(x, args2=(xr,))
def guard_requires_grad_change(x):
    return x * 2, x.requires_grad

_GSCALE = [2]

def _set_gscale(v):
    def f(): _GSCALE[0] = v
    return f

@probe(x, reset=_set_gscale(2), between=_set_gscale(5), args2=(x,))
def guard_global_list_mutated_between_calls(x):
    return x * _GSCALE[0]

_GS2 = 2
def _reset_gs2():
    global _GS2
    _GS2 = 2
def _bump_gs2():
    global _GS2
    _GS2 = 7

@probe(x, reset=_reset_gs2, between=_bump_gs2, args2=(x,))
def guard_global_int_rebound_between_calls(x):
    return x * _GS2

class _Cfg:
    scale = 2

@probe(x, reset=lambda: setattr(_Cfg, "scale", 2), between=lambda: setattr(_Cfg, "scale", 9), args2=(x,))
def guard_class_attr_changed_between_calls(x):
    return x * _Cfg.scale

class _ScaleMod(nn.Module):
    def __init__(self):
        super().__init__(); self.k = 2; self.use_bias = True
    def forward(self, x):
        return x * self.k + (1 if self.use_bias else 0)

_SM = _ScaleMod()
def _sm_reset(): _SM.k = 2; _SM.use_bias = True; _SM.train()
def _sm_between(): _SM.k = 5; _SM.use_bias = False

@probe(x, reset=_sm_reset, between=_sm_between, args2=(x,))
def guard_module_attr_changed_between_calls(x):
    return _SM(x)

class _TrainMod(nn.Module):
    def forward(self, x):
        return x * (1 if self.training else 100)
_TM = _TrainMod()

@probe(x, reset=lambda: _TM.train(), between=lambda: _TM.eval(), args2=(x,))
def guard_training_flag_changed_between_calls(x):
    return _TM(x)

_GD = {"a": 1}
def _gd_reset(): _GD.clear(); _GD["a"] = 1
def _gd_between(): _GD["b"] = 5

@probe(x, reset=_gd_reset, between=_gd_between, args2=(x,))
def guard_global_dict_key_added_between_calls(x):
    return x * sum(_GD.values()) + len(_GD)

_GT = torch.ones(3)
def _gt_reset(): _GT.fill_(1.0)
def _gt_between(): _GT.fill_(4.0)

@probe(x, reset=_gt_reset, between=_gt_between, args2=(x,))
def guard_global_tensor_inplace_between_calls(x):
    return x * _GT

_GT2 = [torch.ones(3)]
def _gt2_reset(): _GT2[0] = torch.ones(3)
def _gt2_between(): _GT2[0] = torch.ones(2, 3) * 3

@probe(x, reset=_gt2_reset, between=_gt2_between, args2=(x,))
def guard_global_tensor_replaced_new_shape(x):
    return (x[:2] * _GT2[0]).sum(0) if _GT2[0].dim() == 2 else x * _GT2[0]

def _fn_a(t): return t + 1
def _fn_b(t): return t * 100
_HOOK = [_fn_a]

@probe(x, reset=lambda: _HOOK.__setitem__(0, _fn_a), between=lambda: _HOOK.__setitem__(0, _fn_b), args2=(x,))
def guard_global_function_swapped(x):
    return _HOOK[0](x)

def _grad_off(): torch.set_grad_enabled(False)

@probe(xr, between=_grad_off, args2=(xr,))
def guard_grad_mode_changed_between_calls(x):
    y = x * 2
    return y.detach(), y.requires_grad

@probe(x, (1, 2), args2=(x, (1, 2, 3)))
def guard_tuple_arg(x, t):
    return x * sum(t)

@probe(x, Pt(1, 2), args2=(x, Pt(3, 4)))
def guard_namedtuple_values(x, p):
    return x * p.a + p.b

@probe(x, Box(1, 2), args2=(x, Box(5, 2)))
def guard_user_object_attr(x, b):
    return x * b.w * b.h

@probe(x, 3, args2=(x, 3.0))
def guard_int_vs_float_same_value(x, n):
    return x * n, type(n).__name__

@probe(x, args2=(x[:, :2],))
def guard_noncontiguous_view_second(x):
    return x.view(-1) if x.is_contiguous() else x.reshape(-1)

@probe(x, args2=(x.t(),))
def guard_stride_change(x):
    return x.contiguous().view(-1) * x.stride(0)
