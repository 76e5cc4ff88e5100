# test/dynamo-suite style probes, round 2: autograd.Function ctx features with gradients checked,
# tensor hooks / retain_grad, nn.Module API inside forward, grad-mode / autocast / ContextDecorator /
# ExitStack, exceptions across calls, builtin and container corners, math/operator on sizes, torch
# functions with out=/dtype=, Size and new_*/*_like, distributions, F corners, views, complex,
# integer division, seeded RNG, decorators and class machinery, itertools, dataclasses, enums, ABCs
import torch, torch.nn as nn, torch.nn.functional as F, collections, functools, itertools, operator
import contextlib, dataclasses, enum, math, typing, abc, copy, weakref, types
import collections.abc as cabc
from torch.autograd.function import once_differentiable
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(13)
y = torch.randn(4, 3)
yr = torch.randn(4, 3, requires_grad=True)
v6 = torch.randn(6)
img = torch.randn(1, 2, 4, 4)
seq = torch.randn(2, 5, 3)

_STASH = {}
def _grads():
    """gradients of sum(stash o) w.r.t. stash i (a list), plus .grad of anything in stash r"""
    o, ins = _STASH["o"], _STASH["i"]
    g = torch.autograd.grad(o.sum(), ins, allow_unused=True)
    return [None if t is None else t.clone() for t in g]
def _backward_state():
    """calls .backward() on stash o and returns stash r tensors' .grad (retain_grad / hooks)"""
    _STASH["o"].sum().backward()
    return [t.grad for t in _STASH["r"]], list(_STASH.get("log", []))
_sclear = lambda: _STASH.clear()

# =========================== autograd.Function: ctx features, gradients checked
class MulConst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, k):
        ctx.k = k
        return t * k
    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None

@probe(xr, reset=_sclear, state=_grads)
def afn_nontensor_arg_grad(x):
    o = MulConst.apply(x, 3.0)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class SaveTwo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a

@probe(xr, yr, reset=_sclear, state=_grads)
def afn_save_two_inputs_grad(a, b):
    o = SaveTwo.apply(a, b)
    _STASH["o"], _STASH["i"] = o, [a, b]
    return o

class SaveOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        r = t.exp()
        ctx.save_for_backward(r)
        return r
    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r

@probe(xr, reset=_sclear, state=_grads)
def afn_save_output_grad(x):
    o = SaveOutput.apply(x * 0.1)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class OnceDiff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t.clamp(min=0)
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * (t > 0).to(g.dtype)

@probe(xr, reset=_sclear, state=_grads)
def afn_once_differentiable_grad(x):
    o = OnceDiff.apply(x)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class NeedsGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a + 2 * b
    @staticmethod
    def backward(ctx, g):
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = g
        if ctx.needs_input_grad[1]:
            gb = 2 * g
        return ga, gb

@probe(xr, y, reset=_sclear, state=_grads)
def afn_needs_input_grad_one_side(a, b):
    o = NeedsGrad.apply(a, b)
    _STASH["o"], _STASH["i"] = o, [a]
    return o, o.requires_grad

class NonDiffIdx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        v, i = t.sort(-1)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        return v, i
    @staticmethod
    def backward(ctx, gv, gi):
        (i,) = ctx.saved_tensors
        return torch.zeros_like(gv).scatter(-1, i, gv)

@probe(xr, reset=_sclear, state=_grads)
def afn_mark_non_differentiable_sort_grad(x):
    v, i = NonDiffIdx.apply(x)
    o = v * torch.arange(3.0)
    _STASH["o"], _STASH["i"] = o, [x]
    return v, i, i.requires_grad, v.requires_grad

class MatNone(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.set_materialize_grads(False)
        return t * 2, t * 3
    @staticmethod
    def backward(ctx, g1, g2):
        r = 0
        if g1 is not None:
            r = r + 2 * g1
        if g2 is not None:
            r = r + 3 * g2
        return r

@probe(xr, reset=_sclear, state=_grads)
def afn_set_materialize_grads_false(x):
    a, b = MatNone.apply(x)
    _STASH["o"], _STASH["i"] = a, [x]
    return a, b

class SetupCtx(torch.autograd.Function):
    @staticmethod
    def forward(t, scale):
        return t.sin() * scale
    @staticmethod
    def setup_context(ctx, inputs, output):
        t, scale = inputs
        ctx.scale = scale
        ctx.save_for_backward(t)
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * t.cos() * ctx.scale, None

@probe(xr, reset=_sclear, state=_grads)
def afn_setup_context_nontensor_grad(x):
    o = SetupCtx.apply(x, 2.5)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t.view_as(t)
    @staticmethod
    def backward(ctx, g):
        return g * 10

@probe(xr, reset=_sclear, state=_grads)
def afn_identity_scales_grad_chain(x):
    o = ScaleGrad.apply(x * 2).sum(0)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

@probe(xr, reset=_sclear, state=_grads)
def afn_applied_twice_in_chain(x):
    o = ScaleGrad.apply(ScaleGrad.apply(x).cos())
    _STASH["o"], _STASH["i"] = o, [x]
    return o

@probe(xr)
def afn_under_no_grad(x):
    with torch.no_grad():
        o = SaveOutput.apply(x * 0.1)
    return o.requires_grad, o

class AfnModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3) * 0.5)
    def forward(self, x):
        return SaveTwo.apply(x, self.w.expand(4, 3))

@probe(AfnModule(), xr, reset=_sclear, state=_grads)
def afn_inside_module_with_param(m, x):
    o = m(x)
    _STASH["o"], _STASH["i"] = o, [x, m.w]
    return o

class BaseFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t * 4
    @staticmethod
    def backward(ctx, g):
        return g * 4

class DerivedFn(BaseFn):
    pass

@probe(xr, reset=_sclear, state=_grads)
def afn_inherited_subclass(x):
    o = DerivedFn.apply(x)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class TupleOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.n = t.shape[0]
        return t.sum(0), t.mean(0)
    @staticmethod
    def backward(ctx, gs, gm):
        return gs.expand(ctx.n, -1) + gm.expand(ctx.n, -1) / ctx.n

@probe(xr, reset=_sclear, state=_grads)
def afn_tuple_out_shape_in_ctx(x):
    s, m = TupleOut.apply(x)
    o = s + m
    _STASH["o"], _STASH["i"] = o, [x]
    return s, m

class IntArgFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, dim, keep):
        ctx.dim, ctx.keep, ctx.shape = dim, keep, t.shape
        return t.sum(dim, keepdim=keep)
    @staticmethod
    def backward(ctx, g):
        if not ctx.keep:
            g = g.unsqueeze(ctx.dim)
        return g.expand(ctx.shape), None, None

@probe(xr, reset=_sclear, state=_grads)
def afn_int_bool_args(x):
    o = IntArgFn.apply(x, 1, False)
    _STASH["o"], _STASH["i"] = o, [x]
    return o, IntArgFn.apply(x, 0, True)

class NoGradInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, mask):
        ctx.save_for_backward(mask)
        return t * mask
    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask, None

@probe(xr, reset=_sclear, state=_grads)
def afn_tensor_nondiff_second_input(x):
    mask = (torch.arange(3) % 2).float()
    o = NoGradInput.apply(x, mask)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

