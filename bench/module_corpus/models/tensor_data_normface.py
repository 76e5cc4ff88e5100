import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ArcFace/NormFace margin head; renormalises its weight through .data in forward."""

    def __init__(self, in_features=16, out_features=5, s=30.0, m=0.5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))
        self.s = s
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, x, label):
        self.weight.data = F.normalize(self.weight.data, dim=1)
        cosine = F.linear(F.normalize(x), self.weight)
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size(), device=x.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        output *= self.s
        return output


def make_inputs():
    return torch.randn(4, 16), torch.tensor([0, 3, 1, 4])
