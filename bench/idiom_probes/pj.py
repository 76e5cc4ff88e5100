# more: guards across calls, mutation-then-read variants, dict/set/list subclasses, modules API
import torch, collections, types, operator, functools, dataclasses, torch.nn as nn
from common import x, xr
import common
P = []
probe = common.collector(P)

# ---- mutation then read
class Holder:
    def __init__(self, t): self.t = t; self.k = 2
    @property
    def tk(self): return self.t * self.k
    def get(self): return self.t

@probe(Holder(x))
def input_obj_set_then_direct_read(o):
    o.t = o.t + 1
    return o.t * 2

@probe(Holder(x))
def input_obj_set_then_method_read(o):
    o.t = o.t + 1
    return o.get() * 2

@probe(Holder(x))
def input_obj_int_set_then_property(o):
    o.k = 5
    return o.tk

@probe(x)
def local_obj_set_then_property(x):
    o = Holder(x)
    o.t = x + 1
    return o.tk

_GH = Holder(torch.ones(3))
def _gh_reset(): _GH.t = torch.ones(3); _GH.k = 2

@probe(x, reset=_gh_reset, state=lambda: (_GH.t, _GH.k))
def global_obj_set_then_property(x):
    _GH.k = 3
    _GH.t = x[0]
    return _GH.tk

class MProp(nn.Module):
    def __init__(self):
        super().__init__(); self.k = 2
    @property
    def kk(self): return self.k * 10
    def forward(self, x): return x * self.kk

@probe(MProp(), x)
def module_attr_set_then_property(m, x):
    m.k = 3
    return m(x)

@probe(x)
def operator_setitem_list(x):
    l = [1, 2, 3]
    operator.setitem(l, 0, 10)
    operator.delitem(l, 1)
    return x * sum(l), l

@probe(x)
def operator_setitem_dict_only(x):
    d = {"a": 1}
    operator.setitem(d, "b", 5)
    return x * sum(d.values()), d

@probe(x)
def dict_setitem_unbound_method(x):
    d = {}
    dict.__setitem__(d, "a", 3)
    return x * d["a"]

@probe(x)
def exception_context_suppressed_from_none(x):
    try:
        try:
            raise KeyError("a")
        except KeyError:
            raise RuntimeError("b") from None
    except RuntimeError as e:
        return x * e.__suppress_context__ + (e.__cause__ is None)

@probe(x)
def exception_context_in_handler_function(x):
    def f():
        try:
            raise KeyError("a")
        except KeyError:
            raise ValueError("b")
    try:
        f()
    except ValueError as e:
        return x * (type(e.__context__).__name__ == "KeyError")

# ---- guards across calls
def _make_closure(k):
    def f(t): return t * k[0]
    return f
_CL_BOX = [2]
_CLF = _make_closure(_CL_BOX)

@probe(x, reset=lambda: _CL_BOX.__setitem__(0, 2), between=lambda: _CL_BOX.__setitem__(0, 6), args2=(x,))
def guard_closure_cell_content_mutated(x):
    return _CLF(x)

def _defaults_fn(t, k=2): return t * k
def _dfl_reset(): _defaults_fn.__defaults__ = (2,)
def _dfl_between(): _defaults_fn.__defaults__ = (7,)

@probe(x, reset=_dfl_reset, between=_dfl_between, args2=(x,))
def guard_function_defaults_changed(x):
    return _defaults_fn(x)

class _GCfg:
    def __init__(self): self.eps = 1.0; self.mode = "a"
_GC = _GCfg()
def _gc_reset(): _GC.eps = 1.0; _GC.mode = "a"
def _gc_between(): _GC.eps = 3.0; _GC.mode = "b"

@probe(x, reset=_gc_reset, between=_gc_between, args2=(x,))
def guard_global_instance_attr_changed(x):
    y = x + _GC.eps
    return y * 2 if _GC.mode == "a" else y * -2

class _BaseK:
    k = 1
class _DerK(_BaseK):
    pass

@probe(x, reset=lambda: setattr(_BaseK, "k", 1), between=lambda: setattr(_BaseK, "k", 4), args2=(x,))
def guard_base_class_attr_changed(x):
    return x * _DerK().k

class _Patch:
    def f(self, t): return t + 1
_orig_f = _Patch.f

@probe(x, reset=lambda: setattr(_Patch, "f", _orig_f), between=lambda: setattr(_Patch, "f", lambda self, t: t * 50), args2=(x,))
def guard_method_monkeypatched(x):
    return _Patch().f(x)

_PI = _Patch()
def _pi_reset(): _PI.__dict__.pop("f", None)
def _pi_between(): _PI.f = lambda t: t - 100

@probe(x, reset=_pi_reset, between=_pi_between, args2=(x,))
def guard_instance_method_shadowed(x):
    return _PI.f(x)

