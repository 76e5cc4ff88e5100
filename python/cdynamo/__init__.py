"""cdynamo: a Python-level JIT compiler for unmodified PyTorch programs, with its core in C++.

The public API mirrors torch._dynamo: optimize, run, disable, reset, graph_break, list_backends,
register_backend, lookup_backend, config, counters, explain; and compile() mirrors torch.compile.
"""
import torch  # noqa: F401  (loads libtorch before the extension that links it)

from . import config
from .utils import counters
from .backends.registry import list_backends, lookup_backend, register_backend
from .explain import explain
from .eval_frame import (
    OptimizedModule,
    compile,
    disable,
    graph_break,
    optimize,
    reset,
    run,
)

__all__ = [
    "OptimizedModule",
    "compile",
    "config",
    "counters",
    "disable",
    "explain",
    "graph_break",
    "list_backends",
    "lookup_backend",
    "optimize",
    "register_backend",
    "reset",
    "run",
]
