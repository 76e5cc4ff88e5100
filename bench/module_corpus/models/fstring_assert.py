import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels=(3, 8, 16)):
        super().__init__()
        self.num_stages = len(channels) - 1
        for i in range(self.num_stages):
            setattr(self, f"stage{i}", nn.Conv2d(channels[i], channels[i + 1], 3, stride=2, padding=1))
        self.expected_channels = channels[0]

    def forward(self, x):
        assert x.dim() == 4, f"Expected 4D input (got {x.dim()}D input)"
        assert x.shape[1] == self.expected_channels, "Expected {} channels, got {}".format(self.expected_channels, x.shape[1])
        B, C, H, W = x.shape
        outs = {}
        for i in range(self.num_stages):
            name = f"stage{i}"
            x = getattr(self, name)(x)
            key = "%s_%dx%d" % (name, x.shape[2], x.shape[3])
            outs[key] = x
        desc = f"{B}x{C}x{H}x{W} -> {tuple(x.shape)}"
        return outs, desc


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
