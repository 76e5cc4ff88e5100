"""The GraphModule a trace's graph becomes, recorded for cdynamo's counters and debugging.
Assumes torch.fx; the lazy GraphModule where torch has one (its Python code made on first use)."""
import contextlib

import torch
import torch.fx

from . import utils


def _graph_module_class():
    # torch.fx's lazy GraphModule generates and compiles its Python code only when forward or
    # code is first used (a GraphModule in every other respect): the inductor backend, when its
    # compiled-graph cache answers, never does, and the codegen cost a tenth of warm tracing.
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule

        return _LazyGraphModule
    except ImportError:
        return torch.fx.GraphModule


def make_graph_module(root, graph, code_name):
    gm = _graph_module_class()(root, graph, class_name="GraphModule")
    utils.record_graph(code_name, gm)
    return gm


def new_graph_module(root, graph):
    """A GraphModule for a pass's graph: lazy too (its code made only if something runs it)."""
    return _graph_module_class()(root, graph)


def lazy_graph_modules():
    """While entered, the GraphModules torch's own tracers and partitioners make are lazy: a
    training compile made about 20 per graph, each code generation and compile() call about
    40 ms for ResNet-18's joint graph, of which only the halves' fallbacks may ever run."""
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module
    except ImportError:
        return contextlib.nullcontext()
    return _use_lazy_graph_module(True)
