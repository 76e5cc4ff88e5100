from dataclasses import dataclass, field
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Qwen2Config:
    vocab_size: int = 50
    hidden_size: int = 16
    intermediate_size: int = 32
    num_hidden_layers: int = 3
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    rope_theta: float = 10000.0
    use_sliding_window: bool = True
    sliding_window: int = 4
    max_window_layers: int = 1
    layer_types: List[str] = field(default_factory=list)

    def __post_init__(self):
        if not self.layer_types:
            self.layer_types = ["sliding_attention" if self.use_sliding_window and i >= self.max_window_layers
                                else "full_attention" for i in range(self.num_hidden_layers)]


class Qwen2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def build_mask(seq_len, padding_mask, sliding_window: Optional[int], dtype):
    cache_position = torch.arange(seq_len)
    kv_idx = torch.arange(seq_len)
    allowed = kv_idx[None, :] <= cache_position[:, None]
    if sliding_window is not None:
        allowed = allowed & (cache_position[:, None] - kv_idx[None, :] < sliding_window)
    allowed = allowed[None, None] & padding_mask[:, None, None, :].bool()
    min_dtype = torch.finfo(dtype).min
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, min_dtype)
    return mask


class Qwen2Attention(nn.Module):
    def __init__(self, config: Qwen2Config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=False)
        self.sliding_window = config.sliding_window if config.layer_types[layer_idx] == "sliding_attention" else None

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        q = q * cos.unsqueeze(1) + rotate_half(q) * sin.unsqueeze(1)
        k = k * cos.unsqueeze(1) + rotate_half(k) * sin.unsqueeze(1)
        k = k.repeat_interleave(self.num_key_value_groups, dim=1)
        v = v.repeat_interleave(self.num_key_value_groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, scale=self.scaling)
        return self.o_proj(out.transpose(1, 2).reshape(*input_shape, -1))


class Qwen2DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.attention_type = config.layer_types[layer_idx]
        self.self_attn = Qwen2Attention(config, layer_idx)
        self.mlp_gate = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.mlp_up = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.mlp_down = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.input_layernorm = Qwen2RMSNorm(config.hidden_size)
        self.post_attention_layernorm = Qwen2RMSNorm(config.hidden_size)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        h = hidden_states + self.self_attn(self.input_layernorm(hidden_states), position_embeddings, attention_mask)
        x = self.post_attention_layernorm(h)
        return h + self.mlp_down(F.silu(self.mlp_gate(x)) * self.mlp_up(x))


class Model(nn.Module):
    """HF Qwen2: per-layer attention type, mask mapping {"full_attention", "sliding_attention"} built in forward."""

    def __init__(self, config: Qwen2Config = Qwen2Config()):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Qwen2DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = Qwen2RMSNorm(config.hidden_size)
        head_dim = config.hidden_size // config.num_attention_heads
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.has_sliding_layers = "sliding_attention" in self.config.layer_types

    def forward(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids)
        seq_len = input_ids.shape[1]
        position_ids = torch.arange(seq_len).unsqueeze(0)
        freqs = (self.inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        position_embeddings = (emb.cos(), emb.sin())
        causal_mask_mapping = {"full_attention": build_mask(seq_len, attention_mask, None, inputs_embeds.dtype)}
        if self.has_sliding_layers:
            causal_mask_mapping["sliding_attention"] = build_mask(seq_len, attention_mask, self.config.sliding_window,
                                                                  inputs_embeds.dtype)
        hidden_states = inputs_embeds
        for decoder_layer in self.layers[: self.config.num_hidden_layers]:
            hidden_states = decoder_layer(hidden_states, position_embeddings,
                                          causal_mask_mapping[decoder_layer.attention_type])
        return self.norm(hidden_states)


def make_inputs():
    return torch.randint(0, 50, (2, 9)), torch.ones(2, 9, dtype=torch.long)
