import torch
import torch.nn as nn
from torch.func import grad, jacrev, vmap


class Model(nn.Module):
    """Hamiltonian neural network: dynamics from torch.func.grad of a learned energy; Jacobian via vmap(jacrev)."""

    def __init__(self, dim=2, hidden=16):
        super().__init__()
        self.dim = dim
        self.H = nn.Sequential(nn.Linear(2 * dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        M = torch.eye(2 * dim)
        self.register_buffer("J", torch.cat([M[dim:], -M[:dim]]))

    def energy(self, z):
        return self.H(z).squeeze(-1)

    def forward(self, z):
        dH = vmap(grad(self.energy))(z)
        dz = dH @ self.J.t()
        jac = vmap(jacrev(lambda zz: dH_single(self, zz)))(z)
        return dz, jac.diagonal(dim1=-2, dim2=-1).sum(-1), self.energy(z)


def dH_single(model, z):
    return grad(model.energy)(z)


def make_inputs():
    return (torch.randn(3, 4),)
