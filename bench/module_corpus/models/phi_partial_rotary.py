import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class PhiRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=64, base=10000):
        super().__init__()
        self.dim = dim
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float() / self.dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._set_cos_sin_cache(seq_len=8, device=self.inv_freq.device, dtype=torch.get_default_dtype())

    def _set_cos_sin_cache(self, seq_len, device, dtype):
        self.max_seq_len_cached = seq_len
        t = torch.arange(self.max_seq_len_cached, device=device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)

    def forward(self, x, seq_len=None):
        if seq_len > self.max_seq_len_cached:
            self._set_cos_sin_cache(seq_len=seq_len, device=x.device, dtype=x.dtype)
        return (self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids, unsqueeze_dim=1):
    cos = cos[position_ids].unsqueeze(unsqueeze_dim)
    sin = sin[position_ids].unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class PhiAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.partial_rotary_factor = config.partial_rotary_factor
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)
        self.k_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)
        self.v_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)
        self.dense = nn.Linear(self.num_heads * self.head_dim, self.hidden_size)
        self.qk_layernorm = config.qk_layernorm
        if self.qk_layernorm:
            self.q_layernorm = nn.LayerNorm(self.head_dim, eps=config.layer_norm_eps)
            self.k_layernorm = nn.LayerNorm(self.head_dim, eps=config.layer_norm_eps)
        self.rotary_emb = PhiRotaryEmbedding(int(self.partial_rotary_factor * self.head_dim))

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        if self.qk_layernorm:
            q = self.q_layernorm(q.view(bsz, q_len, self.num_heads, self.head_dim)).view(bsz, q_len, -1)
            k = self.k_layernorm(k.view(bsz, q_len, self.num_heads, self.head_dim)).view(bsz, q_len, -1)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        kv_seq_len = k.shape[-2]
        cos, sin = self.rotary_emb(v, seq_len=kv_seq_len)
        query_rot, query_pass = (q[..., : self.rotary_emb.dim], q[..., self.rotary_emb.dim:])
        key_rot, key_pass = (k[..., : self.rotary_emb.dim], k[..., self.rotary_emb.dim:])
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin, position_ids)
        q = torch.cat((query_rot, query_pass), dim=-1)
        k = torch.cat((key_rot, key_pass), dim=-1)
        attn_weights = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            if attention_mask.size() != (bsz, 1, q_len, kv_seq_len):
                raise ValueError(f"Attention mask should be of size {(bsz, 1, q_len, kv_seq_len)}, but is {attention_mask.size()}")
            attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(v.dtype)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).contiguous().reshape(bsz, q_len, self.hidden_size)
        return self.dense(attn_output)


class PhiDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.self_attn = PhiAttention(config, layer_idx=layer_idx)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_size, config.intermediate_size), NewGELUActivation(),
                                 nn.Linear(config.intermediate_size, config.hidden_size))
        self.input_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states, attention_mask=None, position_ids=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs = self.self_attn(hidden_states, attention_mask, position_ids)
        attn_outputs = self.resid_dropout(attn_outputs)
        feed_forward_hidden_states = self.resid_dropout(self.mlp(hidden_states))
        return attn_outputs + feed_forward_hidden_states + residual


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype):
    bsz, tgt_len = input_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    causal = mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)
    expanded = attention_mask[:, None, None, :].expand(bsz, 1, tgt_len, tgt_len).to(dtype)
    inverted = 1.0 - expanded
    inverted = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)
    return causal.masked_fill(inverted.bool(), torch.finfo(dtype).min)


class Model(nn.Module):
    """HF Phi: partial rotary (only the first rotary_dim channels), parallel attn+mlp residual, cache grow."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=40, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                      partial_rotary_factor=0.5, qk_layernorm=True, layer_norm_eps=1e-5,
                                      resid_pdrop=0.1, num_hidden_layers=2)
        self.embed_tokens = nn.Embedding(self.config.vocab_size, self.config.hidden_size)
        self.layers = nn.ModuleList([PhiDecoderLayer(self.config, i) for i in range(self.config.num_hidden_layers)])
        self.final_layernorm = nn.LayerNorm(self.config.hidden_size)
        self.lm_head = nn.Linear(self.config.hidden_size, self.config.vocab_size)

    def forward(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids)
        batch_size, seq_length = input_ids.shape[:2]
        position_ids = torch.arange(0, seq_length, dtype=torch.long).unsqueeze(0)
        mask4d = _prepare_4d_causal_attention_mask(attention_mask, (batch_size, seq_length), inputs_embeds.dtype)
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, attention_mask=mask4d, position_ids=position_ids)
        return self.lm_head(self.final_layernorm(hidden_states)).float()


def make_inputs():
    return torch.randint(0, 40, (2, 10)), torch.tensor([[1] * 10, [0, 0] + [1] * 8])
