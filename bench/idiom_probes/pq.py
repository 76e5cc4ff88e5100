# test/dynamo-suite style probes: tensor subclasses with __torch_function__ and TorchFunctionMode,
# torch.func transforms, checkpoint / parametrize / weight_norm / spectral_norm / rnn utils,
# torch.return_types and Size/dtype/device/finfo objects, module and tensor hooks, RNG and
# generators, model-code python (dataclasses, NamedTuple, Flag, registries), in-place ops and views
import torch, torch.nn as nn, torch.nn.functional as F, collections, functools, itertools, operator
import contextlib, dataclasses, enum, math, typing, abc, copy
import torch.utils.checkpoint
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils import parametrizations
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(11)
y = torch.randn(4, 3)
sq = torch.randn(3, 3)
v5 = torch.randn(5)
b3 = torch.randn(2, 4, 3)

# =========================== tensor subclasses with __torch_function__
class LogT(torch.Tensor):
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        return super().__torch_function__(func, types, args, kwargs)

class Plus1T(torch.Tensor):
    """every torch.add result gets +1; other funcs pass through"""
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = super().__torch_function__(func, types, args, kwargs)
        if func in (torch.add, torch.Tensor.add, torch.Tensor.__add__):
            with torch._C.DisableTorchFunctionSubclass():
                out = out + 1
        return out

class NoTF(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl
    def __deepcopy__(self, memo):
        return self.clone().as_subclass(type(self))

class LogTChild(LogT):
    def double(self):
        return self * 2
    @property
    def rows(self):
        return self.shape[0]

class UnwrapT(torch.Tensor):
    """returns plain tensors from every op"""
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

_xl = x.clone().as_subclass(LogT)
_xp = x.clone().as_subclass(Plus1T)

def _tn(t):
    return type(t).__name__

@probe(_xl)
def tf_subclass_input_ops_keep_type(t):
    r = t.sin() + 1
    return r, _tn(r), isinstance(r, LogT)

@probe(x)
def tf_subclass_created_inside(x):
    t = x.as_subclass(LogT)
    r = torch.mul(t, 2).sum(0)
    return r, _tn(r), _tn(t)

@probe(_xp)
def tf_subclass_override_add_input(t):
    a = torch.add(t, 1)
    b = t.mul(2)
    return a, b

@probe(x)
def tf_subclass_override_add_created_inside(x):
    t = x.as_subclass(Plus1T)
    return (t + x), (x * t)

@probe(x)
def tf_subclass_disabled_impl(x):
    t = x.as_subclass(NoTF)
    r = t * 3
    return _tn(r), r

@probe(x)
def tf_subclass_method_and_property(x):
    t = x.as_subclass(LogTChild)
    d = t.double()
    return d, t.rows, _tn(d)

@probe(x)
def tf_subclass_isinstance_branch(x):
    def f(v):
        if isinstance(v, LogT):
            return v * 10
        return v - 1
    return f(x.as_subclass(LogT)), f(x)

@probe(x)
def tf_subclass_unwrap_returns_plain(x):
    t = x.as_subclass(UnwrapT)
    r = t.cos() * 2
    return r, _tn(r), isinstance(r, UnwrapT)

@probe(x, y)
def tf_subclass_mixed_priority(x, y):
    a = x.as_subclass(LogT)
    b = y.as_subclass(LogTChild)
    r = a + b
    return _tn(r), r

_tf_calls = []
class CountT(torch.Tensor):
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _tf_calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})

@probe(x, reset=lambda: _tf_calls.clear(), state=lambda: list(_tf_calls))
def tf_subclass_side_effect_log(x):
    t = x.as_subclass(CountT)
    r = torch.relu(t) * 2
    return r

@probe(x)
def tf_subclass_torch_function_types_arg(x):
    seen = []
    class Peek(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(len(types))
            return super().__torch_function__(func, types, args, kwargs or {})
    t = x.as_subclass(Peek)
    r = torch.add(t, t)
    return r, seen

@probe(x)
def tf_subclass_shape_and_dtype_attrs(x):
    t = x.as_subclass(LogT)
    return t.shape, t.dtype, t.dim(), t.numel(), t.size(1)

@probe(x)
def tf_subclass_getitem_and_setitem(x):
    t = x.clone().as_subclass(LogT)
    t[0] = 5.0
    r = t[1:3]
    return t, r, _tn(r)

@probe(x)
def tf_subclass_func_is_check(x):
    class Neg(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.Tensor.sum:
                with torch._C.DisableTorchFunctionSubclass():
                    return -func(*args, **kwargs)
            return super().__torch_function__(func, types, args, kwargs)
    t = x.as_subclass(Neg)
    return t.sum(), (t * 1)


# ---- subclass instances passed in as inputs
_xc = x.clone().as_subclass(LogTChild)
_yl = y.clone().as_subclass(LogT)
_xu = x.clone().as_subclass(UnwrapT)
_xn = x.clone().as_subclass(NoTF)
_xcount = x.clone().as_subclass(CountT)

@probe(_xc)
def tf_input_child_method_property(t):
    d = t.double()
    return d, t.rows, _tn(d), isinstance(d, LogT)

@probe(_xl)
def tf_input_isinstance_branch(t):
    if isinstance(t, LogT):
        return t * 10
    return t - 1

@probe(_xl, args2=(x,))
def tf_input_then_plain_tensor_recompile(t):
    r = t * 2
    return _tn(r), isinstance(t, LogT), r

@probe(_xl, _xc)
def tf_input_two_subclasses_priority(a, b):
    r = a + b
    q = torch.cat([b, a])
    return _tn(r), _tn(q), r

@probe(_xl, y)
def tf_input_mixed_with_plain(a, b):
    r = b * a
    s = torch.stack([b, a])
    return _tn(r), _tn(s), s

@probe(_xu)
def tf_input_unwrap_returns_plain(t):
    r = t.cos() * 2
    return r, _tn(r)

@probe(_xn)
def tf_input_disabled_impl_keeps_type(t):
    r = t * 3
    return _tn(r), r

@probe(_xcount, reset=lambda: _tf_calls.clear(), state=lambda: list(_tf_calls))
def tf_input_side_effect_log(t):
    r = torch.relu(t) * 2
    return r

@probe(_xl)
def tf_input_getitem_setitem(t):
    t[0] = 5.0
    r = t[1:3]
    return r, _tn(r), t

@probe(_xp, y)
def tf_input_override_add_with_plain(t, y):
    return (y + t), torch.add(y, t), (t - y)

@probe(_xl)
def tf_input_returned_directly(t):
    return t.relu()

@probe(_xl)
def tf_input_shape_attrs(t):
    return t.shape, t.dtype, t.dim(), t.numel(), t.size(1), t.device, t.requires_grad

@probe(_xl)
def tf_input_reduction_and_python_float_mix(t):
    m = t.mean()
    return _tn(m), (t - m), _tn(t.shape[0] * t)

class NegSum(torch.Tensor):
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.sum:
            with torch._C.DisableTorchFunctionSubclass():
                return -func(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

@probe(x.clone().as_subclass(NegSum))
def tf_input_func_is_check(t):
    return t.sum(), (t * 1), _tn(t.sum())

@probe(_xl)
def tf_input_in_module_forward(t):
    lin = _shared_lin
    r = lin(t)
    return _tn(r), r

@probe(_xl)
def tf_input_functional_ops(t):
    a = F.relu(t)
    b = F.softmax(t, -1)
    return _tn(a), _tn(b), b

_shared_lin = nn.Linear(3, 2)

class MyParam(nn.Parameter):
    pass

class ParamSubMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = MyParam(torch.randn(3, 3))
    def forward(self, x):
        return x @ self.w, type(self.w).__name__, isinstance(self.w, nn.Parameter)

@probe(ParamSubMod(), x)
def param_subclass_module(m, x):
    return m(x)

@probe(nn.Linear(3, 2), x)
def param_as_subclass_in_forward(m, x):
    w = m.weight.as_subclass(torch.Tensor)
    return F.linear(x, w, m.bias), type(w) is torch.Tensor

class AddOneMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func is torch.mul:
            out = out + 1
        return out

@probe(x)
def tf_mode_entered_inside(x):
    with AddOneMode():
        a = torch.mul(x, 2)
        b = torch.sub(x, 1)
    return a, b, torch.mul(x, 2)

class PassMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

@probe(x)
def tf_mode_passthrough(x):
    with PassMode():
        r = x.sin() + 1
    return r

_seen_funcs = []
class RecordMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        _seen_funcs.append(func.__name__)
        return func(*args, **(kwargs or {}))

@probe(x, reset=lambda: _seen_funcs.clear(), state=lambda: list(_seen_funcs))
def tf_mode_records_side_effect(x):
    with RecordMode():
        r = torch.cos(x).sum()
    return r

# =========================== torch.func
@probe(x, y)
def func_grad_argnums_tuple(x, y):
    f = lambda a, b: (a * b).sum() + (a ** 2).sum()
    ga, gb = torch.func.grad(f, argnums=(0, 1))(x, y)
    return ga, gb

@probe(x)
def func_grad_has_aux(x):
    def f(t):
        l = t.sin().sum()
        return l, {"n": t.norm()}
    g, aux = torch.func.grad(f, has_aux=True)(x)
    return g, aux["n"]

@probe(x, y)
def func_vmap_in_dims_dict(x, y):
    def f(d):
        return d["a"] * d["b"]
    return torch.vmap(f, in_dims=({"a": 0, "b": None},))({"a": x, "b": y[0]})

@probe(x)
def func_vmap_kwargs_unbatched(x):
    def f(t, scale=1.0):
        return t * scale
    return torch.vmap(f)(x, scale=3.0)

@probe(x)
def func_vmap_chunk_size(x):
    return torch.vmap(lambda r: r.softmax(0), chunk_size=2)(x)

@probe(x)
def func_vmap_out_dims_none(x):
    c = torch.ones(3)
    def f(r):
        return r + 1, c
    return torch.vmap(f, out_dims=(0, None))(x)

@probe(b3)
def func_vmap_in_dims_negative(b):
    return torch.vmap(lambda m: m.sum(0), in_dims=-1)(b)

@probe(x, y)
def func_vmap_nested_outer_product(x, y):
    dot = lambda a, b: (a * b).sum()
    return torch.vmap(torch.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(x, y)

@probe(x)
def func_vmap_of_grad_per_sample(x):
    w = torch.ones(3)
    def loss(wt, xi):
        return ((xi * wt).sum() - 1.0) ** 2
    return torch.vmap(torch.func.grad(loss), in_dims=(None, 0))(w, x)

@probe(v5[:3])
def func_jacfwd_small(v):
    return torch.func.jacfwd(lambda t: t.sin() * t.sum())(v)

@probe(v5[:3])
def func_hessian_small(v):
    return torch.func.hessian(lambda t: (t ** 3).sum())(v)

@probe(v5[:3])
def func_jacrev_argnums(v):
    f = lambda a, b: a * b.sum()
    return torch.func.jacrev(f, argnums=1)(v, v * 2)

@probe(v5[:3])
def func_jacrev_has_aux(v):
    def f(t):
        return t.exp(), t.sum()
    j, aux = torch.func.jacrev(f, has_aux=True)(v)
    return j, aux

@probe(x)
def func_linearize(x):
    out, jvp_fn = torch.func.linearize(torch.sin, x)
    return out, jvp_fn(torch.ones_like(x))

@probe(nn.Linear(3, 2), x)
def func_functional_call_tuple_of_dicts(m, x):
    params = {"weight": torch.ones(2, 3)}
    bufs = {"bias": torch.zeros(2)}
    return torch.func.functional_call(m, (params, bufs), (x,))

class KwMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x, scale=1.0):
        return self.lin(x) * scale

@probe(KwMod(), x)
def func_functional_call_kwargs(m, x):
    p = {k: v * 0 + 1 for k, v in m.named_parameters()}
    return torch.func.functional_call(m, p, (x,), {"scale": 2.0})

@probe(KwMod(), x)
def func_functional_call_partial_params(m, x):
    p = {"lin.bias": torch.full((3,), 5.0)}
    return torch.func.functional_call(m, p, x)

@probe(x)
def func_stack_module_state_ensemble(x):
    torch.manual_seed(0)
    models = [nn.Linear(3, 2) for _ in range(3)]
    params, bufs = torch.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    def call(p, b, xx):
        return torch.func.functional_call(base, (p, b), (xx,))
    return torch.vmap(call, in_dims=(0, 0, None))(params, bufs, x)

_ens = [nn.Linear(3, 2) for _ in range(3)]
_ens_params, _ens_bufs = torch.func.stack_module_state(_ens)
_ens_base = copy.deepcopy(_ens[0]).to("meta")

@probe(_ens_params, x)
def func_vmap_functional_call_ensemble_input(params, x):
    def call(p, xx):
        return torch.func.functional_call(_ens_base, p, (xx,))
    return torch.vmap(call, in_dims=(0, None))(params, x)

@probe(x)
def func_vjp_has_aux(x):
    def f(t):
        return t.sin(), t.cos().sum()
    out, fn, aux = torch.func.vjp(f, x, has_aux=True)
    return out, fn(torch.ones_like(out))[0], aux

@probe(x)
def func_jvp_multiple_primals(x):
    f = lambda a, b: a * b
    return torch.func.jvp(f, (x, x + 1), (torch.ones_like(x), torch.zeros_like(x)))

@probe(x)
def func_grad_of_grad(x):
    f = lambda t: (t ** 3).sum()
    g2 = torch.func.grad(lambda t: torch.func.grad(f)(t).sum())
    return g2(x)

@probe(x)
def func_vmap_randomness_same(x):
    torch.manual_seed(3)
    return torch.vmap(lambda r: r + torch.rand(()), randomness="same")(x)

# =========================== checkpoint, parametrize, weight/spectral norm, rnn utils
class CkptMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)
    def block(self, x, scale):
        return torch.relu(self.a(x)) * scale
    def forward(self, x):
        h = torch.utils.checkpoint.checkpoint(self.block, x, 2.0, use_reentrant=False)
        return self.b(h)

@probe(CkptMod(), xr)
def checkpoint_method_with_scalar(m, x):
    return m(x)

@probe(xr)
def checkpoint_kwargs_passed(x):
    def f(t, *, k):
        return t.sin() * k
    return torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False, k=3.0)

@probe(xr)
def checkpoint_multiple_outputs(x):
    def f(t):
        return t.sin(), t.cos()
    a, b = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    return a + b

@probe(xr)
def checkpoint_nested(x):
    inner = lambda t: t.exp()
    outer = lambda t: torch.utils.checkpoint.checkpoint(inner, t, use_reentrant=False) * 2
    return torch.utils.checkpoint.checkpoint(outer, x, use_reentrant=False)

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3), nn.Tanh()), xr)
def checkpoint_sequential(m, x):
    return torch.utils.checkpoint.checkpoint_sequential(m, 2, x, use_reentrant=False)

