import torch
import torch.nn as nn
import torch.nn.functional as F


class EnergyModel(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, pos):
        diff = pos[:, None, :] - pos[None, :, :]
        d = (diff.pow(2).sum(-1) + 1e-6).sqrt()
        pair = self.net(torch.stack([d, d.pow(2), torch.exp(-d)], -1)).squeeze(-1)
        mask = ~torch.eye(pos.shape[0], dtype=torch.bool)
        return (pair * mask).sum() * 0.5


class Model(nn.Module):
    """Force field head (SchNetPack/NequIP style): forces = -dE/dpos computed with torch.enable_grad() even
    when called under no_grad, loss-sensitive parts in torch.autocast(enabled=False) with float32 upcast."""

    def __init__(self):
        super().__init__()
        self.energy = EnergyModel()
        self.readout = nn.Linear(3, 3)

    def forward(self, pos):
        with torch.enable_grad():
            if not pos.requires_grad:
                pos = pos.detach().requires_grad_(True)
            energy = self.energy(pos)
            (grad,) = torch.autograd.grad(energy, pos, create_graph=self.training)
        forces = -grad
        with torch.autocast(device_type="cpu", enabled=False):
            f32 = forces.float()
            stress = torch.einsum("ni,nj->ij", pos.detach().float(), f32) / pos.shape[0]
        out = self.readout(forces.detach())
        return energy.detach(), forces.detach(), stress, out


def make_inputs():
    return (torch.randn(5, 3),)
