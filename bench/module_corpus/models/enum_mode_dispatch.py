import enum
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoolingMode(str, enum.Enum):
    CLS = "cls"
    MEAN = "mean"
    MAX = "max"
    LAST = "last"


class TaskType(enum.IntEnum):
    CLASSIFICATION = 0
    REGRESSION = 1
    MULTILABEL = 2


class Norm(enum.Enum):
    LAYER = enum.auto()
    RMS = enum.auto()


class Model(nn.Module):
    """sentence-transformers style pooling selected by Enum values; task type IntEnum; Enum built from a str in forward."""

    def __init__(self, vocab=30, d=16, n_out=3, task=TaskType.MULTILABEL, norm=Norm.RMS):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.Linear(d, d)
        self.out = nn.Linear(d, n_out)
        self.task = task
        self.norm = norm
        self.ln = nn.LayerNorm(d)
        self.pool_fns = {PoolingMode.CLS: self._cls, PoolingMode.MEAN: self._mean, PoolingMode.MAX: self._max,
                         PoolingMode.LAST: self._last}

    def _cls(self, h, mask):
        return h[:, 0]

    def _mean(self, h, mask):
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)

    def _max(self, h, mask):
        return h.masked_fill(~mask.unsqueeze(-1).bool(), torch.finfo(h.dtype).min).max(1).values

    def _last(self, h, mask):
        idx = mask.sum(1) - 1
        return h[torch.arange(h.size(0), device=h.device), idx]

    def forward(self, input_ids, attention_mask, pooling: str = "mean", labels=None):
        h = torch.tanh(self.enc(self.emb(input_ids)))
        if self.norm is Norm.LAYER:
            h = self.ln(h)
        elif self.norm == Norm.RMS:
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        mode = PoolingMode(pooling)
        pooled = self.pool_fns[mode](h, attention_mask)
        if mode in (PoolingMode.MEAN, PoolingMode.MAX):
            pooled = F.normalize(pooled, dim=-1)
        logits = self.out(pooled)
        result = {"logits": logits, "mode": mode.value, "task": int(self.task), "task_name": self.task.name.lower()}
        if labels is not None:
            if self.task == TaskType.CLASSIFICATION:
                result["loss"] = F.cross_entropy(logits, labels)
            elif self.task is TaskType.REGRESSION:
                result["loss"] = F.mse_loss(logits.squeeze(-1), labels.float())
            elif self.task.value == 2:
                result["loss"] = F.binary_cross_entropy_with_logits(logits, labels.float())
        return result


def make_inputs():
    ids = torch.randint(0, 30, (2, 6))
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    return (ids, mask), {"pooling": "max", "labels": torch.tensor([[1, 0, 1], [0, 0, 1]])}


def make_inputs_seq():
    ids = torch.randint(0, 30, (2, 6))
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    lab = torch.tensor([[1, 0, 1], [0, 0, 1]])
    return [((ids, mask), {"pooling": "max", "labels": lab}), ((ids, mask), {"pooling": "mean"}),
            ((ids, mask), {"pooling": "last", "labels": lab}), ((ids, mask), {"pooling": "cls"})]