class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

def _param_lin():
    torch.manual_seed(1)
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    return m

@probe(_param_lin(), x)
def parametrize_symmetric_forward(m, x):
    return m(x), m.weight

@probe(_param_lin(), x)
def parametrize_is_parametrized_and_cached(m, x):
    with parametrize.cached():
        a = m(x)
        b = m(x * 2)
    return a + b, parametrize.is_parametrized(m), parametrize.is_parametrized(m, "bias")

@probe(parametrizations.weight_norm(nn.Linear(3, 2)), x)
def weight_norm_parametrization(m, x):
    return m(x)

_wn_legacy = torch.nn.utils.weight_norm(nn.Linear(3, 2))
@probe(x)
def weight_norm_legacy_prehook_global(x):
    return _wn_legacy(x)

def _sn():
    torch.manual_seed(2)
    return parametrizations.spectral_norm(nn.Linear(3, 3))

@probe(_sn().eval(), x)
def spectral_norm_parametrization_eval(m, x):
    return m(x)

@probe(_sn(), x)
def spectral_norm_parametrization_train(m, x):
    return m(x)

@probe(torch.nn.utils.spectral_norm(nn.Linear(3, 3)), x)
def spectral_norm_legacy_train(m, x):
    return m(x)

@probe(torch.randn(3, 4, 2))
def rnn_pad_sequence(t):
    seqs = [t[0, :4], t[1, :2], t[2, :3]]
    return torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-1.0)

_lstm = nn.LSTM(2, 3, batch_first=True)
@probe(_lstm, torch.randn(3, 4, 2))
def rnn_pack_padded_lstm(m, t):
    packed = torch.nn.utils.rnn.pack_padded_sequence(t, [4, 3, 2], batch_first=True)
    out, (h, c) = m(packed)
    un, lens = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return un, lens, h

def _with_grads():
    torch.manual_seed(4)
    m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    for p in m.parameters():
        p.grad = torch.randn_like(p) * 5
    return m

_GM = _with_grads()
_GM_G = [p.grad.clone() for p in _GM.parameters()]
def _gm_reset():
    for p, g in zip(_GM.parameters(), _GM_G):
        p.grad = g.clone()
_gm_state = lambda: [p.grad for p in _GM.parameters()]

@probe(reset=_gm_reset, state=_gm_state)
def clip_grad_norm_math_manual():
    m = _GM
    grads = [p.grad for p in m.parameters() if p.grad is not None]
    total = torch.norm(torch.stack([torch.norm(g, 2.0) for g in grads]), 2.0)
    coef = torch.clamp(1.0 / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef)
    return total

@probe(reset=_gm_reset, state=_gm_state)
def clip_grad_norm_builtin():
    m = _GM
    return torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=1.0)

@probe(reset=_gm_reset, state=_gm_state)
def clip_grad_value_builtin():
    m = _GM
    torch.nn.utils.clip_grad_value_(m.parameters(), clip_value=0.5)
    return [p.grad for p in m.parameters()]

@probe(nn.Linear(3, 2))
def parameters_to_vector_roundtrip(m):
    v = torch.nn.utils.parameters_to_vector(m.parameters())
    return v * 2, v.numel()

@probe(reset=_gm_reset, state=_gm_state)
def grad_none_check_and_zero():
    m = _GM
    n = 0
    for p in m.parameters():
        if p.grad is not None:
            n += 1
            p.grad.zero_()
    return n

# =========================== return_types, Size, dtype, device, finfo
@probe(x)
def rt_max_dim_fields(x):
    r = torch.max(x, dim=1)
    return r.values, r.indices, r[0], type(r).__name__, isinstance(r, tuple)

