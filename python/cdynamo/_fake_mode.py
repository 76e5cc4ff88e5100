"""The FakeTensorMode a thread's traces share, and real tensors and torch.nn layers turned into its fakes.
Assumes a fake kept for a tensor is reused only while the tensor's metadata still matches it (to_fake checks)."""
import threading

import torch

from ._trace_errors import TraceUnsupported


# One FakeTensorMode per thread, shared by its traces: converting a real tensor to a fake one is
# the costliest step of tracing (0.07 to 0.25 ms), and the same parameters and inputs are met
# again and again (every layer's frames, the retrace after a graph break). The mode's own memo
# forgets a fake once nobody holds it, so the thread also keeps the fake of each live tensor
# (weakly keyed by the tensor). to_fake checks a remembered fake against the tensor's metadata
# now, so a tensor changed in place since (resize_, .data =, requires_grad_) or a fake changed by
# an in-place op of an earlier trace is converted afresh. _generation is bumped by cdynamo.reset().
_shared = threading.local()
_generation = 0


def reset_fake_mode():
    global _generation
    _generation += 1


def _make_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Parameters of nn.Modules called inside the trace are real tensors: let the mode convert them.
    return FakeTensorMode(allow_non_fake_inputs=True)


def _memo_tables(mode):
    """(describer, tensor memo) of the mode's converter, or None where torch lays them out otherwise
    (then every trace gets a mode of its own, as sharing would be unsafe without eviction)."""
    meta = getattr(getattr(mode, "fake_tensor_converter", None), "meta_converter", None)
    lookup = getattr(getattr(meta, "describer", None), "lookup_tensor", None)
    memo = getattr(meta, "tensor_memo", None)
    return (lookup, memo) if lookup is not None and memo is not None else None


def new_fake_mode():
    state = getattr(_shared, "state", None)
    if state is not None and state[0] == _generation:
        return state[1]
    from torch.utils.weak import WeakIdKeyDictionary

    mode = _make_fake_mode()
    if _memo_tables(mode) is None:
        return mode
    _shared.state = (_generation, mode, WeakIdKeyDictionary())
    return mode


def _matches(fake, tensor):
    return (
        fake.shape == tensor.shape
        and fake.stride() == tensor.stride()
        and fake.storage_offset() == tensor.storage_offset()
        and fake.dtype == tensor.dtype
        and fake.device == tensor.device
        and fake.requires_grad == tensor.requires_grad
        and fake.is_conj() == tensor.is_conj()
        and fake.is_neg() == tensor.is_neg()
    )


def _tensor_kind(tensor):
    if tensor.is_quantized:
        return "quantized tensor"
    if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
        return f"tensor of subclass {type(tensor).__qualname__}"
    return f"{str(tensor.layout).replace('torch.', '')} tensor of dtype {tensor.dtype} on {tensor.device}"


def to_fake(mode, tensor):
    state = getattr(_shared, "state", None)
    kept = state[2] if state is not None and state[1] is mode else None
    if kept is not None:
        fake = kept.get(tensor)
        if fake is not None and _matches(fake, tensor):
            return fake
    try:
        fake = mode.from_tensor(tensor, static_shapes=True)
    except Exception as error:  # noqa: BLE001 - quantized, some subclasses: fakes cannot stand in
        raise TraceUnsupported(
            f"a {_tensor_kind(tensor)} cannot be traced ({type(error).__name__}: {error}); "
            "the code that uses it runs eagerly"
        ) from None
    if _matches(fake, tensor):
        if kept is not None:
            kept[tensor] = fake
        return fake
    tables = _memo_tables(mode)
    tid = tables[0].get(tensor) if tables else None
    if tid is not None and tables[1].get(tid) is fake:
        tables[1].pop(tid, None)  # a remembered fake gone stale: forget it, convert again
        fake = mode.from_tensor(tensor, static_shapes=True)
        if kept is not None and _matches(fake, tensor):
            kept[tensor] = fake
    # (a fresh fake that still differs, for some exotic tensor, is used as is and not kept)
    return fake


def fake_module(mode, module):
    """A shallow twin of a torch.nn layer whose parameters and buffers are the mode's fakes, for
    running its forward on fake tensors. With the real parameters every op would take
    FakeTensorMode's slow path (real inputs bypass its dispatch cache: layer_norm costs 6x); the
    layer itself is never touched, as another thread may be running it. Attributes the forward
    sets land on the twin."""
    twin = object.__new__(type(module))
    state = dict(module.__dict__)
    params, buffers, children = (type(module.__dict__[k])() for k in ("_parameters", "_buffers", "_modules"))
    for name, t in module._parameters.items():
        params[name] = None if t is None else to_fake(mode, t)
    for name, t in module._buffers.items():
        buffers[name] = None if t is None else to_fake(mode, t)
    for name, child in module._modules.items():
        children[name] = None if child is None else fake_module(mode, child)
    state.update(_parameters=params, _buffers=buffers, _modules=children)
    twin.__dict__.update(state)
    return twin


def data_assignment_refusal(target, value):
    """Why `target.data = value` cannot be a write of value's elements into target (None: it
    can): eager swaps target's storage for value's, so the metadata must already agree."""
    for what in ("shape", "dtype", "device"):
        if getattr(target, what) != getattr(value, what):
            return f"a tensor of another {what} ({getattr(value, what)} for {getattr(target, what)})"
    if target.stride() != value.stride():
        return f"a tensor of other strides ({value.stride()} for {target.stride()})"
    return None


def call_on_fake_state(mode, module, args, kwargs=None):
    """module(*args, **kwargs) with its parameters and buffers replaced by `mode`'s fakes for the
    call: its own in-place updates (batch norm's num_batches_tracked += 1, which reads no fake
    input, so the mode would run it for real) never reach the module's tensors."""
    state = {name: mode.from_tensor(t, static_shapes=True)
             for name, t in [*module.named_parameters(), *module.named_buffers()]}
    return torch.func.functional_call(module, state, tuple(args), dict(kwargs or {})), state
