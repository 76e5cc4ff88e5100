"""Helpers for backend stage tests: aten-level graphs as the inductor backend sees them."""
from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functionalize

from cdynamo.inductor import decompositions


def aten_graph(fn, *inputs) -> torch.fx.GraphModule:
    """fn traced to a functional aten graph with the backend's decomposition table (fake tensors)."""
    with torch.no_grad():
        return make_fx(functionalize(fn), decomposition_table=decompositions.table(),
                       tracing_mode="fake")(*inputs)
