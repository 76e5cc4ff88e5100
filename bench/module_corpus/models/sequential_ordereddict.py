from collections import OrderedDict
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(3, 8, 3, padding=1)),
            ("bn1", nn.BatchNorm2d(8)),
            ("relu1", nn.ReLU(inplace=True)),
            ("pool", nn.MaxPool2d(2)),
            ("conv2", nn.Conv2d(8, 8, 3, padding=1)),
            ("relu2", nn.ReLU(inplace=True)),
        ]))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * 4 * 4, 5))

    def forward(self, x):
        stem = self.features[:3](x)
        rest = self.features[3:](stem)
        w_norm = self.features.conv1.weight.norm()
        logits = self.classifier(rest)
        return logits, w_norm, len(self.features)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