class ForwardNoGradInside(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t.detach() * 2 + 1, torch.is_grad_enabled()
    @staticmethod
    def backward(ctx, g, _):
        return g * 2

@probe(xr)
def afn_grad_mode_inside_forward(x):
    o, ge = ForwardNoGradInside.apply(x)
    return o, ge, o.requires_grad

class StaticHelperFn(torch.autograd.Function):
    @staticmethod
    def _f(t):
        return t.tanh()
    @staticmethod
    def forward(ctx, t):
        r = StaticHelperFn._f(t)
        ctx.save_for_backward(r)
        return r
    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * (1 - r * r)

@probe(xr, reset=_sclear, state=_grads)
def afn_static_helper_inside_forward(x):
    o = StaticHelperFn.apply(x)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

@probe(xr, reset=_sclear, state=_grads)
def afn_apply_via_alias_and_closure(x):
    f = SaveOutput.apply
    g = lambda t: f(t * 0.5)
    o = g(x) + g(x * 2)
    _STASH["o"], _STASH["i"] = o, [x]
    return o

# =========================== tensor hooks and retain_grad
@probe(xr, reset=_sclear, state=_backward_state)
def hook_two_hooks_order(x):
    h = x + 1
    h.register_hook(lambda g: g * 2)
    h.register_hook(lambda g: g + 1)
    o = h * h
    _STASH["o"], _STASH["r"] = o, [x]
    return o

def _hook_scale(k, g):
    return g * k

@probe(xr, reset=_sclear, state=_backward_state)
def hook_functools_partial(x):
    h = x.exp()
    h.register_hook(functools.partial(_hook_scale, 0.5))
    o = h.sum(1)
    _STASH["o"], _STASH["r"] = o, [x]
    return o

@probe(xr, reset=_sclear, state=_backward_state)
def hook_closure_over_tensor(x):
    w = torch.linspace(0, 1, 3)
    h = x * 2
    h.register_hook(lambda g: g * w)
    o = h.cos()
    _STASH["o"], _STASH["r"] = o, [x]
    return o

class HookHolder:
    def __init__(self):
        self.k = 3.0
    def hook(self, g):
        return g * self.k

_hh = HookHolder()
@probe(xr, reset=_sclear, state=_backward_state)
def hook_bound_method_of_global_object(x):
    h = x * 1.5
    h.register_hook(_hh.hook)
    o = h.tanh()
    _STASH["o"], _STASH["r"] = o, [x]
    return o

@probe(nn.Linear(3, 2), x, reset=_sclear, state=_backward_state)
def hook_on_module_param(m, x):
    m.weight.register_hook(lambda g: g * 0)
    o = m(x)
    _STASH["o"], _STASH["r"] = o, [m.weight, m.bias]
    return o

# =========================== nn.Module API inside forward
class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Sequential(nn.ReLU(), nn.Linear(3, 3), nn.Tanh())
        self.c = nn.ModuleDict({"p": nn.Linear(3, 3), "q": nn.Identity()})
        self.register_buffer("scale", torch.tensor(2.0))
        self.register_buffer("tmp", torch.ones(1), persistent=False)
    def forward(self, x):
        return self.c["p"](self.b(self.a(x))) * self.scale

@probe(Tree(), x)
def mod_named_modules_prefix_names(m, x):
    names = [n for n, _ in m.named_modules(prefix="root")]
    return names, m(x)

@probe(Tree(), x)
def mod_modules_filter_linear_apply(m, x):
    out = x
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            out = mod(out)
    return out

@probe(Tree(), x)
def mod_named_parameters_sum_numel(m, x):
    n = sum(p.numel() for p in m.parameters())
    names = [k for k, p in m.named_parameters() if k.endswith("bias")]
    return n, names, x * n

@probe(Tree(), x)
def mod_named_parameters_recurse_false(m, x):
    return [k for k, _ in m.named_parameters(recurse=False)], [k for k, _ in m.c.named_parameters(prefix="c")], x

@probe(Tree(), x)
def mod_get_submodule_dotted(m, x):
    lin = m.get_submodule("b.1")
    p = m.get_submodule("c.p")
    return p(lin(x))

@probe(Tree(), x)
def mod_get_parameter_and_buffer(m, x):
    w = m.get_parameter("b.1.weight")
    s = m.get_buffer("scale")
    return x @ w.T * s

@probe(Tree(), x)
def mod_named_buffers_persistent(m, x):
    return [n for n, _ in m.named_buffers()], sorted(m.state_dict().keys()), x * m.tmp

@probe(Tree(), x)
def mod_state_dict_inside_forward_values(m, x):
    sd = m.state_dict()
    return x @ sd["a.weight"].T + sd["a.bias"] * sd["scale"]

@probe(Tree(), x)
def mod_children_types(m, x):
    return [type(c).__name__ for c in m.children()], x

@probe(Tree(), x)
def mod_named_children_dict(m, x):
    d = dict(m.named_children())
    return d["a"](x) + d["c"]["q"](x)

@probe(Tree(), x)
def mod_apply_fn_collects(m, x):
    names = []
    m.apply(lambda mod: names.append(type(mod).__name__))
    return names, x

@probe(Tree(), x)
def mod_apply_init_constant(m, x):
    def init(mod):
        if isinstance(mod, nn.Linear):
            with torch.no_grad():
                mod.weight.fill_(0.1)
                mod.bias.zero_()
    m.apply(init)
    return m(x)

@probe(Tree(), x)
def mod_train_eval_flags_inside(m, x):
    m.eval()
    a = [mm.training for mm in m.modules()]
    m.train()
    b = m.b.training
    return a, b, x

@probe(Tree(), x)
def mod_dunder_modules_and_parameters_dicts(m, x):
    return list(m._modules.keys()), list(m.a._parameters.keys()), list(m._buffers.keys()), x

@probe(Tree(), x)
def mod_hasattr_submodule_and_missing(m, x):
    return hasattr(m, "a"), hasattr(m, "zz"), hasattr(m, "scale"), getattr(m, "zz", None), x

@probe(Tree(), x)
def mod_class_forward_called_unbound(m, x):
    return Tree.forward(m, x), type(m).forward(m, x)

@probe(Tree(), x)
def mod_forward_direct_vs_call(m, x):
    return m.a.forward(x) - m.a(x)

@probe(Tree(), x)
def mod_zero_grad_then_grad_none(m, x):
    m.zero_grad()
    return [p.grad is None for p in m.parameters()], x

@probe(Tree(), x)
def mod_buffer_assign_new_tensor(m, x):
    m.scale = m.scale * 3
    return m(x), m.scale

class RegInside(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        if not hasattr(self, "cnt"):
            self.register_buffer("cnt", torch.zeros(()))
        self.cnt += 1
        return self.lin(x) + self.cnt

@probe(RegInside(), x)
def mod_register_buffer_lazily_in_forward(m, x):
    return m(x), m(x)

@probe(nn.Linear(3, 3), x)
def mod_extra_repr_and_repr(m, x):
    return m.extra_repr(), m.in_features * m.out_features, x

class GetattrMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)
    def forward(self, x):
        return x @ self.weight.T + self.bias

@probe(GetattrMod(), x)
def mod_getattr_forward_to_inner(m, x):
    return m(x), m.out_features

class SetattrMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.log = []
    def forward(self, x):
        self.last_shape = tuple(x.shape)
        self.log.append(x.shape[0])
        return self.lin(x)

@probe(SetattrMod(), x)
def mod_setattr_plain_python_attrs(m, x):
    o = m(x)
    return o, m.last_shape, m.log

@probe(nn.ModuleList([nn.Linear(3, 3) for _ in range(3)]), x)
def mod_modulelist_index_negative_and_len(ml, x):
    return ml[-1](ml[0](x)), len(ml), ml[1:][0](x)

@probe(nn.Sequential(collections.OrderedDict(first=nn.Linear(3, 4), act=nn.GELU(), last=nn.Linear(4, 2))), x)
def mod_sequential_ordereddict_names(m, x):
    return m.first(x).shape, m.last(m.act(m.first(x))), list(m._modules)

class Counted(nn.Module):
    calls = 0
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        type(self).calls += 1
        return self.lin(x) * type(self).calls

def _counted_reset():
    Counted.calls = 0
@probe(Counted(), x, reset=_counted_reset, state=lambda: Counted.calls)
def mod_class_level_counter_in_forward(m, x):
    return m(x), m(x)

class PropMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 3))
    @property
    def w_norm(self):
        return self.w / self.w.norm(dim=0, keepdim=True)
    @property
    def dim(self):
        return self.w.shape[0]
    def forward(self, x):
        return x @ self.w_norm * self.dim

@probe(PropMod(), x)
def mod_property_calling_torch_ops(m, x):
    return m(x)

@probe(nn.Linear(3, 3), x)
def mod_weakref_to_module(m, x):
    r = weakref.ref(m)
    return r()(x), r() is m

@probe(Tree(), x)
def mod_modules_remove_duplicate_shared(m, x):
    m.shared = m.a
    n1 = len(list(m.modules()))
    n2 = len(list(m.named_modules(remove_duplicate=False)))
    return n1, n2, m(x)

@probe(Tree(), x)
def mod_parameters_list_index_and_stack(m, x):
    ps = list(m.parameters())
    return ps[0].shape, torch.stack([p.sum() for p in ps]).sum() + x

class AbstractBlock(nn.Module, abc.ABC):
    @abc.abstractmethod
    def transform(self, x): ...
    def forward(self, x):
        return self.transform(x) + 1

class ConcreteBlock(AbstractBlock):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
    def transform(self, x):
        return self.lin(x)

@probe(ConcreteBlock(), x)
def mod_abc_abstract_base_module(m, x):
    return m(x), isinstance(m, AbstractBlock)

