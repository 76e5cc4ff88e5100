from functools import partialmethod
from typing import Optional

import torch
import torch.nn as nn


def permute_final_dims(tensor: torch.Tensor, inds):
    zero_index = -1 * len(inds)
    first_inds = list(range(len(tensor.shape[:zero_index])))
    return tensor.permute(first_inds + [zero_index + i for i in inds])


def flatten_final_dims(t: torch.Tensor, no_dims: int):
    return t.reshape(t.shape[:-no_dims] + (-1,))


class Linear(nn.Linear):
    def __init__(self, in_dim, out_dim, bias=True, init="default"):
        super().__init__(in_dim, out_dim, bias=bias)
        if bias:
            with torch.no_grad():
                self.bias.fill_(0)
        if init == "gating":
            with torch.no_grad():
                self.weight.mul_(0.1)
                if bias:
                    self.bias.fill_(1.0)
        elif init == "final":
            with torch.no_grad():
                self.weight.mul_(0.5)


class TriangleMultiplicativeUpdate(nn.Module):
    """OpenFold Algorithms 11 and 12."""

    def __init__(self, c_z, c_hidden, _outgoing=True):
        super().__init__()
        self.c_z = c_z
        self.c_hidden = c_hidden
        self._outgoing = _outgoing
        self.linear_a_p = Linear(self.c_z, self.c_hidden)
        self.linear_a_g = Linear(self.c_z, self.c_hidden, init="gating")
        self.linear_b_p = Linear(self.c_z, self.c_hidden)
        self.linear_b_g = Linear(self.c_z, self.c_hidden, init="gating")
        self.linear_g = Linear(self.c_z, self.c_z, init="gating")
        self.linear_z = Linear(self.c_hidden, self.c_z, init="final")
        self.layer_norm_in = nn.LayerNorm(self.c_z)
        self.layer_norm_out = nn.LayerNorm(self.c_hidden)
        self.sigmoid = nn.Sigmoid()

    def _combine_projections(self, a, b):
        if self._outgoing:
            a = permute_final_dims(a, (2, 0, 1))
            b = permute_final_dims(b, (2, 1, 0))
        else:
            a = permute_final_dims(a, (2, 1, 0))
            b = permute_final_dims(b, (2, 0, 1))
        p = torch.matmul(a, b)
        return permute_final_dims(p, (1, 2, 0))

    def forward(self, z, mask: Optional[torch.Tensor] = None, inplace_safe: bool = False):
        if mask is None:
            mask = z.new_ones(z.shape[:-1])
        mask = mask.unsqueeze(-1)
        z = self.layer_norm_in(z)
        a = mask
        a = a * self.sigmoid(self.linear_a_g(z))
        a = a * self.linear_a_p(z)
        b = mask
        b = b * self.sigmoid(self.linear_b_g(z))
        b = b * self.linear_b_p(z)
        x = self._combine_projections(a, b)
        del a, b
        x = self.layer_norm_out(x)
        x = self.linear_z(x)
        g = self.sigmoid(self.linear_g(z))
        return x * g


class TriangleMultiplicationOutgoing(TriangleMultiplicativeUpdate):
    __init__ = partialmethod(TriangleMultiplicativeUpdate.__init__, _outgoing=True)


class TriangleMultiplicationIncoming(TriangleMultiplicativeUpdate):
    __init__ = partialmethod(TriangleMultiplicativeUpdate.__init__, _outgoing=False)


class OuterProductMean(nn.Module):
    """Algorithm 10."""

    def __init__(self, c_m, c_z, c_hidden, eps=1e-3):
        super().__init__()
        self.c_m = c_m
        self.c_z = c_z
        self.c_hidden = c_hidden
        self.eps = eps
        self.layer_norm = nn.LayerNorm(c_m)
        self.linear_1 = Linear(c_m, c_hidden)
        self.linear_2 = Linear(c_m, c_hidden)
        self.linear_out = Linear(c_hidden ** 2, c_z, init="final")

    def _opm(self, a, b):
        outer = torch.einsum("...bac,...dae->...bdce", a, b)
        outer = outer.reshape(outer.shape[:-2] + (-1,))
        return self.linear_out(outer)

    def _chunk(self, a, b, chunk_size: int):
        a_reshape = a.reshape((-1,) + a.shape[-3:])
        b_reshape = b.reshape((-1,) + b.shape[-3:])
        out = []
        for a_prime, b_prime in zip(a_reshape, b_reshape):
            pieces = []
            for start in range(0, a_prime.shape[0], chunk_size):
                pieces.append(self._opm(a_prime[start:start + chunk_size].unsqueeze(0), b_prime.unsqueeze(0)).squeeze(0))
            out.append(torch.cat(pieces, 0))
        outer = torch.stack(out, dim=0)
        return outer.reshape(a.shape[:-3] + outer.shape[1:])

    def forward(self, m, mask: Optional[torch.Tensor] = None, chunk_size: Optional[int] = None):
        if mask is None:
            mask = m.new_ones(m.shape[:-1])
        ln = self.layer_norm(m)
        mask = mask.unsqueeze(-1)
        a = self.linear_1(ln) * mask
        b = self.linear_2(ln) * mask
        a = a.transpose(-2, -3)
        b = b.transpose(-2, -3)
        if chunk_size is not None:
            outer = self._chunk(a, b, chunk_size)
        else:
            outer = self._opm(a, b)
        norm = torch.einsum("...abc,...adc->...bdc", mask, mask)
        norm = norm + self.eps
        return outer / norm


class Model(nn.Module):
    def __init__(self, c_m=8, c_z=8, c_hidden=4):
        super().__init__()
        self.opm = OuterProductMean(c_m, c_z, c_hidden)
        self.tri_out = TriangleMultiplicationOutgoing(c_z, c_hidden)
        self.tri_in = TriangleMultiplicationIncoming(c_z, c_hidden)

    def forward(self, m, z, msa_mask, pair_mask):
        z = z + self.opm(m, mask=msa_mask, chunk_size=2)
        z = z + self.tri_out(z, mask=pair_mask)
        z = z + self.tri_in(z, mask=pair_mask)
        return z


def make_inputs():
    n_seq, n_res = 3, 5
    msa_mask = torch.ones(1, n_seq, n_res)
    msa_mask[0, 2, 3:] = 0
    pair_mask = torch.ones(1, n_res, n_res)
    pair_mask[0, 4, :] = 0
    return torch.randn(1, n_seq, n_res, 8), torch.randn(1, n_res, n_res, 8), msa_mask, pair_mask