@probe(x)
def rt_sort_unpack_and_fields(x):
    vals, idx = torch.sort(x, dim=0, descending=True)
    r = x.sort(1)
    return vals, idx, r.values, r.indices

@probe(x)
def rt_topk_named(x):
    t = x.topk(2, dim=1, largest=False)
    return t.values + 1, t.indices, len(t)

@probe(x)
def rt_min_kthvalue_median_mode(x):
    a = x.min(0)
    b = torch.kthvalue(x, 2, dim=1)
    c = x.median(dim=0)
    d = torch.mode(x.round(), 1)
    return a.values, b.indices, c.values, d.values

@probe(x)
def rt_aminmax_named(x):
    r = torch.aminmax(x, dim=0)
    return r.min, r.max

@probe(sq)
def rt_linalg_slogdet_qr(m):
    s = torch.linalg.slogdet(m @ m.T + torch.eye(3))
    q = torch.linalg.qr(m)
    return s.sign, s.logabsdet, q.Q.shape, q.R.shape

@probe(x)
def rt_var_mean_std_mean_tuple(x):
    v, m = torch.var_mean(x, dim=0)
    s, m2 = torch.std_mean(x, dim=1, keepdim=True)
    return v, m, s, m2

@probe(x)
def rt_returned_directly(x):
    return torch.max(x, 0)

@probe(x)
def rt_cummax_frexp(x):
    c = torch.cummax(x, dim=0)
    f = torch.frexp(x)
    return c.values, c.indices, f.mantissa, f.exponent

@probe(x)
def rt_namedtuple_iterate_and_index(x):
    r = x.max(dim=1)
    out = [t.float() for t in r]
    return out, r._fields if hasattr(r, "_fields") else None

@probe(x)
def size_arith_concat_and_slice(x):
    s = x.shape
    s2 = s + (1,)
    s3 = (2,) + s
    return type(s2).__name__, s2, s3, s[1:], type(s[1:]).__name__, x.view(s2).shape

@probe(x)
def size_compare_and_numel(x):
    s = x.size()
    return s == (4, 3), s == torch.Size([4, 3]), s != (3, 4), s.numel(), len(s), s.index(3), s.count(4)

@probe(x)
def size_multiply_and_torch_size_ctor(x):
    s = torch.Size([2]) * 2
    return s, x.new_zeros(torch.Size([x.shape[0], 2])).shape, torch.Size(reversed(x.shape))

@probe(x)
def size_in_dict_key_and_tuple_eq(x):
    d = {x.shape: "a", (1, 2): "b"}
    return d[(4, 3)], tuple(x.shape) == x.shape, hash(x.shape) == hash((4, 3))

@probe(x)
def dtype_attributes(x):
    dt = x.dtype
    return dt.is_floating_point, dt.is_complex, dt.is_signed, dt.itemsize, dt.to_complex(), torch.float16.to_real()

@probe(x)
def dtype_promote_result_type(x):
    a = torch.promote_types(torch.int32, x.dtype)
    b = torch.result_type(x, 2)
    c = torch.result_type(x.int(), 2.5)
    return a, b, c, torch.can_cast(x.dtype, torch.int32)

@probe(x)
def dtype_default_and_compare(x):
    d = torch.get_default_dtype()
    return x.dtype == d, x.dtype in (torch.float16, torch.float32), str(x.dtype), repr(torch.int64)

@probe(x)
def device_objects(x):
    d = x.device
    return d.type == "cpu", d.index is None, d == torch.device("cpu"), str(d), torch.device("cpu", 0).index

@probe(x)
def finfo_iinfo_values(x):
    fi = torch.finfo(x.dtype)
    ii = torch.iinfo(torch.int32)
    return fi.eps, fi.max, fi.min, fi.tiny, fi.bits, ii.max, ii.min, torch.finfo(torch.bfloat16).eps

@probe(x)
def finfo_min_mask_fill(x):
    mask = x > 0
    return x.masked_fill(mask, torch.finfo(x.dtype).min), x.clamp(max=torch.iinfo(torch.int8).max)

@probe(x)
def finfo_default_no_arg(x):
    return x * torch.finfo().eps

@probe(x)
def is_fp_is_tensor_etc(x):
    return (torch.is_floating_point(x), torch.is_tensor(x), torch.is_complex(x), torch.numel(x),
            x.element_size(), x.nbytes, x.itemsize, torch.is_floating_point(x.long()))

@probe(b3)
def dim_ndim_numel_python_arith(t):
    scale = 1.0 / math.sqrt(t.size(-1))
    per = t.numel() // t.shape[0]
    return t * scale, per, t.dim() + t.ndim, t.flatten(start_dim=t.ndim - 2).shape

# =========================== hooks
class HookMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x, scale=1.0):
        return self.lin(x) * scale

def _pre_kw_hook(mod, args, kwargs):
    kwargs = dict(kwargs)
    kwargs["scale"] = 10.0
    return args, kwargs

def _hm_prekw():
    m = HookMod()
    m.register_forward_pre_hook(_pre_kw_hook, with_kwargs=True)
    return m

@probe(_hm_prekw(), x)
def hook_pre_with_kwargs_modifies(m, x):
    return m(x, scale=2.0)

def _fwd_kw_hook(mod, args, kwargs, out):
    return out + kwargs.get("scale", 0)

def _hm_fwdkw():
    m = HookMod()
    m.register_forward_hook(_fwd_kw_hook, with_kwargs=True)
    return m

@probe(_hm_fwdkw(), x)
def hook_fwd_with_kwargs(m, x):
    return m(x, scale=3.0)

def _hm_pre_tuple():
    m = HookMod()
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 0 + 1,))
    return m

@probe(_hm_pre_tuple(), x)
def hook_pre_replaces_input_tuple(m, x):
    return m(x)

def _hm_pre_single():
    m = HookMod()
    m.register_forward_pre_hook(lambda mod, args: args[0] - 1)
    return m

@probe(_hm_pre_single(), x)
def hook_pre_returns_single_tensor(m, x):
    return m(x)

def _hm_always():
    m = HookMod()
    m.register_forward_hook(lambda mod, args, out: out * 2, always_call=True)
    return m

@probe(_hm_always(), x)
def hook_fwd_always_call(m, x):
    return m(x)

def _hm_prepend():
    m = HookMod()
    m.register_forward_hook(lambda mod, a, o: o + 1)
    m.register_forward_hook(lambda mod, a, o: o * 10, prepend=True)
    return m

@probe(_hm_prepend(), x)
def hook_fwd_prepend_order(m, x):
    return m(x)

_hook_log = []
def _hm_log():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    for name, sub in m.named_children():
        sub.register_forward_hook(lambda mod, a, o, name=name: _hook_log.append((name, tuple(o.shape))))
    return m

@probe(_hm_log(), x, reset=lambda: _hook_log.clear(), state=lambda: list(_hook_log))
def hook_fwd_logging_named_children(m, x):
    return m(x)

_feats = {}
def _hm_feat():
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    def save(name):
        def h(mod, a, o):
            _feats[name] = o.detach()
        return h
    m[1].register_forward_hook(save("act"))
    return m

@probe(_hm_feat(), x, reset=lambda: _feats.clear(), state=lambda: dict(_feats))
def hook_feature_extraction_dict(m, x):
    return m(x)

@probe(HookMod(), x)
def hook_registered_inside_and_removed(m, x):
    h = m.register_forward_hook(lambda mod, a, o: o * 0)
    a = m(x)
    h.remove()
    b = m(x)
    return a, b

_STASH = {}
def _stash_grad():
    o, i = _STASH["o"], _STASH["i"]
    return torch.autograd.grad(o.sum(), i)[0]

@probe(xr, reset=lambda: _STASH.clear(), state=_stash_grad)
def tensor_register_hook_on_intermediate(x):
    h = x * 2
    h.register_hook(lambda g: g * 100)
    o = h.sin()
    _STASH["o"], _STASH["i"] = o, x
    return o

@probe(xr, reset=lambda: _STASH.clear(), state=_stash_grad)
def tensor_register_hook_on_input(x):
    x.register_hook(lambda g: g + 1)
    o = x.cos()
    _STASH["o"], _STASH["i"] = o, x
    return o

def _fbh():
    m = HookMod()
    _bh = []
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    return m

@probe(_fbh(), xr, reset=lambda: _STASH.clear(), state=_stash_grad)
def module_full_backward_hook(m, x):
    o = m(x)
    _STASH["o"], _STASH["i"] = o, x
    return o

def _sd_hook_mod():
    m = nn.Linear(3, 2)
    m._register_state_dict_hook(lambda mod, sd, prefix, local_metadata: sd.update({prefix + "extra": torch.ones(1)}))
    return m

@probe(_sd_hook_mod(), x)
def module_state_dict_with_hook_inside(m, x):
    sd = m.state_dict()
    return sorted(sd.keys()), x @ sd["weight"].T

@probe(nn.Linear(3, 2), x)
def module_state_dict_keys_inside(m, x):
    sd = m.state_dict()
    return list(sd.keys()), sd["bias"] + 1

# =========================== RNG
_seed0 = lambda: torch.manual_seed(0)

@probe(x)
def rng_manual_seed_inside(x):
    torch.manual_seed(42)
    a = torch.randn(3)
    torch.manual_seed(42)
    b = torch.randn(3)
    return a, b, x + a

@probe(x, reset=_seed0)
def rng_dropout_train_seeded(x):
    return F.dropout(x, 0.5, training=True)

