"""From a torch.fx graph to a compiled callable: the compiled-graph cache (graph_cache.py), else
aten-level tracing (make_fx with functionalization and decompositions), then the C++ pipeline
lower -> schedule -> codegen -> runtime."""
import threading
import time

import torch
import torch.fx

from .. import config, utils
from . import layout, output_aliases, pad_matmuls, targets

_TRAINING_NOTE_SHOWN = False

# make_fx and AOTAutograd keep their tracing state in module globals (torch.fx's CURRENT_PATCHER,
# the proxy mode stack): two threads tracing at once corrupt each other's trace. Aten tracing is
# serialized; the C++ compile after it (g++ without the GIL) still overlaps between threads.
_ATEN_TRACE_LOCK = threading.RLock()


def _needs_autograd(gm, example_inputs):
    if not torch.is_grad_enabled():
        return False
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    tensors += list(gm.parameters()) + list(gm.buffers())
    return any(t.requires_grad for t in tensors)


def _eager_training_path(gm, example_inputs):
    """Graphs that need gradients run as captured, with eager autograd, until compiled training
    exists. (AOTAutograd with eager kernels was no faster and not eager's autograd: an output
    the loss does not use gave the inputs behind it a zero .grad instead of None, and a write
    into a tensor autograd saved failed the joint trace where eager's forward runs.)"""
    global _TRAINING_NOTE_SHOWN
    if not _TRAINING_NOTE_SHOWN:
        _TRAINING_NOTE_SHOWN = True
        utils.log("graphs", "inductor: this graph needs gradients; it runs as captured with eager "
                  "autograd (compiled training comes in a later version)")
    utils.counters["inductor"]["autograd_fallback"] += 1
    return gm.forward


def aten_graph(gm, example_inputs):
    """The functional, decomposed aten-level graph of gm (input mutations become trailing copy_).

    Traced on fake tensors of a fake mode of our own, with static shapes: a caller's ambient
    fake mode (torch.compile's, with its symbolic shape environment) is not used. Parameters and
    buffers stay real tensors on the GraphModule: they become constants of the aten graph (the
    runtime binds the very same tensor objects)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from .decompositions import table

    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake_inputs = [
        fake_mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t for t in example_inputs
    ]
    functional = torch.func.functionalize(gm, remove="mutations")
    with fake_mode, torch.no_grad():
        return make_fx(functional, decomposition_table=table(), tracing_mode="real", _allow_non_fake_inputs=True)(
            *fake_inputs
        )


def compile_fx(gm, example_inputs):
    reason = targets.unsupported_reason(gm, example_inputs, selfcheck=False)
    if reason is not None:
        return targets.run_as_captured(gm, reason)
    if _needs_autograd(gm, example_inputs):  # runs as captured: no target, so no self-check
        return _eager_training_path(gm, example_inputs)
    reason = targets.unsupported_reason(gm, example_inputs)
    if reason is not None:
        return targets.run_as_captured(gm, reason)
    from .. import _C
    from . import graph_cache

    target, device_type = targets.choose_target(gm, example_inputs)
    utils.counters["inductor_targets"][f"{target} ({device_type})"] += 1
    key = graph_cache.graph_key(gm, example_inputs)
    if key is not None:
        compiled = graph_cache.load(key, gm)
        if compiled is not None:
            return compiled
    start = time.perf_counter()
    with _ATEN_TRACE_LOCK:
        aten_gm = aten_graph(gm, example_inputs)
        reason = targets.unsupported_reason(aten_gm, ())  # a value made inside the graph, e.g. .to("cuda")
        reason = reason or targets.written_aliased_input_reason(aten_gm, example_inputs)
        if reason is not None:
            return targets.run_as_captured(gm, reason)
        output_aliases.annotate(aten_gm, output_aliases.eager_aliases(gm, example_inputs))
        if config.channels_last_convolutions:
            layout.prefer_channels_last(aten_gm)
        if config.pad_matmuls:
            pad_matmuls.pad_misaligned_matmuls(aten_gm)
    utils.add_time("aten_graph", time.perf_counter() - start)
    utils.log("graphs", lambda: f"inductor aten graph:\n{aten_gm.code}")
    utils.counters["inductor"]["graphs"] += 1
    if key is None:
        return _C._inductor_compile(aten_gm, gm.forward, False, target, device_type)
    compiled, blob = _C._inductor_compile(aten_gm, gm.forward, True, target, device_type)
    if blob is not None:
        graph_cache.store(key, gm, aten_gm, blob)
    return compiled
