import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter


def gem(x, p=3, eps=1e-6):
    return F.avg_pool2d(x.clamp(min=eps).pow(p), (x.size(-2), x.size(-1))).pow(1. / p)


class GeM(nn.Module):
    def __init__(self, p=3, eps=1e-6):
        super(GeM, self).__init__()
        self.p = Parameter(torch.ones(1) * p)
        self.eps = eps

    def forward(self, x):
        return gem(x, p=self.p, eps=self.eps)

    def __repr__(self):
        return self.__class__.__name__ + '(' + 'p=' + '{:.4f}'.format(self.p.data.tolist()[0]) + ', ' + 'eps=' + str(self.eps) + ')'


class ArcMarginProduct(nn.Module):
    r"""Implement of large margin arc distance: :
        Args:
            in_features: size of each input sample
            out_features: size of each output sample
            s: norm of input feature
            m: margin
            cos(theta + m)
        """

    def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False, ls_eps=0.0):
        super(ArcMarginProduct, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.s = s
        self.m = m
        self.ls_eps = ls_eps
        self.weight = Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.easy_margin = easy_margin
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt(1.0 - torch.pow(cosine, 2))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        if self.ls_eps > 0:
            one_hot = (1 - self.ls_eps) * one_hot + self.ls_eps / self.out_features
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        output *= self.s
        return output


class Model(nn.Module):
    """Kaggle landmark / whale / shopee head: GeM pooling with a learnable p Parameter, multi-sample dropout
    averaged over 5 dropouts (torch.mean(torch.stack(...))), ArcMarginProduct with torch.where margins,
    FloatTensor constructor, label smoothing eps."""

    def __init__(self, n_classes=7, emb=12):
        super(Model, self).__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.SiLU())
        self.pooling = GeM()
        self.dropouts = nn.ModuleList([nn.Dropout(0.5) for _ in range(5)])
        self.fc = nn.Linear(16, emb)
        self.bn = nn.BatchNorm1d(emb)
        self.arc = ArcMarginProduct(emb, n_classes, s=30.0, m=0.5, easy_margin=False, ls_eps=0.1)
        self.aux = nn.Linear(16, 1)

    def forward(self, image, label):
        batch_size = image.size(0)
        features = self.backbone(image)
        pooled = self.pooling(features).view(batch_size, -1)
        for i, dropout in enumerate(self.dropouts):
            if i == 0:
                h = self.aux(dropout(pooled))
            else:
                h += self.aux(dropout(pooled))
        h /= len(self.dropouts)
        embedding = self.bn(self.fc(pooled))
        logits = self.arc(embedding, label)
        loss = nn.CrossEntropyLoss()(logits, label)
        return logits, loss, h, repr(self.pooling)


def make_inputs():
    return torch.randn(3, 3, 8, 8), torch.tensor([1, 4, 6])
