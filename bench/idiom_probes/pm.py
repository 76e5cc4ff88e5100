# more torch: nn.Module patterns (properties, mixins, __getattr__, hooks, buffers, containers),
# tensor methods with dtype/device kwargs, torch.Size, views and in-place, grad modes,
# autograd.Function variants, unspecialized python numbers, simple functorch calls
import torch, torch.nn as nn, torch.nn.functional as F, math, functools, collections, contextlib
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(2)
x6 = torch.randn(6, 3)
xi = torch.tensor([[0, 2, 1], [3, 1, 0]])

# ---- modules
class PropMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self._scale = 2.0
    @property
    def scale(self): return self._scale
    @scale.setter
    def scale(self, v): self._scale = v
    @property
    def wt(self): return self.lin.weight.t()
    @staticmethod
    def act(t): return torch.relu(t)
    @classmethod
    def tag(cls): return cls.__name__.lower()
    def forward(self, x):
        return self.act(x @ self.wt) * self.scale, self.tag()

@probe(PropMod(), x)
def module_property_staticmethod_classmethod(m, x):
    return m(x)

@probe(PropMod(), x)
def module_property_setter_in_compiled(m, x):
    m.scale = 3.0
    return m(x)[0], m.scale

class Mixin:
    def double(self, t): return t * 2
    def describe(self): return f"{type(self).__name__}/{self.n}"

class MixMod(Mixin, nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 3
        self.lin = nn.Linear(3, 3)
    def forward(self, x):
        return self.double(self.lin(x)), self.describe()

@probe(MixMod(), x)
def module_with_mixin_first(m, x):
    return m(x)

class Base1(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
    def forward(self, x): return self.a(x)
class Mid1(Base1):
    def forward(self, x): return super().forward(x) + 1
class Top1(Mid1):
    def forward(self, x): return super().forward(x) * 2

@probe(Top1(), x)
def module_super_forward_three_levels(m, x):
    return m(x)

class A2(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = []
    def f(self, t):
        self.log.append("A")
        return t + 1
class B2(A2):
    def f(self, t):
        self.log.append("B")
        return super().f(t) * 2
class C2(A2):
    def f(self, t):
        self.log.append("C")
        return super().f(t) - 3
class D2(B2, C2):
    def f(self, t):
        self.log.append("D")
        return super().f(t)
    def forward(self, x):
        return self.f(x)

@probe(D2(), x)
def module_diamond_super_chain(m, x):
    return m(x), m.log

class GetAttrMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)
    def forward(self, x):
        return x @ self.weight.t() + self.bias, self.out_features

@probe(GetAttrMod(), x)
def module_getattr_delegation(m, x):
    return m(x)

class BufMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("ema", torch.zeros(3))
        self.register_buffer("scratch", torch.zeros(3), persistent=False)
    def forward(self, x):
        self.steps += 1
        self.ema.mul_(0.9).add_(x.mean(0), alpha=0.1)
        self.scratch.copy_(x[0])
        return x - self.ema, self.steps.clone()

@probe(BufMod(), x)
def module_buffers_updated_in_forward(m, x):
    m(x)
    return m(x), m.steps, m.ema, m.scratch

@probe(BufMod(), x)
def module_named_buffers_and_persistence(m, x):
    names = [n for n, _ in m.named_buffers()]
    return x * len(names), names, sorted(m.state_dict().keys())

class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.pl = nn.ParameterList([nn.Parameter(torch.randn(3)) for _ in range(3)])
        self.pd = nn.ParameterDict({"b": nn.Parameter(torch.randn(3)), "a": nn.Parameter(torch.randn(3))})
        self.md = nn.ModuleDict({"relu": nn.ReLU(), "lin": nn.Linear(3, 3), "tanh": nn.Tanh()})
        self.seq = nn.Sequential(collections.OrderedDict(fc=nn.Linear(3, 4), act=nn.GELU(), out=nn.Linear(4, 3)))

@probe(Containers(), x)
def parameterlist_zip_and_stack(m, x):
    out = x
    for p, k in zip(m.pl, range(3)):
        out = out * p + k
    return out, torch.stack(list(m.pl)).sum(0), len(m.pl), m.pl[-1]

@probe(Containers(), x)
def parameterdict_keys_values_in(m, x):
    return [k for k in m.pd], "a" in m.pd, x + sum(m.pd.values()), m.pd["b"] * 2

@probe(Containers(), x)
def moduledict_iter_values_and_len(m, x):
    out = x
    for name in m.md:
        out = m.md[name](out)
    outs = [mod(x) for mod in m.md.values()]
    return out, outs, len(m.md), list(m.md.keys())

@probe(Containers(), x)
def sequential_named_index_and_attrs(m, x):
    return m.seq(x), m.seq.fc(x), m.seq[-1].out_features, m.seq[0].weight.shape, type(m.seq.act).__name__

@probe(Containers(), x)
def sequential_manual_loop_with_isinstance(m, x):
    acts = 0
    for layer in m.seq:
        x = layer(x)
        if isinstance(layer, (nn.GELU, nn.ReLU)):
            acts += 1
    return x, acts

class PlainListMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 3)
        self.l2 = nn.Linear(3, 3)
        self.order = [self.l2, self.l1]
    def forward(self, x):
        for l in self.order:
            x = l(x)
        return x

@probe(PlainListMod(), x)
def module_plain_python_list_of_submodules(m, x):
    return m(x)

class KwFwd(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)
    def forward(self, x, *, scale=1.0, mask=None):
        y = self.l(x) * scale
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return y

@probe(KwFwd(), x)
def module_forward_kwonly_and_mask(m, x):
    return m(x), m(x, scale=2.0, mask=x > 0), m.forward(x, scale=0.5)

class NoGradMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)
    @torch.no_grad()
    def stats(self, x):
        return self.l(x).mean()
    def forward(self, x):
        return self.l(x), self.stats(x)

