from typing import Dict, List
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tower(nn.Module):
    def __init__(self, feature_vocab: Dict[str, int], emb_dim: int, hidden: List[int]):
        super().__init__()
        self.feature_names = sorted(feature_vocab)
        self.embeddings = nn.ModuleDict({name: nn.Embedding(n, emb_dim, padding_idx=0) for name, n in feature_vocab.items()})
        dims = [emb_dim * len(feature_vocab)] + hidden
        layers = []
        for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(d_in, d_out))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.mlp = nn.Sequential(*layers)

    def forward(self, features: Dict[str, torch.Tensor]) -> torch.Tensor:
        embs = []
        for name in self.feature_names:
            ids = features[name]
            if ids.dim() == 2:  # multi-hot sequence feature: masked mean pooling
                mask = (ids != 0).unsqueeze(-1).float()
                e = (self.embeddings[name](ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            else:
                e = self.embeddings[name](ids)
            embs.append(e)
        return F.normalize(self.mlp(torch.cat(embs, dim=-1)), dim=-1)


class Model(nn.Module):
    """YouTube-DNN-style two tower retrieval: dict-of-features towers, in-batch softmax negatives with logQ correction,
    learnable temperature, duplicate-item masking, recall@k metric with topk."""

    def __init__(self):
        super().__init__()
        self.user_tower = Tower({"user_id": 10, "age_bucket": 5, "hist_items": 20}, 4, [16, 8])
        self.item_tower = Tower({"item_id": 20, "category": 6}, 4, [16, 8])
        self.log_temperature = nn.Parameter(torch.tensor(0.05).log())

    def forward(self, user_feats, item_feats, item_freq):
        u = self.user_tower(user_feats)
        v = self.item_tower(item_feats)
        temperature = self.log_temperature.exp().clamp(min=1e-3)
        logits = u @ v.t() / temperature
        logits = logits - torch.log(item_freq.clamp(min=1e-6))[None, :]
        item_ids = item_feats["item_id"]
        same = item_ids[None, :] == item_ids[:, None]
        eye = torch.eye(len(item_ids), dtype=torch.bool, device=logits.device)
        logits = logits.masked_fill(same & ~eye, float("-inf"))
        labels = torch.arange(logits.size(0), device=logits.device)
        loss = F.cross_entropy(logits, labels)
        k = min(2, logits.size(1))
        recall = (logits.topk(k, dim=1).indices == labels[:, None]).any(dim=1).float().mean()
        return {"loss": loss, "recall@%d" % k: recall, "user_emb": u}


def make_inputs():
    user = {"user_id": torch.tensor([1, 2, 3, 4]), "age_bucket": torch.tensor([0, 1, 4, 2]),
            "hist_items": torch.tensor([[1, 2, 0], [3, 0, 0], [5, 6, 7], [0, 0, 0]])}
    item = {"item_id": torch.tensor([3, 5, 3, 9]), "category": torch.tensor([1, 2, 1, 5])}
    return user, item, torch.tensor([0.1, 0.05, 0.1, 0.01])
