import torch
import torch.nn as nn

MODES = ("eval",)


class Model(nn.Module):
    """Mixed precision on CPU: autocast(bfloat16) block, then float32 head; set_grad_enabled toggle."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.fc1(x)
            hdt = h.dtype
        with torch.set_grad_enabled(False):
            s = h.float().sum()
        return self.fc2(h.float()), hdt, s


def make_inputs():
    return (torch.randn(3, 8),)
