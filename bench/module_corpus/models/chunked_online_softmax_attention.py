import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

EPSILON = 1e-10


def default(val, d):
    return val if val is not None else d


def summarize_qkv_chunk(q, k, v, mask, causal_mask):
    weight = torch.einsum('b h i d, b h j d -> b h i j', q, k)
    if mask is not None:
        weight = weight.masked_fill(~mask, -torch.finfo(weight.dtype).max)
    if causal_mask is not None:
        weight = weight.masked_fill(causal_mask, -torch.finfo(weight.dtype).max)
    weight_max = weight.amax(dim=-1, keepdim=True).detach()
    weight = weight - weight_max
    exp_weight = weight.exp()
    weighted_value = torch.einsum('b h i j, b h j d -> b h i d', exp_weight, v)
    return exp_weight.sum(dim=-1), weighted_value, weight_max.squeeze(-1)


def memory_efficient_attention(q, k, v, mask=None, causal=False, q_bucket_size=2, k_bucket_size=3, eps=1e-8):
    """lucidrains/memory-efficient-attention-pytorch: chunked attention with running max merge."""
    scale = q.shape[-1] ** -0.5
    q = q * scale
    needs_backwards = q.requires_grad or k.requires_grad or v.requires_grad
    summarize_fn = summarize_qkv_chunk  # checkpointing only when training
    q_chunks = q.split(q_bucket_size, dim=-2)
    k_chunks = k.split(k_bucket_size, dim=-2)
    v_chunks = v.split(k_bucket_size, dim=-2)
    mask_chunks = mask.split(k_bucket_size, dim=-1) if mask is not None else ((None,) * len(k_chunks))
    if causal:
        i, j = q.shape[-2], k.shape[-2]
        causal_mask = torch.ones(i, j, device=q.device, dtype=torch.bool).triu(j - i + 1)
    out = []
    for q_index, q_chunk in enumerate(q_chunks):
        exp_weights = []
        weighted_values = []
        weight_maxes = []
        for k_index, (k_chunk, v_chunk, mask_chunk) in enumerate(zip(k_chunks, v_chunks, mask_chunks)):
            q_start_index = q_index * q_bucket_size
            k_start_index = k_index * k_bucket_size
            if causal and k_start_index > (q_start_index + q_chunk.shape[-2] - 1):
                continue
            causal_mask_chunk = causal_mask[q_start_index:(q_start_index + q_bucket_size),
                                            k_start_index:(k_start_index + k_bucket_size)] if causal else None
            exp_weight_chunk, weighted_value_chunk, weight_max_chunk = summarize_fn(
                q_chunk, k_chunk, v_chunk, mask_chunk, causal_mask_chunk)
            exp_weights.append(exp_weight_chunk)
            weighted_values.append(weighted_value_chunk)
            weight_maxes.append(weight_max_chunk)
        weight_maxes = torch.stack(weight_maxes, dim=-1)
        weighted_values = torch.stack(weighted_values, dim=-1)
        exp_weights = torch.stack(exp_weights, dim=-1)
        global_max = weight_maxes.amax(dim=-1, keepdim=True)
        renorm_factor = (weight_maxes - global_max).exp().detach()
        exp_weights = exp_weights * renorm_factor
        weighted_values = weighted_values * renorm_factor[..., None, :]
        all_values = weighted_values.sum(dim=-1)
        all_weights = exp_weights.sum(dim=-1)
        normalized_values = all_values / (all_weights[..., None] + eps)
        out.append(normalized_values)
    return torch.cat(out, dim=-2)


class Model(nn.Module):
    def __init__(self, dim=8, heads=2, dim_head=4, causal=True, q_bucket_size=2, k_bucket_size=3):
        super().__init__()
        self.heads = heads
        self.causal = causal
        inner_dim = heads * dim_head
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)
        self.q_bucket_size = q_bucket_size
        self.k_bucket_size = k_bucket_size

    def forward(self, x, context=None, mask=None, q_bucket_size=None, k_bucket_size=None):
        q_bucket_size = default(q_bucket_size, self.q_bucket_size)
        k_bucket_size = default(k_bucket_size, self.k_bucket_size)
        h = self.heads
        context = default(context, x)
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = map(lambda t: t.unflatten(-1, (h, -1)).transpose(1, 2), (q, k, v))
        attn_fn = partial(memory_efficient_attention, causal=self.causal)
        out = attn_fn(q, k, v, mask=mask, q_bucket_size=q_bucket_size, k_bucket_size=k_bucket_size)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        out = out.transpose(1, 2).flatten(2)
        return self.to_out(out), (out - ref.transpose(1, 2).flatten(2)).abs().max()


def make_inputs():
    return (torch.randn(2, 7, 8),)
