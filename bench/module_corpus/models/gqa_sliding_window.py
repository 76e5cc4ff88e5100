import math
from dataclasses import dataclass
from typing import Optional, Tuple
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 16
    n_layers: int = 2
    head_dim: int = 4
    hidden_dim: int = 32
    n_heads: int = 4
    n_kv_heads: int = 2
    norm_eps: float = 1e-5
    sliding_window: Optional[int] = 3
    rope_theta: float = 10000.0


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        device_type = x.device.type
        device_type = device_type if isinstance(device_type, str) and device_type != "mps" else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos()
            sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def sliding_window_causal_mask(seqlen: int, window: Optional[int], dtype, device) -> torch.Tensor:
    tensor = torch.full((seqlen, seqlen), fill_value=1, device=device)
    mask = torch.tril(tensor, diagonal=0).to(dtype)
    if window is not None:
        mask = torch.triu(mask, diagonal=-window + 1)
    mask = torch.log(mask)
    return mask


class Attention(nn.Module):
    def __init__(self, args: ModelArgs, layer_idx: int):
        super().__init__()
        self.args = args
        self.layer_idx = layer_idx
        self.n_heads: int = args.n_heads
        self.n_kv_heads: int = args.n_kv_heads
        self.repeats = self.n_heads // self.n_kv_heads
        self.scale = args.head_dim ** -0.5
        self.wq = nn.Linear(args.dim, args.n_heads * args.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * args.head_dim, args.dim, bias=False)

    def forward(self, x: torch.Tensor, position_embeddings: Tuple[torch.Tensor, torch.Tensor],
                mask: Optional[torch.Tensor], use_sdpa: bool = True) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.args.head_dim).transpose(1, 2)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.args.head_dim).transpose(1, 2)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.args.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        xq, xk = apply_rotary_pos_emb(xq, xk, cos, sin)
        if use_sdpa:
            out = F.scaled_dot_product_attention(xq, xk, xv, attn_mask=mask, enable_gqa=True)
        else:
            key = repeat_kv(xk, self.repeats)
            value = repeat_kv(xv, self.repeats)
            scores = torch.matmul(xq, key.transpose(2, 3)) * self.scale
            if mask is not None:
                scores += mask[None, None, ...]
            scores = scores.float()
            scores = nn.functional.softmax(scores, dim=-1).type_as(xq)
            out = torch.matmul(scores, value)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class Model(nn.Module):
    """Mistral-style GQA (repeat_kv expand+reshape and SDPA enable_gqa), sliding-window causal mask via log(tril/triu),
    dataclass args, RotaryEmbedding under @torch.no_grad and autocast(enabled=False)."""

    def __init__(self, args: Optional[ModelArgs] = None):
        super().__init__()
        self.args = args if args is not None else ModelArgs()
        self.rotary_emb = RotaryEmbedding(self.args.head_dim, self.args.rope_theta)
        self.layers = nn.ModuleList([Attention(self.args, i) for i in range(self.args.n_layers)])
        self.norm = nn.RMSNorm(self.args.dim, eps=self.args.norm_eps)

    def forward(self, x: torch.Tensor, positions: Optional[torch.Tensor] = None):
        bsz, seqlen, _ = x.shape
        if positions is None:
            positions = torch.arange(seqlen, device=x.device).unsqueeze(0).expand(bsz, -1)
        mask: Optional[torch.Tensor] = None
        if seqlen > 1:
            mask = sliding_window_causal_mask(seqlen, self.args.sliding_window, x.dtype, x.device)
        pe = self.rotary_emb(x, positions)
        for i, layer in enumerate(self.layers):
            x = x + layer(self.norm(x), pe, mask, use_sdpa=(i % 2 == 0))
        return x


def make_inputs():
    return (torch.randn(2, 6, 16),)
