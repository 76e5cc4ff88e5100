import torch
import torch.nn as nn


class CenterLoss(nn.Module):
    """Center loss (Wen et al. ECCV'16), KaiyangZhou style: distmat via pow/sum/expand + addmm_(x, centers.t(),
    beta=1, alpha=-2), classes arange expanded and compared with labels, clamp then sum / batch_size."""

    def __init__(self, num_classes=10, feat_dim=2, use_gpu=False):
        super(CenterLoss, self).__init__()
        self.num_classes = num_classes
        self.feat_dim = feat_dim
        self.use_gpu = use_gpu
        if self.use_gpu:
            self.centers = nn.Parameter(torch.randn(self.num_classes, self.feat_dim).cuda())
        else:
            self.centers = nn.Parameter(torch.randn(self.num_classes, self.feat_dim))

    def forward(self, x, labels):
        batch_size = x.size(0)
        distmat = torch.pow(x, 2).sum(dim=1, keepdim=True).expand(batch_size, self.num_classes) + \
            torch.pow(self.centers, 2).sum(dim=1, keepdim=True).expand(self.num_classes, batch_size).t()
        distmat.addmm_(x, self.centers.t(), beta=1, alpha=-2)

        classes = torch.arange(self.num_classes).long()
        if self.use_gpu:
            classes = classes.cuda()
        labels = labels.unsqueeze(1).expand(batch_size, self.num_classes)
        mask = labels.eq(classes.expand(batch_size, self.num_classes))

        dist = distmat * mask.float()
        loss = dist.clamp(min=1e-12, max=1e+12).sum() / batch_size
        return loss


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.features = nn.Sequential(nn.Linear(16, 8), nn.PReLU(), nn.Linear(8, 2))
        self.classifier = nn.Linear(2, 10)
        self.center_loss = CenterLoss(num_classes=10, feat_dim=2)
        self.weight_cent = 0.01

    def forward(self, data, labels):
        features = self.features(data)
        outputs = self.classifier(features)
        loss_xent = nn.functional.cross_entropy(outputs, labels)
        loss_cent = self.center_loss(features, labels) * self.weight_cent
        predictions = outputs.data.max(1)[1]
        correct = (predictions == labels.data).sum()
        return loss_xent + loss_cent, correct


def make_inputs():
    return torch.randn(6, 16), torch.tensor([0, 3, 9, 3, 2, 1])
