import argparse
from collections.abc import MutableMapping
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttributeDict(dict):
    """lightning.fabric.utilities.data.AttributeDict"""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as exp:
            raise AttributeError(f'Missing attribute "{key}"') from exp

    def __setattr__(self, key, val):
        self[key] = val

    def __delattr__(self, item):
        if item not in self:
            raise KeyError(item)
        del self[item]


class HyperparametersMixin:
    __jit_unused_properties__ = ["hparams", "hparams_initial"]

    def save_hyperparameters(self, *args, ignore=None, **kwargs):
        hp = {}
        for a in args:
            if isinstance(a, argparse.Namespace):
                hp.update(vars(a))
            elif isinstance(a, MutableMapping):
                hp.update(a)
        hp.update(kwargs)
        for k in list(ignore or []):
            hp.pop(k, None)
        object.__setattr__(self, "_hparams", AttributeDict(hp))

    @property
    def hparams(self):
        if not hasattr(self, "_hparams"):
            object.__setattr__(self, "_hparams", AttributeDict())
        return self._hparams


class LitModule(HyperparametersMixin, nn.Module):
    """A LightningModule-like base whose __getattr__ falls back from parameters/buffers/submodules to hparams,
    so hyperparameters read as self.lr / self.dropout; aliases map legacy attribute names to new modules."""

    _aliases = {"classifier": "head", "encoder": "backbone"}

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            aliases = type(self)._aliases
            if name in aliases:
                return getattr(self, aliases[name])
            hp = self.__dict__.get("_hparams")
            if hp is not None and name in hp:
                return hp[name]
            raise


class Model(LitModule):
    def __init__(self):
        super().__init__()
        args = argparse.Namespace(hidden=16, num_classes=4, dropout=0.1, label_smoothing=0.1, use_residual=True,
                                  act="gelu", temperature=2.0)
        self.save_hyperparameters(args, dict(pool="mean"), ignore=["unused"], norm="layer")
        self.backbone = nn.Sequential(nn.Linear(8, self.hidden), nn.GELU() if self.act == "gelu" else nn.ReLU())
        self.blocks = nn.ModuleList([nn.Linear(self.hidden, self.hidden) for _ in range(2)])
        self.norm_layer = nn.LayerNorm(self.hidden) if self.hparams.norm == "layer" else nn.Identity()
        self.head = nn.Linear(self.hidden, self.hparams["num_classes"])
        self.register_buffer("class_weights", torch.linspace(0.5, 1.5, self.num_classes))

    def forward(self, x, y=None):
        h = self.encoder(x)
        for blk in self.blocks:
            out = F.dropout(F.gelu(blk(h)), p=self.dropout, training=self.training)
            h = h + out if self.use_residual else out
        h = self.norm_layer(h)
        h = h.mean(1) if self.pool == "mean" else h.max(1)[0]
        logits = self.classifier(h) / self.temperature
        out = {"logits": logits}
        if y is not None:
            out["loss"] = F.cross_entropy(logits, y, weight=self.class_weights, label_smoothing=self.hparams.label_smoothing)
        return out


def make_inputs():
    return torch.randn(3, 5, 8), torch.tensor([0, 2, 3])
