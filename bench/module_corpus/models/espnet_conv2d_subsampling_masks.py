import math
import torch
import torch.nn as nn


def make_pad_mask(lengths, xs=None, length_dim=-1, maxlen=None):
    if length_dim == 0:
        raise ValueError("length_dim cannot be 0: {}".format(length_dim))
    if not isinstance(lengths, list):
        lengths = lengths.long().tolist()
    bs = int(len(lengths))
    if maxlen is None:
        if xs is None:
            maxlen = int(max(lengths))
        else:
            maxlen = xs.size(length_dim)
    else:
        assert xs is None
        assert maxlen >= int(max(lengths))
    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand
    if xs is not None:
        assert xs.size(0) == bs, (xs.size(0), bs)
        if length_dim < 0:
            length_dim = xs.dim() + length_dim
        ind = tuple(slice(None) if i in (0, length_dim) else None for i in range(xs.dim()))
        mask = mask[ind].expand_as(xs).to(xs.device)
    return mask


def make_non_pad_mask(lengths, xs=None, length_dim=-1):
    return ~make_pad_mask(lengths, xs, length_dim)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout_rate, max_len=50, reverse=False):
        super(PositionalEncoding, self).__init__()
        self.d_model = d_model
        self.reverse = reverse
        self.xscale = math.sqrt(self.d_model)
        self.dropout = nn.Dropout(p=dropout_rate)
        self.pe = None
        self.extend_pe(torch.tensor(0.0).expand(1, max_len))

    def extend_pe(self, x):
        if self.pe is not None:
            if self.pe.size(1) >= x.size(1):
                if self.pe.dtype != x.dtype or self.pe.device != x.device:
                    self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                return
        pe = torch.zeros(x.size(1), self.d_model)
        if self.reverse:
            position = torch.arange(x.size(1) - 1, -1, -1.0, dtype=torch.float32).unsqueeze(1)
        else:
            position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / self.d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.pe = pe.to(device=x.device, dtype=x.dtype)

    def forward(self, x):
        self.extend_pe(x)
        x = x * self.xscale + self.pe[:, : x.size(1)]
        return self.dropout(x)


class Conv2dSubsampling(nn.Module):
    def __init__(self, idim, odim, dropout_rate, pos_enc=None):
        super(Conv2dSubsampling, self).__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, odim, 3, 2), nn.ReLU(), nn.Conv2d(odim, odim, 3, 2), nn.ReLU())
        self.out = nn.Sequential(nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim),
                                 pos_enc if pos_enc is not None else PositionalEncoding(odim, dropout_rate))

    def forward(self, x, x_mask):
        x = x.unsqueeze(1)  # (b, c, t, f)
        x = self.conv(x)
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        if x_mask is None:
            return x, None
        return x, x_mask[:, :, :-2:2][:, :, :-2:2]

    def __getitem__(self, key):
        if key != -1:
            raise NotImplementedError("Support only `-1` (for `reset_parameters`).")
        return self.out[key]


class EncoderLayer(nn.Module):
    def __init__(self, size, n_head=2, normalize_before=True, concat_after=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(size, n_head, batch_first=True)
        self.feed_forward = nn.Sequential(nn.Linear(size, size * 2), nn.ReLU(), nn.Linear(size * 2, size))
        self.norm1 = nn.LayerNorm(size, eps=1e-12)
        self.norm2 = nn.LayerNorm(size, eps=1e-12)
        self.size = size
        self.normalize_before = normalize_before
        self.concat_after = concat_after
        if self.concat_after:
            self.concat_linear = nn.Linear(size + size, size)

    def forward(self, x, mask, cache=None):
        residual = x
        if self.normalize_before:
            x = self.norm1(x)
        if cache is None:
            x_q = x
        else:
            assert cache.shape == (x.shape[0], x.shape[1] - 1, self.size)
            x_q = x[:, -1:, :]
            residual = residual[:, -1:, :]
            mask = None if mask is None else mask[:, -1:, :]
        att, _ = self.self_attn(x_q, x, x, key_padding_mask=~mask[:, 0, :])
        if self.concat_after:
            x = residual + self.concat_linear(torch.cat((x, att), dim=-1))
        else:
            x = residual + att
        if not self.normalize_before:
            x = self.norm1(x)
        residual = x
        if self.normalize_before:
            x = self.norm2(x)
        x = residual + self.feed_forward(x)
        if not self.normalize_before:
            x = self.norm2(x)
        if cache is not None:
            x = torch.cat([cache, x], dim=1)
        return x, mask


class Model(nn.Module):
    """ESPnet Transformer encoder front: make_pad_mask from ilens (tolist, tuple-of-slices indexing, expand_as),
    masks (B, 1, T), Conv2dSubsampling shrinking the mask with [:, :, :-2:2] twice, PositionalEncoding extend_pe,
    masked mean-pooled CTC-like projection, olens from the mask sum."""

    def __init__(self, idim=12, adim=16, odim=6):
        super().__init__()
        self.embed = Conv2dSubsampling(idim, adim, 0.1)
        self.encoders = nn.ModuleList([EncoderLayer(adim), EncoderLayer(adim, concat_after=True, normalize_before=False)])
        self.after_norm = nn.LayerNorm(adim, eps=1e-12)
        self.ctc_lo = nn.Linear(adim, odim)

    def forward(self, xs_pad, ilens):
        masks = (~make_pad_mask(ilens)[:, None, :]).to(xs_pad.device)
        feat_mask = make_non_pad_mask(ilens, xs_pad, 1)
        xs_pad = xs_pad.masked_fill(~feat_mask, 0.0)
        xs_pad, masks = self.embed(xs_pad, masks)
        for layer in self.encoders:
            xs_pad, masks = layer(xs_pad, masks)
        xs_pad = self.after_norm(xs_pad)
        olens = masks.squeeze(1).sum(1)
        logp = self.ctc_lo(xs_pad).log_softmax(-1)
        return logp, olens, masks


def make_inputs():
    return torch.randn(3, 23, 12), torch.tensor([23, 18, 11])
