import collections
from typing import Any, Callable

import torch
import torch.nn as nn

Batch = collections.namedtuple("Batch", ["image", "meta"])


def apply_to_collection(data: Any, dtype, function: Callable, *args, **kwargs) -> Any:
    """Recursively applies a function to all elements of a certain dtype (Lightning utilities style)."""
    elem_type = type(data)
    if isinstance(data, dtype):
        return function(data, *args, **kwargs)
    if isinstance(data, collections.abc.Mapping):
        return elem_type({k: apply_to_collection(v, dtype, function, *args, **kwargs) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # named tuple
        return elem_type(*(apply_to_collection(d, dtype, function, *args, **kwargs) for d in data))
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str):
        return elem_type([apply_to_collection(d, dtype, function, *args, **kwargs) for d in data])
    return data


def move_data_to_device(batch, device):
    def batch_to(data):
        kwargs = dict(non_blocking=True) if isinstance(data, torch.Tensor) else {}
        return data.to(device, **kwargs)
    return apply_to_collection(batch, dtype=torch.Tensor, function=batch_to)


def count_tensors(data):
    if isinstance(data, torch.Tensor):
        return 1
    if isinstance(data, dict):
        return sum(count_tensors(v) for v in data.values())
    if isinstance(data, (list, tuple)):
        return sum(count_tensors(v) for v in data)
    return 0


class Model(nn.Module):
    """A nested batch (dict -> namedtuple -> list of tensors / strings) moved with a recursive
    apply_to_collection (collections.abc.Mapping/Sequence, _fields check, type(data)(...) rebuild), then each
    leaf normalised, counted recursively, and fed to a conv net."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(4 + 2, 2)

    def forward(self, batch):
        batch = move_data_to_device(batch, torch.device("cpu"))
        batch = apply_to_collection(batch, torch.Tensor, lambda t, s: t.float() * s, 1.0)
        b = batch["inputs"]
        feat = self.net(b.image)
        meta = torch.stack([m for m in b.meta if isinstance(m, torch.Tensor)], dim=1)
        return self.fc(torch.cat([feat, meta], 1)), count_tensors(batch), batch["names"]


def make_inputs():
    batch = {"inputs": Batch(torch.randn(2, 3, 6, 6), [torch.rand(2), "tag", torch.rand(2)]),
             "names": ["a", "b"], "ids": (torch.tensor([1, 2]),)}
    return (batch,)
