import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Custom init via self.apply in __init__ only; forward adds an L2 penalty over named_parameters."""

    def __init__(self, in_dim=10, hidden=(16, 12), n_out=3, weight_decay=1e-3):
        super().__init__()
        dims = (in_dim,) + tuple(hidden)
        self.body = nn.Sequential()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            self.body.add_module(f"fc{i}", nn.Linear(a, b))
            self.body.add_module(f"bn{i}", nn.BatchNorm1d(b))
            self.body.add_module(f"act{i}", nn.ReLU(inplace=True))
        self.emb = nn.Embedding(7, dims[-1])
        self.out = nn.Linear(dims[-1], n_out)
        self.log_temp = nn.Parameter(torch.empty(1))
        self.weight_decay = weight_decay
        self.apply(self._init_weights)
        nn.init.constant_(self.log_temp, math.log(1 / 0.07))
        with torch.no_grad():
            self.out.weight.mul_(0.1)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(m.weight)
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(m.bias, -bound, bound)
        elif isinstance(m, (nn.BatchNorm1d, nn.LayerNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.trunc_normal_(m.weight, std=0.02, a=-0.04, b=0.04)

    def forward(self, x, cat):
        h = self.body(x) + self.emb(cat)
        logits = self.out(h) * self.log_temp.exp().clamp(max=100)
        reg = sum(p.pow(2).sum() for name, p in self.named_parameters() if name.endswith("weight") and p.dim() > 1)
        n_params = sum(p.numel() for p in self.parameters() if p.requires_grad)
        return logits, self.weight_decay * reg, n_params


def make_inputs():
    return torch.randn(4, 10), torch.tensor([0, 3, 6, 2])
