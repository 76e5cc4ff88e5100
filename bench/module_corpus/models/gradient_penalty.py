import torch
import torch.nn as nn

MODES = ("train",)


class Model(nn.Module):
    """WGAN-GP critic whose forward computes the gradient penalty with torch.autograd.grad."""

    def __init__(self):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, real, fake, alpha):
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        d_interp = self.critic(interp)
        grads = torch.autograd.grad(outputs=d_interp, inputs=interp,
                                    grad_outputs=torch.ones_like(d_interp),
                                    create_graph=True, retain_graph=True)[0]
        gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        return self.critic(fake).mean() - self.critic(real).mean() + 10 * gp


def make_inputs():
    return torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 1)