@probe(NoGradMethod(), x)
def module_no_grad_decorated_method(m, x):
    a, b = m(x)
    return a, b, a.requires_grad, b.requires_grad

class HookMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)
        self.calls = 0
    def forward(self, x): return self.l(x)

def _pre_hook(mod, args):
    return (args[0] * 2,)

_HM = HookMod()
_HM.register_forward_pre_hook(_pre_hook)
_HM.register_forward_hook(lambda mod, args, out: out + 100)

@probe(_HM, x)
def module_pre_and_post_hooks_module_level(m, x):
    return m(x), m.forward(x)

@probe(HookMod(), x)
def module_hook_registered_and_removed_inside(m, x):
    h = m.register_forward_hook(lambda mod, a, o: o * 0)
    y = m(x)
    h.remove()
    return y, m(x)

class CountCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        return self.l(x)

@probe(CountCalls(), x)
def module_python_counter_incremented(m, x):
    m(x); m(x)
    return m(x), m.calls

@probe(x)
def module_helper_function_takes_module(x):
    def apply(mod, t, n):
        for _ in range(n):
            t = mod(t)
        return t
    return apply(_SHARED_LIN, x, 3)

_SHARED_LIN = nn.Linear(3, 3)

@probe(_SHARED_LIN, x)
def module_hasattr_getattr_default(m, x):
    b = getattr(m, "bias", None)
    extra = getattr(m, "extra_scale", 1.5)
    return m(x) * extra + (0 if b is None else b.sum()), hasattr(m, "weight"), hasattr(m, "nope")

@probe(_SHARED_LIN, x)
def functional_call_with_replaced_params(m, x):
    params = {"weight": torch.ones(3, 3), "bias": torch.zeros(3)}
    return torch.func.functional_call(m, params, (x,)), m(x)

@probe(_SHARED_LIN, x)
def module_direct_parameter_arith(m, x):
    w = m.weight
    return (x @ w.t()) + m.bias, w.shape, isinstance(w, nn.Parameter), w.requires_grad, m.weight.grad is None

