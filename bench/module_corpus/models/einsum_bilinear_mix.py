import torch
import torch.nn as nn


class Model(nn.Module):
    """Einsum-heavy model: multi-head bilinear pooling, tensor-product fusion, ellipsis contractions."""

    def __init__(self, d_a=6, d_b=5, rank=3, heads=2, out=4):
        super().__init__()
        self.U = nn.Parameter(torch.randn(heads, d_a, rank) * 0.2)
        self.V = nn.Parameter(torch.randn(heads, d_b, rank) * 0.2)
        self.P = nn.Parameter(torch.randn(heads * rank, out) * 0.2)
        self.core = nn.Parameter(torch.randn(rank, rank, rank) * 0.2)
        self.mix = nn.Parameter(torch.eye(out))

    def forward(self, a, b):
        # a: (B, N, d_a), b: (B, M, d_b)
        ua = torch.einsum("bnd,hdr->bhnr", a, self.U)
        vb = torch.einsum("bmd,hdr->bhmr", b, self.V)
        attn = torch.einsum("bhnr,bhmr->bhnm", ua, vb).softmax(-1)
        pooled = torch.einsum("bhnm,bhmr->bhnr", attn, vb)
        fused = torch.einsum("bhnr,bhnr->bhr", pooled, ua)
        fused = fused.flatten(1) @ self.P
        tucker = torch.einsum("ijk,bi,bj->bk", self.core, fused[:, :3], fused[:, 1:4])
        out = torch.einsum("...i,ij->...j", fused, self.mix)
        trace = torch.einsum("bii->b", attn.flatten(0, 1)[:, :3, :3]).view(a.size(0), -1)
        diag = torch.einsum("ii->i", self.mix)
        outer = torch.einsum("bi,bj->bij", out, out)
        return out, tucker, trace, diag, outer.sum(dim=(-1, -2))


def make_inputs():
    return torch.randn(2, 4, 6), torch.randn(2, 3, 5)
