import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Layers registered with setattr(self, 'fc%d' % i, ...) and looked up with getattr in forward, plus the
    activation picked by a string attribute and a dropout-per-layer list of floats."""

    def __init__(self, sizes, activation="relu", dropouts=None):
        super(MLP, self).__init__()
        self.n_layers = len(sizes) - 1
        self.activation = activation
        self.dropouts = dropouts or [0.0] * self.n_layers
        for i in range(self.n_layers):
            setattr(self, "fc%d" % i, nn.Linear(sizes[i], sizes[i + 1]))
            setattr(self, f"bn{i}", nn.BatchNorm1d(sizes[i + 1]))

    def forward(self, x):
        for i in range(self.n_layers):
            fc = getattr(self, "fc%d" % i)
            x = fc(x)
            if i < self.n_layers - 1:
                x = getattr(self, f"bn{i}")(x)
                x = getattr(F, self.activation)(x)
                if self.dropouts[i] > 0:
                    x = F.dropout(x, p=self.dropouts[i], training=self.training)
        return x


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.mlp = MLP([10, 16, 12, 4], activation="elu", dropouts=[0.1, 0.2, 0.0])
        self.heads = ["cls", "reg"]
        for h in self.heads:
            self.add_module("head_" + h, nn.Linear(4, 2 if h == "cls" else 1))

    def forward(self, x):
        feat = self.mlp(x)
        outs = {}
        for h in self.heads:
            outs[h] = getattr(self, "head_" + h)(feat)
        n_fc = len([n for n in dir(self.mlp) if n.startswith("fc") and n[2:].isdigit()])
        return outs, feat * n_fc
def make_inputs():
    return (torch.randn(5, 10),)
