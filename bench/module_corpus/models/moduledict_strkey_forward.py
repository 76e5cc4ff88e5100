import torch
import torch.nn as nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}


def build_mlp(dims, act="relu", norm=None):
    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            if norm == "ln":
                layers.append(nn.LayerNorm(b))
            layers.append(ACTIVATIONS[act]())
    return nn.Sequential(*layers)


class Model(nn.Module):
    """Multi-dataset model: encoder and head chosen per call by string keys passed to forward()."""

    def __init__(self):
        super().__init__()
        self.encoders = nn.ModuleDict({
            "image": build_mlp([12, 16, 16], act="gelu", norm="ln"),
            "text": build_mlp([10, 16], act="tanh"),
        })
        self.heads = nn.ModuleDict({
            "cls": build_mlp([16, 8, 3], act="silu"),
            "reg": nn.Linear(16, 1),
        })
        self.post = {"cls": lambda t: t.log_softmax(-1), "reg": torch.sigmoid}

    def forward(self, x, modality: str = "image", task: str = "cls", return_features: bool = False):
        if modality not in self.encoders:
            raise KeyError(f"unknown modality {modality}")
        feats = self.encoders[modality](x)
        out = self.post[task](self.heads[task](feats))
        result = {f"{modality}/{task}": out}
        if return_features:
            result["features"] = feats
        other = [k for k in self.heads.keys() if k != task]
        for k in other:
            result[f"{modality}/{k}"] = self.heads[k](feats.detach())
        return result


def make_inputs():
    return (torch.randn(3, 10),), {"modality": "text", "task": "reg", "return_features": True}
