import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import OrderedDict


class FeatureExtractor(nn.Module):
    """Runs a backbone child by child (for name, module in self.submodule._modules.items()) collecting the
    outputs whose names are in extracted_layers -- the classic 'get intermediate features' forum snippet."""

    def __init__(self, submodule, extracted_layers):
        super(FeatureExtractor, self).__init__()
        self.submodule = submodule
        self.extracted_layers = extracted_layers

    def forward(self, x):
        outputs = []
        for name, module in self.submodule._modules.items():
            if name == "fc":
                x = x.view(x.size(0), -1)
            x = module(x)
            if name in self.extracted_layers:
                outputs += [x]
        return outputs + [x]


class Backbone(nn.Module):
    def __init__(self):
        super(Backbone, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(OrderedDict([
            ("conv", nn.Conv2d(8, 8, 3, padding=1)),
            ("bn", nn.BatchNorm2d(8)),
            ("act", nn.ReLU()),
        ]))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.extractor = FeatureExtractor(Backbone(), ["bn1", "layer1"])

    def forward(self, x):
        feats = self.extractor(x)
        pooled = []
        for name, child in self.extractor.submodule.named_children():
            if isinstance(child, nn.BatchNorm2d):
                pooled.append(child.running_mean.sum() + child.weight.sum())
            elif child.__class__.__name__ == "Sequential":
                pooled.append(sum(p.sum() for p in child.parameters()))
        return feats, torch.stack(pooled)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