class A1(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
    def forward(self, x):
        return self.a(x) + 1

class B1(nn.Module):
    def forward(self, x):
        return super().forward(x) * 2

class AB(B1, A1):
    pass

@probe(AB(), x)
def mod_multiple_inheritance_super_forward(m, x):
    return m(x)

class MixLog:
    def log_shape(self, x):
        self.seen = x.shape
        return x

class MixMod(MixLog, nn.Linear):
    def forward(self, x):
        return super().forward(self.log_shape(x))

@probe(MixMod(3, 2), x)
def mod_mixin_before_linear_super(m, x):
    return m(x), m.seen

# =========================== grad mode / autocast / context managers
@probe(xr)
def cm_nested_grad_modes(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 2
            with torch.set_grad_enabled(False):
                c = x * 2
        d = x * 2
    return a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, b

@probe(xr)
def cm_set_grad_enabled_function_form_restored(x):
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    a = x * 2
    torch.set_grad_enabled(prev)
    b = x * 2
    return a.requires_grad, b.requires_grad

@probe(xr)
def cm_inference_mode_false_inside(x):
    with torch.inference_mode(False):
        a = x * 2
    return a, a.requires_grad

@probe(x)
def cm_autocast_bf16_matmul_dtype(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = x @ x.T
        with torch.autocast("cpu", enabled=False):
            b = x @ x.T
    return a.dtype, b.dtype, b

@probe(x)
def cm_autocast_decorator_function(x):
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def f(t):
        return torch.mm(t, t.T)
    r = f(x)
    return r.dtype, r.float().shape

class Tracker(contextlib.ContextDecorator):
    def __init__(self, log):
        self.log = log
    def __enter__(self):
        self.log.append("in")
        return self
    def __exit__(self, *exc):
        self.log.append("out")
        return False

@probe(x)
def cm_contextdecorator_class_as_decorator(x):
    log = []
    @Tracker(log)
    def f(t):
        log.append("body")
        return t * 2
    return f(x), log

@probe(x)
def cm_exitstack_callbacks_lifo(x):
    log = []
    with contextlib.ExitStack() as st:
        st.callback(log.append, 1)
        st.callback(log.append, 2)
        y = x + 1
    return y, log

@probe(x)
def cm_suppress_keyerror_then_continue(x):
    d = {"a": 1}
    with contextlib.suppress(KeyError):
        v = d["b"]
    with contextlib.suppress(IndexError, KeyError):
        [][3]
    return x + len(d)

@probe(x)
def cm_nullcontext_enter_result(x):
    with contextlib.nullcontext(x * 2) as t:
        r = t + 1
    return r

@contextlib.contextmanager
def _scaled(log, k):
    log.append(("enter", k))
    try:
        yield k * 2
    finally:
        log.append(("exit", k))

@probe(x)
def cm_generator_cm_with_args_nested(x):
    log = []
    with _scaled(log, 1) as a, _scaled(log, 2) as b:
        r = x * a + b
    return r, log

@probe(x)
def cm_generator_cm_in_loop(x):
    log = []
    r = x
    for k in range(3):
        with _scaled(log, k) as s:
            r = r + s
    return r, log

class GradOff:
    def __enter__(self):
        self.prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
    def __exit__(self, *a):
        torch.set_grad_enabled(self.prev)

@probe(xr)
def cm_user_class_toggling_grad(x):
    with GradOff():
        a = x * 2
    b = x * 2
    return a.requires_grad, b.requires_grad

class NGHelper:
    @torch.no_grad()
    def run(self, t):
        return t * 2

@probe(xr)
def cm_no_grad_on_method(x):
    return NGHelper().run(x).requires_grad, (x * 2).requires_grad

@probe(xr)
def cm_enable_grad_class_decorator_on_function(x):
    @torch.enable_grad()
    def f(t):
        return t * 3
    with torch.no_grad():
        r = f(x)
    return r.requires_grad, r

@probe(x)
def cm_exception_inside_no_grad_restores(x):
    xx = x.clone().requires_grad_(True)
    try:
        with torch.no_grad():
            raise ValueError("boom")
    except ValueError:
        pass
    return (xx * 2).requires_grad, torch.is_grad_enabled()

@probe(x)
def cm_contextmanager_yield_inside_no_grad(x):
    @contextlib.contextmanager
    def ng():
        with torch.no_grad():
            yield
    xx = x.clone().requires_grad_(True)
    with ng():
        a = xx * 2
    return a.requires_grad, (xx * 2).requires_grad

# =========================== exceptions
class AppError(Exception):
    def __init__(self, code, msg="app"):
        self.code = code
        self.msg = msg

class SubAppError(AppError):
    pass

def _raiser(k):
    if k > 1:
        raise SubAppError(k, "deep")
    return k

def _mid(k):
    try:
        return _raiser(k)
    finally:
        pass

@probe(x)
def exc_nested_call_custom_code(x):
    try:
        _mid(3)
    except AppError as e:
        return x * e.code, e.msg, type(e).__name__
    return x

@probe(x)
def exc_chain_cause_inspect(x):
    try:
        try:
            raise KeyError("k")
        except KeyError as e:
            raise ValueError("v") from e
    except ValueError as e:
        return x + 1, type(e.__cause__).__name__, e.__suppress_context__

@probe(x)
def exc_context_implicit_inspect(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            raise RuntimeError("r")
    except RuntimeError as e:
        return x, type(e.__context__).__name__, e.__cause__ is None

@probe(x)
def exc_finally_counter_in_loop(x):
    n = 0
    for i in range(4):
        try:
            if i % 2:
                raise ValueError
            x = x + i
        except ValueError:
            x = x * 2
        finally:
            n += 1
    return x, n

@probe(x)
def exc_raise_in_except_of_inner_caught_outer(x):
    log = []
    try:
        try:
            raise TypeError("a")
        except TypeError:
            log.append("inner")
            raise IndexError("b")
        finally:
            log.append("fin")
    except IndexError as e:
        log.append(str(e))
    return x, log

@probe(x)
def exc_stopiteration_from_next_on_generator(x):
    g = (i for i in range(2))
    out = []
    while True:
        try:
            out.append(next(g))
        except StopIteration:
            break
    return x * sum(out), out

@probe(x)
def exc_args_tuple_and_repr(x):
    try:
        raise ValueError("a", 2)
    except ValueError as e:
        return e.args, x * e.args[1], repr(e)

@probe(x)
def exc_isinstance_tuple_dispatch(x):
    outs = []
    for exc in (KeyError("a"), IndexError(1), ValueError()):
        try:
            raise exc
        except (KeyError, IndexError) as e:
            outs.append(("lookup", isinstance(e, LookupError)))
        except Exception as e:
            outs.append(("other", type(e).__name__))
    return outs, x

@probe(x)
def exc_unpack_valueerror_caught(x):
    try:
        a, b = [1, 2, 3]
    except ValueError:
        a, b = 0, 0
    return x + a + b

@probe(x)
def exc_keyerror_message(x):
    try:
        {}["missing"]
    except KeyError as e:
        return x, e.args[0]

@probe(x)
def exc_raise_in_contextmanager_exit_path(x):
    log = []
    @contextlib.contextmanager
    def cm():
        try:
            yield
        except ValueError:
            log.append("handled")
    with cm():
        raise ValueError
    return x, log

@probe(x)
def exc_finally_runs_on_break_in_nested_loop(x):
    log = []
    for i in range(3):
        for j in range(3):
            try:
                if j == 1:
                    break
                log.append((i, j))
            finally:
                log.append("f")
    return x * len(log), log

@probe(x)
def exc_return_value_from_except_in_helper(x):
    def safe_div(a, b):
        try:
            return a / b
        except ZeroDivisionError:
            return 0.0
    return x * safe_div(1, 0) + safe_div(6, 3)

@probe(x)
def exc_else_branch_with_tensor(x):
    try:
        r = x * 2
    except RuntimeError:
        r = x
    else:
        r = r + 1
    finally:
        r = r - 0.5
    return r

@probe(x)
def exc_assertion_with_shape_message(x):
    try:
        assert x.shape[0] == 5, f"bad rows {x.shape[0]}"
    except AssertionError as e:
        return x, str(e)

class NIBase:
    def f(self, t):
        raise NotImplementedError("abstract")
class NIImpl(NIBase):
    def f(self, t):
        return t * 2

@probe(x)
def exc_notimplemented_from_method_default(x):
    Base, Impl = NIBase, NIImpl
    try:
        Base().f(x)
        r = None
    except NotImplementedError as e:
        r = str(e)
    return r, Impl().f(x)

class EmptyO:
    pass

@probe(x)
def exc_attributeerror_on_getattr_user_obj(x):
    o = EmptyO()
    try:
        o.missing
    except AttributeError:
        o.missing = 3
    return x * o.missing

# =========================== builtins / containers corners
@probe(x)
def bi_dict_fromkeys_value_and_update(x):
    d = dict.fromkeys(["a", "b", "c"], 0)
    d.update(a=1)
    d |= {"d": 4}
    return x + sum(d.values()), list(d)

@probe(x)
def bi_dict_setdefault_returns_existing(x):
    d = {"a": x}
    r1 = d.setdefault("a", x * 0)
    r2 = d.setdefault("b", x * 2)
    return r1 is d["a"], r2, len(d)

@probe(x)
def bi_dict_popitem_until_empty(x):
    d = {i: x * i for i in range(3)}
    out = []
    while d:
        k, v = d.popitem()
        out.append(k)
    return out, v

@probe(x)
def bi_dict_or_creates_new(x):
    a = {"p": 1}
    b = {"q": 2, "p": 3}
    c = a | b
    return c, a, x * c["p"]

@probe(x)
def bi_sorted_key_reverse_stable(x):
    items = [("a", 3), ("b", 1), ("c", 3), ("d", 2)]
    s = sorted(items, key=lambda t: t[1], reverse=True)
    return s, x * s[0][1]

@probe(x)
def bi_reversed_dict_and_list(x):
    d = {"a": 1, "b": 2, "c": 3}
    return list(reversed(d)), list(reversed(list(d.values()))), x

@probe(x)
def bi_min_max_key_default(x):
    l = [x, x * 2, x - 1]
    a = max(range(3), key=lambda i: (i - 1) ** 2 + i)
    b = min([], default=None)
    c = max(3, 7, 5)
    d = min(["bb", "a", "ccc"], key=len)
    return l[a], b, c, d

@probe(x)
def bi_sum_of_tensors_with_start(x):
    return sum([x, x * 2, x * 3], torch.ones(4, 3)), sum((x.shape[0], x.shape[1]), 10)

@probe(x)
def bi_zip_strict_equal(x):
    out = []
    for a, b in zip(x.unbind(0), range(4), strict=True):
        out.append(a * b)
    return torch.stack(out)

@probe(x)
def bi_enumerate_start(x):
    return [(i, r.sum()) for i, r in enumerate(x, start=10)][-1]

@probe(x)
def bi_map_three_iterables(x):
    return list(map(lambda a, b, c: a * b + c, x.unbind(0), [1, 2, 3, 4], [0.5] * 4))

@probe(x)
def bi_filter_none_values(x):
    l = [0, 1, None, 2, "", 3]
    return list(filter(None, l)), x * len(list(filter(None, l)))

@probe(x)
def bi_any_all_on_generator_of_tensor_bools(x):
    return any(d > 3 for d in x.shape), all(isinstance(t, torch.Tensor) for t in [x, x]), x

@probe(x)
def bi_divmod_and_round_ndigits(x):
    q, r = divmod(17, 5)
    return q, r, round(3.14159, 2), round(2.5), round(-0.5), x * q

@probe(x)
def bi_list_index_with_start_and_count(x):
    l = [1, 2, 1, 3, 1]
    return l.index(1, 1), l.count(1), x * l.index(3)

@probe(x)
def bi_slice_assignment_grow_shrink(x):
    l = list(range(6))
    l[1:3] = [10, 11, 12]
    l[::2] = [0] * len(l[::2])
    del l[-2:]
    return l, x * len(l)

@probe(x)
def bi_tuple_comparison_and_sort(x):
    ts = [(2, "b"), (1, "z"), (2, "a")]
    return sorted(ts), (1, 2) < (1, 3), max(ts), x

@probe(x)
def bi_set_ops_on_shapes(x):
    a = set(x.shape)
    b = {3, 5}
    return a & b, a | b, a - b, a ^ b, x * len(a | b)

@probe(x)
def bi_frozenset_as_dict_key(x):
    d = {frozenset({1, 2}): "a"}
    return d[frozenset({2, 1})], x

@probe(x)
def bi_isinstance_abc_mapping_sequence(x):
    items = [{"a": 1}, [1], (1,), "s", x, collections.OrderedDict()]
    return [(isinstance(i, cabc.Mapping), isinstance(i, cabc.Sequence)) for i in items], x

@probe(x)
def bi_isinstance_tuple_of_abcs(x):
    def norm(v):
        if isinstance(v, (cabc.Mapping,)):
            return sum(v.values())
        if isinstance(v, (list, tuple, cabc.Set)):
            return sum(v)
        return v
    return x * norm({"a": 1, "b": 2}) + norm([1, 2]) + norm({3}) + norm(4)

@probe(x)
def bi_callable_and_iterable_checks(x):
    return callable(len), callable(x), isinstance(x, cabc.Iterable), isinstance(3, cabc.Iterable), x

@probe(x)
def bi_int_float_str_conversions(x):
    return int("12") + int(3.9) + int(-3.9), float("1.5"), str(3) + str(1.5), bool(0), x * int("2")

@probe(x)
def bi_chr_ord_roundtrip(x):
    s = "".join(chr(ord(c) + 1) for c in "abc")
    return s, x * ord("a")

@probe(x)
def bi_list_comprehension_nested_flatten(x):
    nested = [[1, 2], [3], [], [4, 5]]
    flat = [v for sub in nested for v in sub]
    return flat, x * sum(flat)

@probe(x)
def bi_dict_comprehension_from_zip_enumerate(x):
    d = {k: i for i, k in enumerate("xyz")}
    inv = {v: k for k, v in d.items()}
    return d, inv, x + d["z"]

@probe(x)
def bi_iter_with_sentinel_like_loop(x):
    it = iter([1, 2, 3, 0, 5])
    out = []
    for v in it:
        if v == 0:
            break
        out.append(v)
    return out, list(it), x

@probe(x)
def bi_pow_three_arg_and_abs_neg(x):
    return pow(3, 4, 5), abs(-7), pow(2, -1), x * pow(2, 3)

@probe(x)
def bi_hash_of_tuple_consistent(x):
    return hash((1, 2)) == hash((1, 2)), x

@probe(x)
def bi_sorted_dict_by_value_then_key(x):
    d = {"b": 2, "a": 2, "c": 1}
    return sorted(d, key=lambda k: (d[k], k)), x

@probe(x)
def bi_deque_appendleft_extendleft(x):
    d = collections.deque([1, 2])
    d.appendleft(0)
    d.appendleft(-1)
    return list(d), x * d[0]

Pt = collections.namedtuple("Pt", "a b c")

@probe(x)
def bi_namedtuple_replace_asdict_make(x):
    p = Pt(1, 2, 3)
    q = p._replace(b=20)
    return q, q._asdict(), Pt._make([4, 5, 6]), Pt._fields, x * q.b

class NT(typing.NamedTuple):
    t: torch.Tensor
    k: int = 2

@probe(x)
def bi_typing_namedtuple_replace_tensor(x):
    n = NT(x)
    m = n._replace(t=n.t * n.k)
    return m.t, m.k, m._asdict()["k"], n

@probe(x)
def bi_typing_cast_and_optional(x):
    def f(v: typing.Optional[torch.Tensor]) -> torch.Tensor:
        if v is None:
            return x
        return typing.cast(torch.Tensor, v) * 2
    return f(None), f(x)

# =========================== strings
@probe(x)
def str_param_names_startswith_split(x):
    names = ["layer.0.weight", "layer.0.bias", "head.weight"]
    w = [n for n in names if n.endswith("weight")]
    parts = [n.split(".") for n in names if n.startswith("layer")]
    return w, parts, x * len(w)

@probe(x)
def str_format_with_shape_and_dtype(x):
    s = "{}x{} {}".format(*x.shape, str(x.dtype).split(".")[-1])
    return s, x

@probe(x)
def str_join_of_int_shapes(x):
    return "-".join(str(d) for d in x.shape), ",".join(map(str, [1, 2])), x

@probe(x)
def str_rsplit_and_partition_keys(x):
    k = "encoder.layers.3.attn.q_proj"
    head, _, tail = k.rpartition(".")
    return head, tail, k.rsplit(".", 2), int(k.split(".")[2]) * x

@probe(x)
def str_fstring_float_precision(x):
    v = 3.14159
    return f"{v:.2f}|{v:>8.3f}|{10:04d}|{255:x}", x

@probe(x)
def str_replace_upper_title(x):
    s = "hello_world"
    return s.replace("_", " ").title(), s.upper(), s.capitalize(), x

@probe(x)
def str_dict_key_from_fstring_loop(x):
    d = {}
    for i in range(3):
        d[f"layer_{i}"] = x * i
    return d["layer_2"], sorted(d)

@probe(x)
def str_in_and_find(x):
    s = "conv_bn_relu"
    return "bn" in s, s.find("relu"), s.find("zz"), s.count("_"), x

@probe(x)
def str_strip_lstrip_rstrip(x):
    s = "  __name__  "
    return s.strip(), s.strip().strip("_"), s.lstrip(), s.rstrip(), x

@probe(x)
def str_isidentifier_isnumeric(x):
    return "abc".isidentifier(), "3a".isidentifier(), "123".isnumeric(), "a1".isalnum(), x

# =========================== math / operator on sizes
@probe(x)
def math_prod_ceil_floor_on_shape(x):
    n = math.prod(x.shape)
    return n, math.ceil(x.shape[0] / 3), math.floor(x.shape[1] / 2), x.reshape(n)

@probe(x)
def math_gcd_lcm_isqrt(x):
    return math.gcd(x.shape[0], 6), math.lcm(x.shape[0], x.shape[1]), math.isqrt(17), x

@probe(x)
def math_log2_sqrt_on_dim(x):
    d = x.shape[-1]
    return math.log2(x.shape[0]), 1 / math.sqrt(d), x / math.sqrt(d)

@probe(x)
def math_comb_factorial_perm(x):
    return math.comb(5, 2), math.factorial(4), math.perm(4, 2), x * math.comb(4, 2)

@probe(x)
def math_copysign_fabs_fmod(x):
    return math.copysign(2.0, -1.0), math.fabs(-3), math.fmod(-7, 3), x * math.fabs(-2)

@probe(x)
def math_isclose_isfinite_inf(x):
    return math.isclose(0.1 + 0.2, 0.3), math.isfinite(math.inf), math.isnan(math.nan), x

@probe(x)
def math_trig_constants(x):
    return math.sin(math.pi / 2), math.cos(0), math.atan2(1, 1), math.degrees(math.pi), x * math.e

@probe(x)
def operator_funcs_on_sizes(x):
    n, m = x.shape
    return operator.mul(n, m), operator.floordiv(n, 3), operator.mod(n, 3), operator.neg(m), operator.truediv(n, 2)

@probe(x)
def operator_reduce_mul_over_shape(x):
    return functools.reduce(operator.mul, x.shape, 1), functools.reduce(operator.add, x.shape)

@probe(x)
def operator_itemgetter_on_shape(x):
    g = operator.itemgetter(1, 0)
    return g(x.shape), x.permute(*g(range(2)))

@probe(x)
def operator_index_and_lshift(x):
    return operator.index(3), operator.lshift(1, x.shape[0]), operator.and_(6, 3), operator.xor(5, 1), x

@probe(x)
def operator_tensor_funcs(x):
    return operator.matmul(x, x.T), operator.pow(x, 2), operator.truediv(x, 2), operator.neg(x), operator.abs(x)

@probe(x)
def operator_inplace_variants_on_tensor(x):
    t = x.clone()
    t = operator.iadd(t, 1)
    t = operator.imul(t, 2)
    return t

@probe(x)
def math_int_arith_on_numel(x):
    n = x.numel()
    return n // 5, n % 5, -n // 5, -n % 5, n ** 2, n / 4, x.view(n // 3, 3)

# =========================== torch functions with out= / dtype=
@probe(x)
def tf_sum_cumsum_dtype(x):
    i = (x * 10).int()
    return i.sum(dtype=torch.int64), torch.cumsum(i, 0, dtype=torch.float64), x.mean(dtype=torch.float64)

@probe(x)
def tf_add_out_preallocated(x):
    out = torch.empty(4, 3)
    r = torch.add(x, 1, out=out)
    return r is out, out

@probe(x)
def tf_mul_out_into_input_clone(x):
    t = x.clone()
    torch.mul(t, 2, out=t)
    return t

@probe(x)
def tf_softmax_dtype_kwarg(x):
    return torch.softmax(x, -1, dtype=torch.float64), F.log_softmax(x, dim=0, dtype=torch.float64)

@probe(x)
def tf_prod_dtype_and_keepdim(x):
    return torch.prod(x, 1, keepdim=True, dtype=torch.float64), x.prod()

@probe(x)
def tf_arange_linspace_dtypes(x):
    return torch.arange(5, dtype=torch.int32), torch.arange(0, 1, 0.25), torch.linspace(0, 1, 5, dtype=torch.float64), x

@probe(x)
def tf_full_dtype_inference(x):
    return torch.full((2,), 3), torch.full((2,), 3.0), torch.full((2,), True), torch.full((2,), 2, dtype=torch.float16), x

@probe(x)
def tf_to_copy_true(x):
    a = x.to(torch.float32, copy=True)
    b = x.to(torch.float32)
    return a is x, b is x, a

@probe(x)
def tf_bool_sum_int_dtype(x):
    m = x > 0
    return m.sum(), m.sum().dtype, m.float().mean(), m.any(), m.all(dim=1)

@probe(x)
def tf_torch_tensor_dtype_kwargs(x):
    return torch.tensor([1, 2], dtype=torch.float32), torch.tensor(3.5, dtype=torch.int64), torch.tensor([True, False]).dtype, x

@probe(x)
def tf_cat_out_kwarg(x):
    out = torch.empty(8, 3)
    torch.cat([x, x * 2], out=out)
    return out

@probe(x)
def tf_max_dim_out_namedtuple(x):
    r = torch.max(x, dim=1)
    v, i = x.min(0)
    return r.values, r.indices, v, i, torch.sort(x, dim=0, descending=True).indices

@probe(x)
def tf_where_out_of_scalar_dtypes(x):
    return torch.where(x > 0, 1, 0).dtype, torch.where(x > 0, 1.0, 0).dtype, torch.where(x > 0, x, 0.0)

@probe(x)
def tf_clamp_min_max_kwargs(x):
    return x.clamp(min=-0.5), x.clamp(max=0.5), torch.clamp(x, -0.1, 0.1), x.clamp_min(0.2)

@probe(x)
def tf_std_var_correction(x):
    return x.std(0), x.var(1, unbiased=False), torch.var_mean(x, 0), torch.std(x, correction=0)

# =========================== torch.Size / new_* / *_like
@probe(x)
def size_concat_slice_types(x):
    s = x.shape + (2,)
    t = x.shape[1:]
    return s, type(s).__name__, t, type(t).__name__, isinstance(s, tuple)

@probe(x)
def size_constructor_and_numel(x):
    s = torch.Size([2, x.shape[1]])
    return s, s.numel(), torch.zeros(s), s == (2, 3)

@probe(x)
def size_count_index_methods(x):
    s = torch.Size([3, 4, 3])
    return s.count(3), s.index(4), len(s), x

@probe(x)
def size_unpack_and_reversed(x):
    a, b = x.size()
    return a, b, tuple(reversed(x.shape)), x.size(-1), x.view(*reversed(x.shape)).shape

@probe(x)
def size_in_torch_functions(x):
    return torch.ones(x.shape[:1] + (2,)), torch.empty(x.size()).shape, x.new_zeros(x.shape[::-1])

@probe(x)
def new_methods_dtype_device_kwargs(x):
    return (x.new_full((2, 2), 7, dtype=torch.int32), x.new_ones(3, dtype=torch.bool),
            x.new_empty((0,)).shape, x.new_tensor([1, 2]).dtype, x.new_zeros(2, requires_grad=True))

@probe(x)
def like_methods_kwargs(x):
    return (torch.zeros_like(x, dtype=torch.int64), torch.ones_like(x, memory_format=torch.contiguous_format),
            torch.full_like(x, 3.0), torch.empty_like(x).shape, torch.full_like(x, 2, dtype=torch.int8))

@probe(x)
def like_of_noncontiguous_keeps_strides(x):
    t = x.T
    z = torch.zeros_like(t)
    return z.stride(), z.is_contiguous(), torch.zeros_like(t, memory_format=torch.contiguous_format).stride()

@probe(xr)
def like_requires_grad_kwarg(x):
    return torch.zeros_like(x).requires_grad, torch.ones_like(x).requires_grad, x.new_ones(2).requires_grad, (x.new_ones(2) * x[0, :2]).requires_grad

# =========================== distributions
@probe(x)
def dist_normal_log_prob_entropy(x):
    d = torch.distributions.Normal(torch.zeros(3), torch.ones(3) * 2, validate_args=False)
    return d.log_prob(x), d.entropy(), d.variance

@probe(x, reset=lambda: torch.manual_seed(0))
def dist_normal_rsample_seeded(x):
    d = torch.distributions.Normal(x, torch.ones_like(x), validate_args=False)
    return d.rsample()

@probe(x)
def dist_categorical_logits(x):
    d = torch.distributions.Categorical(logits=x, validate_args=False)
    return d.probs, d.log_prob(torch.tensor([0, 1, 2, 0])), d.entropy()

@probe(x)
def dist_bernoulli_probs(x):
    d = torch.distributions.Bernoulli(probs=torch.sigmoid(x), validate_args=False)
    return d.mean, d.log_prob((x > 0).float()), d.entropy()

@probe(x)
def dist_uniform_cdf(x):
    d = torch.distributions.Uniform(torch.tensor(-2.0), torch.tensor(2.0), validate_args=False)
    return d.cdf(x.clamp(-1.9, 1.9)), d.mean, d.stddev

@probe(x)
def dist_kl_normal_normal(x):
    p = torch.distributions.Normal(x, torch.ones_like(x), validate_args=False)
    q = torch.distributions.Normal(torch.zeros_like(x), torch.ones_like(x) * 2, validate_args=False)
    return torch.distributions.kl_divergence(p, q)

@probe(x)
def dist_independent_event_shape(x):
    d = torch.distributions.Independent(torch.distributions.Normal(x, torch.ones_like(x), validate_args=False), 1)
    return d.log_prob(x * 0.5), d.batch_shape, d.event_shape

@probe(x)
def dist_laplace_and_exponential(x):
    l = torch.distributions.Laplace(torch.zeros(3), torch.ones(3), validate_args=False)
    e = torch.distributions.Exponential(torch.ones(3) * 2, validate_args=False)
    return l.log_prob(x), e.log_prob(x.abs()), e.mean

# =========================== nn.functional corners
@probe(x)
def fn_one_hot_num_classes(x):
    i = torch.tensor([0, 2, 1, 3])
    return F.one_hot(i, 4), F.one_hot(i, num_classes=6).sum(0), F.one_hot(i, 5).dtype

@probe(img)
def fn_pad_modes(t):
    return (F.pad(t, (1, 1, 1, 1), mode="reflect"), F.pad(t, (2, 0, 0, 1), mode="replicate"),
            F.pad(t, (1, 1, 1, 1), mode="circular"), F.pad(t, (1, 2), value=-1.0))

@probe(img)
def fn_interpolate_modes(t):
    return (F.interpolate(t, scale_factor=2, mode="nearest"), F.interpolate(t, size=(6, 5), mode="bilinear", align_corners=True),
            F.interpolate(t, scale_factor=0.5, mode="bilinear", align_corners=False), F.interpolate(t, scale_factor=1.5, mode="bicubic"))

_emb_w = torch.randn(5, 3)
@probe(x)
def fn_embedding_padding_idx(x):
    w = _emb_w
    i = torch.tensor([[0, 2], [4, 0]])
    return F.embedding(i, w, padding_idx=0), F.embedding(i, w).shape

@probe(nn.Embedding(6, 3, padding_idx=1), x)
def fn_embedding_module_padding_idx_row_zero(m, x):
    i = torch.tensor([1, 2, 1])
    return m(i), m.weight[1], m.padding_idx

@probe(img)
def fn_pools_with_options(t):
    return (F.avg_pool2d(t, 3, stride=1, padding=1, count_include_pad=False), F.max_pool2d(t, 2, return_indices=True),
            F.adaptive_avg_pool2d(t, (1, 3)), F.lp_pool2d(t, 2, 2), F.adaptive_max_pool2d(t, 2))

@probe(x)
def fn_activations_params(x):
    return (F.gelu(x, approximate="tanh"), F.softplus(x, beta=2, threshold=5), F.leaky_relu(x, 0.2),
            F.elu(x, alpha=0.5), F.hardtanh(x, -0.5, 0.5), F.celu(x), F.mish(x), F.silu(x), F.glu(torch.cat([x, x], 1)))

@probe(x)
def fn_normalize_cosine_pairwise(x):
    return F.normalize(x, p=1, dim=0), F.cosine_similarity(x, y, dim=1), F.pairwise_distance(x, y, p=2.0, keepdim=True)

@probe(x)
def fn_losses_with_reduction_options(x):
    t = torch.tensor([0, 2, 1, 2])
    return (F.cross_entropy(x, t, reduction="none"), F.cross_entropy(x, t, ignore_index=2),
            F.nll_loss(F.log_softmax(x, 1), t, weight=torch.tensor([1.0, 2.0, 0.5])),
            F.smooth_l1_loss(x, y, beta=0.5), F.huber_loss(x, y, delta=0.3), F.kl_div(F.log_softmax(x, 1), F.log_softmax(y, 1), log_target=True, reduction="batchmean"))

@probe(x)
def fn_cross_entropy_prob_targets_label_smoothing(x):
    p = torch.softmax(y, 1)
    return F.cross_entropy(x, p), F.cross_entropy(x, torch.tensor([0, 1, 2, 0]), label_smoothing=0.2)

@probe(img)
def fn_unfold_fold_roundtrip(t):
    u = F.unfold(t, kernel_size=2, stride=2)
    f = F.fold(u, output_size=(4, 4), kernel_size=2, stride=2)
    return u.shape, f

@probe(img)
def fn_pixel_shuffle_unshuffle(t):
    u = F.pixel_unshuffle(t, 2)
    return u.shape, F.pixel_shuffle(u, 2)

@probe(img)
def fn_grid_sample_identity_grid(t):
    theta = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]])
    g = F.affine_grid(theta, list(t.shape), align_corners=False)
    return F.grid_sample(t, g, align_corners=False)

@probe(seq)
def fn_layer_norm_group_norm(t):
    return (F.layer_norm(t, (3,)), F.layer_norm(t, (5, 3), eps=1e-3),
            F.group_norm(t.transpose(1, 2), 1), F.instance_norm(t.transpose(1, 2)))

@probe(seq)
def fn_conv1d_padding_same_dilation(t):
    w = torch.ones(2, 5, 3) * 0.1
    return F.conv1d(t.transpose(1, 2).transpose(1, 2).permute(0, 1, 2), w, padding="same", dilation=1), F.conv1d(t, w, padding=2, dilation=2).shape

@probe(x)
def fn_dropout_p0_and_eval(x):
    return F.dropout(x, 0.0, training=True), F.dropout(x, 0.9, training=False), F.alpha_dropout(x, 0.5, training=False)

@probe(x)
def fn_linear_bilinear(x):
    w = torch.ones(2, 3) * 0.2
    bw = torch.ones(2, 3, 3) * 0.1
    return F.linear(x, w), F.linear(x, w, torch.ones(2)), F.bilinear(x, y, bw)

@probe(seq)
def fn_scaled_dot_product_attention_causal(t):
    return F.scaled_dot_product_attention(t, t, t, is_causal=True), F.scaled_dot_product_attention(t, t, t, scale=0.5)

# =========================== in-place on views / requires_grad_ / detach_
@probe(x)
def view_inplace_on_input_row(x):
    x[1].mul_(10)
    return x

@probe(x)
def view_inplace_on_input_transpose_col(x):
    x.t()[0].fill_(0)
    return x

@probe(x)
def view_inplace_narrow_and_diagonal(x):
    x.narrow(0, 1, 2).add_(1)
    x[:3].diagonal().zero_()
    return x.sum(), x

@probe(x)
def view_inplace_through_unsqueeze_view_chain(x):
    v = x.view(2, 2, 3).unsqueeze(0)
    v[0, 1] += 5
    return x

@probe(x)
def view_inplace_masked_fill_on_slice(x):
    x[:, 1:].masked_fill_(x[:, 1:] > 0, 0.0)
    return x

@probe(x)
def view_copy_into_input_slice(x):
    x[0:2].copy_(torch.ones(2, 3))
    return x

@probe(x)
def view_unbind_views_mutated(x):
    a, b, c, d = x.unbind(0)
    a.add_(1)
    d.mul_(0)
    return x

@probe(x)
def view_split_views_mutated(x):
    p, q = x.split(2)
    q.sub_(1)
    return x, p.shape

@probe(x)
def view_expand_then_clone_inplace(x):
    e = x[:1].expand(3, 3).clone()
    e.add_(1)
    return e, x

@probe(x)
def view_base_and_is_view(x):
    v = x[1:]
    return v._base is x, v.is_contiguous(), v

@probe(xr)
def rg_detach_inplace_on_intermediate(x):
    t = x * 2
    t.detach_()
    return t.requires_grad, t, (t * x).requires_grad

@probe(xr)
def rg_detach_and_clone_grad_flags(x):
    a = x.detach()
    b = x.clone()
    c = x.detach().clone().requires_grad_(True)
    return a.requires_grad, b.requires_grad, b.is_leaf, c.is_leaf, c.requires_grad

@probe(xr)
def rg_data_assign_no_grad(x):
    t = x * 1
    with torch.no_grad():
        t2 = t.add(1)
    return t2.requires_grad, t2, x.grad_fn is None

# =========================== complex tensors
@probe(x)
def cplx_make_and_parts(x):
    z = torch.complex(x, y)
    return z.real, z.imag, z.abs(), z.angle(), z.conj().imag

@probe(x)
def cplx_view_as_real_and_back(x):
    z = torch.view_as_complex(torch.stack([x, y], -1))
    return torch.view_as_real(z * 1j), z.dtype

@probe(x)
def cplx_matmul_and_exp(x):
    z = torch.complex(x, y)
    return z @ z.T.conj(), torch.exp(z), z * (1 + 2j)

@probe(x)
def cplx_fft_roundtrip(x):
    f = torch.fft.fft(x, dim=1)
    return torch.fft.ifft(f, dim=1).real, torch.fft.rfft(x).shape, torch.fft.fftfreq(4)

@probe(x)
def cplx_python_complex_scalar_ops(x):
    c = complex(1, 2)
    return c.real, c.imag, abs(c), c * 2, c.conjugate(), x * c.real

@probe(x)
def cplx_polar_and_sgn(x):
    z = torch.polar(x.abs(), y)
    return z, z.sgn(), torch.is_complex(z), z.is_complex()

# =========================== integer division semantics
@probe(x)
def idiv_floor_divide_negative_ints(x):
    a = torch.tensor([-7, 7, -8, 9])
    return a // 2, a // -2, a % 3, a % -3, torch.div(a, 2, rounding_mode="trunc"), torch.div(a, 2, rounding_mode="floor")

@probe(x)
def idiv_fmod_vs_remainder(x):
    a = torch.tensor([-7.5, 7.5, -3.0])
    return torch.fmod(a, 2), torch.remainder(a, 2), torch.fmod(a.long(), 2), a.long().remainder(-2)

@probe(x)
def idiv_true_div_int_tensors(x):
    a = torch.tensor([3, 4])
    return a / 2, (a / a).dtype, torch.true_divide(a, 3), a.div(2)

@probe(x)
def idiv_python_floor_negative(x):
    n = x.shape[0]
    return -n // 3, -n % 3, n // -3, divmod(-n, 3), int(-n / 3), x.view(-1)[: -(-n // 3)]

@probe(x)
def idiv_tensor_floordiv_float(x):
    return x // 0.3, x % 0.3, torch.floor_divide(x, 0.7), (x * 10).long() // 3

@probe(x)
def idiv_int_tensor_pow_and_bitops(x):
    a = torch.tensor([1, 2, 3, 4])
    return a ** 2, a << 1, a >> 1, a & 1, a | 8, a ^ 3, ~a, (2 ** a)

@probe(x)
def idiv_uint8_overflow_wrap(x):
    a = torch.tensor([250, 10], dtype=torch.uint8)
    return a + 10, a * 2, a - 20

@probe(x)
def idiv_int_division_by_python_float(x):
    a = torch.tensor([5, 6])
    return a * 0.5, a + 1.5, (a * 2).dtype, (a + True).dtype

# =========================== seeded RNG
@probe(x, reset=lambda: torch.manual_seed(123))
def rng_seed_inside_randint_normal(x):
    a = torch.randint(0, 10, (4,))
    b = torch.normal(torch.zeros(3), torch.ones(3))
    return a, b, x

_rng_g = torch.Generator()
@probe(x, reset=lambda: _rng_g.manual_seed(5))
def rng_generator_arg_rand_randint(x):
    return torch.rand(3, generator=_rng_g), x + torch.randn(4, 3, generator=_rng_g)

@probe(x, reset=lambda: torch.manual_seed(9))
def rng_seed_then_dropout(x):
    return F.dropout(x, 0.5), torch.rand(2)

@probe(x, reset=lambda: torch.manual_seed(2))
def rng_seed_then_randn_like_and_multinomial(x):
    return torch.randn_like(x), torch.multinomial(torch.ones(5), 3)

@probe(x, reset=lambda: torch.manual_seed(4))
def rng_seed_then_normal_inplace(x):
    t = torch.empty(5)
    t.normal_(mean=1.0, std=0.1)
    return t, x.clone().uniform_(0, 1)

# =========================== decorators, classes
def logged(fn):
    @functools.wraps(fn)
    def w(*a, **k):
        return fn(*a, **k) + 1
    return w

@logged
def _lg(t, k=2):
    """doc"""
    return t * k

@probe(x)
def deco_wraps_preserves_name_doc(x):
    return _lg(x, k=3), _lg.__name__, _lg.__doc__, _lg.__wrapped__(x)

def repeat(n):
    def deco(fn):
        @functools.wraps(fn)
        def w(t):
            for _ in range(n):
                t = fn(t)
            return t
        return w
    return deco

@repeat(3)
def _dbl(t):
    return t * 2

@probe(x)
def deco_with_arguments_loop(x):
    return _dbl(x)

def stack_a(fn):
    return lambda t: fn(t) + 1
def stack_b(fn):
    return lambda t: fn(t) * 2

@stack_a
@stack_b
def _stk(t):
    return t - 1

@probe(x)
def deco_stacked_order(x):
    return _stk(x)

class Registry:
    fns = {}
    @classmethod
    def register(cls, name):
        def deco(f):
            cls.fns[name] = f
            return f
        return deco

@Registry.register("sq")
def _sqf(t):
    return t * t

@probe(x)
def deco_registry_lookup(x):
    return Registry.fns["sq"](x), sorted(Registry.fns)

class Calc:
    factor = 3
    def __init__(self, b):
        self.b = b
    @classmethod
    def make(cls, b):
        return cls(b)
    @staticmethod
    def helper(t):
        return t + 1
    def run(self, t):
        return self.helper(t) * self.factor + self.b

class Calc2(Calc):
    factor = 5

@probe(x)
def cls_classmethod_factory_and_staticmethod(x):
    return Calc.make(1).run(x), Calc2.make(2).run(x), Calc.helper(x), type(Calc2.make(0)).__name__

class Base1:
    def f(self):
        return ["Base1"]
class L1(Base1):
    def f(self):
        return ["L1"] + super().f()
class R1(Base1):
    def f(self):
        return ["R1"] + super().f()
class D1(L1, R1):
    def f(self):
        return ["D1"] + super().f()

@probe(x)
def cls_super_diamond_mro_order(x):
    return D1().f(), [c.__name__ for c in D1.__mro__], x * len(D1().f())

class Cfg:
    def __init__(self):
        self._d = {"scale": 2.0, "shift": 1.0}
    def __getattr__(self, k):
        try:
            return self._d[k]
        except KeyError:
            raise AttributeError(k)

@probe(x)
def cls_getattr_config_object(x):
    c = Cfg()
    return x * c.scale + c.shift, getattr(c, "nope", -1)

class Vec:
    def __init__(self, t):
        self.t = t
    @property
    def norm(self):
        return self.t.norm()
    @property
    def unit(self):
        return Vec(self.t / self.norm)
    def __add__(self, o):
        return Vec(self.t + o.t)

@probe(x)
def cls_property_chain_torch_ops(x):
    v = Vec(x) + Vec(y)
    return v.unit.t, v.norm

_gtensor = torch.ones(3)
@probe(x)
def global_tensor_read(x):
    return x + _gtensor

_gstate_t = {"t": torch.zeros(3)}
def _gst_reset():
    _gstate_t["t"] = torch.zeros(3)
@probe(x, reset=_gst_reset, state=lambda: _gstate_t["t"])
def global_tensor_write_in_dict(x):
    _gstate_t["t"] = _gstate_t["t"] + x.sum(0)
    return _gstate_t["t"] * 2

_gbuf = torch.zeros(3)
def _gbuf_reset():
    _gbuf.zero_()
@probe(x, reset=_gbuf_reset, state=lambda: _gbuf.clone())
def global_tensor_inplace_write(x):
    _gbuf.add_(x[0])
    return _gbuf * 1

_gcount = 0
def _gcount_reset():
    global _gcount
    _gcount = 0
@probe(x, reset=_gcount_reset, state=lambda: _gcount)
def global_int_counter_rebind(x):
    global _gcount
    _gcount += x.shape[0]
    return x * _gcount

class Frozen(typing.NamedTuple):
    a: int
    b: float

@dataclasses.dataclass(frozen=True)
class FCfg:
    hidden: int = 4
    scale: float = 0.5
    tags: tuple = ("a",)

@probe(x)
def dc_frozen_replace_fields(x):
    c = FCfg()
    d = dataclasses.replace(c, scale=2.0, tags=c.tags + ("b",))
    return x * d.scale * c.hidden, d.tags, c == FCfg(), hash(c) == hash(FCfg()), dataclasses.asdict(d)

@probe(x)
def dc_frozen_assign_raises(x):
    c = FCfg()
    try:
        c.hidden = 3
        r = "no"
    except dataclasses.FrozenInstanceError:
        r = "frozen"
    return r, x * c.hidden

@dataclasses.dataclass
class TState:
    w: torch.Tensor
    steps: int = 0
    hist: list = dataclasses.field(default_factory=list)
    def step(self, g):
        self.w = self.w - 0.1 * g
        self.steps += 1
        self.hist.append(self.steps)
        return self

@probe(x)
def dc_mutable_state_method_chain(x):
    s = TState(x.clone())
    s.step(x).step(x * 2)
    return s.w, s.steps, s.hist, dataclasses.fields(s)[0].name

@probe(TState(x.clone()), x)
def dc_input_dataclass_mutated(s, x):
    s.step(x)
    return s.w

class Color(enum.Enum):
    RED = enum.auto()
    GREEN = enum.auto()
    BLUE = enum.auto()

class Lvl(enum.IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3

@probe(x)
def enum_auto_values_and_members(x):
    return [c.value for c in Color], Color.GREEN.name, Color(3) is Color.BLUE, Color["RED"], x * Color.BLUE.value

@probe(x)
def enum_intenum_arithmetic_and_compare(x):
    return Lvl.HIGH + 1, Lvl.MID * 2, Lvl.LOW < Lvl.HIGH, int(Lvl.MID), x * Lvl.HIGH, sorted([Lvl.HIGH, Lvl.LOW])

@probe(x)
def enum_as_dict_key_dispatch(x):
    ops = {Color.RED: torch.relu, Color.GREEN: torch.tanh, Color.BLUE: torch.sigmoid}
    return [ops[c](x).sum() for c in Color]

@probe(x)
def enum_intenum_as_index(x):
    return x[Lvl.LOW], x[:, Lvl.MID], x.shape[Lvl.LOW - 1]

class StrE(str, enum.Enum):
    A = "alpha"
    B = "beta"

@probe(x)
def enum_str_mixin_methods(x):
    return StrE.B == "beta", StrE("alpha") is StrE.A, StrE.A.value, x

# =========================== itertools
@probe(x)
def it_product_two_ranges_indexing(x):
    return sum(x[i, j] for i, j in itertools.product(range(2), range(3)))

@probe(x)
def it_accumulate_running_sum_of_rows(x):
    return list(itertools.accumulate(x.unbind(0)))[-1], list(itertools.accumulate([1, 2, 3], operator.mul))

@probe(x)
def it_groupby_strings(x):
    names = ["a.w", "a.b", "b.w", "c.w", "c.b"]
    g = {k: len(list(v)) for k, v in itertools.groupby(names, key=lambda n: n.split(".")[0])}
    return g, x * g["c"]

@probe(x)
def it_pairwise_diffs_of_rows(x):
    return [b - a for a, b in itertools.pairwise(x.unbind(0))]

@probe(x)
def it_zip_longest_fill_tensors(x):
    return [(a if a is not None else x[0]) * b for a, b in itertools.zip_longest(x.unbind(0)[:2], [1, 2, 3], fillvalue=None)]

@probe(x)
def it_chain_islice_cycle(x):
    c = itertools.cycle([1, 2])
    return list(itertools.islice(c, 5)), list(itertools.chain([1], (2, 3), range(4, 5))), x

@probe(x)
def it_combinations_rows(x):
    return torch.stack([a * b for a, b in itertools.combinations(x.unbind(0), 2)])

@probe(x)
def it_starmap_and_repeat(x):
    return list(itertools.starmap(operator.add, [(1, 2), (3, 4)])), [t.sum() for t in itertools.repeat(x, 2)]

@probe(x)
def it_compress_and_filterfalse(x):
    return list(itertools.compress("abcd", [1, 0, 1, 0])), list(itertools.filterfalse(lambda v: v % 2, range(6))), x

@probe(x)
def it_tee_two_consumers(x):
    a, b = itertools.tee(iter([1, 2, 3]))
    return list(a), sum(b), x

@probe(x)
def it_permutations_count(x):
    return len(list(itertools.permutations(range(3)))), list(itertools.permutations("ab")), x

# =========================== decorators from torch._dynamo / torch.compiler (eager-equivalent)
@torch._dynamo.assume_constant_result
def _const_cfg():
    return 3

@probe(x)
def dyn_assume_constant_result(x):
    return x * _const_cfg()

def _aig(t):
    return t * 2 + 1
torch._dynamo.allow_in_graph(_aig)

@probe(x)
def dyn_allow_in_graph_user_fn(x):
    return _aig(x) - 1

@probe(x)
def dyn_is_compiling_not_used_for_result(x):
    c = torch.compiler.is_compiling()
    return x * 2, type(c).__name__

# =========================== misc python model-code
class MTO:
    k = 4

@probe(x)
def py_copy_copy_dict_of_tensors(x):
    d = {"a": x, "b": [1]}
    e = d.copy()
    e["a"] = x * 2
    e["b"].append(2)
    return d["a"], e["a"], d["b"]

@probe(x)
def py_lambda_default_capture_loop(x):
    fs = [lambda t, k=k: t * k for k in range(3)]
    return [f(x).sum() for f in fs]

@probe(x)
def py_partial_with_tensor_kwarg(x):
    f = functools.partial(torch.add, alpha=2)
    g = functools.partial(F.pad, pad=(1, 1))
    return f(x, y), g(x)

@probe(x)
def py_star_kwargs_to_torch_fn(x):
    kw = {"dim": 1, "keepdim": True}
    args = (x,)
    return torch.sum(*args, **kw), torch.amax(x, **kw)

@probe(x)
def py_getattr_torch_fn_by_name(x):
    fns = ["relu", "sigmoid", "tanh"]
    return [getattr(torch, n)(x).sum() for n in fns], getattr(F, "silu")(x)

@probe(x)
def py_method_name_dispatch_on_tensor(x):
    return getattr(x, "mul")(2), getattr(x, "sum")(dim=0), [getattr(x, m)() for m in ("abs", "neg")]

@probe(x)
def py_nested_function_closures_with_tensors(x):
    def outer(s):
        def mid(t):
            def inner():
                return t * s
            return inner
        return mid
    return outer(2)(x)()

class Poly:
    def __init__(self, *c):
        self.c = c
    def __call__(self, t):
        return sum(ci * t ** i for i, ci in enumerate(self.c))

@probe(x)
def py_class_instance_call_dunder(x):
    return Poly(1, 2, 3)(x)

class SlotS:
    __slots__ = ("a", "b")
    def __init__(self, a, b=2):
        self.a, self.b = a, b

@probe(x)
def py_class_with_slots_and_defaults(x):
    s = SlotS(x)
    s.b += 1
    return s.a * s.b

class Rows:
    def __init__(self, t):
        self.t = t
    def __iter__(self):
        for i in range(self.t.shape[0]):
            yield self.t[i] * i

@probe(x)
def py_iter_user_class_generator_method(x):
    return sum(Rows(x))

class UMap(cabc.Mapping):
    def __init__(self, d):
        self.d = d
    def __getitem__(self, k):
        return self.d[k]
    def __len__(self):
        return len(self.d)
    def __iter__(self):
        return iter(self.d)

@probe(x)
def py_getitem_user_mapping(x):
    m = UMap({"a": x, "b": x * 2})
    return m["b"], len(m), list(m.keys()), "a" in m, m.get("z", 0)

class USeq(cabc.Sequence):
    def __init__(self, l):
        self.l = l
    def __getitem__(self, i):
        return self.l[i]
    def __len__(self):
        return len(self.l)

@probe(x)
def py_user_sequence_abc_mixins(x):
    s = USeq([x, x * 2, x * 3])
    return len(s), list(reversed(s))[0], s[-1], [t.sum() for t in s], isinstance(s, cabc.Sequence)

class MyAbc(abc.ABC):
    pass
class RegImpl:
    pass
MyAbc.register(RegImpl)

@probe(x)
def py_isinstance_abc_registered(x):
    Impl = RegImpl
    return isinstance(Impl(), MyAbc), issubclass(Impl, MyAbc), x

@probe(x)
def py_walrus_in_comprehension_on_tensors(x):
    return [s for r in x.unbind(0) if (s := r.sum()) is not None]

@probe(x)
def py_global_function_table(x):
    table = {"double": lambda t: t * 2, "neg": operator.neg}
    out = x
    for name in ("double", "neg", "double"):
        out = table[name](out)
    return out

@probe(x)
def py_default_arg_tensor_evaluated_once(x):
    def f(t, b=torch.ones(3)):
        return t + b
    return f(x), f(x, x[0])

@probe(x)
def py_kwargs_popping_pattern(x):
    def f(t, **kw):
        scale = kw.pop("scale", 1.0)
        bias = kw.pop("bias", 0.0)
        return t * scale + bias, sorted(kw)
    return f(x, scale=2.0, extra=1, bias=0.5)

@probe(x)
def py_chained_method_calls_on_list(x):
    l = []
    l.extend([x, x * 2])
    l.insert(0, x * 0)
    l.reverse()
    return torch.stack(l).sum(0), len(l)

@probe(x)
def py_conditional_import_inside(x):
    import math as m2
    from operator import mul as mm
    return mm(x, m2.pi)

@probe(x)
def py_recursive_tree_sum_nested_dict(x):
    tree = {"a": x, "b": {"c": x * 2, "d": [x * 3, {"e": x}]}}
    def total(t):
        if isinstance(t, torch.Tensor):
            return t.sum()
        if isinstance(t, dict):
            return sum(total(v) for v in t.values())
        return sum(total(v) for v in t)
    return total(tree)

class KScale:
    scale = 2
    def f(self, t):
        return t * self.scale

@probe(x)
def py_class_attr_defaults_override_instance(x):
    k = KScale()
    a = k.f(x)
    k.scale = 5
    b = k.f(x)
    return a, b, KScale.scale, k.scale

class IncU:
    @staticmethod
    def inc(t):
        return t + 1

@probe(x)
def py_staticmethod_called_via_instance_in_loop(x):
    u = IncU()
    for _ in range(3):
        x = u.inc(x)
    return x

# =========================== more modules / containers
class Stack(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(n)])
        self.norms = nn.ModuleList([nn.LayerNorm(3) for _ in range(n)])
    def forward(self, x):
        for i, (l, n) in enumerate(zip(self.layers, self.norms)):
            x = n(l(x)) + (x if i % 2 else 0)
        return x

@probe(Stack(3), x)
def mod_zip_two_modulelists_residual(m, x):
    return m(x)

@probe(nn.ParameterList([nn.Parameter(torch.ones(3) * i) for i in range(3)]), x)
def mod_parameterlist_enumerate_weighted(pl, x):
    return sum(p * x * i for i, p in enumerate(pl))

@probe(nn.ModuleDict({"relu": nn.ReLU(), "tanh": nn.Tanh()}), x)
def mod_moduledict_items_sorted(md, x):
    return [k for k, _ in md.items()], sum(md[k](x) for k in sorted(md.keys()))

class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 6)
    def forward(self, x, gate: bool = True, *, scale=1.0):
        a, b = self.lin(x).chunk(2, -1)
        return (a * b.sigmoid() if gate else a) * scale

