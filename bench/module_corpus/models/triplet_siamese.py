import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbeddingNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.convnet = nn.Sequential(nn.Conv2d(1, 4, 3), nn.PReLU(), nn.MaxPool2d(2, stride=2),
                                     nn.Conv2d(4, 8, 3), nn.PReLU(), nn.AdaptiveAvgPool2d((1, 1)))
        self.fc = nn.Sequential(nn.Linear(8, 16), nn.PReLU(), nn.Linear(16, dim))

    def forward(self, x):
        output = self.convnet(x)
        output = output.view(output.size()[0], -1)
        return self.fc(output)

    def get_embedding(self, x):
        return F.normalize(self.forward(x), p=2, dim=1)


class Model(nn.Module):
    """Triplet network with batch-hard mining and several distance heads; returns a dict."""

    def __init__(self, margin=0.3):
        super().__init__()
        self.embedding_net = EmbeddingNet()
        self.margin = margin
        self.criterion = nn.TripletMarginLoss(margin=margin, p=2.0, reduction="mean")

    def forward(self, anchor, positive, negative, labels=None):
        ea, ep, en = (self.embedding_net.get_embedding(t) for t in (anchor, positive, negative))
        d_ap = F.pairwise_distance(ea, ep, p=2.0, eps=1e-6, keepdim=False)
        d_an = F.pairwise_distance(ea, en)
        cos = F.cosine_similarity(ea, en, dim=1, eps=1e-8)
        out = {"loss": self.criterion(ea, ep, en), "d_ap": d_ap, "d_an": d_an, "cos": cos}
        if labels is not None:
            emb = torch.cat([ea, ep, en])
            dist = torch.cdist(emb, emb)
            same = labels.unsqueeze(0) == labels.unsqueeze(1)
            hardest_pos = (dist * same.float()).max(dim=1).values
            hardest_neg = dist.masked_fill(same, float("inf")).min(dim=1).values
            out["batch_hard"] = F.relu(hardest_pos - hardest_neg + self.margin).mean()
            out["contrastive"] = F.margin_ranking_loss(d_an, d_ap, torch.ones_like(d_ap), margin=self.margin)
        return out


def make_inputs():
    a, p, n = torch.randn(3, 1, 10, 10), torch.randn(3, 1, 10, 10), torch.randn(3, 1, 10, 10)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 3, 4, 5])
    return (a, p, n), {"labels": labels}
