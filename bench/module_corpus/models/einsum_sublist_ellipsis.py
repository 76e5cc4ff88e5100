import torch
import torch.nn as nn
import torch.nn.functional as F


class TriangleMultiplication(nn.Module):
    """AlphaFold/OpenFold triangle multiplicative update (outgoing), einsum with explicit letters."""

    def __init__(self, c_z, c_hidden, outgoing=True):
        super().__init__()
        self.outgoing = outgoing
        self.layer_norm_in = nn.LayerNorm(c_z)
        self.linear_a_p = nn.Linear(c_z, c_hidden)
        self.linear_a_g = nn.Linear(c_z, c_hidden)
        self.linear_b_p = nn.Linear(c_z, c_hidden)
        self.linear_b_g = nn.Linear(c_z, c_hidden)
        self.linear_g = nn.Linear(c_z, c_z)
        self.linear_z = nn.Linear(c_hidden, c_z)
        self.layer_norm_out = nn.LayerNorm(c_hidden)

    def forward(self, z, mask):
        mask = mask.unsqueeze(-1)
        z = self.layer_norm_in(z)
        a = mask * torch.sigmoid(self.linear_a_g(z)) * self.linear_a_p(z)
        b = mask * torch.sigmoid(self.linear_b_g(z)) * self.linear_b_p(z)
        if self.outgoing:
            x = torch.einsum("...ikc,...jkc->...ijc", a, b)
        else:
            x = torch.einsum("...kic,...kjc->...ijc", a, b)
        x = self.linear_z(self.layer_norm_out(x))
        return x * torch.sigmoid(self.linear_g(z))


class OuterProductMean(nn.Module):
    def __init__(self, c_m, c_z, c_hidden, eps=1e-3):
        super().__init__()
        self.eps = eps
        self.layer_norm = nn.LayerNorm(c_m)
        self.linear_1 = nn.Linear(c_m, c_hidden)
        self.linear_2 = nn.Linear(c_m, c_hidden)
        self.linear_out = nn.Linear(c_hidden ** 2, c_z)

    def forward(self, m, mask):
        ln = self.layer_norm(m)
        mask = mask.unsqueeze(-1)
        a = self.linear_1(ln) * mask
        b = self.linear_2(ln) * mask
        a = a.transpose(-2, -3)
        b = b.transpose(-2, -3)
        outer = torch.einsum("...bac,...dae->...bdce", a, b)
        outer = outer.reshape(outer.shape[:-2] + (-1,))
        outer = self.linear_out(outer)
        norm = torch.einsum("...abc,...adc->...bdc", mask, mask)
        return outer / (norm + self.eps)


class Model(nn.Module):
    """Einsum-heavy pair/MSA updates; also the sublist form torch.einsum(op, [dims], op, [dims], [out])."""

    def __init__(self, c_m=8, c_z=8, c_hidden=4):
        super().__init__()
        self.opm = OuterProductMean(c_m, c_z, c_hidden)
        self.tri_out = TriangleMultiplication(c_z, c_hidden, True)
        self.tri_in = TriangleMultiplication(c_z, c_hidden, False)
        self.bilinear = nn.Parameter(torch.randn(c_z, c_z, 3) * 0.1)

    def forward(self, msa, msa_mask, pair_mask):
        z = self.opm(msa, msa_mask)
        z = z + self.tri_out(z, pair_mask)
        z = z + self.tri_in(z, pair_mask)
        # sublist format: contract z[..., i, j, c] with bilinear[c, d, k] -> [..., i, j, d, k]
        y = torch.einsum(z, [..., 0, 1, 2], self.bilinear, [2, 3, 4], [..., 0, 1, 3, 4])
        tr = torch.einsum("...ii->...i", z.permute(0, 3, 1, 2)).sum(-1)
        dist = torch.einsum("bic,bjc->bij", z.mean(2), z.mean(1))
        return y.flatten(-2), tr, F.softmax(dist, -1)


def make_inputs():
    return torch.randn(2, 3, 5, 8), torch.ones(2, 3, 5), torch.ones(2, 5, 5)
