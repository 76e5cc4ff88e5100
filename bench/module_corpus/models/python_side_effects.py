import torch
import torch.nn as nn

_GLOBAL_STEPS = 0
LOG = []


class Model(nn.Module):
    """Python-side bookkeeping in forward: int counters, history lists, module globals."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.num_updates = 0
        self.history = []
        self.last_shape = None

    def forward(self, x):
        global _GLOBAL_STEPS
        _GLOBAL_STEPS += 1
        self.num_updates += 1
        self.last_shape = tuple(x.shape)
        y = self.fc(x) * self.num_updates
        self.history.append(y.detach().sum())
        LOG.append(f"step {self.num_updates}")
        if len(self.history) > 1:
            y = y + self.history[-2]
        return y, self.num_updates, _GLOBAL_STEPS


def py_state(model):
    return [model.num_updates, list(model.history), model.last_shape, len(LOG)]


def make_inputs():
    return (torch.randn(2, 4),)


def reset_globals():
    global _GLOBAL_STEPS
    _GLOBAL_STEPS = 0
    LOG.clear()
