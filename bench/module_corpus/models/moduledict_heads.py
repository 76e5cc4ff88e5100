import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-task model: ModuleDict heads, ParameterList task weights, comprehensions."""

    TASKS = ("age", "gender", "emotion")

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 20), nn.ReLU())
        sizes = {"age": 1, "gender": 2, "emotion": 7}
        self.heads = nn.ModuleDict({t: nn.Linear(20, sizes[t]) for t in self.TASKS})
        self.task_logvars = nn.ParameterList([nn.Parameter(torch.zeros(1)) for _ in self.TASKS])
        self.temps = nn.ParameterDict({t: nn.Parameter(torch.ones(1) * (i + 1)) for i, t in enumerate(self.TASKS)})

    def forward(self, x):
        h = self.backbone(x)
        outs = {name: head(h) / self.temps[name] for name, head in self.heads.items()}
        weights = [torch.exp(-lv) for lv in self.task_logvars]
        total = sum(w * o.mean() for w, o in zip(weights, outs.values()))
        keys = sorted(outs.keys())
        return {k: outs[k] for k in keys}, total, len(self.heads)


def make_inputs():
    return (torch.randn(3, 12),)
