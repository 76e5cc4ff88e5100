import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.no_grad()
def distributed_sinkhorn(out, epsilon=0.05, sinkhorn_iterations=3, world_size=1):
    Q = torch.exp(out / epsilon).t()
    B = Q.shape[1] * world_size
    K = Q.shape[0]
    sum_Q = torch.sum(Q)
    Q /= sum_Q
    for it in range(sinkhorn_iterations):
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B
    return Q.t()


class MultiPrototypes(nn.Module):
    def __init__(self, output_dim, nmb_prototypes):
        super().__init__()
        self.nmb_heads = len(nmb_prototypes)
        for i, k in enumerate(nmb_prototypes):
            self.add_module("prototypes" + str(i), nn.Linear(output_dim, k, bias=False))

    def forward(self, x):
        out = []
        for i in range(self.nmb_heads):
            out.append(getattr(self, "prototypes" + str(i))(x))
        return out


class Model(nn.Module):
    """facebookresearch SwAV: multi-crop forward_backbone grouping crops by resolution with
    torch.unique_consecutive(return_counts) + cumsum, normalized prototypes, sinkhorn codes, swapped prediction."""

    def __init__(self, output_dim=8, nmb_prototypes=10, crops_for_assign=(0, 1), nmb_crops=(2, 2), temperature=0.1,
                 queue_length=0):
        super().__init__()
        self.crops_for_assign = crops_for_assign
        self.nmb_crops = nmb_crops
        self.temperature = temperature
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projection_head = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(inplace=True), nn.Linear(16, output_dim))
        self.l2norm = True
        if isinstance(nmb_prototypes, list):
            self.prototypes = MultiPrototypes(output_dim, nmb_prototypes)
        elif nmb_prototypes > 0:
            self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)
        else:
            self.prototypes = None

    def forward_head(self, x):
        if self.projection_head is not None:
            x = self.projection_head(x)
        if self.l2norm:
            x = F.normalize(x, dim=1, p=2)
        if self.prototypes is not None:
            return x, self.prototypes(x)
        return x

    def forward_backbone(self, inputs):
        if not isinstance(inputs, list):
            inputs = [inputs]
        idx_crops = torch.cumsum(torch.unique_consecutive(torch.tensor([inp.shape[-1] for inp in inputs]),
                                                          return_counts=True)[1], 0)
        start_idx = 0
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(inputs[start_idx:end_idx]))
            if start_idx == 0:
                output = _out
            else:
                output = torch.cat((output, _out))
            start_idx = end_idx
        return self.forward_head(output)

    def forward(self, inputs):
        with torch.no_grad():
            w = self.prototypes.weight.data.clone()
            w = F.normalize(w, dim=1, p=2)
            self.prototypes.weight.copy_(w)
        embedding, output = self.forward_backbone(inputs)
        embedding = embedding.detach()
        bs = inputs[0].size(0)
        loss = 0
        for i, crop_id in enumerate(self.crops_for_assign):
            with torch.no_grad():
                out = output[bs * crop_id: bs * (crop_id + 1)].detach()
                q = distributed_sinkhorn(out)[-bs:]
            subloss = 0
            for v in [v for v in range(sum(self.nmb_crops)) if v != crop_id]:
                x = output[bs * v: bs * (v + 1)] / self.temperature
                subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
            loss += subloss / (sum(self.nmb_crops) - 1)
        loss /= len(self.crops_for_assign)
        return loss, embedding


def make_inputs():
    return ([torch.randn(3, 3, 16, 16), torch.randn(3, 3, 16, 16), torch.randn(3, 3, 8, 8), torch.randn(3, 3, 8, 8)],)
