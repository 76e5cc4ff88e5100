import functools
import time
import torch
import torch.nn as nn


def timed(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(self, *args, **kwargs)
        self.last_time = time.perf_counter() - t0
        return out
    return wrapper


def cast_inputs(dtype):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args):
            args = [a.to(dtype) if torch.is_tensor(a) else a for a in args]
            return fn(self, *args)
        return wrapper
    return deco


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def __getattr__(self, name):
        if name == "alias_fc":
            return self.fc
        return super().__getattr__(name)

    @timed
    @cast_inputs(torch.float32)
    def forward(self, x, scale):
        return self.alias_fc(x) * scale


def make_inputs():
    return torch.randn(2, 4, dtype=torch.float64), 3
