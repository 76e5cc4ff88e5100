import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x, mask):
        if x.is_cuda or x.device.type == "cuda":
            x = x * 2
        if x.dtype == torch.float16:
            x = x.float()
        h = self.fc(x.to(device))
        neg = torch.finfo(h.dtype).min if h.dtype != torch.float64 else -1e9
        h = h.masked_fill(~mask, neg)
        attn = F.softmax(h, dim=-1)
        idx = torch.arange(h.size(-1), device=h.device, dtype=torch.float32)
        return (attn * idx).sum(-1), attn.new_ones(1) * x.element_size(), str(x.dtype)


def make_inputs():
    return torch.randn(3, 6), torch.tensor([[True] * 6, [True, False] * 3, [False] * 5 + [True]])