class LN(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(3)
        self.gn = nn.GroupNorm(1, 3)
        self.fl = nn.Flatten(0)
        self.uf = nn.Unflatten(1, (1, 3))
        self.id = nn.Identity()
    def forward(self, x):
        a = self.ln(x)
        b = self.gn(x.t().unsqueeze(0))
        return self.id(a), b, self.fl(a).shape, self.uf(a).shape

@probe(LN(), x)
def misc_layers_norms_flatten(m, x):
    return m(x)

@probe(x)
def embedding_from_pretrained_and_one_hot(x):
    emb = nn.Embedding.from_pretrained(x, freeze=True)
    idx = torch.tensor([0, 3, 1])
    return emb(idx), F.one_hot(idx, 4), F.embedding(idx, x)

@probe(x)
def functional_losses_and_normalize(x):
    tgt = torch.tensor([0, 2, 1, 1])
    return (F.cross_entropy(x, tgt), F.nll_loss(F.log_softmax(x, -1), tgt, reduction="sum"),
            F.normalize(x, dim=1), F.mse_loss(x, x.flip(0)), F.smooth_l1_loss(x, x * 0.5, beta=0.5))

@probe(x)
def functional_activations_kwargs(x):
    return (F.gelu(x, approximate="tanh"), F.leaky_relu(x, negative_slope=0.2), F.elu(x, alpha=0.5),
            F.hardtanh(x, -0.5, 0.5), F.softplus(x, beta=2), F.silu(x), F.glu(torch.cat([x, x], 1), dim=1))

@probe(x)
def sdpa_small(x):
    q = x.view(1, 1, 4, 3)
    return F.scaled_dot_product_attention(q, q, q), F.scaled_dot_product_attention(q, q, q, is_causal=True)

@probe(x)
def pad_sequence_and_pack_lengths(x):
    seqs = [x[:2], x[:4], x[:1]]
    padded = nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-1.0)
    return padded, [s.shape[0] for s in seqs]

# ---- torch.Size and shapes
@probe(x)
def torch_size_arith_and_slicing(x):
    s = x.shape
    t = s + (1,)
    return (type(t).__name__, t, s[1:], s[::-1], torch.Size([2]) + s, s.numel(), s.index(3),
            s.count(4), x.view(*s[:1], -1).shape, x.new_zeros(s + (2,)).shape)

@probe(x)
def shape_star_unpack_and_reshape(x):
    b, *rest = x.shape
    n, m = x.size()
    return x.reshape(b, *rest, 1).shape, rest, n * m, x.reshape(x.size(0), -1).shape, x.view(-1, x.shape[-1]).shape

@probe(x)
def size_compare_and_max(x):
    s = x.shape
    return x * (s == torch.Size([4, 3])), max(s), min(x.size()), s < (5, 0), list(reversed(s)), sum(s)

@probe(x)
def size_in_dict_key_and_set(x):
    d = {x.shape: "a", (2, 2): "b"}
    return x.sum(), d[(4, 3)], torch.Size([4, 3]) in d, len({x.shape, torch.Size([4, 3])})

# ---- tensor methods with dtype/device kwargs
@probe(x)
def tensor_methods_dtype_kwargs(x):
    return (x.sum(dtype=torch.float64), x.to(dtype=torch.float16), torch.zeros_like(x, dtype=torch.int32),
            x.new_ones((2,), dtype=torch.int64), torch.cumsum(x, 0, dtype=torch.float64),
            x.mean(dim=0, keepdim=True, dtype=torch.float64), torch.softmax(x, -1, dtype=torch.float64))

@probe(x)
def tensor_methods_device_kwargs(x):
    return (torch.arange(3, device=x.device), torch.ones(2, device="cpu", dtype=x.dtype), x.to("cpu"),
            x.to(x.device, torch.float64), torch.empty(0, device=x.device).shape, x.new_tensor([1.0, 2.0]),
            torch.tensor([1, 2], device=x.device, dtype=torch.float32), x.to(x), x.cpu())