@probe(nn.Dropout(0.3), x, reset=_seed0)
def rng_dropout_module_train(m, x):
    return m(x)

@probe(nn.Dropout(0.3).eval(), x, reset=_seed0)
def rng_dropout_module_eval(m, x):
    return m(x), m.training

@probe(x, reset=_seed0)
def rng_rand_like_randint_like(x):
    return torch.rand_like(x), torch.randint_like(x, 10), torch.randn_like(x, dtype=torch.float64)

@probe(x, reset=_seed0)
def rng_randperm_bernoulli_multinomial(x):
    p = torch.randperm(5)
    b = torch.bernoulli(torch.full((4,), 0.5))
    m = torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 4, replacement=True)
    return p, b, m

@probe(x, reset=_seed0)
def rng_inplace_normal_uniform(x):
    a = torch.empty(3).normal_(0, 1)
    b = torch.empty(3).uniform_(-1, 1)
    return a, b, x.clone().exponential_()

_gen = torch.Generator()
@probe(x, reset=lambda: _gen.manual_seed(7))
def rng_global_generator_randn(x):
    return x + torch.randn(4, 3, generator=_gen)

@probe(x)
def rng_generator_created_inside(x):
    g = torch.Generator().manual_seed(3)
    return torch.rand(3, generator=g), torch.randint(0, 10, (3,), generator=g)

@probe(x, reset=lambda: _gen.manual_seed(9))
def rng_randint_with_generator(x):
    return torch.randint(0, 5, (6,), generator=_gen), torch.randperm(4, generator=_gen)

@probe(x, reset=_seed0)
def rng_get_set_rng_state(x):
    s = torch.get_rng_state()
    a = torch.rand(3)
    torch.set_rng_state(s)
    b = torch.rand(3)
    return a, b

@probe(x, reset=_seed0)
def rng_fork_rng(x):
    with torch.random.fork_rng():
        torch.manual_seed(1)
        a = torch.rand(2)
    b = torch.rand(2)
    return a, b

@probe(x, reset=_seed0)
def rng_initial_seed_and_rand(x):
    return torch.initial_seed(), torch.rand(2)

@probe(x, reset=_seed0)
def rng_dropout_variants(x):
    return F.dropout1d(x.unsqueeze(0), 0.5), F.alpha_dropout(x, 0.2, training=True), F.feature_alpha_dropout(b3, 0.5, training=True)

# =========================== model-code python
@dataclasses.dataclass
class Cfg:
    dim: int = 3
    layers: list = dataclasses.field(default_factory=lambda: [1, 2])
    scale: float = dataclasses.field(init=False)
    def __post_init__(self):
        self.scale = self.dim ** -0.5

@probe(x)
def dc_default_factory_post_init_inside(x):
    c = Cfg(dim=4)
    c.layers.append(3)
    return x * c.scale, c.layers, c

@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    hidden: int
    act: str = "gelu"
    tags: tuple = ()

@probe(FrozenCfg(3, "relu", ("a",)), x)
def dc_frozen_cfg_input(c, x):
    act = {"relu": F.relu, "gelu": F.gelu}[c.act]
    return act(x) * c.hidden, dataclasses.replace(c, act="gelu").act, "a" in c.tags

@probe(x)
def dc_frozen_setattr_raises(x):
    c = FrozenCfg(3)
    try:
        c.hidden = 4
        return x
    except dataclasses.FrozenInstanceError:
        return x * 2

@probe(x)
def dc_asdict_astuple_fields(x):
    c = Cfg()
    d = dataclasses.asdict(c)
    names = [f.name for f in dataclasses.fields(c)]
    return x * d["scale"], names, dataclasses.astuple(c)[0]

class Out(typing.NamedTuple):
    logits: torch.Tensor
    loss: typing.Optional[torch.Tensor] = None
    def total(self):
        return self.logits.sum() + (0 if self.loss is None else self.loss)

@probe(x)
def namedtuple_typing_method_default_replace(x):
    o = Out(x)
    o2 = o._replace(loss=x.mean())
    return o.total(), o2.total(), o2._asdict()["loss"], Out._fields

@probe(x)
def namedtuple_typing_returned(x):
    return Out(x * 2, x.sum())

class Perm(enum.Flag):
    R = enum.auto()
    W = enum.auto()
    X = enum.auto()

@probe(x)
def enum_flag_ops(x):
    p = Perm.R | Perm.W
    r = x
    if Perm.W in p:
        r = r * 2
    if p & Perm.X:
        r = r + 100
    return r, bool(p & Perm.R), (p ^ Perm.R) == Perm.W, p.value

class Mode(enum.IntEnum):
    A = 1
    B = 2

@probe(x)
def enum_intenum_arith(x):
    return x * Mode.B, Mode.A + 1, Mode(2).name, Mode["A"] < Mode.B

@probe(nn.Sequential(collections.OrderedDict(enc_a=nn.Linear(3, 3), enc_b=nn.Linear(3, 3), dec=nn.Linear(3, 2))), x)
def str_key_parsing_named_children(m, x):
    h = x
    used = []
    for name, sub in m.named_children():
        if name.startswith("enc_"):
            h = sub(h)
            used.append(name.split("_")[1].upper())
    return m.dec(h), "-".join(used), "enc_a".replace("enc", "dec")

@probe(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
def str_named_parameters_prefix_filter(m):
    tot = 0
    names = []
    for n, p in m.named_parameters():
        layer, kind = n.split(".")
        if kind == "weight":
            tot = tot + p.sum() * int(layer)
            names.append(f"L{layer}:{kind[0]}")
    return tot, names

@probe(x)
def sorted_key_lambda_dict_items(x):
    d = {"b": x * 2, "a": x, "c": x * 3}
    items = sorted(d.items(), key=lambda kv: kv[0], reverse=True)
    by_sum = sorted(d.values(), key=lambda t: float(0) - len(t))
    return [k for k, _ in items], items[0][1], len(by_sum)

@probe(x)
def zip_strict_mismatch_raises(x):
    try:
        list(zip([1, 2], [1], strict=True))
        return x
    except ValueError:
        return x + 1

@probe(x)
def zip_strict_ok(x):
    return [a * b for a, b in zip(x.unbind(0), [1, 2, 3, 4], strict=True)]

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)), x)
def dict_comp_named_children(m, x):
    d = {n: type(c).__name__ for n, c in m.named_children()}
    outs = {n: c for n, c in m.named_children() if isinstance(c, nn.Linear)}
    return d, outs["2"](outs["0"](x))

class OptMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.norm = None
    def forward(self, x):
        h = self.lin(x)
        n = getattr(self, "norm", None)
        if n is not None:
            h = n(h)
        act = getattr(self, "act", F.relu)
        return act(h), getattr(self.lin, "missing", 5), hasattr(self, "lin")

@probe(OptMod(), x)
def getattr_default_on_module(m, x):
    return m(x)

class CacheMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self._cached = None
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        if self._cached is None:
            self._cached = self.lin.weight.sum()
        return x * self._cached

@probe(CacheMod(), x)
def setattr_module_cache_in_forward(m, x):
    a = m(x)
    b = m(x)
    return a + b, m.calls, m._cached

class ModFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        self.last_shape = x.shape
        self.register_buffer("seen", x.sum().detach(), persistent=False)
        return self.lin(x)

@probe(ModFlag(), x)
def setattr_shape_and_register_buffer_in_forward(m, x):
    return m(x), m.last_shape, m.seen

@probe(b3)
def math_prod_shape(t):
    n = math.prod(t.shape[1:])
    return t.reshape(-1, n), n, math.prod([])

@probe(nn.Linear(3, 2), x)
def operator_attrgetter_itemgetter_methodcaller(m, x):
    w, b = operator.attrgetter("weight", "bias")(m)
    ig = operator.itemgetter(0, 2)
    mc = operator.methodcaller("sum", dim=0)
    return x @ w.T + b, ig([x, 1, x * 2])[1], mc(x)

@probe(nn.Sequential(nn.Linear(3, 3)), x)
def operator_attrgetter_dotted(m, x):
    w = operator.attrgetter("0.weight")(m)
    return x @ w

@functools.lru_cache(maxsize=None)
def _rope_freqs(dim, base=10000.0):
    return tuple(1.0 / base ** (i / dim) for i in range(0, dim, 2))

@probe(x)
def lru_cache_helper_python_ints(x):
    f = _rope_freqs(4)
    return x * f[1], len(f)

@functools.lru_cache(maxsize=8)
def _mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)

@probe(sq)
def lru_cache_helper_returns_tensor(m):
    return m.masked_fill(_mask(3), 0.0)

class Base(nn.Module, abc.ABC):
    @abc.abstractmethod
    def core(self, x): ...
    def forward(self, x):
        return self.core(x) + 1

class Impl(Base):
    def core(self, x):
        return x * 3

@probe(Impl(), x)
def abc_module_abstract(m, x):
    return m(x), isinstance(m, Base)

_LAYERS = {}
class Layer(nn.Module):
    def __init_subclass__(cls, key=None, **kw):
        super().__init_subclass__(**kw)
        if key:
            _LAYERS[key] = cls

class DoubleL(Layer, key="double"):
    def forward(self, x): return x * 2

class NegL(Layer, key="neg"):
    def forward(self, x): return -x

