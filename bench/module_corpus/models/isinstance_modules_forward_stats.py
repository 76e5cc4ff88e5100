import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    """Walks self.modules() in forward with isinstance checks (conv weight standardisation applied on the fly,
    a count of Conv2d / Linear layers and an L2 penalty over weights whose name ends with 'weight')."""

    def __init__(self, weight_decay=1e-3):
        super(Net, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, 3), nn.BatchNorm2d(6), nn.ReLU(),
            nn.Conv2d(6, 6, 3), nn.BatchNorm2d(6), nn.ReLU(),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(6 * 4 * 4, 10))
        self.weight_decay = weight_decay

    def regularization(self):
        reg = 0.0
        for name, param in self.named_parameters():
            if name.endswith("weight") and param.dim() > 1:
                reg = reg + torch.sum(param ** 2)
        return self.weight_decay * reg

    def forward(self, x):
        n_conv = 0
        n_lin = 0
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n_conv += 1
            elif isinstance(m, (nn.Linear, nn.Bilinear)):
                n_lin += 1
        for layer in self.features:
            if isinstance(layer, nn.Conv2d):
                w = layer.weight
                w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
                x = F.conv2d(x, w, layer.bias, layer.stride, layer.padding)
            else:
                x = layer(x)
        logits = self.classifier(x)
        return logits, self.regularization(), n_conv * 10 + n_lin


class Model(Net):
    pass


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
