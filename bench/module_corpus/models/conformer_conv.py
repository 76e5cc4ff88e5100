import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Swish(nn.Module):
    def forward(self, x):
        return x * x.sigmoid()


class FeedForward(nn.Module):
    def __init__(self, d, mult=4, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d * mult), Swish(), nn.Dropout(dropout),
                                 nn.Linear(d * mult, d), nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class ConvModule(nn.Module):
    def __init__(self, d, kernel_size=7, causal=False):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.padding = (kernel_size - 1, 0) if causal else (kernel_size // 2, kernel_size // 2)
        self.dw = nn.Conv1d(d, d, kernel_size, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x, pad_mask=None):
        x = self.ln(x).transpose(1, 2)
        x = F.glu(self.pw1(x), dim=1)
        if pad_mask is not None:
            x = x.masked_fill(pad_mask.unsqueeze(1), 0.0)
        x = F.pad(x, self.padding)
        x = self.pw2(Swish()(self.bn(self.dw(x))))
        return x.transpose(1, 2)


class RelPositionalEncoding(nn.Module):
    def __init__(self, d, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d)
        pos = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2).float() * -(math.log(10000.0) / d))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)
        self.xscale = math.sqrt(d)

    def forward(self, x):
        return x * self.xscale + self.pe[:, : x.size(1)]


class ConformerBlock(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.ff1 = FeedForward(d)
        self.attn_ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.conv = ConvModule(d)
        self.ff2 = FeedForward(d)
        self.ln_out = nn.LayerNorm(d)

    def forward(self, x, pad_mask):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_ln(x)
        h, _ = self.attn(h, h, h, key_padding_mask=pad_mask, need_weights=False)
        x = x + h
        x = x + self.conv(x, pad_mask)
        x = x + 0.5 * self.ff2(x)
        return self.ln_out(x)


class Model(nn.Module):
    def __init__(self, n_mels=10, d=16, n_blocks=2, vocab=12):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU(), nn.Conv2d(4, 4, 3, stride=2), nn.ReLU())
        sub_f = ((n_mels - 1) // 2 - 1) // 2
        self.proj = nn.Linear(4 * sub_f, d)
        self.pos = RelPositionalEncoding(d)
        self.blocks = nn.ModuleList([ConformerBlock(d) for _ in range(n_blocks)])
        self.ctc = nn.Linear(d, vocab)

    def forward(self, feats, feat_lens):
        x = self.subsample(feats.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.proj(x.transpose(1, 2).contiguous().view(b, t, c * f))
        lens = ((feat_lens - 1) // 2 - 1) // 2
        pad_mask = torch.arange(t, device=x.device)[None, :] >= lens[:, None]
        x = self.pos(x)
        for blk in self.blocks:
            x = blk(x, pad_mask)
        return self.ctc(x).log_softmax(dim=-1), lens


def make_inputs():
    return torch.randn(2, 30, 10), torch.tensor([30, 22])