class _SubSwap(nn.Module):
    def __init__(self):
        super().__init__(); self.act = nn.ReLU()
    def forward(self, x): return self.act(x)
_SS = _SubSwap()
def _ss_reset(): _SS.act = nn.ReLU()
def _ss_between(): _SS.act = nn.Tanh()

@probe(x, reset=_ss_reset, between=_ss_between, args2=(x,))
def guard_submodule_replaced(x):
    return _SS(x)

class _PMod(nn.Module):
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.ones(3))
    def forward(self, x): return x * self.w
_PM = _PMod()
def _pm_reset():
    _PM.w = nn.Parameter(torch.ones(3))
def _pm_between():
    _PM.w = nn.Parameter(torch.full((3,), 5.0))

@probe(x, reset=_pm_reset, between=_pm_between, args2=(x,))
def guard_parameter_replaced(x):
    return _PM(x)

def _pm_between_inplace():
    with torch.no_grad(): _PM.w.fill_(9.0)

@probe(x, reset=_pm_reset, between=_pm_between_inplace, args2=(x,))
def guard_parameter_inplace_changed(x):
    return _PM(x)

class _TA(nn.Module):
    def __init__(self):
        super().__init__(); self.plain = torch.ones(3)
    def forward(self, x): return x + self.plain
_TAM = _TA()
def _ta_reset(): _TAM.plain = torch.ones(3)
def _ta_between(): _TAM.plain = torch.full((3,), 7.0)

@probe(x, reset=_ta_reset, between=_ta_between, args2=(x,))
def guard_plain_tensor_module_attr_replaced(x):
    return _TAM(x)

class _Nest(nn.Module):
    def __init__(self):
        super().__init__(); self.inner = _TrainM()
    def forward(self, x): return self.inner(x)
class _TrainM(nn.Module):
    def forward(self, x): return x * (2 if self.training else -2)
_NM = _Nest()

@probe(x, reset=lambda: _NM.train(), between=lambda: _NM.inner.eval(), args2=(x,))
def guard_nested_submodule_training_flag(x):
    return _NM(x)

_HM = nn.Linear(3, 3)
_handles = []
def _hm_reset():
    while _handles: _handles.pop().remove()
def _hm_between():
    _handles.append(_HM.register_forward_hook(lambda m, i, o: o * 0))

@probe(x, reset=_hm_reset, between=_hm_between, args2=(x,), state=lambda: _hm_reset())
def guard_forward_hook_added_between_calls(x):
    return _HM(x)

_GFLAG = True
def _gf_reset():
    global _GFLAG; _GFLAG = True
def _gf_between():
    global _GFLAG; _GFLAG = False

@probe(x, reset=_gf_reset, between=_gf_between, args2=(x,))
def guard_global_bool_flag(x):
    return x.relu() if _GFLAG else x.sigmoid()

_GSTR = "sum"
def _gs_reset():
    global _GSTR; _GSTR = "sum"
def _gs_between():
    global _GSTR; _GSTR = "mean"

@probe(x, reset=_gs_reset, between=_gs_between, args2=(x,))
def guard_global_str_dispatch(x):
    return getattr(x, _GSTR)(0)

_GDV = {"k": 2}
@probe(x, reset=lambda: _GDV.__setitem__("k", 2), between=lambda: _GDV.__setitem__("k", 8), args2=(x,))
def guard_global_dict_value_changed(x):
    return x * _GDV["k"]

@dataclasses.dataclass
class _DCfg:
    n: int = 2
_DC = _DCfg()

@probe(x, reset=lambda: setattr(_DC, "n", 2), between=lambda: setattr(_DC, "n", 3), args2=(x,))
def guard_dataclass_cfg_changed(x):
    return x.repeat(_DC.n, 1)

@probe(x, [1, x], args2=(x, [x, 1]))
def guard_list_element_types_swap(x, l):
    return [v * 2 for v in l]

@probe(x, {"a": 1, "b": 2}, args2=(x, {"b": 2, "a": 1}))
def guard_dict_order_change(x, d):
    return [x * v for v in d.values()], list(d)

class _PTK(nn.Module):
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.ones(3))
    def forward(self, x): return x * self.w
_RG = _PTK()

@probe(x, reset=lambda: _RG.w.requires_grad_(True), between=lambda: _RG.w.requires_grad_(False), args2=(x,))
def guard_param_requires_grad_flipped(x):
    y = _RG(x)
    return y.detach(), y.requires_grad

@probe(x, reset=lambda: setattr(_Cfg2, "scale", 2.0), between=lambda: setattr(_Cfg2, "scale", 0.5), args2=(x,))
def guard_class_attr_via_instance(x):
    return x * _Cfg2().scale

class _Cfg2:
    scale = 2.0

@probe(x, reset=lambda: setattr(_Cfg3, "ACT", "relu"), between=lambda: setattr(_Cfg3, "ACT", "tanh"), args2=(x,))
def guard_classattr_in_method(x):
    return _Cfg3().run(x)

