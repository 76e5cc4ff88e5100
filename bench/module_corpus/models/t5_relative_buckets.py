import math
import copy
import torch
from torch import nn


class T5Config:
    def __init__(self, **kwargs):
        self.d_model = kwargs.pop("d_model", 16)
        self.d_kv = kwargs.pop("d_kv", 8)
        self.num_heads = kwargs.pop("num_heads", 2)
        self.relative_attention_num_buckets = kwargs.pop("relative_attention_num_buckets", 8)
        self.relative_attention_max_distance = kwargs.pop("relative_attention_max_distance", 16)
        self.is_decoder = kwargs.pop("is_decoder", False)
        self.dropout_rate = kwargs.pop("dropout_rate", 0.1)
        for key, value in kwargs.items():
            setattr(self, key, value)


class T5Attention(nn.Module):
    def __init__(self, config: T5Config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config.relative_attention_num_buckets
        self.relative_attention_max_distance = config.relative_attention_max_distance
        self.d_model = config.d_model
        self.key_value_proj_dim = config.d_kv
        self.n_heads = config.num_heads
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None):
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values

    def forward(self, hidden_states, mask=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        real_seq_length = seq_length
        key_length = real_seq_length

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(hidden_states))
        key_states = shape(self.k(hidden_states))
        value_states = shape(self.v(hidden_states))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, real_seq_length, key_length), device=scores.device, dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(real_seq_length, key_length, device=scores.device)
            if mask is not None:
                position_bias = position_bias + mask
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        attn_output = self.o(attn_output)
        return (attn_output, position_bias)


class Model(nn.Module):
    """HF T5Attention: bucketed relative positions (log buckets, torch.where), bias computed by the first layer and
    passed on, extended attention mask with finfo.min, config object with kwargs.pop, nested shape/unshape closures."""

    def __init__(self):
        super().__init__()
        enc = T5Config(d_model=16, num_heads=2, d_kv=8)
        dec = copy.deepcopy(enc)
        dec.is_decoder = True
        self.enc_layers = nn.ModuleList([T5Attention(enc, has_relative_attention_bias=bool(i == 0)) for i in range(2)])
        self.dec_layers = nn.ModuleList([T5Attention(dec, has_relative_attention_bias=bool(i == 0)) for i in range(2)])

    def forward(self, x, attention_mask):
        extended = attention_mask[:, None, None, :].to(dtype=x.dtype)
        extended = (1.0 - extended) * torch.finfo(x.dtype).min
        position_bias = None
        h = x
        for layer in self.enc_layers:
            out, position_bias = layer(h, mask=extended, position_bias=position_bias)
            h = h + out
        pb = None
        g = x
        for layer in self.dec_layers:
            out, pb = layer(g, position_bias=pb)
            g = g + out
        return h, g, position_bias


def make_inputs():
    m = torch.ones(2, 20, dtype=torch.long)
    m[1, 15:] = 0
    return torch.randn(2, 20, 16), m
