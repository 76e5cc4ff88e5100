"""Helpers for cdynamo's tests and for users testing their code under cdynamo: counting and
recording backends, a tolerant nested comparison, and counter reset."""
import math

import torch

from .backends.registry import lookup_backend
from .utils import count_calls, counters


class CompileCounter:
    """A backend that counts the graphs it is given (frame_count) and their call nodes
    (op_count, summed over graphs), and runs each graph as it is."""

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += count_calls(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0


class CompileCounterWithBackend(CompileCounter):
    """Counts like CompileCounter, then compiles with the named backend."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend
        self.graphs = []

    def __call__(self, gm, example_inputs):
        super().__call__(gm, example_inputs)
        self.graphs.append(gm)
        return lookup_backend(self.backend)(gm, example_inputs)

    def clear(self):
        super().clear()
        self.graphs.clear()


class EagerAndRecordGraphs:
    """A backend that keeps every graph it is given (in .graphs) and runs it as it is."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def same(actual, expected, tol=1e-4, equal_nan=True):
    """Whether two nested outputs (tensors, numbers, tuples, lists, dicts, torch.Size, None) are
    the same: exact for integer and bool tensors and values, within `tol` (relative and absolute)
    for floating and complex ones. Tensor dtype, shape and device must match exactly."""
    if isinstance(actual, torch.Tensor) or isinstance(expected, torch.Tensor):
        if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
            return False
        if (actual.dtype, actual.shape, actual.device) != (
            expected.dtype,
            expected.shape,
            expected.device,
        ):
            return False
        actual, expected = actual.detach(), expected.detach()
        if actual.is_floating_point() or actual.is_complex():
            return torch.allclose(actual, expected, rtol=tol, atol=tol, equal_nan=equal_nan)
        return torch.equal(actual, expected)
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        # torch.Size is a tuple: compare it with tuples, but keep list and tuple apart.
        if isinstance(actual, list) != isinstance(expected, list) or len(actual) != len(expected):
            return False
        return all(same(a, e, tol, equal_nan) for a, e in zip(actual, expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            same(actual[key], expected[key], tol, equal_nan) for key in actual
        )
    if isinstance(actual, float) or isinstance(expected, float):
        if not isinstance(actual, (int, float)) or not isinstance(expected, (int, float)):
            return False
        if math.isnan(actual) and math.isnan(expected):
            return equal_nan
        return math.isclose(actual, expected, rel_tol=tol, abs_tol=tol)
    return type(actual) is type(expected) and actual == expected


def reset_counters():
    """Empty cdynamo.counters (and the compile timings) in place."""
    from .utils import timings

    counters.clear()
    timings.clear()
