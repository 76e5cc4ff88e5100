import torch
import torch.nn as nn
import torch.nn.functional as F


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.MaxPool2d(2),
                                 nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.dec = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        y = self.dec(self.enc(x))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


class Model(nn.Module):
    """Kaggle TTA wrapper: list of (forward, inverse) transforms built from torch.flip / torch.rot90 with dims
    lists, sigmoid probabilities averaged (sum / len), optional hflip-only mode, threshold to a mask."""

    def __init__(self, mode="d4", threshold=0.5):
        super().__init__()
        self.net = SegNet()
        self.mode = mode
        self.threshold = threshold

    def transforms(self):
        tfs = [(lambda t: t, lambda t: t), (lambda t: torch.flip(t, [3]), lambda t: torch.flip(t, [3]))]
        if self.mode == "d4":
            tfs.append((lambda t: t.flip(2), lambda t: t.flip(2)))
            for k in (1, 2, 3):
                tfs.append((lambda t, k=k: torch.rot90(t, k, (2, 3)), lambda t, k=k: torch.rot90(t, -k, (2, 3))))
        return tfs

    def forward(self, images):
        preds = []
        for fwd, inv in self.transforms():
            out = self.net(fwd(images))
            preds.append(torch.sigmoid(inv(out)))
        prob = sum(preds) / len(preds)
        mask = (prob > self.threshold).float()
        return prob, mask, torch.stack(preds).std(0).mean()


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
