"""Which code generator compiles a graph, decided per graph from the tensors it touches: the C++
target takes plain strided CPU tensors of the loop IR's dtypes; anything else runs as captured."""
import functools
import warnings

import torch

from .. import utils

_WARNED = set()


@functools.cache
def _ir_dtypes():
    from .. import _C

    return frozenset(getattr(torch, name.split(".", 1)[1]) for name in _C._inductor_dtypes())


def _is_plain_tensor(t):
    from torch._subclasses.fake_tensor import FakeTensor

    # torch.compile hands its backends fake tensors; everything else must be a plain tensor or
    # parameter, because the runtime reads raw storage (a subclass's data may live elsewhere).
    return type(t) in (torch.Tensor, torch.nn.Parameter) or isinstance(t, FakeTensor)


def unsupported_tensor_reason(t):
    """Why the C++ target cannot compile a graph touching tensor t, or None if it can."""
    if not _is_plain_tensor(t):
        return f"tensor subclass {type(t).__module__}.{type(t).__qualname__}"
    if t.is_nested:
        return "nested tensors"
    if t.layout != torch.strided:
        return f"{t.layout} tensors".replace("torch.", "")
    if t.is_quantized:
        return "quantized tensors"
    if t.device.type != "cpu":
        return f"tensors on {t.device} (no code generator for {t.device.type} yet)"
    if t.dtype not in _ir_dtypes():
        return f"tensors of dtype {t.dtype}"
    return None


def _graph_tensors(gm, example_inputs):
    yield from (t for t in example_inputs if isinstance(t, torch.Tensor))
    yield from gm.parameters()
    yield from gm.buffers()
    for node in gm.graph.nodes:
        value = node.meta.get("val", node.meta.get("example_value"))
        values = value if isinstance(value, (list, tuple)) else (value,)
        yield from (v for v in values if isinstance(v, torch.Tensor))


def unsupported_reason(gm, example_inputs):
    """None when the C++ target can compile gm, else the first reason it cannot, in user terms."""
    for t in _graph_tensors(gm, example_inputs):
        reason = unsupported_tensor_reason(t)
        if reason is not None:
            return reason
    return None


def run_as_captured(gm, reason):
    """The captured graph itself, run eagerly through aten: warned once per reason, counted."""
    utils.counters["inductor"]["eager_fallback"] += 1
    utils.counters["inductor"][f"eager_fallback: {reason}"] += 1
    message = f"cdynamo inductor: this graph touches {reason}; it runs as captured, with aten's kernels"
    utils.log("graphs", message)
    if reason not in _WARNED:
        _WARNED.add(reason)
        warnings.warn(message, stacklevel=2)
    return gm.forward


def written_aliased_input_reason(aten_gm, example_inputs):
    """The lowering orders reads and writes of each input on its own: an input written in place
    that shares memory with another input (x and x[0] both passed in) would be read after the
    write through the other one. Such graphs run as captured."""
    from .output_aliases import storage_of

    storages = [storage_of(t) if isinstance(t, torch.Tensor) else None for t in example_inputs]
    known = [s for s in storages if s is not None]
    if len(set(known)) == len(known):
        return None
    placeholders = [n for n in aten_gm.graph.nodes if n.op == "placeholder"]
    written = {n.args[0] for n in aten_gm.graph.nodes
               if n.op == "call_function" and str(n.target) == "aten.copy_.default" and n.args[0] in placeholders}
    for node in written:
        k = placeholders.index(node)
        if k < len(storages) and storages[k] is not None and storages.count(storages[k]) > 1:
            return "graph inputs that share memory, one of them written in place"
    return None
