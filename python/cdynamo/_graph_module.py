"""The GraphModule a trace's graph becomes, recorded for cdynamo's counters and debugging.
Assumes torch.fx; the lazy GraphModule where torch has one (its Python code made on first use)."""
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
