import torch
import torch.nn as nn

MODES = ("train",)


class Model(nn.Module):
    """Grad-CAM style: registers a tensor gradient hook inside forward to stash activations' grads."""

    def __init__(self):
        super().__init__()
        self.features = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)
        self.gradients = None

    def save_gradient(self, grad):
        self.gradients = grad

    def forward(self, x):
        a = torch.relu(self.features(x))
        if a.requires_grad:
            a.register_hook(self.save_gradient)
        self.activations = a.detach()
        return self.head(a.mean((2, 3)))


def py_state(model):
    return [model.gradients, model.activations]


def make_inputs():
    return (torch.randn(2, 3, 4, 4),)
