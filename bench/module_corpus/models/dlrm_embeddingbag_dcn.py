from typing import Dict, List, Tuple
import torch
import torch.nn as nn


class CrossNet(nn.Module):
    """DCN-v2 cross layers: x_{l+1} = x0 * (W x_l + b) + x_l (low-rank variant with mixture disabled)."""

    def __init__(self, in_features: int, num_layers: int, low_rank: int = 0):
        super().__init__()
        self._num_layers = num_layers
        self.low_rank = low_rank
        if low_rank:
            self.V_kernels = nn.ParameterList([nn.Parameter(nn.init.xavier_normal_(torch.empty(in_features, low_rank)))
                                               for _ in range(num_layers)])
            self.W_kernels = nn.ParameterList([nn.Parameter(nn.init.xavier_normal_(torch.empty(low_rank, in_features)))
                                               for _ in range(num_layers)])
        else:
            self.kernels = nn.ParameterList([nn.Parameter(nn.init.xavier_normal_(torch.empty(in_features, in_features)))
                                             for _ in range(num_layers)])
        self.bias = nn.ParameterList([nn.Parameter(nn.init.zeros_(torch.empty(in_features))) for _ in range(num_layers)])

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        x_0 = input
        x_l = x_0
        for layer in range(self._num_layers):
            if self.low_rank:
                xl_w = torch.matmul(torch.matmul(x_l, self.V_kernels[layer]), self.W_kernels[layer])
            else:
                xl_w = torch.matmul(x_l, self.kernels[layer])
            x_l = x_0 * (xl_w + self.bias[layer]) + x_l
        return x_l


class SparseArch(nn.Module):
    def __init__(self, tables: Dict[str, Tuple[int, int]]):
        super().__init__()
        self.feature_names = list(tables.keys())
        self.embedding_bags = nn.ModuleDict({name: nn.EmbeddingBag(num, dim, mode="sum", include_last_offset=False)
                                             for name, (num, dim) in tables.items()})

    def forward(self, features: Dict[str, Tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        out: List[torch.Tensor] = []
        for name in self.feature_names:
            values, offsets = features[name]
            out.append(self.embedding_bags[name](values, offsets))
        return torch.stack(out, dim=1)


class Model(nn.Module):
    """DLRM-DCN (torchrec style, plain torch): dense MLP + embedding bags with offsets + interaction + cross net."""

    def __init__(self, dense_in=5, emb_dim=8):
        super().__init__()
        tables = {"user_id": (20, emb_dim), "item_id": (30, emb_dim), "category": (6, emb_dim)}
        self.sparse_arch = SparseArch(tables)
        self.dense_arch = nn.Sequential(nn.Linear(dense_in, 16), nn.ReLU(), nn.Linear(16, emb_dim), nn.ReLU())
        F_ = len(tables) + 1
        self.num_pairs = F_ * (F_ - 1) // 2
        self.register_buffer("triu_indices", torch.triu_indices(F_, F_, offset=1), persistent=False)
        in_features = emb_dim + self.num_pairs
        self.crossnet = CrossNet(in_features, num_layers=2, low_rank=4)
        self.over_arch = nn.Sequential(nn.Linear(in_features, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, batch: Dict[str, object]):
        dense = batch["dense_features"]
        sparse = batch["sparse_features"]
        embedded_dense = self.dense_arch(dense)
        embedded_sparse = self.sparse_arch(sparse)
        combined = torch.cat([embedded_dense.unsqueeze(1), embedded_sparse], dim=1)
        interactions = torch.bmm(combined, torch.transpose(combined, 1, 2))
        interactions_flat = interactions[:, self.triu_indices[0], self.triu_indices[1]]
        x = torch.cat([embedded_dense, interactions_flat], dim=1)
        x = self.crossnet(x)
        logits = self.over_arch(x).squeeze(-1)
        out = {"logits": logits, "prob": torch.sigmoid(logits)}
        if "label" in batch:
            out["loss"] = nn.functional.binary_cross_entropy_with_logits(logits, batch["label"].float())
        return out


def make_inputs():
    sparse = {
        "user_id": (torch.tensor([1, 5, 7, 3, 19]), torch.tensor([0, 2, 3])),
        "item_id": (torch.tensor([10, 11, 29, 0]), torch.tensor([0, 1, 1])),
        "category": (torch.tensor([2, 3, 5, 1, 0, 4]), torch.tensor([0, 4, 5])),
    }
    return ({"dense_features": torch.randn(3, 5), "sparse_features": sparse, "label": torch.tensor([1, 0, 1])},)


def make_inputs_seq():
    sparse = {
        "user_id": (torch.tensor([1, 5, 7, 3]), torch.tensor([0, 1])),
        "item_id": (torch.tensor([10, 11]), torch.tensor([0, 1])),
        "category": (torch.tensor([2, 3, 5]), torch.tensor([0, 2])),
    }
    return [make_inputs(), ({"dense_features": torch.randn(2, 5), "sparse_features": sparse},), make_inputs()]