@probe(x)
def tensor_type_conversions(x):
    return (x.double(), x.half().float(), x.long(), x.int(), x.bool(), x.type(torch.float64),
            x.type(), x.to(torch.bfloat16).dtype, x.byte().dtype, x.char().dtype, x.short().dtype)

@probe(x)
def dtype_promotion_queries(x):
    i = x.long()
    return ((x + i).dtype, torch.result_type(x, 2), torch.promote_types(torch.int32, torch.float16),
            torch.can_cast(torch.float32, torch.int32), (i / 2).dtype, (i // 2).dtype, x.is_floating_point(),
            i.is_signed(), torch.is_floating_point(i), torch.is_complex(x))

@probe(x)
def max_min_namedtuple_results(x):
    r = x.max(dim=1)
    v, i = x.min(0)
    s = torch.sort(x, dim=0, descending=True)
    return r.values, r.indices, v, i, s.values, s.indices, type(r).__name__, torch.std_mean(x, dim=0), torch.aminmax(x)

@probe(x)
def searchsorted_bucketize_histc(x):
    b = torch.tensor([-1.0, 0.0, 1.0])
    return torch.bucketize(x, b), torch.searchsorted(b, x.flatten().sort().values), torch.histc(x, bins=4, min=-2, max=2)

@probe(x)
def gather_scatter_take_along(x):
    idx = xi.t().contiguous()[:3].clamp(max=2)
    return (torch.gather(x, 1, idx.t()[:, :2].repeat(2, 1)), torch.take_along_dim(x, x.argsort(1), 1),
            torch.zeros(4, 3).scatter_(1, x.argmax(1, keepdim=True), 1.0), x.index_put((torch.tensor([0, 2]),), torch.zeros(3)))

@probe(x)
def meshgrid_broadcast_tensors_cartesian(x):
    a, b = torch.meshgrid(torch.arange(3), torch.arange(2), indexing="ij")
    u, v = torch.broadcast_tensors(x, x[0])
    return a, b, u + v, torch.cartesian_prod(torch.arange(2), torch.arange(2)), torch.block_diag(x[:2, :2], x[2:, :1])

@probe(x)
def unfold_roll_flip_tril(x):
    return x.unfold(0, 2, 1), x.roll(1, 0), x.flip(-1), torch.rot90(x), x.tril(-1), torch.triu_indices(3, 3)

@probe(x)
def clamp_with_tensor_bounds(x):
    lo = torch.full((3,), -0.5)
    return x.clamp(min=lo), torch.clamp(x, max=x.mean(0)), x.clip(-0.1, 0.1), x.clamp_min(0)

# ---- views and in-place
@probe(x)
def inplace_on_row_view_propagates(x):
    y = x.clone()
    r = y[1]
    r.mul_(10)
    y[:, 0].add_(1)
    return y, r

@probe(x)
def inplace_on_transpose_and_diagonal_views(x):
    y = x.clone()[:3]
    y.t()[0].zero_()
    y.diagonal().fill_(7)
    return y

@probe(x)
def inplace_on_flattened_strided_view(x):
    y = x.clone()
    y.view(-1)[::2].fill_(0)
    return y

@probe(x)
def inplace_on_unsqueeze_and_expand_source(x):
    y = x.clone()
    z = y.unsqueeze(0)
    z.mul_(2)
    w = y[0].expand(2, 3)
    return y, z.shape, w + 0

@probe(x)
def view_chain_then_base_mutation(x):
    y = x.clone()
    v = y.view(12)[3:9].view(2, 3)
    y.add_(1)
    return v, v._base is None

@probe(x)
def setitem_with_mask_and_slices(x):
    y = x.clone()
    y[y > 0] = 0
    y[1:3, ::2] = -1
    y[..., -1] = torch.arange(4.0)
    return y

@probe(x)
def inplace_method_variants_return_self(x):
    y = x.clone()
    z = y.add_(1).mul_(2).clamp_(max=3)
    return z is y, y, y.abs_().sqrt_()

@probe(x)
def out_of_place_vs_inplace_on_input_view(x):
    v = x[0]
    a = v * 2
    v += 1
    return a, x

# ---- grad modes
@probe(xr)
def no_grad_enable_grad_nesting(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            with torch.no_grad():
                c = x * 4
        d = x * 5
    e = x * 6
    return [t.requires_grad for t in (a, b, c, d, e)], a, b + e

@probe(xr)
def set_grad_enabled_from_flag_arg(x):
    outs = []
    for flag in (False, True):
        with torch.set_grad_enabled(flag):
            outs.append((x * 2).requires_grad)
    return outs, torch.is_grad_enabled()

@probe(xr)
def no_grad_return_inside_restores(x):
    def f(t):
        with torch.no_grad():
            return t * 2
    y = f(x)
    return y.requires_grad, (x * 3).requires_grad, y

@probe(xr)
def enable_grad_decorator_under_no_grad(x):
    @torch.enable_grad()
    def g(t): return t * 2
    with torch.no_grad():
        y = g(x)
    return y, y.requires_grad

@probe(xr)
def detach_vs_data_and_requires_grad_flags(x):
    a = x.detach() * 2
    b = (x * 2).detach()
    c = x.data * 2
    return a.requires_grad, b.requires_grad, c.requires_grad, (x + a).requires_grad, x.is_leaf, (x * 2).is_leaf

# ---- autograd.Function
class ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, k):
        ctx.k = k
        ctx.save_for_backward(t)
        return t * k
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * ctx.k + 0 * t, None

@probe(xr)
def autograd_function_ctx_attr_and_nontensor_arg(x):
    y = ScaleFn.apply(x, 3.0)
    return y, y.requires_grad

class SetupCtxFn(torch.autograd.Function):
    @staticmethod
    def forward(t, k):
        return t.sin() * k
    @staticmethod
    def setup_context(ctx, inputs, output):
        t, k = inputs
        ctx.save_for_backward(t)
        ctx.k = k
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * t.cos() * ctx.k, None

@probe(xr)
def autograd_function_setup_context_style(x):
    return SetupCtxFn.apply(x, 2)

@probe(x)
def autograd_function_grad_via_func_grad(x):
    return torch.func.grad(lambda t: SetupCtxFn.apply(t, 2.0).sum())(x)

class TwoOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        idx = a.argmax(1)
        ctx.mark_non_differentiable(idx)
        return a + b, idx
    @staticmethod
    def backward(ctx, g, gi):
        return g, g

@probe(xr, x)
def autograd_function_two_outputs_nondiff(a, b):
    s, i = TwoOut.apply(a, b)
    return s, i, s.requires_grad, i.requires_grad

class NeedsGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.flags = ctx.needs_input_grad
        return a * b
    @staticmethod
    def backward(ctx, g):
        return g, g

@probe(xr, x)
def autograd_function_needs_input_grad(a, b):
    return NeedsGrad.apply(a, b)

# ---- unspecialized python numbers (second call with a different value)
@probe(x, 2, args2=(x, 3))
def unspec_int_slice_and_repeat(x, n):
    return x[:n], x.repeat(n, 1).shape, torch.arange(n), F.pad(x, (n, 0)).shape, x.new_ones(n, 2)

@probe(x, 0.25, args2=(x, 0.75))
def unspec_float_in_torch_full_and_math(x, p):
    return torch.full((2,), p), x * math.sqrt(p), F.dropout(x, p=0.0) * p, torch.tensor(p) + x, x.clamp(max=p)

@probe(x, True, args2=(x, False))
def bool_arg_flip(x, flag):
    return x.relu() if flag else x.tanh(), not flag

@probe(x, -1, args2=(x, -2))
def unspec_negative_index_arg(x, i):
    return x[i], x.select(0, i), x.sum(i), x.unsqueeze(i).shape

@probe(x, [1, 2], args2=(x, [3, 4]))
def list_of_ints_arg_values_change(x, l):
    return x * l[0] + l[1], sum(l)

@probe(x, {"a": 1.0, "b": 2.0}, args2=(x, {"a": 5.0, "b": -1.0}))
def dict_of_floats_arg_values_change(x, d):
    return x * d["a"] + d["b"]

# ---- functorch / hops (simple)
@probe(x)
def vmap_out_dims_and_nested(x):
    f = torch.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))
    g = torch.vmap(torch.vmap(lambda a: a * a))
    return f(x), g(x)

