import torch
import torch.nn as nn
import torch.nn.functional as F


class TNet(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.conv1 = nn.Conv1d(k, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, k * k)

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 32)
        x = self.fc2(F.relu(self.fc1(x)))
        iden = torch.eye(self.k, dtype=x.dtype).flatten().view(1, self.k * self.k).repeat(batchsize, 1)
        x = x + iden
        return x.view(-1, self.k, self.k)


class Model(nn.Module):
    def __init__(self, num_classes=4, feature_transform=True):
        super().__init__()
        self.stn = TNet(3)
        self.conv1 = nn.Conv1d(3, 16, 1)
        self.feature_transform = feature_transform
        if self.feature_transform:
            self.fstn = TNet(16)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.head = nn.Sequential(nn.Linear(32, 16), nn.Dropout(p=0.3), nn.ReLU(), nn.Linear(16, num_classes))

    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = torch.bmm(x.transpose(2, 1), trans_feat).transpose(2, 1)
        else:
            trans_feat = None
        pointfeat = x
        x = self.bn2(self.conv2(x))
        x, idx = torch.max(x, 2)
        seg_feat = torch.cat([x.view(-1, 32, 1).repeat(1, 1, n_pts), pointfeat], 1)
        d = trans_feat.size(1)
        I = torch.eye(d)[None, :, :]
        reg = torch.mean(torch.norm(torch.bmm(trans_feat, trans_feat.transpose(2, 1)) - I, dim=(1, 2)))
        return F.log_softmax(self.head(x), dim=1), seg_feat.shape[1], reg, idx


def make_inputs():
    return (torch.randn(3, 3, 20),)
