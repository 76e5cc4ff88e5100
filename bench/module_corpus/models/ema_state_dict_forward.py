from copy import deepcopy
import torch
import torch.nn as nn


class ModelEmaV2(nn.Module):
    """timm ModelEmaV2"""

    def __init__(self, model, decay=0.9999, device=None):
        super(ModelEmaV2, self).__init__()
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.device = device
        if self.device is not None:
            self.module.to(device=device)

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if self.device is not None:
                    model_v = model_v.to(device=self.device)
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)

    def set(self, model):
        self._update(model, update_fn=lambda e, m: m)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


class Model(nn.Module):
    """A trainer step folded into forward: timm ModelEmaV2 update over zip(state_dict().values()) with lambdas under
    no_grad (BN num_batches_tracked included), then the EMA copy's prediction; the mean-teacher decay ramp
    min(1 - 1/(step+1), decay) kept as a python counter."""

    def __init__(self):
        super().__init__()
        self.student = Net()
        self.ema = ModelEmaV2(self.student, decay=0.9)
        with torch.no_grad():
            for p in self.student.parameters():
                p.add_(0.1)
        self.global_step = 0

    def forward(self, x):
        out = self.student(x)
        self.global_step += 1
        alpha = min(1 - 1 / (self.global_step + 1), 0.99)
        self.ema.decay = alpha
        self.ema.update(self.student)
        return out, self.ema(x)


def make_inputs():
    return (torch.randn(2, 3, 5, 5),)


def py_state(m):
    return {"step": m.global_step, "decay": m.ema.decay}
