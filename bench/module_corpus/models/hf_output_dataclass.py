from dataclasses import dataclass
from typing import Optional, Tuple
import torch
import torch.nn as nn


@dataclass
class ModelOutput:
    last_hidden_state: torch.Tensor = None
    pooler_output: Optional[torch.Tensor] = None
    hidden_states: Optional[Tuple[torch.Tensor]] = None


class Model(nn.Module):
    """HF-style: finfo min masking, extended attention mask, return_dict dataclass output."""

    def __init__(self, d=8, n=2):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
        self.pooler = nn.Linear(d, d)

    def get_extended_attention_mask(self, attention_mask, dtype):
        ext = attention_mask[:, None, None, :].to(dtype=dtype)
        return (1.0 - ext) * torch.finfo(dtype).min

    def forward(self, hidden, attention_mask=None, output_hidden_states=True, return_dict=True):
        if attention_mask is None:
            attention_mask = torch.ones(hidden.shape[:2], dtype=torch.long)
        ext = self.get_extended_attention_mask(attention_mask, hidden.dtype)
        all_hidden = () if output_hidden_states else None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden = all_hidden + (hidden,)
            scores = hidden @ hidden.transpose(-1, -2) + ext[:, 0]
            hidden = layer(scores.softmax(-1) @ hidden)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        if not return_dict:
            return (hidden, pooled) + ((all_hidden,) if all_hidden is not None else ())
        return ModelOutput(last_hidden_state=hidden, pooler_output=pooled, hidden_states=all_hidden)


def make_inputs():
    return (torch.randn(2, 4, 8),), {"attention_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])}
