import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden)
        self.w2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class SwitchMoE(nn.Module):
    """Switch-transformer style layer; experts are registered as expert0..N via setattr and fetched with getattr(f"...")
    in forward; the load-balancing loss is stashed on self and collected by the parent from self.modules()."""

    def __init__(self, d, hidden, num_experts=4, capacity_factor=2.0):
        super().__init__()
        self.num_experts = num_experts
        self.router = nn.Linear(d, num_experts, bias=False)
        for i in range(num_experts):
            setattr(self, f"expert{i}", Expert(d, hidden))
        self.aux_loss = None
        self.capacity_factor = capacity_factor

    def forward(self, x):
        B, T, D = x.shape
        x_flat = x.reshape(-1, D)
        logits = self.router(x_flat)
        probs = logits.softmax(-1)
        gate, idx = probs.max(-1)
        one_hot = F.one_hot(idx, self.num_experts).type_as(probs)
        density = one_hot.mean(0)
        density_proxy = probs.mean(0)
        self.aux_loss = (density * density_proxy).sum() * self.num_experts ** 2
        out = torch.zeros_like(x_flat)
        for i in range(self.num_experts):
            expert = getattr(self, f"expert{i}")
            out = out + one_hot[:, i:i + 1] * expert(x_flat)
        return (out * gate.unsqueeze(-1)).view(B, T, D)


class Block(nn.Module):
    def __init__(self, d, use_moe):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = SwitchMoE(d, 2 * d) if use_moe else Expert(d, 2 * d)
        self._forward_impl = {"pre": self._pre_norm, "post": self._post_norm}
        self.norm_style = "pre" if use_moe else "post"

    def _pre_norm(self, x):
        return x + self.ff(self.ln(x))

    def _post_norm(self, x):
        return self.ln(x + self.ff(x))

    def forward(self, x):
        return self._forward_impl[self.norm_style](x)


class Model(nn.Module):
    def __init__(self, d=16, n_layers=4, moe_every=2, aux_weight=0.01):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, use_moe=(i % moe_every == 1)) for i in range(n_layers)])
        self.aux_weight = aux_weight
        self.head = nn.Linear(d, 5)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        aux = sum(m.aux_loss for m in self.modules() if isinstance(m, SwitchMoE) and m.aux_loss is not None)
        n_moe = len([m for m in self.modules() if type(m).__name__ == "SwitchMoE"])
        return self.head(x), aux * self.aux_weight / n_moe


def make_inputs():
    return (torch.randn(2, 6, 16),)


def make_inputs_seq():
    return [(torch.randn(2, 6, 16),), (torch.randn(3, 2, 16),)]