@probe(Gated(), x)
def mod_forward_kwargs_defaults_and_kwonly(m, x):
    return m(x), m(x, False), m(x, gate=True, scale=2.0)

class WithHookFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.calls = []
        self.register_forward_pre_hook(self._pre)
    def _pre(self, mod, args):
        self.calls.append(args[0].shape[0])
    def forward(self, x):
        return self.lin(x)

@probe(WithHookFlag(), x)
def mod_pre_hook_bound_method_registered_in_init(m, x):
    return m(x), m(x[:2]).shape, m.calls

@probe(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True), torch.randn(2, 3, 4))
def mod_transformer_encoder_layer_eval(m, t):
    m.eval()
    return m(t)

@probe(nn.Conv2d(2, 3, 3, padding=1, groups=1, bias=False), img)
def mod_conv_no_bias_attrs(m, t):
    return m(t), m.bias is None, m.kernel_size, m.padding

@probe(nn.Linear(3, 3), x)
def mod_functional_call_with_buffer_override(m, x):
    from torch.func import functional_call
    p = {"weight": torch.eye(3), "bias": torch.zeros(3)}
    return functional_call(m, p, (x,)), m(x)

@probe(nn.Linear(3, 3), x)
def mod_parameters_update_no_grad_loop(m, x):
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(0.5)
    return m(x)

