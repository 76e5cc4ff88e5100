"""Which code generator compiles a graph, decided per graph from the tensors it touches: the C++
target takes plain strided CPU tensors of the loop IR's dtypes, the Triton target CUDA tensors
(and CPU tensors through Triton's interpreter with config.cpu_backend = "triton"); anything else
runs as captured."""
import functools

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


@functools.cache
def _triton_missing_reason():
    """None when Triton is installed, else why not (in user terms). Does not import it: whether
    it interprets is decided when it is first imported (triton_runtime)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed (pip install triton)"
    return None


def unsupported_tensor_reason(t):
    """Why no target can compile a graph touching tensor t, or None if one can."""
    if not _is_plain_tensor(t):
        return f"tensor subclass {type(t).__module__}.{type(t).__qualname__}"
    if t.is_nested:
        return "nested tensors"
    if t.layout != torch.strided:
        return f"{t.layout} tensors".replace("torch.", "")
    if t.is_quantized:
        return "quantized tensors"
    if t.device.type not in ("cpu", "cuda"):
        return f"tensors on {t.device} (no code generator for {t.device.type} yet)"
    if t.device.type == "cuda" and _triton_missing_reason():
        return f"tensors on {t.device}: {_triton_missing_reason()}"
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
    """None when a target can compile gm, else the first reason none can, in user terms. The
    GPU's self-check is not part of it: compiles are wrapped in checked_on_device instead."""
    for value in example_inputs:
        if not isinstance(value, (torch.Tensor, int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)):
            return f"graph inputs of type {type(value).__qualname__}"
    reason = autograd_state_reason(gm)
    if reason is not None:
        return reason
    devices = set()
    for t in _graph_tensors(gm, example_inputs):
        reason = unsupported_tensor_reason(t)
        if reason is not None:
            return reason
        devices.add(t.device)
    if len(devices) > 1:
        return "tensors on several devices (" + ", ".join(sorted(str(d) for d in devices)) + ")"
    return None


def _cuda_device_index(gm, example_inputs):
    """The index of the CUDA device gm's tensors are on, or None (CPU graphs)."""
    for t in _graph_tensors(gm, example_inputs):
        if t.device.type == "cuda":
            return t.device.index if t.device.index is not None else torch.cuda.current_device()
    return None


def checked_on_device(gm, example_inputs, compile_graph):
    """compile_graph()'s result once the Triton path of gm's GPU passed its self-check
    (triton_selfcheck, once per device and process), else gm as captured with the reason.

    The check runs after the graph's own compile, not before: its probe kernel then builds in
    workers that are already warm, where checking first kept the process waiting for them to
    start (or compiling the probe itself, importing Triton's code generator: seconds of a cold
    compile). A compile that raises on a device whose check fails runs as captured as well; on a
    device that passes, its error is the compile's own and is raised."""
    device_index = _cuda_device_index(gm, example_inputs)
    if device_index is None:
        return compile_graph()
    from .triton_selfcheck import failure_reason

    try:
        compiled = compile_graph()
    except Exception:
        reason = failure_reason(device_index)
        if reason is None:
            raise
        return run_as_captured(gm, reason)
    if compiled == gm.forward:  # runs as captured (or with eager autograd): no target to check
        return compiled
    reason = failure_reason(device_index)
    return compiled if reason is None else run_as_captured(gm, reason)


def autograd_state_reason(gm):
    """Why gm must run as captured because it changes autograd state a traced aten graph drops,
    or None: Tensor.requires_grad_() on a tensor it makes (a new leaf)."""
    if any(node.op == "call_method" and node.target == "requires_grad_" for node in gm.graph.nodes):
        return "a tensor made to require grad inside the graph (Tensor.requires_grad_())"
    for node in gm.graph.nodes:  # the frontend's nodes that the lowering cannot take (torch.cond)
        reason = getattr(node.target, "_cdynamo_runs_as_captured", None) if node.op == "call_function" else None
        if reason:
            return reason
    return None


def choose_target(gm, example_inputs):
    """(target, device_type) for a graph unsupported_reason accepted: ("triton", "cuda") for CUDA
    tensors, ("cpp", "cpu") or, with config.cpu_backend == "triton", ("triton", "cpu")."""
    from .. import config

    for t in _graph_tensors(gm, example_inputs):
        if t.device.type == "cuda":
            return "triton", "cuda"
    if config.cpu_backend == "triton":
        if _triton_missing_reason():
            raise RuntimeError(f"cdynamo.config.cpu_backend = 'triton' needs Triton: {_triton_missing_reason()}")
        from . import triton_runtime

        triton_runtime.require_interpreter()
        return "triton", "cpu"
    if config.cpu_backend != "cpp":
        raise ValueError(f"cdynamo.config.cpu_backend must be 'cpp' or 'triton', not {config.cpu_backend!r}")
    return "cpp", "cpu"


def run_as_captured(gm, reason):
    """The captured graph itself, run eagerly through aten: warned once per reason, counted."""
    utils.counters["inductor"]["eager_fallback"] += 1
    utils.counters["inductor"][f"eager_fallback: {reason}"] += 1
    message = f"cdynamo inductor: this graph touches {reason}; it runs as captured, with aten's kernels"
    utils.log_and_warn_once("graphs", message, reason, _WARNED, stacklevel=2)
    return gm.forward


def written_aliased_input_reason(aten_gm, example_inputs):
    """The lowering orders reads and writes of each input on its own: an input written in place
    that shares memory with another input or with a parameter or buffer the graph reads (x and
    x[0] both passed in; `buf.data` written while `buf` is read) would be read after the write
    through the other one, or before it. Such graphs run as captured."""
    from .output_aliases import storage_of

    storages = [storage_of(t) if isinstance(t, torch.Tensor) else None for t in example_inputs]
    constants = [storage_of(t) for t in aten_gm.buffers()] + [storage_of(t) for t in aten_gm.parameters()]
    known = [s for s in storages if s is not None] + constants
    if len(set(known)) == len(known):
        return None
    placeholders = [n for n in aten_gm.graph.nodes if n.op == "placeholder"]
    written = {n.args[0] for n in aten_gm.graph.nodes
               if n.op == "call_function" and str(n.target) == "aten.copy_.default" and n.args[0] in placeholders}
    for node in written:
        k = placeholders.index(node)
        if k < len(storages) and storages[k] is not None and known.count(storages[k]) > 1:
            return "graph inputs that share memory, one of them written in place"
    return None
