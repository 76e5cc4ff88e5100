import torch
import torch.nn as nn
from torch.nn.utils import spectral_norm, weight_norm


class Model(nn.Module):
    """SN-GAN discriminator with spectral norm + a WaveNet-style weight-normed conv (old hook APIs)."""

    def __init__(self):
        super().__init__()
        self.conv = weight_norm(nn.Conv1d(2, 4, 3, padding=1))
        self.fc1 = spectral_norm(nn.Linear(4 * 6, 16))
        self.fc2 = spectral_norm(nn.Linear(16, 1), n_power_iterations=2)

    def forward(self, x):
        h = torch.nn.functional.leaky_relu(self.conv(x), 0.2)
        h = torch.nn.functional.leaky_relu(self.fc1(h.flatten(1)), 0.2)
        return self.fc2(h)


def make_inputs():
    return (torch.randn(3, 2, 6),)
