import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedConv2d(nn.Conv2d):
    """PixelCNN masked convolution as in countless repos: mask buffer A/B built in __init__ with
    fill_ / slicing, and `self.weight.data *= self.mask` in forward before super(MaskedConv2d, self).forward(x)."""

    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)
        assert mask_type in {'A', 'B'}
        self.register_buffer('mask', self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)


class GatedActivation(nn.Module):
    def forward(self, x):
        x, y = x.chunk(2, dim=1)
        return F.tanh(x) * F.sigmoid(y)


class Model(nn.Module):
    def __init__(self, fm=8, n_layers=3, levels=4):
        super(Model, self).__init__()
        layers = [MaskedConv2d('A', 1, fm, 5, 1, 2, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True)]
        for _ in range(n_layers - 1):
            layers += [MaskedConv2d('B', fm, 2 * fm, 3, 1, 1, bias=False), nn.BatchNorm2d(2 * fm), GatedActivation()]
        layers += [nn.Conv2d(fm, levels, 1)]
        self.net = nn.Sequential(*layers)
        self.levels = levels

    def forward(self, x):
        target = (x[:, 0] * (self.levels - 1)).long()
        logits = self.net(x)
        loss = F.cross_entropy(logits, target)
        nll_bits = loss / torch.log(torch.tensor(2.0))
        return logits, nll_bits, self.net[0].weight.data.abs().sum()


def make_inputs():
    return (torch.rand(2, 1, 6, 6),)
