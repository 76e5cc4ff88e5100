import torch
import torch.nn as nn
import torch.nn.functional as F

POLY_DEGREE = 4


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def poly_desc(W, b):
    """Creates a string description of a polynomial."""
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


class Model(nn.Module):
    """pytorch/examples regression: make_features with a list comprehension of powers, fc = nn.Linear(W_target
    .size(0), 1), smooth_l1 loss, loss.item(), and poly_desc formatting W.view(-1).tolist() into a string."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(POLY_DEGREE, 1)
        self.register_buffer("W_target", torch.tensor([[0.5], [-1.0], [2.0], [0.3]]))
        self.register_buffer("b_target", torch.tensor([0.7]))

    def f(self, x):
        return x.mm(self.W_target) + self.b_target.item()

    def forward(self, random):
        batch_x = make_features(random)
        batch_y = self.f(batch_x)
        output = F.smooth_l1_loss(self.fc(batch_x), batch_y)
        loss = output.item()
        desc = poly_desc(self.fc.weight.view(-1).tolist(), self.fc.bias.tolist())
        target = poly_desc(self.W_target.view(-1), self.b_target)
        return loss, desc, target


def make_inputs():
    return (torch.randn(8),)
