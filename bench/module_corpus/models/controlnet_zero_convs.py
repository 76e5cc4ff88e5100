import torch
import torch.nn as nn
import torch.nn.functional as F


def zero_module(module):
    for p in module.parameters():
        p.detach().zero_()
    return module


def conv_nd(dims, *args, **kwargs):
    if dims == 1:
        return nn.Conv1d(*args, **kwargs)
    elif dims == 2:
        return nn.Conv2d(*args, **kwargs)
    raise ValueError(f"unsupported dimensions: {dims}")


def timestep_embedding(timesteps, dim, max_period=10000):
    import math
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half).to(device=timesteps.device)
    args = timesteps[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


class TimestepEmbedSequential(nn.Sequential):
    def forward(self, x, emb, context=None):
        for layer in self:
            if isinstance(layer, ResBlock):
                x = layer(x, emb)
            else:
                x = layer(x)
        return x


class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, out_channels=None):
        super().__init__()
        self.out_channels = out_channels or channels
        self.in_layers = nn.Sequential(nn.GroupNorm(4, channels), nn.SiLU(), conv_nd(2, channels, self.out_channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, self.out_channels))
        self.out_layers = nn.Sequential(nn.GroupNorm(4, self.out_channels), nn.SiLU(),
                                        conv_nd(2, self.out_channels, self.out_channels, 3, padding=1))
        self.skip_connection = nn.Identity() if self.out_channels == channels else conv_nd(2, channels, self.out_channels, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        h = self.out_layers(h + emb_out)
        return self.skip_connection(x) + h


class Model(nn.Module):
    """lllyasviel ControlNet: hint block, zero convs per input block, middle block out, control scales."""

    def __init__(self, model_channels=8, hint_channels=3, channel_mult=(1, 2)):
        super().__init__()
        self.model_channels = model_channels
        time_embed_dim = model_channels * 4
        self.time_embed = nn.Sequential(nn.Linear(model_channels, time_embed_dim), nn.SiLU(), nn.Linear(time_embed_dim, time_embed_dim))
        self.input_blocks = nn.ModuleList([TimestepEmbedSequential(conv_nd(2, 4, model_channels, 3, padding=1))])
        self.zero_convs = nn.ModuleList([self.make_zero_conv(model_channels)])
        self.input_hint_block = TimestepEmbedSequential(
            conv_nd(2, hint_channels, 8, 3, padding=1), nn.SiLU(),
            conv_nd(2, 8, 8, 3, padding=1, stride=2), nn.SiLU(),
            zero_module(conv_nd(2, 8, model_channels, 3, padding=1)))
        ch = model_channels
        for level, mult in enumerate(channel_mult):
            layers = [ResBlock(ch, time_embed_dim, mult * model_channels)]
            ch = mult * model_channels
            self.input_blocks.append(TimestepEmbedSequential(*layers))
            self.zero_convs.append(self.make_zero_conv(ch))
            if level != len(channel_mult) - 1:
                self.input_blocks.append(TimestepEmbedSequential(conv_nd(2, ch, ch, 3, stride=2, padding=1)))
                self.zero_convs.append(self.make_zero_conv(ch))
        self.middle_block = TimestepEmbedSequential(ResBlock(ch, time_embed_dim), ResBlock(ch, time_embed_dim))
        self.middle_block_out = self.make_zero_conv(ch)
        # give the zero convs a small nonzero init so the test is not trivially zero
        with torch.no_grad():
            for zc in list(self.zero_convs) + [self.middle_block_out]:
                zc[0].weight.normal_(0, 0.01)
        self.control_scales = [1.0] * (len(self.zero_convs) + 1)

    def make_zero_conv(self, channels):
        return TimestepEmbedSequential(zero_module(conv_nd(2, channels, channels, 1, padding=0)))

    def forward(self, x, hint, timesteps, context=None, guess_mode=False):
        t_emb = timestep_embedding(timesteps, self.model_channels)
        emb = self.time_embed(t_emb)
        guided_hint = self.input_hint_block(hint, emb, context)
        outs = []
        h = x.type(torch.float32)
        for module, zero_conv in zip(self.input_blocks, self.zero_convs):
            if guided_hint is not None:
                h = module(h, emb, context)
                h += guided_hint
                guided_hint = None
            else:
                h = module(h, emb, context)
            outs.append(zero_conv(h, emb, context))
        h = self.middle_block(h, emb, context)
        outs.append(self.middle_block_out(h, emb, context))
        if guess_mode:
            scales = [0.825 ** float(12 - i) for i in range(13)][-len(outs):]
        else:
            scales = self.control_scales
        return [c * s for c, s in zip(outs, scales)]


def make_inputs():
    return (torch.randn(1, 4, 8, 8), torch.randn(1, 3, 16, 16), torch.tensor([10])), {"guess_mode": True}