@probe(nn.Linear(3, 3), x)
def mod_weight_t_and_addmm_manual(m, x):
    return torch.addmm(m.bias, x, m.weight.t()), F.linear(x, m.weight, m.bias)

class Scaler(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
    def forward(self, x):
        return x * self.k

@probe(x)
def mod_created_and_called_in_loop(x):
    for k in (1, 2, 3):
        x = Scaler(k)(x)
    return x

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), x)
def mod_sequential_iteration_capture_intermediates(m, x):
    feats = []
    for layer in m:
        x = layer(x)
        feats.append(x)
    return feats

@probe(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), x)
def mod_sequential_getitem_slice_call(m, x):
    return m[:2](x), m[-1](x), len(m[1:])

@probe(nn.Linear(3, 3), x)
def mod_training_true_dropout_functional_check(m, x):
    return F.dropout(m(x), 0.5, training=False), m.training

class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
    def forward(self, x, **kw):
        return self.fn(x, **kw) + x

@probe(Residual(nn.Linear(3, 3)), x)
def mod_wrapper_module_forwarding(m, x):
    return m(x), type(m.fn).__name__

@probe(Residual(Residual(nn.Tanh())), x)
def mod_nested_wrapper_module(m, x):
    return m(x)

@probe(nn.Embedding(10, 3), torch.tensor([[1, 2], [3, 9]]))
def mod_embedding_weight_index_and_call(m, i):
    return m(i), m.weight[i], m.num_embeddings

