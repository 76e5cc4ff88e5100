import torch
import torch.nn as nn


class Model(nn.Module):
    """Deterministic noise injection: reseeds the global RNG inside forward (seen in GAN/diffusion repos)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.noise_strength = nn.Parameter(torch.tensor(0.1))

    def forward(self, x):
        torch.manual_seed(1234)
        noise = torch.randn_like(x)
        h = self.fc(x + noise * self.noise_strength)
        perm = torch.randperm(h.size(0))
        return h[perm], noise


def make_inputs():
    return (torch.randn(5, 8),)
