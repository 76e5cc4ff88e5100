import torch
import torch.nn as nn
import torch.nn.functional as F


class PSPModule(nn.Module):
    def __init__(self, features, out_features=16, sizes=(1, 2, 3, 6)):
        super().__init__()
        self.stages = nn.ModuleList([self._make_stage(features, size) for size in sizes])
        self.bottleneck = nn.Conv2d(features * (len(sizes) + 1), out_features, kernel_size=1)
        self.relu = nn.ReLU()

    def _make_stage(self, features, size):
        prior = nn.AdaptiveAvgPool2d(output_size=(size, size))
        conv = nn.Conv2d(features, features, kernel_size=1, bias=False)
        return nn.Sequential(prior, conv)

    def forward(self, feats):
        h, w = feats.size(2), feats.size(3)
        priors = [F.interpolate(input=stage(feats), size=(h, w), mode='bilinear', align_corners=True) for stage in self.stages] + [feats]
        bottle = self.bottleneck(torch.cat(priors, 1))
        return self.relu(bottle)


class PSPUpsample(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.PReLU()
        )

    def forward(self, x):
        h, w = 2 * x.size(2), 2 * x.size(3)
        p = F.interpolate(input=x, size=(h, w), mode='bilinear', align_corners=False)
        return self.conv(p)


class Model(nn.Module):
    """PSPNet (Lextal/pspnet-pytorch): pyramid pooling with adaptive pools of 1,2,3,6 and upsampling."""

    def __init__(self, n_classes=4, sizes=(1, 2, 3, 6), psp_size=8, deep_features_size=8):
        super().__init__()
        self.feats = nn.Sequential(nn.Conv2d(3, psp_size, 3, stride=4, padding=1), nn.ReLU())
        self.psp = PSPModule(psp_size, 16, sizes)
        self.drop_1 = nn.Dropout2d(p=0.3)
        self.up_1 = PSPUpsample(16, 8)
        self.up_2 = PSPUpsample(8, 8)
        self.drop_2 = nn.Dropout2d(p=0.15)
        self.final = nn.Sequential(nn.Conv2d(8, n_classes, kernel_size=1), nn.LogSoftmax(dim=1))
        self.classifier = nn.Sequential(nn.Linear(deep_features_size, 8), nn.ReLU(), nn.Linear(8, n_classes))

    def forward(self, x):
        f = self.feats(x)
        class_f = f
        p = self.psp(f)
        p = self.drop_1(p)
        p = self.up_1(p)
        p = self.drop_2(p)
        p = self.up_2(p)
        auxiliary = F.adaptive_max_pool2d(input=class_f, output_size=(1, 1)).view(-1, class_f.size(1))
        return self.final(p), self.classifier(auxiliary)


def make_inputs():
    return (torch.randn(2, 3, 24, 24),)