@probe(nn.Linear(3, 2), x)
def mod_parameter_is_instance_and_requires_grad(m, x):
    return isinstance(m.weight, nn.Parameter), isinstance(m.weight, torch.Tensor), m.weight.requires_grad, m(x)

@probe(nn.Linear(3, 2), x)
def mod_param_detach_is_not_param(m, x):
    w = m.weight.detach()
    return isinstance(w, nn.Parameter), w.requires_grad, x @ w.T

@probe(x)
def mod_nn_init_on_local_tensor(x):
    w = torch.empty(3, 3)
    nn.init.eye_(w)
    nn.init.zeros_(w[0])
    return x @ w

@probe(nn.MultiheadAttention(4, 2, batch_first=True), torch.randn(1, 3, 4))
def mod_mha_need_weights_average(m, t):
    o, w = m(t, t, t, need_weights=True, average_attn_weights=False)
    return o, w.shape

@probe(nn.Flatten(1), img)
def mod_flatten_unflatten(m, t):
    f = m(t)
    return f, nn.Unflatten(1, (2, 16))(f).shape

@probe(nn.Identity(), x)
def mod_identity_returns_same(m, x):
    return m(x) is x, m(x)

@probe(nn.PReLU(3), x)
def mod_prelu_param(m, x):
    return m(x), m.weight


