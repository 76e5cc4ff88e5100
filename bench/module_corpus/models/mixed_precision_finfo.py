import torch
import torch.nn as nn
import torch.nn.functional as F


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class Model(nn.Module):
    """HF-style dtype juggling: bf16 matmul, fp32 softmax, finfo(dtype).min masks, get_default_dtype, type_as."""

    def __init__(self, d=16, heads=2, vocab=20):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.norm = T5LayerNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.heads = heads
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.compute_dtype = torch.bfloat16

    def get_extended_attention_mask(self, attention_mask, dtype=None):
        if dtype is None:
            dtype = self.dtype
        extended = attention_mask[:, None, None, :]
        extended = extended.to(dtype=dtype)
        extended = (1.0 - extended) * torch.finfo(dtype).min
        return extended

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) * torch.tensor(self.emb.embedding_dim ** 0.5, dtype=self.dtype)
        x = self.norm(h)
        B, T, C = x.shape
        xc = x.to(self.compute_dtype)
        q = F.linear(xc, self.q.weight.to(self.compute_dtype)).view(B, T, self.heads, -1).transpose(1, 2)
        k = F.linear(xc, self.k.weight.to(self.compute_dtype)).view(B, T, self.heads, -1).transpose(1, 2)
        v = self.v(x).view(B, T, self.heads, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)).float()
        scores = scores + self.get_extended_attention_mask(attention_mask, scores.dtype)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
        attn = F.softmax(scores, dim=-1, dtype=torch.float32).type_as(v)
        out = self.o((attn @ v).transpose(1, 2).reshape(B, T, C))
        h = h + out
        logits = self.lm_head(h).to(torch.get_default_dtype())
        big = torch.iinfo(input_ids.dtype).max
        ids64 = input_ids.to(torch.float64).clamp(max=big)
        half_logits = logits.half().float()
        return logits, half_logits, ids64.sum(), q.dtype == torch.bfloat16


def make_inputs():
    return torch.randint(0, 20, (2, 5)), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
