import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.relu(self.fc(self.ln(x)))


class Model(nn.Module):
    """Activation checkpointing in training mode (memory-saving trick from LLM repos)."""

    def __init__(self, d=8, n=3):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.grad_checkpointing = True

    def forward(self, x):
        for blk in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return x


def make_inputs():
    return (torch.randn(2, 4, 8),)
