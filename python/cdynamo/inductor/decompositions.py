"""The decomposition table the inductor backend traces with (make_fx(..., decomposition_table=table())).

Starts from torch._decomp's core ATen set and adds the composite ops that the C++ lowering
does not handle directly (normalisations, softmax, activations), so that the aten graph only
holds ops with a lowering or ops meant to run as extern calls (mm, convolution, ...).
"""
from __future__ import annotations

import functools

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

aten = torch.ops.aten

# Decomposed on top of the core set: the lowering builds them from reductions and pointwise
# math, which is what lets the scheduler fuse e.g. layer norm into one kernel.
_EXTRA = [
    aten._softmax,
    aten._log_softmax,
    aten._native_batch_norm_legit_no_training,
    # Training's functional batch norm (AOTAutograd's joint graph): statistics and the running
    # averages as reductions and pointwise math the scheduler fuses with the neighbours (as an
    # extern call it cost a statistics kernel and a normalisation kernel per layer).
    aten._native_batch_norm_legit_functional,
    aten.gelu,
    aten.hardtanh,
    aten.leaky_relu,
    aten.elu,
    aten.expand_copy,
    aten.narrow_copy,
    aten.repeat,
    aten.linalg_vector_norm,
    aten.masked_fill,
]

# Ops the core set would decompose but that have a direct lowering (or are better as one
# extern call): keep them as they are.
_KEEP = [
    aten.clamp_min,
    aten.clamp_max,
    aten.silu,
    aten.std,
    aten.std_mean,
    aten.var,
    aten.var_mean.default,
    aten.var_mean.dim,
    aten.all,
    aten.rsub,
    aten.squeeze,
    aten.transpose,
    aten.t,
    aten._unsafe_view,
    aten.baddbmm,
    aten.addcmul,
    aten.lerp,
    aten.floor_divide,
    aten.zeros_like,
    aten.unbind,
]

# Fused attention kernels beat anything composed from bmm and softmax: keep them as extern
# calls (looked up by name: the set differs between torch versions).
_KEEP_BY_NAME = [
    "scaled_dot_product_attention.default",
    "_scaled_dot_product_flash_attention_for_cpu.default",
    "_scaled_dot_product_flash_attention.default",
    "_scaled_dot_product_efficient_attention.default",
    "_scaled_dot_product_cudnn_attention.default",
]


def _overloads(ops):
    out = []
    for op in ops:
        if isinstance(op, torch._ops.OpOverloadPacket):
            out.extend(getattr(op, name) for name in op.overloads())
        else:
            out.append(op)
    return out


def _upcast(x):
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _normalize(x, dims, eps):
    """(x - mean) * rsqrt(var + eps) with two-pass statistics: two row reductions that the
    scheduler fuses with the normalising pointwise into one kernel."""
    mean = aten.mean.dim(x, dims, True)
    centered = x - mean
    var = aten.mean.dim(centered * centered, dims, True)
    rstd = aten.rsqrt(var + eps)
    return centered * rstd, mean, rstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    axis = input.dim() - len(normalized_shape)
    out, mean, rstd = _normalize(_upcast(input), list(range(axis, input.dim())), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    x = _upcast(input).reshape(N, group, -1)
    out, mean, rstd = _normalize(x, [2], eps)
    out = out.reshape(input.shape)
    channel_shape = [1, C] + [1] * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return (out.to(input.dtype), mean.reshape(N, group).to(input.dtype),
            rstd.reshape(N, group).to(input.dtype))


def _batch_norm_inference(input, weight, bias, running_mean, running_var, eps):
    channel_shape = [1, input.shape[1]] + [1] * (input.dim() - 2)
    x = _upcast(input)
    invstd = aten.rsqrt(running_var + eps)
    out = (x - running_mean.reshape(channel_shape)) * invstd.reshape(channel_shape)
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return out.to(input.dtype)


_torch_native_batch_norm = get_decompositions([aten.native_batch_norm]).get(aten.native_batch_norm.default)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    if training or running_mean is None or running_var is None:
        return _torch_native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    empty = input.new_zeros((0,))
    return _batch_norm_inference(input, weight, bias, running_mean, running_var, eps), empty, empty


def native_batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    empty = input.new_zeros((0,))
    return _batch_norm_inference(input, weight, bias, running_mean, running_var, eps), empty, empty


# Our own decompositions: written with aten ops that have lowerings (torch's versions of these
# go through torch._refs and leave prims ops such as prims.var in the graph).
_OWN = {
    aten.native_layer_norm.default: native_layer_norm,
    aten.native_group_norm.default: native_group_norm,
    aten.native_batch_norm.default: native_batch_norm,
    aten._native_batch_norm_legit_no_training.default: native_batch_norm_no_training,
}


@functools.lru_cache(maxsize=1)
def _table():
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(_EXTRA))
    for op in _overloads(_KEEP):
        table.pop(op, None)
    for name in _KEEP_BY_NAME:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(aten, packet, None), overload, None)
        if op is not None:
            table.pop(op, None)
    table.update(_OWN)
    return table


def table() -> dict:
    """A fresh copy of the decomposition table (callers may edit their copy)."""
    return dict(_table())
