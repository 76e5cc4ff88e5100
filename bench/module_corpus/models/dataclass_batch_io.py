from dataclasses import dataclass, field, replace, fields
from typing import Dict, List, Optional
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Batch:
    images: torch.Tensor
    tokens: torch.Tensor
    token_mask: torch.Tensor
    meta: Dict[str, float] = field(default_factory=dict)
    labels: Optional[torch.Tensor] = None

    def to(self, device):
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)
                                if isinstance(getattr(self, f.name), torch.Tensor)})

    @property
    def batch_size(self):
        return self.images.shape[0]


@dataclass(frozen=True)
class ModelOutput:
    logits_per_image: torch.Tensor
    logits_per_text: torch.Tensor
    loss: Optional[torch.Tensor] = None
    extras: Dict[str, torch.Tensor] = field(default_factory=dict)


class Model(nn.Module):
    """CLIP-style dual encoder taking a dataclass batch (plus list-of-dict aux inputs), returning a frozen dataclass."""

    def __init__(self, dim=16, vocab=30):
        super().__init__()
        self.visual = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, dim))
        self.token_embedding = nn.Embedding(vocab, dim)
        self.text_proj = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * 2.6592)

    def encode_text(self, tokens, mask):
        x = self.token_embedding(tokens)
        m = mask.unsqueeze(-1).to(x.dtype)
        return self.text_proj((x * m).sum(1) / m.sum(1).clamp(min=1.0))

    def forward(self, batch: Batch, aux: List[Dict[str, torch.Tensor]]):
        batch = batch.to(batch.images.device)
        image_features = F.normalize(self.visual(batch.images), dim=-1)
        text_features = F.normalize(self.encode_text(batch.tokens, batch.token_mask), dim=-1)
        logit_scale = self.logit_scale.exp().clamp(max=100) * batch.meta.get("temperature_mult", 1.0)
        logits_per_image = logit_scale * image_features @ text_features.t()
        logits_per_text = logits_per_image.t()
        loss = None
        if batch.labels is not None:
            loss = (F.cross_entropy(logits_per_image, batch.labels) + F.cross_entropy(logits_per_text, batch.labels)) / 2
        extras = {item["name"]: item["value"] * batch.batch_size for item in aux}
        return ModelOutput(logits_per_image, logits_per_text, loss=loss, extras=extras)


def make_inputs():
    b = Batch(images=torch.randn(3, 3, 8, 8), tokens=torch.randint(0, 30, (3, 6)), token_mask=torch.ones(3, 6, dtype=torch.bool),
              meta={"temperature_mult": 0.5}, labels=torch.arange(3))
    return b, [{"name": "a", "value": torch.randn(2)}, {"name": "b", "value": torch.randn(1)}]


def make_inputs_seq():
    b2 = Batch(images=torch.randn(2, 3, 8, 8), tokens=torch.randint(0, 30, (2, 4)), token_mask=torch.ones(2, 4, dtype=torch.bool),
               meta={"temperature_mult": 2.0})
    return [make_inputs(), (b2, [{"name": "c", "value": torch.randn(3)}]), make_inputs()]
