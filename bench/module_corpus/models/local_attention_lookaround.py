import math
import torch
from torch import nn, einsum
import torch.nn.functional as F
from operator import mul
from functools import reduce

TOKEN_SELF_ATTN_VALUE = -5e4


def exists(val):
    return val is not None


def default(value, d):
    return d if not exists(value) else value


def to(t):
    return {'device': t.device, 'dtype': t.dtype}


def max_neg_value(tensor):
    return -torch.finfo(tensor.dtype).max


def pad_to_multiple(tensor, multiple, dim=-1, value=0):
    seqlen = tensor.shape[dim]
    m = seqlen / multiple
    if m.is_integer():
        return False, tensor
    remainder = math.ceil(m) * multiple - seqlen
    pad_offset = (0,) * (-1 - dim) * 2
    return True, F.pad(tensor, (*pad_offset, 0, remainder), value=value)


def look_around(x, backward=1, forward=0, pad_value=-1, dim=2):
    t = x.shape[1]
    dims = (len(x.shape) - dim) * (0, 0)
    padded_x = F.pad(x, (*dims, backward, forward), value=pad_value)
    tensors = [padded_x[:, ind:(ind + t), ...] for ind in range(forward + backward + 1)]
    return torch.cat(tensors, dim=dim)


class LocalAttention(nn.Module):
    def __init__(self, window_size, causal=False, look_backward=1, look_forward=None, dropout=0., autopad=False,
                 exact_windowsize=False, pad_value: int = -1):
        super().__init__()
        look_forward = default(look_forward, 0 if causal else 1)
        assert not (causal and look_forward > 0), 'you cannot look forward if causal'
        self.window_size = window_size
        self.autopad = autopad
        self.exact_windowsize = exact_windowsize
        self.causal = causal
        self.look_backward = look_backward
        self.look_forward = look_forward
        self.pad_value = pad_value
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None, input_mask=None, window_size=None):
        mask = default(mask, input_mask)
        shape, autopad, pad_value, window_size, causal, look_backward, look_forward = \
            q.shape, self.autopad, -1, default(window_size, self.window_size), self.causal, self.look_backward, self.look_forward
        (q, packed_shape), (k, _), (v, _) = map(lambda t: (t.reshape(-1, *t.shape[-2:]), t.shape[:-2]), (q, k, v))
        if autopad:
            orig_seq_len = q.shape[1]
            (needed_pad, q), (_, k), (_, v) = map(lambda t: pad_to_multiple(t, self.window_size, dim=-2), (q, k, v))
        b, n, dim_head, device, dtype = *q.shape, q.device, q.dtype
        scale = dim_head ** -0.5
        assert (n % window_size) == 0, f'sequence length {n} must be divisible by window size {window_size} for local attention'
        windows = n // window_size
        seq = torch.arange(n, device=device)
        b_t = seq.reshape(1, windows, window_size)
        bq, bk, bv = map(lambda t: t.reshape(b, windows, window_size, -1), (q, k, v))
        bq = bq * scale
        look_around_kwargs = dict(backward=look_backward, forward=look_forward, pad_value=pad_value)
        bk = look_around(bk, **look_around_kwargs)
        bv = look_around(bv, **look_around_kwargs)
        bq_t = b_t
        bq_k = look_around(b_t, **look_around_kwargs)
        bq_t = bq_t[..., :, None]
        bq_k = bq_k[..., None, :]
        sim = einsum('b h i e, b h j e -> b h i j', bq, bk)
        mask_value = max_neg_value(sim)
        if causal:
            causal_mask = bq_t < bq_k
            if self.exact_windowsize:
                max_causal_window_size = (self.window_size * self.look_backward)
                causal_mask = causal_mask | (bq_t > (bq_k + max_causal_window_size))
            sim = sim.masked_fill(causal_mask, mask_value)
            del causal_mask
        if not causal and self.exact_windowsize:
            max_backward_window_size = (self.window_size * self.look_backward)
            max_forward_window_size = (self.window_size * self.look_forward)
            window_mask = ((bq_k - max_forward_window_size) > bq_t) | (bq_t > (bq_k + max_backward_window_size)) | (bq_k == pad_value)
            sim = sim.masked_fill(window_mask, mask_value)
        else:
            pad_mask = bq_k == pad_value
            sim = sim.masked_fill(pad_mask, mask_value)
            del pad_mask
        if exists(mask):
            batch = mask.shape[0]
            assert (b % batch) == 0
            h = b // mask.shape[0]
            if autopad:
                _, mask = pad_to_multiple(mask, window_size, dim=-1, value=False)
            mask = mask.reshape(-1, windows, window_size)
            mask = look_around(mask, **{**look_around_kwargs, 'pad_value': False})
            mask = mask[:, :, None, :]
            mask = mask.repeat_interleave(h, dim=0)
            sim = sim.masked_fill(~mask, mask_value)
            del mask
        attn = sim.softmax(dim=-1)
        attn = self.dropout(attn)
        out = einsum('b h i j, b h j e -> b h i e', attn, bv)
        out = out.reshape(-1, n, out.shape[-1])
        if autopad:
            out = out[:, :orig_seq_len, :]
        out = out.reshape(*packed_shape, *out.shape[-2:])
        return out


class Model(nn.Module):
    """lucidrains/local-attention: look_around via pad+slices, autopad with float.is_integer, map over lambdas with
    tuple unpacking, dict unpack with override, spaced einsum strings, `del` of temporaries."""

    def __init__(self):
        super().__init__()
        self.causal = LocalAttention(window_size=2, causal=True, autopad=True, exact_windowsize=True)
        self.bidir = LocalAttention(window_size=3, causal=False, look_forward=1)
        self.proj = nn.Linear(8, 8)

    def forward(self, x, mask):
        q = k = v = self.proj(x)
        a = self.causal(q, k, v)
        b = self.bidir(q[:, :, :6], k[:, :, :6], v[:, :, :6], mask=mask)
        return a, b


def make_inputs():
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    return torch.randn(2, 2, 7, 8), mask
