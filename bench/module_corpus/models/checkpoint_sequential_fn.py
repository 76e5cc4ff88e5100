import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x, scale: float = 1.0, mask=None):
        h = self.fc2(F.gelu(self.fc1(self.ln(x))))
        if mask is not None:
            h = h * mask
        return x + scale * h


class Model(nn.Module):
    """Activation checkpointing as memory-hungry repos write it, called unconditionally: checkpoint_sequential over an
    nn.Sequential in segments, checkpoint of a closure with keyword args and use_reentrant=False, a custom
    create_custom_forward wrapper (Megatron/diffusers idiom) returning a tuple."""

    def __init__(self, d=8):
        super().__init__()
        self.seq = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.Tanh()) for _ in range(4)])
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.out = nn.Linear(d, 3)
        self.gradient_checkpointing = True

    def forward(self, x, mask):
        x = checkpoint_sequential(self.seq, 2, x, use_reentrant=False)

        def create_custom_forward(module, return_dict=None):
            def custom_forward(*inputs):
                if return_dict is not None:
                    return module(*inputs, return_dict=return_dict)
                return (module(*inputs),)
            return custom_forward

        for i, blk in enumerate(self.blocks):
            if self.gradient_checkpointing:
                if i % 2 == 0:
                    x = checkpoint(blk, x, scale=0.5, mask=mask, use_reentrant=False)
                else:
                    x = checkpoint(create_custom_forward(blk), x, use_reentrant=False, preserve_rng_state=False)[0]
            else:
                x = blk(x)
        return self.out(x)


def make_inputs():
    return torch.randn(2, 4, 8), torch.tensor([[[1.0]], [[0.0]]])
