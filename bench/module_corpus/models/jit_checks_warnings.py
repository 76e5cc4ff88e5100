import math
import warnings
from typing import List, Optional
import torch
import torch.nn as nn
import torch.nn.functional as F


def _assert(condition: bool, message: str):
    torch._assert(condition, message)


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=16, strict_img_size=True):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.patch_size = (patch_size, patch_size)
        self.strict_img_size = strict_img_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        B, C, H, W = x.shape
        if self.strict_img_size:
            _assert(H == self.img_size[0], f"Input height ({H}) doesn't match model ({self.img_size[0]}).")
            _assert(W == self.img_size[1], f"Input width ({W}) doesn't match model ({self.img_size[1]}).")
        elif not torch.jit.is_scripting():
            if H % self.patch_size[0] != 0:
                warnings.warn(f"Input height ({H}) should be divisible by patch size ({self.patch_size[0]}).")
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, num_heads=2, fused_attn=True):
        super().__init__()
        assert dim % num_heads == 0, "dim should be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = fused_attn
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attn_mask: Optional[torch.Tensor] = None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn and not torch.jit.is_tracing():
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            if attn_mask is not None:
                attn = attn + attn_mask
            x = attn.softmax(dim=-1) @ v
        return self.proj(x.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, dim, drop_path=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop_prob = drop_path
        self.grad_checkpointing = True

    def forward(self, x):
        x = x + drop_path(self.attn(self.norm1(x)), self.drop_prob, self.training)
        x = x + drop_path(self.mlp(self.norm2(x)), self.drop_prob, self.training)
        return x


class Model(nn.Module):
    """timm-style ViT pieces guarded by torch.jit.is_scripting/is_tracing, torch.compiler.is_compiling and warnings."""

    def __init__(self, dim=16, depth=2, num_classes=3):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=dim, strict_img_size=False)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)
        self.grad_checkpointing = False
        self.global_pool = "token"

    @torch.jit.ignore
    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        if x.shape[1] != self.pos_embed.shape[1]:
            warnings.warn(f"pos_embed has {self.pos_embed.shape[1]} positions but sequence has {x.shape[1]}; interpolating")
            pos = F.interpolate(self.pos_embed[:, 1:].transpose(1, 2), size=x.shape[1] - 1, mode="linear")
            x = x + torch.cat([self.pos_embed[:, :1], pos.transpose(1, 2)], 1)
        else:
            x = x + self.pos_embed
        for blk in self.blocks:
            if self.grad_checkpointing and not torch.jit.is_scripting():
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return x

    def forward(self, x):
        if torch.compiler.is_compiling():
            scale = 1.0
        else:
            scale = 1.0
        x = self.forward_features(x)
        assert x.ndim == 3, f"expected (B, N, C) but got {tuple(x.shape)}"
        x = x[:, 0] if self.global_pool == "token" else x.mean(1)
        if torch.jit.is_scripting() or torch._C._get_tracing_state():
            return self.head(x)
        return self.head(x) * scale


def make_inputs():
    return (torch.randn(2, 3, 16, 20),)
