import enum
from functools import partial
import torch
import torch.nn as nn


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=None, scale_by_keep=True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class PoolMode(enum.Enum):
    CLS = "cls"
    MEAN = "mean"


class Block(nn.Module):
    def __init__(self, dim, drop_path=0.0, init_values=None, norm_layer=nn.LayerNorm, act_layer=nn.GELU):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.ls1 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
        self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), act_layer(), nn.Linear(dim * 2, dim))
        self.ls2 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
        self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.drop_path1(self.ls1(self.attn(y, y, y, need_weights=False)[0]))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class Model(nn.Module):
    def __init__(self, dim=16, depth=3, drop_path_rate=0.2, pool=PoolMode.CLS):
        super().__init__()
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 6, dim) * 0.02)
        self.patch = nn.Linear(12, dim)
        self.blocks = nn.Sequential(*[Block(dim, dpr[i], init_values=1e-1 if i else None, norm_layer=norm_layer)
                                      for i in range(depth)])
        self.norm = norm_layer(dim)
        self.pool = pool
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        x = self.patch(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        if self.pool is PoolMode.MEAN:
            x = x[:, 1:].mean(dim=1)
        elif self.pool == PoolMode.CLS:
            x = x[:, 0]
        return self.head(x), self.pool.value


def make_inputs():
    return (torch.randn(2, 5, 12),)
