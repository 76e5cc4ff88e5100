"""cdynamo: a Python-level JIT compiler for unmodified PyTorch programs, with its core in C++.

The public API mirrors torch._dynamo: optimize, run, disable, reset, graph_break, allow_in_graph,
disallow_in_graph, list_backends, mark_dynamic, maybe_mark_dynamic, mark_static, mark_unbacked,
register_backend, lookup_backend, config, counters, explain; and compile() mirrors torch.compile.
"""
import torch  # noqa: F401  (loads libtorch before the extension that links it)

from . import config
from . import _tensor_subclasses  # noqa: F401  (records torch's operator dispatch before any compile)
from .utils import counters
from .backends.registry import list_backends, lookup_backend, register_backend
from .explain import explain
from .shapes import mark_dynamic, mark_static, mark_unbacked, maybe_mark_dynamic
from .eval_frame import (
    OptimizedModule,
    allow_in_graph,
    compile,
    disable,
    disallow_in_graph,
    graph_break,
    optimize,
    reset,
    run,
)

__all__ = [
    "OptimizedModule",
    "allow_in_graph",
    "compile",
    "config",
    "counters",
    "disable",
    "disallow_in_graph",
    "explain",
    "graph_break",
    "list_backends",
    "lookup_backend",
    "mark_dynamic",
    "mark_static",
    "mark_unbacked",
    "maybe_mark_dynamic",
    "optimize",
    "register_backend",
    "reset",
    "run",
]
