import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class RetNetRelPos(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, embed_dim // num_heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(num_heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)

    def forward(self, slen, activate_recurrent=False, chunkwise_recurrent=False):
        if activate_recurrent:
            sin = torch.sin(self.angle * (slen - 1))
            cos = torch.cos(self.angle * (slen - 1))
            retention_rel_pos = ((sin, cos), self.decay.exp())
        else:
            index = torch.arange(slen).to(self.decay)
            sin = torch.sin(index[:, None] * self.angle[None, :])
            cos = torch.cos(index[:, None] * self.angle[None, :])
            mask = torch.tril(torch.ones(slen, slen).to(self.decay))
            mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
            mask = torch.exp(mask * self.decay[:, None, None])
            mask = torch.nan_to_num(mask)
            mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
            retention_rel_pos = ((sin, cos), mask)
        return retention_rel_pos


class MultiScaleRetention(nn.Module):
    def __init__(self, embed_dim, value_dim, num_heads, gate_fn="swish"):
        super().__init__()
        self.embed_dim = embed_dim
        self.value_dim = value_dim
        self.num_heads = num_heads
        self.head_dim = value_dim // num_heads
        self.key_dim = embed_dim // num_heads
        self.scaling = self.key_dim ** -0.5
        self.gate_fn = getattr(F, {"swish": "silu"}.get(gate_fn, gate_fn))
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, value_dim, bias=False)
        self.g_proj = nn.Linear(embed_dim, value_dim, bias=False)
        self.out_proj = nn.Linear(value_dim, embed_dim, bias=False)
        self.group_norm = nn.LayerNorm(self.head_dim, eps=1e-6, elementwise_affine=False)

    def parallel_forward(self, qr, kr, v, mask):
        bsz, tgt_len, embed_dim = v.size()
        vr = v.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        qk_mat = qr @ kr.transpose(-1, -2)
        qk_mat = qk_mat * mask
        qk_mat = qk_mat / qk_mat.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1)
        output = torch.matmul(qk_mat, vr)
        return output.transpose(1, 2)

    def recurrent_forward(self, qr, kr, v, decay, incremental_state):
        bsz = v.size(0)
        v = v.view(bsz, self.num_heads, self.head_dim, 1)
        kv = kr * v
        if "prev_key_value" in incremental_state:
            prev_kv = incremental_state["prev_key_value"]
            prev_scale = incremental_state["scale"]
            scale = prev_scale * decay + 1
            kv = prev_kv * (prev_scale.sqrt() * decay / scale.sqrt()).view(self.num_heads, 1, 1) + kv / scale.sqrt().view(self.num_heads, 1, 1)
        else:
            scale = torch.ones_like(decay)
        incremental_state["prev_key_value"] = kv
        incremental_state["scale"] = scale
        output = torch.sum(qr * kv, dim=3)
        return output

    def forward(self, x, rel_pos, incremental_state=None):
        bsz, tgt_len, _ = x.size()
        (sin, cos), inner_mask = rel_pos
        q, k, v, g = self.q_proj(x), self.k_proj(x), self.v_proj(x), self.g_proj(x)
        k = k * self.scaling
        q = q.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        qr = theta_shift(q, sin, cos)
        kr = theta_shift(k, sin, cos)
        if incremental_state is not None:
            output = self.recurrent_forward(qr, kr, v, inner_mask, incremental_state)
        else:
            output = self.parallel_forward(qr, kr, v, inner_mask)
        output = self.group_norm(output).reshape(bsz, tgt_len, self.head_dim * self.num_heads)
        output = self.gate_fn(g) * output
        return self.out_proj(output)


class Model(nn.Module):
    """torchscale RetNet: parallel retention vs. recurrent retention with an incremental_state dict."""

    def __init__(self, embed_dim=16, num_heads=2, layers=2):
        super().__init__()
        self.retnet_rel_pos = RetNetRelPos(embed_dim, num_heads)
        self.layers = nn.ModuleList([MultiScaleRetention(embed_dim, embed_dim * 2, num_heads) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(embed_dim) for _ in range(layers)])

    def forward(self, x):
        slen = x.size(1)
        rel_pos = self.retnet_rel_pos(slen)
        h = x
        for norm, layer in zip(self.norms, self.layers):
            h = h + layer(norm(h), rel_pos)
        # recurrent mode on the same input: step by step with per-layer state dicts
        states = [{} for _ in self.layers]
        outs = []
        for t in range(slen):
            step_pos = self.retnet_rel_pos(t + 1, activate_recurrent=True)
            ht = x[:, t:t + 1]
            for i, (norm, layer) in enumerate(zip(self.norms, self.layers)):
                ht = ht + layer(norm(ht), step_pos, incremental_state=states[i])
            outs.append(ht)
        return h, torch.cat(outs, 1)


def make_inputs():
    return (torch.randn(2, 5, 16),)