@probe(x)
def init_subclass_registry_build_inside(x):
    h = x
    for k in ["double", "neg", "double"]:
        h = _LAYERS[k]()(h)
    return h, sorted(_LAYERS)

_ACTS = {"relu": nn.ReLU, "gelu": functools.partial(nn.GELU, approximate="tanh"), "silu": nn.SiLU}
class ActMod(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.act = _ACTS[name]()
    def forward(self, x):
        return self.act(x), self.name

@probe(ActMod("gelu"), x)
def class_registry_partial_module(m, x):
    return m(x)

@probe(x)
def registry_construct_module_inside(x):
    act = _ACTS["silu"]()
    return act(x), type(act).__name__

_FNS = {}
def register(name):
    def deco(fn):
        _FNS[name] = fn
        return fn
    return deco

@register("sq")
def _sqf(t): return t * t

@register("abs")
def _absf(t): return t.abs()

@probe(x)
def function_registry_decorator(x):
    return sum(_FNS[k](x) for k in sorted(_FNS))

@probe(x)
def nullcontext_or_no_grad_choice(x):
    w = torch.ones(3, requires_grad=True)
    ctxs = [contextlib.nullcontext(), torch.no_grad()]
    outs = []
    for c in ctxs:
        with c:
            outs.append(x * w)
    return [o.requires_grad for o in outs], outs[0]

@torch.no_grad()
def _nograd_helper(t, w):
    return t * w

@probe(x)
def no_grad_decorated_helper(x):
    w = torch.ones(3, requires_grad=True)
    r = _nograd_helper(x, w)
    return r, r.requires_grad, torch.is_grad_enabled()

@probe(x)
def enable_grad_inside_no_grad(x):
    w = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        with torch.enable_grad():
            a = x * w
        b = x * w
    return a.requires_grad, b.requires_grad

@probe(x)
def set_grad_enabled_function_call(x):
    w = torch.ones(3, requires_grad=True)
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    a = x * w
    torch.set_grad_enabled(prev)
    b = x * w
    return a.requires_grad, b.requires_grad

@probe(x)
def inference_mode_inside(x):
    with torch.inference_mode():
        r = x * 2
    return r + 0, torch.is_inference_mode_enabled()

# =========================== in-place ops and views
@probe(x)
def data_assign_on_fresh_tensor(x):
    t = torch.zeros(4, 3)
    t.data = x * 2
    return t

@probe(nn.Linear(3, 3), x)
def data_mul_inplace_param(m, x):
    m.weight.data.mul_(0.5)
    return m(x)

@probe(nn.Linear(3, 3), x)
def data_assign_param(m, x):
    m.weight.data = torch.ones(3, 3)
    return m(x)

@probe(x)
def data_inplace_on_input(x):
    x.data.add_(1)
    return x * 2

@probe(x)
def setitem_bool_mask_scalar(x):
    x[x > 0] = 0.5
    return x

@probe(x, y)
def setitem_bool_mask_tensor_value(x, y):
    x[y < 0] = y[y < 0] * 0 + 7 if False else 7.0
    return x.sum()

@probe(x)
def setitem_mask_from_other_row(x):
    m = x[:, 0] > 0
    x[m] = torch.zeros(3)
    return x

@probe(x)
def index_put_accumulate(x):
    idx = torch.tensor([0, 0, 2])
    x.index_put_((idx,), torch.ones(3, 3), accumulate=True)
    return x

@probe(x)
def index_put_two_indices(x):
    x.index_put_((torch.tensor([0, 1]), torch.tensor([2, 0])), torch.tensor([9.0, 8.0]))
    return x

@probe(x)
def scatter_inplace_reduce_add(x):
    idx = torch.tensor([[0, 1, 2], [2, 1, 0]])
    out = torch.zeros(3, 3)
    out.scatter_(0, idx, x[:2], reduce="add")
    return out

@probe(x)
def scatter_add_and_scatter_reduce(x):
    idx = torch.tensor([0, 1, 0, 1])
    a = torch.zeros(2, 3).scatter_add_(0, idx[:, None].expand(4, 3), x)
    b = torch.zeros(2, 3).scatter_reduce_(0, idx[:, None].expand(4, 3), x, "amax", include_self=False)
    return a, b

@probe(x)
def scatter_value_scalar(x):
    return x.scatter_(1, torch.tensor([[0], [1], [2], [0]]), 9.0)

@probe(x)
def unsqueeze_inplace_input(x):
    x.unsqueeze_(0)
    return x.shape, x * 2

@probe(x)
def squeeze_t_transpose_inplace_fresh(x):
    t = x.clone().unsqueeze(1)
    t.squeeze_(1)
    t.t_()
    t.transpose_(0, 1)
    return t, t.shape, t.is_contiguous()

@probe(x, y)
def copy_into_slice_of_input(x, y):
    x[:, :2].copy_(y[:, 1:])
    return x

@probe(x, y)
def copy_into_slice_broadcast(x, y):
    out = torch.zeros(4, 3)
    out[1:3].copy_(y[0])
    return out

@probe(x)
def masked_fill_on_view_of_input(x):
    v = x[1:]
    v.masked_fill_(v > 0, 0.0)
    return x

@probe(x)
def masked_fill_on_transposed_view(x):
    v = x.t()
    v.masked_fill_(torch.eye(3, 4, dtype=torch.bool), -1.0)
    return v.sum(), x

@probe(x, y)
def out_arg_fresh_buffer(x, y):
    buf = torch.empty(4, 3)
    torch.add(x, y, out=buf)
    r = torch.mul(buf, 2, out=torch.empty(4, 3))
    return buf, r

@probe(x, y, torch.empty(4, 3))
def out_arg_into_input(x, y, out):
    torch.sub(x, y, out=out)
    return out

@probe(x, torch.empty(0))
def out_arg_resize_input(x, out):
    torch.cat([x, x], dim=0, out=out)
    return out.shape

@probe(sq)
def out_arg_mm_and_returns_same(m):
    o = torch.empty(3, 3)
    r = torch.mm(m, m, out=o)
    return r is o, o

@probe(x)
def index_add_copy_fill(x):
    i = torch.tensor([0, 2])
    a = torch.zeros(4, 3).index_add_(0, i, x[:2])
    b = x.clone().index_copy_(0, i, torch.ones(2, 3))
    c = x.clone().index_fill_(1, torch.tensor([1]), -5.0)
    return a, b, c

@probe(sq)
def fill_diagonal_and_diagonal_zero(m):
    a = m.clone().fill_diagonal_(0.0)
    b = m.clone()
    b.diagonal().zero_()
    return a, b

@probe(x)
def narrow_copy_into_input(x):
    x.narrow(0, 1, 2).copy_(torch.ones(2, 3))
    return x

@probe(x)
def detach_inplace_mutates_input(x):
    x.detach().zero_()
    return x.sum()

@probe(x)
def strided_view_setitem(x):
    v = x.view(-1)
    v[::2] = 0.0
    return x

@probe(x)
def view_of_view_inplace(x):
    v = x[1:][:, 1:]
    v.add_(100)
    return x, v.is_contiguous()

@probe(x)
def requires_grad_inplace_fresh(x):
    w = torch.ones(3).requires_grad_()
    r = x * w
    return r.requires_grad, w.is_leaf, r.grad_fn is not None

@probe(x)
def as_strided_inplace_read(x):
    a = x.clone()
    v = a.as_strided((2, 2), (3, 1), 1)
    v.mul_(10)
    return a

@probe(x)
def where_out_and_clamp_(x):
    o = torch.empty(4, 3)
    torch.where(x > 0, x, torch.zeros(()), out=o)
    x.clamp_(-0.5, 0.5)
    return o, x

@probe(torch.zeros(2, 5, 3), x[:2])
def kv_cache_index_copy(cache, k):
    pos = torch.tensor([3])
    cache.index_copy_(1, pos, k.unsqueeze(1))
    return cache[:, :4].sum()

@probe(torch.zeros(2, 5, 3), x[:2])
def kv_cache_slice_assign_python_pos(cache, k):
    pos = 2
    cache[:, pos:pos + 1] = k[:, None]
    return cache[:, : pos + 1]

# =========================== test_repros-style model snippets
@probe(torch.randn(1, 2, 4, 4))
def attn_causal_mask_finfo(s):
    T = s.size(-1)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
    return s.softmax(-1)

@probe(torch.randn(1, 4, 2, 4))
def rope_rotate_half(q):
    d = q.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    t = torch.arange(q.shape[1]).float()
    freqs = torch.outer(t, inv)
    emb = torch.cat((freqs, freqs), dim=-1)[None, :, None, :]
    x1, x2 = q.chunk(2, dim=-1)
    rot = torch.cat((-x2, x1), dim=-1)
    return q * emb.cos() + rot * emb.sin()

@probe(torch.randn(2, 4, 6))
def mha_split_heads_view_permute(h):
    B, T, C = h.shape
    nh = 2
    q = h.view(B, T, nh, C // nh).transpose(1, 2)
    att = (q @ q.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    y = att.softmax(-1) @ q
    return y.transpose(1, 2).contiguous().view(B, T, C)

@probe(torch.randn(2, 4, 6))
def sdpa_with_attn_mask_bool(h):
    q = h.view(2, 4, 2, 3).transpose(1, 2)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)

@probe(torch.randn(3, 5), torch.tensor([1, 0, 4]))
def cross_entropy_label_smoothing_ignore(logits, target):
    a = F.cross_entropy(logits, target, label_smoothing=0.1)
    b = F.cross_entropy(logits, torch.tensor([1, -100, 4]), ignore_index=-100, reduction="sum")
    return a, b

@probe(torch.randn(2, 3, 4))
def layernorm_rmsnorm_manual(h):
    w = torch.ones(4)
    rms = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    ln = F.layer_norm(h, (4,), w, torch.zeros(4), eps=1e-5)
    return rms, ln

@probe(torch.randn(2, 3, 4, 4))
def groupnorm_batchnorm_functional(h):
    rm, rv = torch.zeros(3), torch.ones(3)
    a = F.group_norm(h, 3)
    b = F.batch_norm(h, rm, rv, training=True, momentum=0.1)
    return a, b, rm, rv

@probe(nn.BatchNorm1d(3), x)
def batchnorm_train_updates_buffers(m, x):
    return m(x), m.num_batches_tracked

@probe(nn.Embedding(10, 3, padding_idx=0), torch.tensor([[0, 2, 5], [1, 0, 9]]))
def embedding_padding_idx(m, ids):
    e = m(ids)
    mask = (ids != 0).unsqueeze(-1)
    return (e * mask).sum(1) / mask.sum(1).clamp(min=1)

@probe(torch.randn(2, 6))
def gelu_tanh_manual_vs_builtin(h):
    a = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
    return a, F.gelu(h, approximate="tanh")

@probe(torch.randn(2, 3, 8, 8))
def conv_pool_interpolate(img):
    w = torch.ones(4, 3, 3, 3) / 27
    h = F.conv2d(img, w, padding=1)
    h = F.max_pool2d(h, 2)
    return F.interpolate(h, scale_factor=2, mode="nearest"), F.adaptive_avg_pool2d(h, 1).flatten(1)

@probe(torch.randn(2, 3, 4, 4))
def unfold_fold_roundtrip(img):
    cols = F.unfold(img, kernel_size=2, stride=2)
    return F.fold(cols, output_size=(4, 4), kernel_size=2, stride=2), cols.shape

@probe(torch.randn(4, 3))
def one_hot_and_argmax_accuracy(logits):
    tgt = torch.tensor([0, 1, 2, 1])
    acc = (logits.argmax(-1) == tgt).float().mean()
    oh = F.one_hot(tgt, num_classes=3)
    return acc, oh, (oh * logits).sum(-1)

@probe(torch.randn(2, 4, 3))
def einsum_and_bmm_equiv(h):
    a = torch.einsum("btc,bsc->bts", h, h)
    b = torch.bmm(h, h.transpose(1, 2))
    return a, torch.allclose(a, b)

@probe(torch.randn(2, 3))
def autocast_cpu_bf16_matmul_dtype(h):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        r = h @ h.T
        s = r.float().softmax(-1)
    return r.dtype, s.dtype, s.float()

@probe(torch.randn(4, 3))
def sdpa_kernel_ctx_math(h):
    from torch.nn.attention import sdpa_kernel, SDPBackend
    q = h[None, None]
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, q, q)

@probe(x)
def torch_cond_closure_over_module_param(x):
    w = torch.full((3,), 2.0)
    return torch.cond(x.sum() > 0, lambda t: t * w, lambda t: t + w, (x,))

@probe(x)
def torch_cond_nested_return_tuple(x):
    def tb(t):
        return t.sin(), t.cos()
    def fb(t):
        return t.cos(), t.sin()
    a, b = torch.cond(x.mean() > 0, tb, fb, (x,))
    return a + b

@probe(x)
def hop_map_over_rows(x):
    from torch._higher_order_ops.map import map as hmap
    return hmap(lambda r, s: r * s, x, 3.0)

class Square(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * x
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

@probe(xr)
def autograd_function_setup_context(x):
    return Square.apply(x)

@probe(x)
def autograd_function_setup_context_vmap(x):
    class Sq(torch.autograd.Function):
        generate_vmap_rule = True
        @staticmethod
        def forward(t):
            return t * t
        @staticmethod
        def setup_context(ctx, inputs, output):
            pass
        @staticmethod
        def backward(ctx, g):
            return g
    return torch.vmap(Sq.apply)(x)

class MarkDirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.mark_dirty(t)
        return t.mul_(2)
    @staticmethod
    def backward(ctx, g):
        return g * 2

@probe(x)
def autograd_function_mark_dirty(x):
    t = x.clone()
    r = MarkDirty.apply(t)
    return r, t

class NonDiff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        idx = t.argmax(-1)
        ctx.mark_non_differentiable(idx)
        return t.max(-1).values, idx
    @staticmethod
    def backward(ctx, g, gi):
        return g[..., None].expand(4, 3)

@probe(xr)
def autograd_function_mark_non_differentiable(x):
    v, i = NonDiff.apply(x)
    return v, i, i.requires_grad

@probe(x)
def module_to_dtype_inside(x):
    m = nn.Linear(3, 2).double()
    return m.weight.dtype, m(x.double()).dtype

@probe(nn.Linear(3, 2), x)
def module_requires_grad_toggle(m, x):
    m.requires_grad_(False)
    r = m(x)
    m.requires_grad_(True)
    return r.requires_grad, m.weight.requires_grad

@probe(nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Linear(3, 3)}), x)
def moduledict_items_keys_values(m, x):
    h = x
    for k, sub in m.items():
        h = sub(h)
    return h, list(m.keys()), len(list(m.values())), "a" in m

