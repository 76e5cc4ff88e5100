import math
from functools import partial, wraps
from inspect import isfunction
from collections import namedtuple
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DIM_HEAD = 8

Intermediates = namedtuple("Intermediates", ["pre_softmax_attn", "post_softmax_attn"])
LayerIntermediates = namedtuple("LayerIntermediates", ["hiddens", "attn_intermediates"])


def exists(val):
    return val is not None


def default(val, d):
    if exists(val):
        return val
    return d() if isfunction(d) else d


def cast_tuple(val, depth):
    return val if isinstance(val, tuple) else (val,) * depth


def maybe(fn):
    @wraps(fn)
    def inner(x, *args, **kwargs):
        if not exists(x):
            return x
        return fn(x, *args, **kwargs)
    return inner


def pick_and_pop(keys, d):
    values = list(map(lambda key: d.pop(key), keys))
    return dict(zip(keys, values))


def group_dict_by_key(cond, d):
    return_val = [dict(), dict()]
    for key in d.keys():
        match = bool(cond(key))
        ind = int(not match)
        return_val[ind][key] = d[key]
    return (*return_val,)


def string_begins_with(prefix, str):
    return str.startswith(prefix)


def group_by_key_prefix(prefix, d):
    return group_dict_by_key(partial(string_begins_with, prefix), d)


def groupby_prefix_and_trim(prefix, d):
    kwargs_with_prefix, kwargs = group_dict_by_key(partial(string_begins_with, prefix), d)
    kwargs_without_prefix = dict(map(lambda x: (x[0][len(prefix):], x[1]), tuple(kwargs_with_prefix.items())))
    return kwargs_without_prefix, kwargs


def max_neg_value(tensor):
    return -torch.finfo(tensor.dtype).max


def l2norm(t, groups=1):
    t = t.reshape(*t.shape[:-1], groups, -1)
    t = F.normalize(t, p=2, dim=-1)
    return t.reshape(*t.shape[:-2], -1)


class Scale(nn.Module):
    def __init__(self, value, fn):
        super().__init__()
        self.value = value
        self.fn = fn

    def forward(self, x, **kwargs):
        out = self.fn(x, **kwargs)
        scale_fn = lambda t: t * self.value
        if not isinstance(out, tuple):
            return scale_fn(out)
        return (scale_fn(out[0]), *out[1:])


class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1) * (dim ** -0.5))

    def forward(self, x):
        norm = torch.norm(x, dim=-1, keepdim=True)
        return x / norm.clamp(min=self.eps) * self.g


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.scale * self.g


class Residual(nn.Module):
    def __init__(self, dim, scale_residual=False, scale_residual_constant=1.):
        super().__init__()
        self.residual_scale = nn.Parameter(torch.ones(dim)) if scale_residual else None
        self.scale_residual_constant = scale_residual_constant

    def forward(self, x, residual):
        if exists(self.residual_scale):
            residual = residual * self.residual_scale
        if self.scale_residual_constant != 1:
            residual = residual * self.scale_residual_constant
        return x + residual


class GLU(nn.Module):
    def __init__(self, dim_in, dim_out, activation):
        super().__init__()
        self.act = activation
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.act(gate)


class FeedForward(nn.Module):
    def __init__(self, dim, dim_out=None, mult=4, glu=False, swish=False, relu_squared=False, post_act_ln=False,
                 dropout=0., no_bias=False, zero_init_output=False):
        super().__init__()
        inner_dim = int(dim * mult)
        dim_out = default(dim_out, dim)
        if relu_squared:
            activation = lambda t: F.relu(t) ** 2
        elif swish:
            activation = nn.SiLU()
        else:
            activation = nn.GELU()
        project_in = nn.Sequential(nn.Linear(dim, inner_dim, bias=not no_bias), activation) if not glu else GLU(dim, inner_dim, activation)
        self.ff = nn.Sequential(project_in, nn.LayerNorm(inner_dim) if post_act_ln else nn.Identity(), nn.Dropout(dropout),
                                nn.Linear(inner_dim, dim_out, bias=not no_bias))

    def forward(self, x):
        return self.ff(x)


class Attention(nn.Module):
    def __init__(self, dim, dim_head=DEFAULT_DIM_HEAD, heads=2, causal=False, talking_heads=False, qk_norm=False,
                 qk_norm_groups=1, qk_norm_scale=10, num_mem_kv=0, dropout=0.):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.causal = causal
        inner_dim = dim_head * heads
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_k = nn.Linear(dim, inner_dim, bias=False)
        self.to_v = nn.Linear(dim, inner_dim, bias=False)
        self.talking_heads = talking_heads
        if talking_heads:
            self.pre_softmax_talking_heads = nn.Conv2d(heads, heads, 1, bias=False)
            self.post_softmax_talking_heads = nn.Conv2d(heads, heads, 1, bias=False)
        self.qk_norm = qk_norm
        self.qk_norm_groups = qk_norm_groups
        if qk_norm:
            self.scale = qk_norm_scale
        self.num_mem_kv = num_mem_kv
        if num_mem_kv > 0:
            self.mem_k = nn.Parameter(torch.randn(heads, num_mem_kv, dim_head))
            self.mem_v = nn.Parameter(torch.randn(heads, num_mem_kv, dim_head))
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x, context=None, mask=None, rel_pos=None, prev_attn=None):
        b, n, _, h, talking_heads, device = *x.shape, self.heads, self.talking_heads, x.device
        kv_input = default(context, x)
        q, k, v = self.to_q(x), self.to_k(kv_input), self.to_v(kv_input)
        q, k, v = map(lambda t: t.reshape(b, t.shape[1], h, -1).transpose(1, 2), (q, k, v))
        if self.num_mem_kv > 0:
            mem_k, mem_v = map(lambda t: t.unsqueeze(0).expand(b, -1, -1, -1), (self.mem_k, self.mem_v))
            k = torch.cat((mem_k, k), dim=-2)
            v = torch.cat((mem_v, v), dim=-2)
            if exists(mask):
                mask = F.pad(mask, (self.num_mem_kv, 0), value=True)
        if self.qk_norm:
            qk_l2norm = partial(l2norm, groups=self.qk_norm_groups)
            q, k = map(qk_l2norm, (q, k))
        dots = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        mask_value = max_neg_value(dots)
        if exists(prev_attn):
            dots = dots + prev_attn
        pre_softmax_attn = dots.clone()
        if talking_heads:
            dots = self.pre_softmax_talking_heads(dots)
        if exists(mask):
            dots.masked_fill_(~mask[:, None, None, :], mask_value)
        if self.causal:
            i, j = dots.shape[-2:]
            causal_mask = torch.ones((i, j), dtype=torch.bool, device=device).triu(j - i + 1)
            dots.masked_fill_(causal_mask, mask_value)
        attn = dots.softmax(dim=-1)
        post_softmax_attn = attn.clone()
        if talking_heads:
            attn = self.post_softmax_talking_heads(attn)
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        intermediates = Intermediates(pre_softmax_attn=pre_softmax_attn, post_softmax_attn=post_softmax_attn)
        return self.to_out(out), intermediates


