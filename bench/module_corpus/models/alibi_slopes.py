import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = (2 ** (-2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    else:
        closest_power_of_2 = 2 ** math.floor(math.log2(n))
        return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2]


class AlibiAttention(nn.Module):
    """ALiBi (ofirpress/attention_with_linear_biases + BLOOM-style build_alibi_tensor computed in forward)."""

    def __init__(self, dim, n_heads, max_positions=64):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.slopes = torch.Tensor(get_slopes(n_heads))
        alibi = self.slopes.unsqueeze(1).unsqueeze(1) * torch.arange(max_positions).unsqueeze(0).unsqueeze(0).expand(n_heads, -1, -1)
        alibi = alibi.view(n_heads, 1, max_positions)
        self.register_buffer("alibi", alibi, persistent=False)

    def build_alibi_tensor(self, attention_mask, num_heads, dtype):
        batch_size, seq_length = attention_mask.shape
        closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
        base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), device=attention_mask.device,
                            dtype=torch.float32)
        powers = torch.arange(1, 1 + closest_power_of_2, device=attention_mask.device, dtype=torch.int32)
        slopes = torch.pow(base, powers)
        if closest_power_of_2 != num_heads:
            extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))),
                                      device=attention_mask.device, dtype=torch.float32)
            num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
            extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, device=attention_mask.device, dtype=torch.int32)
            slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
        arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
        alibi = slopes[..., None] * arange_tensor
        return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2).reshape(B * self.n_heads, T, self.head_dim)
        k = k.view(B, T, self.n_heads, self.head_dim).transpose(1, 2).reshape(B * self.n_heads, T, self.head_dim)
        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2).reshape(B * self.n_heads, T, self.head_dim)
        alibi = self.build_alibi_tensor(attention_mask, self.n_heads, x.dtype)
        scores = torch.baddbmm(alibi, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(self.head_dim))
        scores = scores + self.alibi[:, :, :T].repeat(B, 1, 1) * 0.0
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        scores = scores.masked_fill(causal, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        y = torch.bmm(attn, v).view(B, self.n_heads, T, self.head_dim).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class Model(nn.Module):
    def __init__(self, dim=24, heads=6):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.attn = AlibiAttention(dim, heads)

    def forward(self, x, attention_mask):
        return x + self.attn(self.ln(x), attention_mask)


def make_inputs():
    return torch.randn(2, 7, 24), torch.tensor([[1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1]])
