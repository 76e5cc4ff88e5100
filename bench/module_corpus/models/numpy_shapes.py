import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    """Flatten head whose sizes and scaling are computed with numpy on shapes."""

    def __init__(self, in_shape=(4, 6, 6)):
        super().__init__()
        self.in_features = int(np.prod(in_shape))
        self.fc = nn.Linear(self.in_features, 10)
        self.scale = 1.0 / np.sqrt(self.in_features)

    def forward(self, x):
        b = x.shape[0]
        flat = x.view(b, int(np.prod(x.shape[1:])))
        n_groups = int(np.ceil(x.shape[1] / 3))
        y = self.fc(flat) * self.scale
        pad = np.maximum(0, 12 - y.shape[1])
        y = torch.nn.functional.pad(y, (0, int(pad)))
        return y * n_groups + float(np.log(x.shape[-1]))


def make_inputs():
    return (torch.randn(3, 4, 6, 6),)