# =========================== round 2b: module structure seen after mutation in the same frame
class TwoLin(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)
    def forward(self, x):
        return self.b(self.a(x))

@probe(TwoLin(), nn.ReLU(), x)
def mod_named_children_after_setattr_new_child(m, r, x):
    m.c = r
    return [n for n, _ in m.named_children()], m.a(x)

@probe(TwoLin(), x)
def mod_children_after_delattr(m, x):
    del m.b
    return [n for n, _ in m.named_children()], hasattr(m, "b"), m.a(x)

@probe(TwoLin(), x)
def mod_modules_dict_after_alias_then_call_module(m, x):
    m.alias = m.b
    return list(m._modules.keys()), m(x)

@probe(TwoLin(), x)
def mod_parameters_after_swap_children(m, x):
    m.a, m.b = m.b, m.a
    return m(x), [n for n, _ in m.named_parameters()]

@probe(TwoLin(), nn.Linear(3, 3), x)
def mod_replace_child_then_named_parameters(m, new, x):
    m.b = new
    return m(x), sum(p.numel() for p in m.parameters()), [k for k, _ in m.named_modules()]

@probe(TwoLin(), x)
def mod_named_parameters_remove_duplicate_false_tied(m, x):
    m.b.weight = m.a.weight
    return len(list(m.parameters())), len(list(m.named_parameters(remove_duplicate=False))), m(x)

