import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(timesteps, dim, max_period=10000, flip_sin_to_cos=True, downscale_freq_shift=0):
    """guided-diffusion / diffusers style sinusoidal timestep embedding."""
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"
    half_dim = dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    if dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, time_embed_dim, act_fn="silu"):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = nn.SiLU() if act_fn == "silu" else nn.Mish()
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, sample):
        return self.linear_2(self.act(self.linear_1(sample)))


class ResBlock(nn.Module):
    def __init__(self, ch, temb_ch, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_ch, 2 * ch)
        self.norm2 = nn.GroupNorm(groups, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        scale, shift = self.time_emb_proj(F.silu(temb))[:, :, None, None].chunk(2, dim=1)
        h = self.norm2(h) * (1 + scale) + shift
        return x + self.conv2(F.silu(h))


class Model(nn.Module):
    """Conditional denoiser with classifier-free guidance done inside forward."""

    def __init__(self, ch=8, num_classes=5, cond_drop_prob=0.1):
        super().__init__()
        self.ch = ch
        self.time_embedding = TimestepEmbedding(ch, 4 * ch)
        self.class_embedding = nn.Embedding(num_classes + 1, 4 * ch)  # last index = null class
        self.null_class = num_classes
        self.cond_drop_prob = cond_drop_prob
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        self.blocks = nn.ModuleList([ResBlock(ch, 4 * ch) for _ in range(2)])
        self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

    def denoise(self, x, t, y):
        temb = self.time_embedding(timestep_embedding(t, self.ch))
        temb = temb + self.class_embedding(y)
        h = self.conv_in(x)
        for blk in self.blocks:
            h = blk(h, temb)
        return self.conv_out(h)

    def forward(self, x, timesteps, class_labels, guidance_scale: float = 3.0):
        if not torch.is_tensor(timesteps):
            timesteps = torch.tensor([timesteps], dtype=torch.long, device=x.device)
        elif torch.is_tensor(timesteps) and len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(x.device)
        timesteps = timesteps.expand(x.shape[0])
        do_cfg = guidance_scale > 1.0
        if do_cfg:
            x_in = torch.cat([x] * 2)
            t_in = torch.cat([timesteps] * 2)
            y_in = torch.cat([class_labels, torch.full_like(class_labels, self.null_class)])
            eps = self.denoise(x_in, t_in, y_in)
            eps_cond, eps_uncond = eps.chunk(2)
            eps = eps_uncond + guidance_scale * (eps_cond - eps_uncond)
        else:
            eps = self.denoise(x, timesteps, class_labels)
        return eps


def make_inputs():
    return (torch.randn(2, 3, 8, 8), torch.tensor(17), torch.tensor([1, 3])), {"guidance_scale": 4.5}


def make_inputs_seq():
    x = torch.randn(2, 3, 8, 8)
    return [((x, torch.tensor(17), torch.tensor([1, 3])), {"guidance_scale": 4.5}),
            ((x, 5, torch.tensor([0, 2])), {"guidance_scale": 1.0}),
            ((x, torch.tensor([3, 9]), torch.tensor([1, 1])), {"guidance_scale": 7.0})]
