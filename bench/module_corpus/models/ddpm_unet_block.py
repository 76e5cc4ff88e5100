import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half).to(timesteps.device)
    args = timesteps[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


def Normalize(c):
    return nn.GroupNorm(num_groups=4, num_channels=c, eps=1e-6, affine=True)


class ResBlock(nn.Module):
    def __init__(self, in_ch, out_ch, temb_ch, dropout=0.1):
        super().__init__()
        self.norm1 = Normalize(in_ch)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.temb_proj = nn.Linear(temb_ch, out_ch)
        self.norm2 = Normalize(out_ch)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = Normalize(c)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.proj = nn.Conv2d(c, c, 1)

    def forward(self, x):
        B, C, H, W = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(B, 3, C, H * W).unbind(1)
        w = torch.bmm(q.permute(0, 2, 1), k) * (int(C) ** (-0.5))
        w = F.softmax(w, dim=2)
        h = torch.bmm(v, w.permute(0, 2, 1)).reshape(B, C, H, W)
        return x + self.proj(h)


class Model(nn.Module):
    def __init__(self, ch=8, ch_mult=(1, 2), in_ch=3):
        super().__init__()
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, ch * 4), nn.SiLU(), nn.Linear(ch * 4, ch * 4))
        self.conv_in = nn.Conv2d(in_ch, ch, 3, padding=1)
        self.down = nn.ModuleList()
        chans = [ch]
        cur = ch
        for i, m in enumerate(ch_mult):
            self.down.append(ResBlock(cur, ch * m, ch * 4))
            cur = ch * m
            chans.append(cur)
        self.mid_attn = AttnBlock(cur)
        self.downsample = nn.Conv2d(cur, cur, 3, stride=2, padding=1)
        self.up = nn.ModuleList()
        for m in reversed(ch_mult):
            skip = chans.pop()
            self.up.append(ResBlock(cur + skip, ch * m, ch * 4))
            cur = ch * m
        self.out = nn.Sequential(Normalize(cur), nn.SiLU(), nn.Conv2d(cur, in_ch, 3, padding=1))

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.ch))
        h = self.conv_in(x)
        hs = [h]
        for block in self.down:
            h = block(h, temb)
            hs.append(h)
        h = self.downsample(h)
        h = self.mid_attn(h)
        h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        for block in self.up:
            h = block(torch.cat([h, hs.pop()], dim=1), temb)
        return self.out(h)


def make_inputs():
    return torch.randn(2, 3, 8, 8), torch.tensor([10, 500])