@probe(TwoLin(), x)
def mod_state_dict_after_alias(m, x):
    m.alias = m.a
    o = m(x)
    return sorted(m.state_dict().keys()), o

@probe(TwoLin(), nn.Tanh(), x)
def mod_add_module_inside(m, t, x):
    m.add_module("act", t)
    return m.act(m(x)), [n for n, _ in m.named_children()]

@probe(TwoLin(), nn.Tanh(), x)
def mod_register_module_inside(m, t, x):
    m.register_module("act2", t)
    return m.act2(m(x)), "act2" in dict(m.named_modules())

@probe(TwoLin(), x)
def mod_train_returns_self_and_eval(m, x):
    r = m.train(False)
    e = m.eval()
    return r is m, e is m, m.training, m(x)

@probe(TwoLin(), x)
def mod_get_name_and_class(m, x):
    return m._get_name(), m.__class__.__name__, type(m.a).__qualname__, m(x)

@probe(TwoLin(), x)
def mod_buffers_recurse_false(m, x):
    return len(list(m.buffers())), len(list(m.buffers(recurse=False))), m(x)

@probe(TwoLin(), x)
def mod_setattr_existing_param_object(m, x):
    w = m.a.weight
    m.a.weight = w
    return m(x), m.a.weight is w

class HasTuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.dims = (1,)
    def forward(self, x):
        return self.lin(x).sum(self.dims)

@probe(HasTuple(), x)
def mod_tuple_attr_of_one(m, x):
    return m(x)

# =========================== default arguments of odd kinds
def _def_tuple1(t, dims=(1,)):
    return t.sum(dims)

@probe(x)
def defarg_tuple_of_one_module_level(x):
    return _def_tuple1(x), _def_tuple1(x, (0,))

def _def_tuple2(t, pad=(1, 1)):
    return F.pad(t, pad)

@probe(x)
def defarg_tuple_of_two(x):
    return _def_tuple2(x)

def _def_nested(t, cfg=((0, 1), "mean")):
    dims, red = cfg
    return getattr(t, red)(dims)

@probe(x)
def defarg_nested_tuple_with_str(x):
    return _def_nested(x)

def _def_kwonly(t, *, shape=(12,)):
    return t.reshape(shape)

@probe(x)
def defarg_kwonly_tuple_of_one(x):
    return _def_kwonly(x)

def _def_dtype(t, dtype=torch.float64, dev=torch.device("cpu")):
    return t.to(dtype=dtype, device=dev)

@probe(x)
def defarg_dtype_and_device(x):
    return _def_dtype(x)

def _def_frozenset(t, keep=frozenset({0, 2})):
    return t[:, sorted(keep)]

@probe(x)
def defarg_frozenset(x):
    return _def_frozenset(x)

@probe(x)
def defarg_lambda_tuple_of_one(x):
    f = lambda t, d=(0,): t.mean(d)
    return f(x)

# =========================== unpacking errors / structure mismatches caught
@probe(x)
def unpack_too_few_caught(x):
    try:
        a, b, c = (1, 2)
    except ValueError as e:
        return x, str(e)

@probe(x)
def unpack_shape_mismatch_caught(x):
    try:
        a, b, c = x.shape
    except ValueError:
        a, b, c = 1, 1, 1
    return x * (a + b + c)

@probe(x)
def unpack_star_fallback(x):
    a, *rest = x.shape
    *init, last = [1, 2, 3]
    return a, rest, init, last, x

# =========================== reading autograd metadata
@probe(xr)
def meta_grad_fn_is_none_checks(x):
    t = x * 2
    return x.grad_fn is None, t.grad_fn is None, t

@probe(x)
def meta_is_leaf_and_requires_grad_of_detached(x):
    t = x.detach()
    return t.is_leaf, t.requires_grad, x.is_leaf

@probe(x)
def meta_base_of_non_view_is_none(x):
    t = x + 1
    return t._base is None, t

@probe(xr)
def meta_output_nr_like_queries(x):
    a, b = x.chunk(2)
    return a.requires_grad, b.is_leaf, a + b

# =========================== grad-mode decorators / requires_grad_ on fresh tensors
@torch.autocast("cpu", dtype=torch.bfloat16)
def _ac_mm(t):
    return t @ t.T

@probe(x)
def ac_module_level_autocast_decorated_fn(x):
    r = _ac_mm(x)
    return r.dtype, r.float()

@torch.inference_mode()
def _im_fn(t):
    return t * 2

@probe(x)
def im_module_level_inference_mode_decorated_fn(x):
    return _im_fn(x).sum() + x

@probe(x)
def rg_fresh_tensor_requires_grad_then_op(x):
    w = torch.ones(3).requires_grad_(True)
    o = x * w
    return o.requires_grad, o

@probe(x)
def rg_clone_requires_grad_under_no_grad(x):
    with torch.no_grad():
        t = x.clone().requires_grad_()
    return t.requires_grad, t

# =========================== class-level state mutated through type(self) / __class__
class PlainCounter:
    count = 0
    def bump(self):
        type(self).count += 1
        return type(self).count

def _pc_reset():
    PlainCounter.count = 0
@probe(x, reset=_pc_reset, state=lambda: PlainCounter.count)
def cls_type_self_counter_plain_class(x):
    c = PlainCounter()
    c.bump()
    return x * c.bump()

class ClassCounter2:
    count = 0
    def bump(self):
        self.__class__.count += 1
        return self.count

def _pc2_reset():
    ClassCounter2.count = 0
@probe(x, reset=_pc2_reset, state=lambda: ClassCounter2.count)
def cls_dunder_class_counter(x):
    return x * ClassCounter2().bump()

class NamedCounter(nn.Module):
    n = 0
    def forward(self, x):
        NamedCounter.n += 1
        return x * NamedCounter.n

def _nc_reset():
    NamedCounter.n = 0
@probe(NamedCounter(), x, reset=_nc_reset, state=lambda: NamedCounter.n)
def cls_module_class_attr_by_name(m, x):
    return m(x), m(x)

class CfgClass:
    scale = 2.0

def _cfgc_reset():
    CfgClass.scale = 2.0
@probe(x, reset=_cfgc_reset, state=lambda: CfgClass.scale)
def cls_setattr_on_class_object_builtin(x):
    setattr(CfgClass, "scale", 3.0)
    return x * CfgClass.scale

# =========================== weakrefs made outside
_wr_target = nn.Linear(3, 3)
_wr = weakref.ref(_wr_target)

@probe(x)
def weakref_global_deref(x):
    m = _wr()
    return m(x) if m is not None else x

@probe(x)
def weakref_weakvaluedict_get(x):
    d = weakref.WeakValueDictionary()
    d["m"] = _wr_target
    return d["m"](x)

# =========================== library modules with generator expressions inside
@probe(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True), torch.randn(2, 3, 4))
def lib_transformer_decoder_layer(m, t):
    return m(t, t)

@probe(nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, 0.0, batch_first=True), 2, enable_nested_tensor=False), torch.randn(2, 3, 4))
def lib_transformer_encoder_stack(m, t):
    return m(t)

@probe(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, norm_first=True), torch.randn(2, 3, 4))
def lib_transformer_encoder_layer_train_norm_first(m, t):
    return m(t)

@probe(nn.MultiheadAttention(4, 2), torch.randn(3, 1, 4))
def lib_mha_key_padding_mask(m, t):
    mask = torch.tensor([[False, False, True]])
    return m(t, t, t, key_padding_mask=mask)[0]

@probe(x)
def lib_genexpr_in_user_helper_with_any(x):
    ts = [x, x * 2]
    return any(t.dim() > 3 for t in ts), all(t.shape == x.shape for t in ts), x

# =========================== Module utilities that are library code
@probe(TwoLin(), x)
def lib_module_get_buffer_simple(m, x):
    m.register_buffer("s", None)
    return m(x), m.s

@probe(TwoLin(), x)
def lib_module_requires_grad_chain(m, x):
    return [p.requires_grad for p in m.a.parameters()], m(x)

@probe(TwoLin(), x)
def lib_parameters_to_vector_inside(m, x):
    v = torch.nn.utils.parameters_to_vector(m.parameters())
    return v.shape, m(x) * v.sum()

@probe(TwoLin(), x)
def lib_module_float_double_inside(m, x):
    m.double()
    return m(x.double()).dtype, m.a.weight.dtype

@probe(TwoLin(), nn.Linear(3, 3), x)
def mod_parameters_count_after_new_child_and_call(m, n, x):
    m.c = n
    o = m.a(x)
    return [k for k, _ in m.named_modules()], sum(p.numel() for p in m.parameters()), len(list(m.children())), o

@probe(TwoLin(), nn.Linear(3, 3), x)
def mod_in_modules_after_new_child_and_call_new_child(m, n, x):
    m.c = n
    o = m.c(x)
    return [k for k, _ in m.named_parameters()], "c" in m._modules, o