class _Cfg3:
    ACT = "relu"
    def run(self, t): return getattr(torch, self.ACT)(t)

# ---- input generators
def _gen():
    yield 1; yield 2; yield 3

@probe(x, _gen)
def gen_factory_arg(x, g):
    it = g()
    return x * next(it) + sum(it)

@probe(x)
def gen_closure_over_loopvar(x):
    gens = [(i * v for v in range(2)) for i in range(3)]
    return x * sum(sum(g) for g in gens)

@probe(x)
def gen_side_effect_ordering(x):
    log = []
    def g():
        log.append("a"); yield 1
        log.append("b"); yield 2
    it = g()
    log.append("start"); next(it); log.append("mid"); next(it)
    return x * len(log), log

# ---- dict / list / set subclasses & misc container idioms
class Missing(dict):
    def __missing__(self, k): return len(k)

@probe(x)
def dict_subclass_missing(x):
    d = Missing(a=1)
    return x * (d["a"] + d["xyz"])

class MyList(list):
    def total(self): return sum(self)

@probe(x)
def list_subclass_method(x):
    l = MyList([1, 2, 3]); l.append(4)
    return x * l.total() + len(l)

@probe(x)
def ordereddict_equality_order_sensitive(x):
    a = collections.OrderedDict([("a", 1), ("b", 2)]); b = collections.OrderedDict([("b", 2), ("a", 1)])
    return x * ((a == b) + (dict(a) == dict(b)) + 2)

@probe(x)
def dict_views_compare(x):
    d = {"a": 1, "b": 2}
    return x * ((d.keys() == {"a", "b"}) + (("a", 1) in d.items()) + (2 in d.values()))

@probe(x)
def mappingproxy_read(x):
    mp = types.MappingProxyType({"a": 3})
    return x * mp["a"] + len(mp)

@probe(x)
def dict_constructor_kwargs_merge(x):
    base = {"a": 1}
    d = dict(base, b=2)
    return x * sum(d.values()), d

@probe(x)
def list_imul_and_index_start(x):
    l = [1, 2]; l *= 2
    return x * l.index(1, 1), l

@probe(x)
def simple_namespace(x):
    ns = types.SimpleNamespace(a=1, b=x)
    ns.c = 3
    return ns.b * ns.a + ns.c

@probe(x)
def sorted_set_iteration(x):
    s = {3, 1, 2}
    return x * sum(i * v for i, v in enumerate(sorted(s)))

# ---- nn.Module API
class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(collections.OrderedDict([("fc", nn.Linear(3, 3)), ("act", nn.ReLU())]))
        self.b = nn.Linear(3, 3)
    def forward(self, x):
        return self.b(self.a(x))

@probe(Tree(), x)
def get_submodule_and_parameter(m, x):
    return m.get_submodule("a.fc")(x) + m.get_parameter("b.bias")

@probe(Tree(), x)
def named_children_and_sequential_names(m, x):
    names = [n for n, _ in m.named_children()]
    return m.a.fc(x) * len(names), names

@probe(Tree(), x)
def parameters_recurse_false_and_prefix(m, x):
    n1 = len(list(m.parameters(recurse=False)))
    names = [n for n, _ in m.named_parameters(prefix="root")]
    return x * (n1 + len(names)), names

@probe(Tree(), x)
def module_class_name_dispatch(m, x):
    out = x
    for mod in m.modules():
        if type(mod).__name__ == "Linear":
            out = mod(out)
    return out

class Grow(nn.Module):
    def __init__(self):
        super().__init__(); self.layers = nn.ModuleList()
    def forward(self, x):
        for l in self.layers: x = l(x)
        return x

@probe(x)
def modulelist_append_inside(x):
    m = Grow()
    m.layers.append(nn.ReLU()); m.layers.extend([nn.Tanh()])
    return m(x), len(m.layers)

class KwHook(nn.Module):
    def __init__(self):
        super().__init__(); self.l = nn.Linear(3, 3)
        self.l.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs.get("bonus", 0), with_kwargs=True)
    def forward(self, x): return self.l(x)

@probe(KwHook(), x)
def forward_hook_with_kwargs(m, x):
    return m(x)

class SetAttrMod(nn.Module):
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.ones(3))
    def forward(self, x):
        self.cache = x * self.w
        return self.cache + 1

@probe(SetAttrMod(), x)
def module_stores_tensor_attr_in_forward(m, x):
    y = m(x)
    return y, m.cache

@probe(x)
def tensor_python_attribute(x):
    y = x * 2
    y.tag = "hello"
    return y, y.tag

class TSub(torch.Tensor):
    pass

@probe(x)
def tensor_subclass_as_subclass(x):
    t = x.as_subclass(TSub)
    return (t * 2 + 1).as_subclass(torch.Tensor), type(t).__name__
