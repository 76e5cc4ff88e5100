import copy
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttrDict(dict):
    """omegaconf/easydict-like config: nested dicts with attribute access."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for k, v in self.items():
            if isinstance(v, dict) and not isinstance(v, AttrDict):
                self[k] = AttrDict(v)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)

    def __setattr__(self, name, value):
        self[name] = value


class EasyDict(dict):
    __getattr__ = dict.get
    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__


CFG = AttrDict({
    "model": {"dim": 16, "depth": 2, "norm": {"type": "LayerNorm", "eps": 1e-6}, "act": "silu"},
    "head": {"num_classes": 5, "dropout": 0.0, "bias": True},
    "loss": {"weights": {"ce": 1.0, "aux": 0.25}},
})


class Model(nn.Module):
    def __init__(self, cfg=CFG):
        super().__init__()
        self.cfg = copy.deepcopy(cfg)
        m = self.cfg.model
        norm_cfg = dict(m.norm)
        norm_type = norm_cfg.pop("type")
        self.stem = nn.Linear(8, m.dim)
        self.layers = nn.ModuleList([nn.Linear(m.dim, m.dim) for _ in range(m.depth)])
        self.norms = nn.ModuleList([getattr(nn, norm_type)(m.dim, **norm_cfg) for _ in range(m.depth)])
        self.head = nn.Linear(m.dim, self.cfg.head.num_classes, bias=self.cfg.head.bias)
        self.aux = nn.Linear(m.dim, 1)
        self.state = EasyDict(step=0, use_aux=True)

    def forward(self, x, y):
        act = getattr(F, self.cfg.model.act)
        h = self.stem(x)
        for layer, norm in zip(self.layers, self.norms):
            h = h + act(layer(norm(h)))
        logits = self.head(F.dropout(h, self.cfg.head.get("dropout", 0.0), self.training))
        w = self.cfg.loss.weights
        losses = {"ce": F.cross_entropy(logits, y) * w.ce}
        if self.state.use_aux and "aux" in w:
            losses["aux"] = self.aux(h).pow(2).mean() * w["aux"]
        if self.state.missing_key is None:
            losses["total"] = sum(losses.values())
        return logits, losses


def make_inputs():
    return torch.randn(4, 8), torch.tensor([0, 4, 2, 1])
