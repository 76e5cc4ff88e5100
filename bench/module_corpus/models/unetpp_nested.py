import torch
import torch.nn as nn


class VGGBlock(nn.Module):
    def __init__(self, in_channels, middle_channels, out_channels):
        super().__init__()
        self.relu = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(in_channels, middle_channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(middle_channels)
        self.conv2 = nn.Conv2d(middle_channels, out_channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)))


class Model(nn.Module):
    """UNet++ (4uiiurz1/pytorch-nested-unet) with nested skips kept in a dict keyed 'x{i}_{j}', deep supervision."""

    def __init__(self, num_classes=2, input_channels=3, deep_supervision=True, depth=3):
        super().__init__()
        nb_filter = [4, 8, 12, 16]
        self.depth = depth
        self.deep_supervision = deep_supervision
        self.pool = nn.MaxPool2d(2, 2)
        self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
        self.blocks = nn.ModuleDict()
        for i in range(depth + 1):
            for j in range(depth + 1 - i):
                if j == 0:
                    cin = input_channels if i == 0 else nb_filter[i - 1]
                else:
                    cin = nb_filter[i] * j + nb_filter[i + 1]
                self.blocks[f"conv{i}_{j}"] = VGGBlock(cin, nb_filter[i], nb_filter[i])
        if self.deep_supervision:
            self.finals = nn.ModuleList([nn.Conv2d(nb_filter[0], num_classes, 1) for _ in range(depth)])
        else:
            self.final = nn.Conv2d(nb_filter[0], num_classes, 1)

    def forward(self, input):
        xs = {}
        for i in range(self.depth + 1):
            prev = input if i == 0 else self.pool(xs[f"x{i - 1}_0"])
            xs[f"x{i}_0"] = self.blocks[f"conv{i}_0"](prev)
            # new column of nested nodes on the diagonal
            for j in range(1, i + 1):
                r = i - j
                skips = [xs[f"x{r}_{k}"] for k in range(j)]
                xs[f"x{r}_{j}"] = self.blocks[f"conv{r}_{j}"](torch.cat(skips + [self.up(xs[f"x{r + 1}_{j - 1}"])], 1))
        if self.deep_supervision:
            return [final(xs[f"x0_{j + 1}"]) for j, final in enumerate(self.finals)]
        return self.final(xs[f"x0_{self.depth}"])


def make_inputs():
    return (torch.randn(1, 3, 16, 16),)