@probe(nn.ParameterList([nn.Parameter(torch.ones(3)), nn.Parameter(torch.full((3,), 2.0))]), x)
def parameterlist_iterate(pl, x):
    return sum(x * p for p in pl), len(pl)

@probe(nn.ParameterDict({"s": nn.Parameter(torch.ones(3)), "b": nn.Parameter(torch.zeros(3))}), x)
def parameterdict_access(pd, x):
    return x * pd["s"] + pd["b"], sorted(pd.keys()), "s" in pd

class BufMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self.register_buffer("ema", torch.zeros(3))
    def forward(self, x):
        self.step += 1
        self.ema.mul_(0.9).add_(x.mean(0), alpha=0.1)
        return x - self.ema, self.step.item() if False else self.step.clone()

@probe(BufMod(), x)
def buffer_inplace_update_ema(m, x):
    return m(x)

@probe(nn.Linear(3, 2), x)
def named_modules_buffers_parameters_counts(m, x):
    n = sum(p.numel() for p in m.parameters() if p.requires_grad)
    return n, len(list(m.named_modules())), len(list(m.buffers())), m(x)

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), x)
def sequential_slicing_and_len(m, x):
    head = m[:1]
    return head(x), len(m), type(head).__name__, m[-1](x)

@probe(nn.ModuleList([nn.Linear(3, 3) for _ in range(3)]), x)
def modulelist_zip_enumerate_reversed(ml, x):
    h = x
    for i, l in enumerate(reversed(ml)):
        h = l(h) * (i + 1)
    return h, [type(a).__name__ for a in ml[::2]]

@probe(nn.Linear(3, 3), x)
def apply_init_fn_inside(m, x):
    def init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.1)
            nn.init.zeros_(mod.bias)
    m.apply(init)
    return m(x)

@probe(x)
def tensor_new_methods(x):
    return x.new_ones(2), x.new_full((2, 2), 3.0), x.new_tensor([1.0, 2.0]), x.new_empty(3).shape

@probe(x)
def tensor_type_conversions(x):
    return x.type(torch.float64).dtype, x.to(torch.int32), x.half().dtype, x.type_as(torch.zeros(1, dtype=torch.int64)).dtype

@probe(x)
def tensor_tolist_item_inside(x):
    s = x.sum().item()
    return x * s

@probe(x)
def tensor_bool_python_any_all(x):
    return bool((x > -100).all()), x * 2

# =========================== batch 2: return_types identity, Sequential/ModuleList slicing
@probe(x)
def rt_isinstance_and_type_identity(x):
    r = torch.max(x, 0)
    s = torch.sort(x)
    return isinstance(r, torch.return_types.max), type(s) is torch.return_types.sort, isinstance(s, tuple)

@probe(x)
def rt_tuple_ops_on_namedtuple(x):
    r = torch.topk(x, 2)
    v, i = tuple(r)
    return v, i, list(r)[1], r == r, len(r + (1,))

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)), x)
def seq_slice_iterate(m, x):
    h = m[0](x)
    for l in m[1:]:
        h = l(h)
    return h

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)), x)
def seq_slice_isinstance(m, x):
    tail = m[1:]
    return isinstance(tail, nn.Sequential), isinstance(tail, nn.Module), len(tail), tail(m[0](x))

@probe(nn.ModuleList([nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3)]), x)
def modulelist_slice_type(ml, x):
    part = ml[:2]
    h = x
    for l in part:
        h = l(h)
    return h, type(part).__name__, isinstance(part, nn.ModuleList)

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), x)
def seq_children_list_and_rebuild(m, x):
    kids = list(m.children())
    s = nn.Sequential(*kids)
    return s(x), len(kids), type(kids[0]).__name__

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), x)
def seq_negative_index_and_len(m, x):
    return m[-1](m[-2](m[0](x))), len(m), type(m[-2]).__name__

class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(3):
            setattr(self, f"block{i}", nn.Linear(3, 3))
        self.n = 3
    def forward(self, x):
        for i in range(self.n):
            x = getattr(self, f"block{i}")(x).relu()
        return x

