from typing import Collection, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


def ifnone(a, b):
    return b if a is None else a


def listify(p=None, q=None):
    if p is None:
        p = []
    elif isinstance(p, str):
        p = [p]
    elif not isinstance(p, Collection):
        p = [p]
    n = q if type(q) == int else len(p) if q is None else len(q)
    if len(p) == 1:
        p = p * n
    assert len(p) == n, f'List len mismatch ({len(p)} vs {n})'
    return list(p)


def emb_sz_rule(n_cat: int) -> int:
    return min(600, round(1.6 * n_cat ** 0.56))


def embedding(ni: int, nf: int) -> nn.Module:
    emb = nn.Embedding(ni, nf)
    with torch.no_grad():
        emb.weight.normal_().fmod_(2).mul_(0.01)
    return emb


def bn_drop_lin(n_in: int, n_out: int, bn: bool = True, p: float = 0., actn: Optional[nn.Module] = None):
    layers = [nn.BatchNorm1d(n_in)] if bn else []
    if p != 0:
        layers.append(nn.Dropout(p))
    layers.append(nn.Linear(n_in, n_out))
    if actn is not None:
        layers.append(actn)
    return layers


class Model(nn.Module):
    """fastai v1 TabularModel: embeddings for categorical columns, BN on continuous, bn_drop_lin MLP."""

    def __init__(self, cardinalities=(5, 11, 3), n_cont=4, out_sz=2, layers=(16, 8), ps=None, emb_drop=0.1,
                 y_range=(0., 5.), use_bn=True, bn_final=False):
        super().__init__()
        emb_szs = [(c, emb_sz_rule(c)) for c in cardinalities]
        ps = ifnone(ps, [0] * len(layers))
        ps = listify(ps, layers)
        self.embeds = nn.ModuleList([embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(emb_drop)
        self.bn_cont = nn.BatchNorm1d(n_cont)
        n_emb = sum(e.embedding_dim for e in self.embeds)
        self.n_emb, self.n_cont, self.y_range = n_emb, n_cont, y_range
        sizes = self.get_sizes(layers, out_sz)
        actns = [nn.ReLU(inplace=True) for _ in range(len(sizes) - 2)] + [None]
        layers = []
        for i, (n_in, n_out, dp, act) in enumerate(zip(sizes[:-1], sizes[1:], [0.] + ps, actns)):
            layers += bn_drop_lin(n_in, n_out, bn=use_bn and i != 0, p=dp, actn=act)
        if bn_final:
            layers.append(nn.BatchNorm1d(sizes[-1]))
        self.layers = nn.Sequential(*layers)
        with torch.no_grad():
            self.bn_cont.running_mean.uniform_(-0.5, 0.5)
            self.bn_cont.running_var.uniform_(0.5, 2.0)

    def get_sizes(self, layers, out_sz):
        return [self.n_emb + self.n_cont] + list(layers) + [out_sz]

    def forward(self, x_cat, x_cont):
        if self.n_emb != 0:
            x = [e(x_cat[:, i]) for i, e in enumerate(self.embeds)]
            x = torch.cat(x, 1)
            x = self.emb_drop(x)
        if self.n_cont != 0:
            x_cont = self.bn_cont(x_cont)
            x = torch.cat([x, x_cont], 1) if self.n_emb != 0 else x_cont
        x = self.layers(x)
        if self.y_range is not None:
            x = (self.y_range[1] - self.y_range[0]) * torch.sigmoid(x) + self.y_range[0]
        return x


def make_inputs():
    x_cat = torch.stack([torch.randint(0, c, (6,)) for c in (5, 11, 3)], 1)
    return x_cat, torch.randn(6, 4)
