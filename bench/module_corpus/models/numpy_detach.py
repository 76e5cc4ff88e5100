import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes statistics on the side in numpy (common in research code) and feeds them back."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        arr = h.detach().cpu().numpy()
        mean = np.mean(arr, axis=0, keepdims=True)
        std = np.std(arr, axis=0, keepdims=True) + 1e-5
        norm = torch.from_numpy(((arr - mean) / std).astype(np.float32))
        idx = np.argsort(arr[:, 0])
        reordered = h[torch.as_tensor(idx)]
        return h + norm, reordered


def make_inputs():
    return (torch.randn(6, 8),)