@probe(Blocks(), x)
def getattr_fstring_blocks(m, x):
    return m(x)

class TrainEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        return self.drop(self.lin(x)) if self.training else self.lin(x) * 2

@probe(TrainEval(), x)
def module_eval_train_toggle_inside(m, x):
    m.eval()
    r = m(x)
    m.train()
    return r, m.training, m.drop.training

# =========================== batch 2: subclass corners
@probe(_xl)
def tf_input_inplace_op_type(t):
    t.add_(1)
    r = t.mul_(2)
    return _tn(r), r is t, t

@probe(_xl)
def tf_input_disable_subclass_ctx(t):
    with torch._C.DisableTorchFunctionSubclass():
        r = t + 1
    return _tn(r), r

@probe(_xl)
def tf_input_overrides_helpers(t):
    return torch.overrides.is_tensor_like(t), torch.overrides.has_torch_function((t,)), torch.is_tensor(t)

@probe(_xl, y)
def tf_input_with_mode(t, y):
    with AddOneMode():
        r = torch.mul(t, 2)
    return r, _tn(r)

@probe(_xl)
def tf_input_type_compare_is(t):
    r = t * 2
    return type(r) is LogT, type(t) is LogT, type(r) is torch.Tensor

class WithExtra(torch.Tensor):
    def __deepcopy__(self, memo):
        with torch._C.DisableTorchFunctionSubclass():
            return self.clone().as_subclass(type(self))
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func is torch.Tensor.sum:
            return (out, "summed")
        return out

@probe(x.clone().as_subclass(WithExtra))
def tf_input_torch_function_returns_tuple(t):
    s, tag = t.sum()
    return s, tag

# =========================== batch 2: Size / shape idioms
@probe(b3)
def size_star_unpack_and_new_zeros(t):
    *batch, d = t.shape
    z = t.new_zeros(*t.shape[:-1], 5)
    return batch, d, z.shape, t.view(*t.shape[:-1], -1, 1).shape, t.expand(*t.shape).shape

@probe(x, y[:1])
def size_broadcast_shapes(a, b):
    s = torch.broadcast_shapes(a.shape, b.shape, (1, 3))
    return s, type(s).__name__

@probe(b3)
def size_reduce_accumulate(t):
    p = functools.reduce(operator.mul, t.shape, 1)
    acc = list(itertools.accumulate(t.shape))
    return p, acc, math.floor(t.shape[1] / 3), divmod(t.numel(), 5)

@probe(x)
def size_tensor_from_shape_and_arange(x):
    n = torch.tensor([x.shape[0], x.size(1)])
    idx = torch.arange(x.size(0), device=x.device)
    return n, idx * x.shape[1], torch.full(x.shape, float("-inf")).triu(1)

@probe(x, y.double())
def to_tensor_arg_and_kwargs(x, y):
    return x.to(y).dtype, x.to(device=x.device, dtype=y.dtype, non_blocking=True).dtype, x.float().cpu().dtype

@probe(x)
def global_torch_flags_reads(x):
    return (torch.is_autocast_enabled(), torch.are_deterministic_algorithms_enabled(),
            torch.get_default_device() == torch.device("cpu"), x * 2)

@probe(x)
def zeros_like_memory_format(x):
    return torch.zeros_like(x, memory_format=torch.contiguous_format), torch.empty_like(x.t()).is_contiguous()

# =========================== batch 2: in-place and indexing on inputs
@probe(x)
def augassign_indexed_item(x):
    x[0] += 1
    x[..., 1] *= 2
    x[:, None][1] -= 3
    return x

@probe(x)
def setitem_list_index(x):
    x[[0, 2]] = 0.0
    return x

@probe(x)
def setitem_duplicate_index_tensor(x):
    idx = torch.tensor([1, 1, 3])
    x[idx] += 1
    return x

@probe(x, y)
def copy_dtype_convert_into_input(x, y):
    x.copy_(y.int())
    return x

@probe(x)
def view_setitem_mutates_base(x):
    v = x.view(2, 6)
    v[0] = 1.0
    return x

@probe(x, y)
def masked_scatter_and_index_put_bool(x, y):
    m = x > 0
    a = x.clone().masked_scatter_(m, y)
    b = x.clone()
    b.index_put_((m,), torch.tensor(-1.0))
    return a, b

@probe(x)
def put_take_flat(x):
    a = x.clone().put_(torch.tensor([0, 5]), torch.tensor([9.0, 8.0]))
    return a, x.take(torch.tensor([1, 4]))

@probe(x)
def view_meta_of_input(x):
    v = x.t()[1:]
    return v.stride(), v.storage_offset(), v.is_contiguous(), v._base is x

@probe(x)
def return_views_and_input_alias(x):
    return x.view(-1), x, x[0]

@probe(x)
def inplace_on_unfold_view(x):
    u = x.view(-1).unfold(0, 2, 2)
    u[:, 0] = 0.0
    return x

@probe(x)
def resize_fresh_tensor(x):
    t = torch.empty(0)
    t.resize_(2, 3)
    t.fill_(1.0)
    return t, x * t.sum()

# =========================== batch 2: hooks with side state
class CountFwd(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.count = 0
        self.lin.register_forward_hook(self._hook)
    def _hook(self, mod, a, o):
        self.count += 1
        return o * 2
    def forward(self, x):
        return self.lin(x) + self.lin(x)

@probe(CountFwd(), x)
def hook_bound_method_mutates_owner(m, x):
    return m(x), m.count

class PreHookCast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0].float(),), kwargs), with_kwargs=True)
    def forward(self, x):
        return self.lin(x)

@probe(PreHookCast(), x.double())
def hook_pre_with_kwargs_casts_input(m, x):
    return m(x)

def _hm_fwd_none():
    m = HookMod()
    m.register_forward_hook(lambda mod, a, o: None)
    return m

@probe(_hm_fwd_none(), x)
def hook_fwd_returning_none_keeps_output(m, x):
    return m(x)

@probe(HookMod(), x)
def hook_registered_inside_forward_pre(m, x):
    h = m.register_forward_pre_hook(lambda mod, a: (a[0] * 0,))
    r = m(x)
    h.remove()
    return r, m(x)

# =========================== batch 2: torch.func on modules
class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.l2 = nn.Linear(4, 1)
    def forward(self, x):
        return self.l2(self.l1(x).tanh())

@probe(TinyNet(), x)
def func_grad_wrt_params_functional_call(m, x):
    params = dict(m.named_parameters())
    def loss(p):
        return torch.func.functional_call(m, p, (x,)).pow(2).mean()
    g = torch.func.grad(loss)(params)
    return g

@probe(TinyNet(), x)
def func_per_sample_grads(m, x):
    params = {k: v.detach() for k, v in m.named_parameters()}
    def loss(p, xi):
        return torch.func.functional_call(m, p, (xi[None],)).sum()
    g = torch.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)
    return g["l1.weight"].shape, g["l2.bias"]

@probe(TinyNet(), x)
def func_maml_inner_step(m, x):
    params = dict(m.named_parameters())
    def loss(p):
        return torch.func.functional_call(m, p, (x,)).mean()
    g = torch.func.grad(loss)(params)
    new = {k: v - 0.1 * g[k] for k, v in params.items()}
    return torch.func.functional_call(m, new, (x,))

@probe(TinyNet(), x[0])
def func_jacrev_module_input(m, xi):
    return torch.func.jacrev(lambda t: m(t))(xi)

@probe(x)
def func_vmap_python_shape_branch(x):
    def f(r):
        if r.shape[0] > 2:
            return torch.where(r > 0, r, r * 0.1)
        return r
    return torch.vmap(f)(x)

@probe(x)
def func_vmap_in_dims_tuple_nested_list(x):
    def f(pair):
        a, b = pair
        return a + b
    return torch.vmap(f, in_dims=([0, 1],))([x, x.t()])

# =========================== batch 2: checkpoint / parametrize corners
class DropCkpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(lambda t: F.dropout(self.lin(t), 0.5, True), x,
                                                 use_reentrant=False, preserve_rng_state=True)

@probe(DropCkpt(), xr, reset=_seed0)
def checkpoint_dropout_preserve_rng(m, x):
    return m(x)

@probe(parametrizations.orthogonal(nn.Linear(3, 3)), x)
def parametrize_orthogonal(m, x):
    return m(x), (m.weight @ m.weight.T)

class Scale2(nn.Module):
    def forward(self, w):
        return w * 2
    def right_inverse(self, w):
        return w / 2

def _p_scale():
    torch.manual_seed(3)
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Scale2())
    return m

@probe(_p_scale(), x)
def parametrize_original_access(m, x):
    return m(x), m.parametrizations.weight.original, m.weight

# =========================== batch 2: common modules
@probe(nn.LSTM(3, 4, batch_first=True), torch.randn(2, 5, 3))
def lstm_plain_forward(m, t):
    out, (h, c) = m(t)
    return out, h, c

@probe(nn.GRU(3, 4), torch.randn(5, 2, 3))
def gru_with_h0(m, t):
    h0 = torch.zeros(1, 2, 4)
    return m(t, h0)

@probe(nn.MultiheadAttention(4, 2, batch_first=True), torch.randn(2, 3, 4))
def multihead_attention_need_weights_false(m, t):
    out, w = m(t, t, t, need_weights=False)
    return out, w is None

