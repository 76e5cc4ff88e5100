import torch
import torch.nn as nn


class Model(nn.Module):
    """Accepts tensor, list or dict input; try/except for optional paths; getattr with defaults."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.norm = nn.LayerNorm(6)

    def _to_tensor(self, x):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, dict):
            return torch.cat([x[k] for k in sorted(x)], dim=0)
        if isinstance(x, (list, tuple)):
            return torch.cat(list(x), dim=0)
        raise TypeError(f"unsupported input type {type(x)}")

    def forward(self, x, extra=None):
        x = self._to_tensor(x)
        try:
            y = self.fc(x) @ extra
        except (RuntimeError, TypeError):
            y = self.fc(x)
        proj = getattr(self, "proj", None)
        if proj is not None:
            y = proj(y)
        act = getattr(nn.functional, "silu", nn.functional.relu)
        if isinstance(self.norm, (nn.LayerNorm, nn.GroupNorm)):
            y = self.norm(y)
        return act(y)


def make_inputs():
    return ([torch.randn(2, 6), torch.randn(3, 6)],), {"extra": torch.randn(5, 6)}
