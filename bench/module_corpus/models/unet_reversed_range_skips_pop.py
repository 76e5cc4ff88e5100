import torch
import torch.nn as nn
import torch.nn.functional as F


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Model(nn.Module):
    """Aladdin-Persson-style UNET: features list, downs/ups ModuleLists, skip_connections appended then
    reversed with [::-1], ups walked with range(0, len(self.ups), 2), TF.resize fallback replaced by
    F.interpolate when shapes differ; a second decoder variant uses reversed(range(...)) and skips.pop()."""

    def __init__(self, in_channels=3, out_channels=1, features=(4, 8, 16)):
        super().__init__()
        self.ups = nn.ModuleList()
        self.downs = nn.ModuleList()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        for feature in features:
            self.downs.append(DoubleConv(in_channels, feature))
            in_channels = feature
        for feature in reversed(features):
            self.ups.append(nn.ConvTranspose2d(feature * 2, feature, kernel_size=2, stride=2))
            self.ups.append(DoubleConv(feature * 2, feature))
        self.bottleneck = DoubleConv(features[-1], features[-1] * 2)
        self.final_conv = nn.Conv2d(features[0], out_channels, kernel_size=1)
        self.aux = nn.ModuleList([nn.Conv2d(f, out_channels, 1) for f in features])

    def forward(self, x):
        skip_connections = []
        for down in self.downs:
            x = down(x)
            skip_connections.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        skip_connections = skip_connections[::-1]
        for idx in range(0, len(self.ups), 2):
            x = self.ups[idx](x)
            skip_connection = skip_connections[idx // 2]
            if x.shape != skip_connection.shape:
                x = F.interpolate(x, size=skip_connection.shape[2:])
            concat_skip = torch.cat((skip_connection, x), dim=1)
            x = self.ups[idx + 1](concat_skip)
        out = self.final_conv(x)
        skips = list(reversed(skip_connections))
        aux = 0
        for i in reversed(range(len(self.aux))):
            s = skips.pop()
            aux = aux + F.interpolate(self.aux[i](s), size=out.shape[-2:], mode="nearest").mean()
        return out, aux, len(skips)


def make_inputs():
    return (torch.randn(1, 3, 18, 18),)