@probe(x)
def grad_and_value_has_aux(x):
    def f(t):
        y = (t ** 2).sum()
        return y, {"m": t.mean()}
    g, (v, aux) = torch.func.grad_and_value(f, has_aux=True)(x)
    return g, v, aux

@probe(x)
def jvp_and_vjp(x):
    _, tan = torch.func.jvp(torch.sin, (x,), (torch.ones_like(x),))
    out, vjp_fn = torch.func.vjp(torch.cos, x)
    return tan, out, vjp_fn(torch.ones_like(x))[0]

@probe(x)
def checkpoint_non_reentrant(x):
    import torch.utils.checkpoint as cp
    return cp.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)

@probe(x)
def cond_with_two_operands(x):
    return torch.cond(x.shape[0] > 2, lambda a, b: a + b, lambda a, b: a - b, (x, x * 2))

# ---- misc torch surface
@probe(x)
def torch_is_tensor_numel_and_isinstance(x):
    p = nn.Parameter(torch.ones(2))
    return (x * torch.is_tensor(x), torch.numel(x), isinstance(x, torch.Tensor), isinstance(x.dtype, torch.dtype),
            isinstance(x.device, torch.device), isinstance(p, torch.Tensor), torch.is_tensor(3))

@probe(x)
def tensor_unbound_methods_and_torch_fns_by_getattr(x):
    return torch.Tensor.add(x, 1), torch.Tensor.sum(x, 0), getattr(torch, "mul")(x, 2), getattr(x, "exp")()

