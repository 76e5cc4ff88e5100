import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-sample processing driven by lengths.tolist() and .item() scalars."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, lengths):
        outs = []
        for i, L in enumerate(lengths.tolist()):
            outs.append(self.fc(x[i, :L]).mean(0))
        out = torch.stack(outs)
        m = out.abs().max().item()
        if m > 0.5:
            out = out / m
        n_pos = int((out > 0).sum().item())
        return out * n_pos, float(out.mean().item())


def make_inputs():
    return torch.randn(3, 6, 4), torch.tensor([6, 2, 4])
