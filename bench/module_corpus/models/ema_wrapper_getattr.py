import copy
import math
import torch
import torch.nn as nn


class ModelEMA(nn.Module):
    """timm ModelEmaV2-ish wrapper: holds a deepcopy of the model, update() in forward under no_grad,
    and forwards unknown attributes to the wrapped module via __getattr__."""

    def __init__(self, model, decay=0.9, tau=20):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay_base = decay
        self.tau = tau
        self.updates = 0
        self.decay_fn = lambda x: decay * (1 - math.exp(-x / tau))

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.dtype.is_floating_point:
                    ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self.updates += 1
        d = self.decay_fn(self.updates)
        self._update(model, update_fn=lambda e, m: d * e + (1. - d) * m)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class DataParallelLike(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.bn = nn.BatchNorm1d(12)
        self.fc2 = nn.Linear(12, 3)
        self.num_classes = 3
        self.temperature = 2.0

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.student = DataParallelLike(Net())
        self.ema = ModelEMA(self.student.module)

    def forward(self, x):
        s = self.student(x)
        self.ema.update(self.student.module)
        t = self.ema(x) / self.ema.temperature
        nc = self.student.num_classes
        kd = torch.nn.functional.kl_div(torch.log_softmax(s, -1), torch.softmax(t, -1), reduction="batchmean")
        return s, t, kd, nc, self.ema.updates


def make_inputs():
    return (torch.randn(4, 6),)


def py_state(m):
    return m.ema.updates