@probe(x)
def torch_jit_queries_false(x):
    return x * (not torch.jit.is_scripting()) + torch.jit.is_tracing()

@probe(x)
def device_type_and_fstrings(x):
    return x * (x.device.type == "cpu"), f"{x.dtype}", str(x.device), x.is_cuda, x.is_sparse, x.layout == torch.strided

@probe(x)
def tensor_iteration_unbind_tuple_and_chunk_unpack(x):
    a, b, c, d = x
    p, q = x.chunk(2)
    r = tuple(x.t())
    return a + d, p - q, len(r), r[0]

@probe(x)
def where_scalar_and_masked_ops(x):
    m = x > 0
    return torch.where(m, x, 0.0), x.masked_fill(~m, -1), x.masked_fill(m, 0.0).sum(1)

@probe(x)
def default_dtype_queries(x):
    return torch.get_default_dtype(), torch.tensor([1.0]).dtype, torch.tensor([1]).dtype, torch.ones(1).dtype, x.new_empty(0).dtype

@probe(x)
def torch_device_context_manager(x):
    with torch.device("cpu"):
        t = torch.ones(2)
    return x.sum() + t, t.device

@probe(x)
def autocast_nested_enable_disable(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = torch.mm(x, x.t())
        with torch.autocast("cpu", enabled=False):
            b = torch.mm(x, x.t())
    return a.dtype, b.dtype, b

@probe(x)
def complex_views_and_polar(x):
    c = torch.view_as_complex(x[:, :2].contiguous())
    return torch.view_as_real(c * 1j), c.abs(), c.angle(), torch.polar(x[:, 0].abs(), x[:, 1])

@probe(x)
def einsum_variants(x):
    return torch.einsum("ij,kj->ik", x, x), torch.einsum("ii->i", x[:3]), torch.einsum("ij->", x), torch.einsum("i,j->ij", x[0], x[1])

@probe(x)
def linalg_small(x):
    a = x[:3] @ x[:3].t() + torch.eye(3) * 3
    return torch.linalg.norm(x, dim=1), torch.linalg.vector_norm(x, ord=1), torch.linalg.solve(a, x[:3]), torch.linalg.det(a)
