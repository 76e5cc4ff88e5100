import torch
import torch.nn as nn

_FORWARD_CALLS = 0
_LAYER_IDS = []


class CountedLinear(nn.Linear):
    """Class attribute mutated from forward (instances counter), a module-level global counter bumped with
    `global`, and a list appended to from forward."""

    n_calls = 0

    def forward(self, x):
        global _FORWARD_CALLS
        _FORWARD_CALLS += 1
        CountedLinear.n_calls += 1
        type(self).last_shape = tuple(x.shape)
        _LAYER_IDS.append(self.layer_id)
        return super().forward(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(3):
            layer = CountedLinear(5, 5)
            layer.layer_id = i
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x * _FORWARD_CALLS, CountedLinear.n_calls, list(_LAYER_IDS)


def reset_globals():
    global _FORWARD_CALLS
    _FORWARD_CALLS = 0
    CountedLinear.n_calls = 0
    _LAYER_IDS.clear()


def make_inputs():
    return (torch.randn(2, 5),)