class AttentionLayers(nn.Module):
    def __init__(self, dim, depth, heads=2, causal=False, use_scalenorm=False, use_rmsnorm=False, residual_attn=False,
                 pre_norm=True, scale_residual=False, custom_layers=None, **kwargs):
        super().__init__()
        ff_kwargs, kwargs = groupby_prefix_and_trim("ff_", kwargs)
        attn_kwargs, kwargs = groupby_prefix_and_trim("attn_", kwargs)
        dim_head = attn_kwargs.get("dim_head", DEFAULT_DIM_HEAD)
        self.dim = dim
        self.depth = depth
        self.layers = nn.ModuleList([])
        self.residual_attn = residual_attn
        self.pre_norm = pre_norm
        norm_class = ScaleNorm if use_scalenorm else nn.LayerNorm
        norm_class = RMSNorm if use_rmsnorm else norm_class
        norm_fn = partial(norm_class, dim)
        default_block = ("a", "f")
        layer_types = default(custom_layers, default_block * depth)
        self.layer_types = layer_types
        self.num_attn_layers = len(list(filter(lambda t: t == "a", layer_types)))
        for ind, layer_type in enumerate(self.layer_types):
            if layer_type == "a":
                layer = Attention(dim, heads=heads, causal=causal, **attn_kwargs)
            elif layer_type == "f":
                layer = FeedForward(dim, **ff_kwargs)
            else:
                raise Exception(f"invalid layer type {layer_type}")
            residual = Residual(dim, scale_residual=scale_residual)
            self.layers.append(nn.ModuleList([nn.ModuleList([norm_fn(), None, None]), layer, residual]))
        self.final_norm = norm_fn() if pre_norm else nn.Identity()

    def forward(self, x, mask=None, return_hiddens=False):
        hiddens = []
        intermediates = []
        prev_attn = None
        for ind, (layer_type, (norm, block, residual_fn)) in enumerate(zip(self.layer_types, self.layers)):
            is_last = ind == (len(self.layers) - 1)
            if layer_type == "a":
                if return_hiddens:
                    hiddens.append(x)
            residual = x
            pre_branch_norm, post_branch_norm, post_main_norm = norm
            if exists(pre_branch_norm):
                x = pre_branch_norm(x)
            if layer_type == "a":
                out, inter = block(x, mask=mask, prev_attn=prev_attn)
            elif layer_type == "f":
                out = block(x)
            if exists(post_branch_norm):
                out = post_branch_norm(out)
            x = residual_fn(out, residual)
            if layer_type == "a":
                intermediates.append(inter)
            if layer_type == "a" and self.residual_attn:
                prev_attn = inter.pre_softmax_attn
        x = self.final_norm(x)
        if return_hiddens:
            return x, LayerIntermediates(hiddens=hiddens, attn_intermediates=intermediates)
        return x


class Model(nn.Module):
    """lucidrains/x-transformers style: ff_*/attn_* kwargs split by groupby_prefix_and_trim, exists/default/
    cast_tuple/maybe helpers, map over lambdas, nested ModuleList holding None entries, namedtuple intermediates."""

    def __init__(self, num_tokens=30, dim=16, depth=2):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.attn_layers = AttentionLayers(dim, depth, heads=2, causal=True, use_rmsnorm=True, residual_attn=True,
                                           scale_residual=True, ff_glu=True, ff_mult=2, ff_swish=True,
                                           attn_talking_heads=True, attn_qk_norm=True, attn_num_mem_kv=2)
        self.to_logits = nn.Linear(dim, num_tokens)
        self.emb_scale = cast_tuple(dim ** -0.5, 1)[0]

    def forward(self, x, mask=None, return_attn=True):
        x = self.token_emb(x) * self.emb_scale
        x, intermediates = self.attn_layers(x, mask=mask, return_hiddens=True)
        out = self.to_logits(x)
        maybe_sum = maybe(lambda t: t.sum(dim=1))
        if return_attn:
            attn_maps = list(map(lambda t: t.post_softmax_attn, intermediates.attn_intermediates))
            return out, attn_maps, maybe_sum(mask)
        return out


def make_inputs():
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    return torch.randint(0, 30, (2, 6)), mask
