import math
from typing import Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


def window_partition(x, window_size: Tuple[int, int]):
    B, H, W, C = x.shape
    torch._assert(H % window_size[0] == 0, f"height ({H}) must be divisible by window ({window_size[0]})")
    torch._assert(W % window_size[1] == 0, "")
    x = x.view(B, H // window_size[0], window_size[0], W // window_size[1], window_size[1], C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size[0], window_size[1], C)


def window_reverse(windows, window_size: Tuple[int, int], img_size: Tuple[int, int]):
    H, W = img_size
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size[0], W // window_size[1], window_size[0], window_size[1], C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


def grid_partition(x, grid_size: Tuple[int, int]):
    B, H, W, C = x.shape
    torch._assert(H % grid_size[0] == 0, f"height {H} must be divisible by grid {grid_size[0]}")
    x = x.view(B, grid_size[0], H // grid_size[0], grid_size[1], W // grid_size[1], C)
    return x.permute(0, 2, 4, 1, 3, 5).contiguous().view(-1, grid_size[0], grid_size[1], C)


def grid_reverse(windows, grid_size: Tuple[int, int], img_size: Tuple[int, int]):
    H, W = img_size
    C = windows.shape[-1]
    x = windows.view(-1, H // grid_size[0], W // grid_size[1], grid_size[0], grid_size[1], C)
    return x.permute(0, 3, 1, 4, 2, 5).contiguous().view(-1, H, W, C)


def gen_relative_position_index(window_size: Tuple[int, int]) -> torch.Tensor:
    coords = torch.stack(torch.meshgrid([torch.arange(window_size[0]), torch.arange(window_size[1])], indexing="ij"))
    coords_flatten = torch.flatten(coords, 1)
    relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
    relative_coords = relative_coords.permute(1, 2, 0).contiguous()
    relative_coords[:, :, 0] += window_size[0] - 1
    relative_coords[:, :, 1] += window_size[1] - 1
    relative_coords[:, :, 0] *= 2 * window_size[1] - 1
    return relative_coords.sum(-1)


class RelPosBias(nn.Module):
    def __init__(self, window_size, num_heads):
        super().__init__()
        self.window_size = window_size
        self.window_area = window_size[0] * window_size[1]
        self.relative_position_bias_table = nn.Parameter(
            torch.randn((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads) * 0.02)
        self.register_buffer("relative_position_index", gen_relative_position_index(window_size).view(-1), persistent=False)

    def get_bias(self) -> torch.Tensor:
        bias = self.relative_position_bias_table[self.relative_position_index]
        bias = bias.view(self.window_area, self.window_area, -1)
        return bias.permute(2, 0, 1).contiguous()

    def forward(self, attn, shared_rel_pos=None):
        return attn + self.get_bias()


class AttentionCl(nn.Module):
    def __init__(self, dim, dim_head=8, window_size=(4, 4)):
        super().__init__()
        self.num_heads = dim // dim_head
        self.dim_head = dim_head
        self.scale = dim_head ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.rel_pos = RelPosBias(window_size, self.num_heads)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B = x.shape[0]
        restore_shape = x.shape[:-1]
        q, k, v = self.qkv(x).view(B, -1, self.num_heads, self.dim_head * 3).transpose(1, 2).chunk(3, dim=3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = self.rel_pos(attn)
        attn = attn.softmax(dim=-1)
        x = attn @ v
        x = x.transpose(1, 2).reshape(restore_shape + (-1,))
        return self.proj(x)


class PartitionAttentionCl(nn.Module):
    def __init__(self, dim, partition_type="block", partition_size=(4, 4)):
        super().__init__()
        self.partition_block = partition_type == "block"
        self.partition_size = partition_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = AttentionCl(dim, window_size=partition_size)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def _partition_attn(self, x):
        img_size = x.shape[1:3]
        if self.partition_block:
            partitioned = window_partition(x, self.partition_size)
        else:
            partitioned = grid_partition(x, self.partition_size)
        partitioned = self.attn(partitioned)
        if self.partition_block:
            return window_reverse(partitioned, self.partition_size, img_size)
        return grid_reverse(partitioned, self.partition_size, img_size)

    def forward(self, x):
        x = x + self._partition_attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MbConvLite(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pre_norm = nn.BatchNorm2d(dim)
        self.conv1 = nn.Conv2d(dim, dim * 2, 1)
        self.dw = nn.Conv2d(dim * 2, dim * 2, 3, padding=1, groups=dim * 2)
        self.se_reduce = nn.Conv2d(dim * 2, dim // 2, 1)
        self.se_expand = nn.Conv2d(dim // 2, dim * 2, 1)
        self.conv2 = nn.Conv2d(dim * 2, dim, 1)

    def forward(self, x):
        shortcut = x
        x = F.gelu(self.dw(self.conv1(self.pre_norm(x))))
        s = x.mean((2, 3), keepdim=True)
        x = x * self.se_expand(F.silu(self.se_reduce(s))).sigmoid()
        return self.conv2(x) + shortcut


class Model(nn.Module):
    """timm MaxxVit block: MBConv -> block (window) attention -> grid attention, channels-last."""

    def __init__(self, dim=16, depth=2):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 3, 2, 1)
        blocks = []
        for _ in range(depth):
            blocks += [MbConvLite(dim), PartitionAttentionCl(dim, "block"), PartitionAttentionCl(dim, "grid")]
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        x = self.stem(x)
        for blk in self.blocks:
            if isinstance(blk, PartitionAttentionCl):
                x = blk(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            else:
                x = blk(x)
        return self.head(x.mean((2, 3)))


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
