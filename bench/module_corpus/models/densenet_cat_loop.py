import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseLayer(nn.Module):
    def __init__(self, in_ch, growth):
        super().__init__()
        self.norm = nn.BatchNorm2d(in_ch)
        self.conv = nn.Conv2d(in_ch, growth, 3, padding=1, bias=False)

    def forward(self, prev_features):
        concated = torch.cat(prev_features, 1)
        return self.conv(F.relu(self.norm(concated)))


class Model(nn.Module):
    def __init__(self, in_ch=4, growth=3, n=3):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(in_ch + i * growth, growth) for i in range(n)])

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            new = layer(features)
            features.append(new)
        out = torch.cat(features, 1)
        pooled = []
        for i in range(out.size(1)):
            pooled.append(out[:, i].amax(dim=(1, 2)))
        return out, torch.stack(pooled, 1)


def make_inputs():
    return (torch.randn(2, 4, 5, 5),)