@probe(nn.MultiheadAttention(4, 2, batch_first=True), torch.randn(2, 3, 4))
def multihead_attention_key_padding_mask(m, t):
    kpm = torch.tensor([[False, False, True], [False, False, False]])
    return m(t, t, t, key_padding_mask=kpm)

@probe(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True), torch.randn(2, 3, 4))
def transformer_encoder_layer(m, t):
    return m(t)

@probe(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True).eval(), torch.randn(2, 3, 4))
def transformer_encoder_layer_eval_fastpath(m, t):
    with torch.no_grad():
        return m(t)

@probe(nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 6))), b3)
def flatten_unflatten_modules(m, t):
    return m(t)

@probe(torch.randn(2, 3, 5))
def pad_reflect_and_normalize(t):
    return F.pad(t, (1, 2), mode="reflect"), F.normalize(t, dim=-1), F.pad(t, (0, 0, 1, 1), value=-1.0)

@probe(nn.EmbeddingBag(10, 3, mode="mean"), torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3]))
def embedding_bag_offsets(m, ids, offs):
    return m(ids, offs)

# =========================== batch 2: model-code python
class Act(enum.Enum):
    RELU = ("relu", 0.0)
    LEAKY = ("leaky", 0.1)
    def apply(self, t):
        name, slope = self.value
        return F.leaky_relu(t, slope) if slope else F.relu(t)

@probe(x)
def enum_tuple_value_method(x):
    return Act.LEAKY.apply(x), Act.RELU.apply(x), Act("relu", 0.0) if False else Act.RELU.name

class Out2(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor
    @property
    def both(self):
        return self.a + self.b

@probe(x)
def namedtuple_property_and_unpack(x):
    o = Out2(x, x * 2)
    a, b = o
    return o.both, a, o[1], isinstance(o, tuple), Out2(*o).b

@dataclasses.dataclass
class State:
    h: torch.Tensor
    step: int = 0
    hist: list = dataclasses.field(default_factory=list, repr=False)
    def advance(self, t):
        self.h = self.h * 0.5 + t
        self.step += 1
        self.hist.append(self.step)
        return self

@probe(x)
def dataclass_mutating_method_chain(x):
    s = State(torch.zeros(3))
    for row in x:
        s = s.advance(row)
    return s.h, s.step, s.hist

@probe(State(torch.ones(3)), x)
def dataclass_input_mutated(s, x):
    s.advance(x[0])
    return s.h

@probe(x)
def collections_counter_and_defaultdict_of_dtypes(x):
    ts = [x, x.int(), x.double(), x.int()]
    c = collections.Counter(t.dtype for t in ts)
    d = collections.defaultdict(list)
    for t in ts:
        d[str(t.dtype)].append(t.sum())
    return c[torch.int32], sorted(d), len(d["torch.int32"])

@probe(x)
def str_format_shapes(x):
    s = "x".join(str(d) for d in x.shape)
    k = f"{x.dtype}".split(".")[-1]
    return s, k, "{:>4}|{:.2f}".format(x.shape[0], 1 / 3), x * len(s)

# =========================== batch 3: state changed between two calls of one compiled fn (guards)
def _fresh_lin(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(3, 3)

_G1 = {"m": None, "h": None}
def _g1_reset():
    _G1["m"] = _fresh_lin()
def _g1_add_hook():
    _G1["h"] = _G1["m"].register_forward_hook(lambda mod, a, o: o * 0 + 7)

@probe(x, reset=_g1_reset, between=_g1_add_hook, args2=(x,))
def guard_forward_hook_added_between_calls(x):
    return _G1["m"](x)

def _g1_reset_hooked():
    _G1["m"] = _fresh_lin()
    _G1["h"] = _G1["m"].register_forward_hook(lambda mod, a, o: o * 0 + 7)

@probe(x, reset=_g1_reset_hooked, between=lambda: _G1["h"].remove(), args2=(x,))
def guard_forward_hook_removed_between_calls(x):
    return _G1["m"](x)

@probe(x, reset=_g1_reset, between=lambda: _G1["m"].register_forward_pre_hook(lambda mod, a: (a[0] * 0,)), args2=(x,))
def guard_pre_hook_added_between_calls(x):
    return _G1["m"](x)

@probe(x, reset=_g1_reset, between=lambda: parametrize.register_parametrization(_G1["m"], "weight", Symmetric()), args2=(x,))
def guard_parametrization_added_between_calls(x):
    return _G1["m"](x)

@probe(x, reset=_g1_reset, between=lambda: _G1["m"].weight.requires_grad_(False), args2=(x,))
def guard_param_requires_grad_toggled(x):
    r = _G1["m"](x)
    return r, r.requires_grad

class SwapAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
    def forward(self, x):
        return self.act(x)
_SA = {"m": None}

@probe(x, reset=lambda: _SA.__setitem__("m", SwapAct()), between=lambda: setattr(_SA["m"], "act", nn.Tanh()), args2=(x,))
def guard_submodule_replaced_between_calls(x):
    return _SA["m"](x)

@probe(x, reset=lambda: _ACTS.__setitem__("relu", nn.ReLU), between=lambda: _ACTS.__setitem__("relu", nn.Tanh), args2=(x,))
def guard_global_registry_entry_changed(x):
    return _ACTS["relu"]()(x)

_CFG = Cfg()
@probe(x, reset=lambda: setattr(_CFG, "scale", 0.5), between=lambda: setattr(_CFG, "scale", 3.0), args2=(x,))
def guard_dataclass_global_field_changed(x):
    return x * _CFG.scale

class ClsScale(nn.Module):
    scale = 2.0
    def forward(self, x):
        return x * self.scale
_CS = ClsScale()
@probe(x, reset=lambda: setattr(ClsScale, "scale", 2.0), between=lambda: setattr(ClsScale, "scale", 5.0), args2=(x,))
def guard_module_class_attr_changed(x):
    return _CS(x)

@probe(x, reset=lambda: torch.manual_seed(1), between=lambda: torch.manual_seed(123), args2=(x,))
def guard_global_seed_between_dropout_calls(x):
    return F.dropout(x, 0.5, training=True)

_LOG_T = {"t": None}
@probe(x, reset=lambda: _LOG_T.__setitem__("t", torch.ones(3)), between=lambda: _LOG_T["t"].mul_(4), args2=(x,))
def guard_global_tensor_mutated_between(x):
    return x * _LOG_T["t"]

@probe(x, reset=lambda: _LOG_T.__setitem__("t", torch.ones(3)), between=lambda: _LOG_T.__setitem__("t", torch.ones(4, 3)), args2=(x,))
def guard_global_tensor_reshaped_between(x):
    return x * _LOG_T["t"]

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), x, args2=(nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3)), x))
def guard_seq_slice_different_module_lengths(m, x):
    h = x
    for l in m[1:]:
        h = l(h)
    return h, len(m[1:])

@probe(_xl, args2=(x.clone().as_subclass(LogTChild),))
def guard_subclass_type_changes_between_calls(t):
    return t * 2, isinstance(t, LogTChild)

@probe(x, args2=(x.double(),))
def guard_dtype_changes_finfo(x):
    return x * torch.finfo(x.dtype).eps, torch.finfo(x.dtype).bits

@probe(x, args2=(x.t(),))
def guard_contiguity_changes_view(x):
    return x.reshape(-1), x.is_contiguous()

@probe(HookMod(), x, args2=(HookMod(), x))
def guard_kwargs_default_and_explicit(m, x):
    return m(x), m(x, scale=0.5), m(x, 2)

class ClsFlag(nn.Module):
    use_relu = True
    def forward(self, x):
        return x.relu() if self.use_relu else x.neg()
_CF = ClsFlag()
@probe(x, reset=lambda: setattr(ClsFlag, "use_relu", True), between=lambda: setattr(ClsFlag, "use_relu", False), args2=(x,))
def guard_module_class_bool_flag_changed(x):
    return _CF(x)

class ClsShadow(nn.Module):
    scale = 2.0
    def forward(self, x):
        return x * self.scale
_CSH = {"m": None}
@probe(x, reset=lambda: _CSH.__setitem__("m", ClsShadow()), between=lambda: setattr(_CSH["m"], "scale", 9.0), args2=(x,))
def guard_module_instance_attr_shadows_class_attr(x):
    return _CSH["m"](x)

class ClsHelper(nn.Module):
    def helper(self, x):
        return x + 1
    def forward(self, x):
        return self.helper(x)
_CH = ClsHelper()
_orig_helper = ClsHelper.helper
@probe(x, reset=lambda: setattr(ClsHelper, "helper", _orig_helper), between=lambda: setattr(ClsHelper, "helper", lambda self, x: x + 100), args2=(x,))
def guard_module_class_method_monkeypatched(x):
    return _CH(x)

# =========================== batch 2: global module hooks (kept last: they are process-wide)
_ghook = {"h": None, "log": []}
def _ghook_reset():
    if _ghook["h"] is not None:
        _ghook["h"].remove()
    _ghook["log"].clear()
    _ghook["h"] = nn.modules.module.register_module_forward_hook(
        lambda mod, a, o: _ghook["log"].append(type(mod).__name__))
def _ghook_state():
    _ghook["h"].remove(); _ghook["h"] = None
    return list(_ghook["log"])

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), x, reset=_ghook_reset, state=_ghook_state)
def global_module_forward_hook_logs(m, x):
    return m(x)
