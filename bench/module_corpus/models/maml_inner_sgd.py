from collections import OrderedDict
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class MetaLearner(nn.Module):
    def __init__(self, in_dim=4, hidden=8, n_way=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_way))

    def forward(self, x, params=None):
        if params is None:
            return self.net(x)
        return functional_call(self.net, params, (x,))


class Model(nn.Module):
    """MAML (tristandeleu/pytorch-maml / learn2learn style): inner-loop SGD with torch.autograd.grad(create_graph=True)
    under torch.enable_grad() inside forward, OrderedDict of fast weights updated by name, functional_call."""

    def __init__(self, inner_steps=2, inner_lr=0.4, first_order=False):
        super().__init__()
        self.learner = MetaLearner()
        self.inner_steps = inner_steps
        self.inner_lr = inner_lr
        self.first_order = first_order

    def adapt(self, x_s, y_s):
        params = OrderedDict(self.learner.net.named_parameters())
        for step in range(self.inner_steps):
            logits = self.learner(x_s, params)
            inner_loss = F.cross_entropy(logits, y_s)
            grads = torch.autograd.grad(inner_loss, params.values(), create_graph=not self.first_order)
            params = OrderedDict((name, param - self.inner_lr * grad) for ((name, param), grad) in zip(params.items(), grads))
        return params

    def forward(self, x_support, y_support, x_query):
        with torch.enable_grad():
            fast = self.adapt(x_support, y_support)
        return self.learner(x_query, fast)


def make_inputs():
    return torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2]), torch.randn(5, 4)
