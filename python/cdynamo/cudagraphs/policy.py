"""The CUDA-graph wrapper's decisions as plain functions: static inputs, signature keys, reasons to refuse.
Assumes nothing of the backend and makes no CUDA calls (unit tests run it all on CPU tensors)."""
import torch

# Non-tensor results a recording may return: they are fixed at capture and can only depend on
# what the signature key holds (shapes, non-tensor arguments), so replays return them as they are.
CONSTANT_TYPES = (type(None), bool, int, float, complex, str, torch.dtype, torch.device, torch.layout,
                  torch.memory_format)

# Words of the errors CUDA and torch raise when captured work synchronizes with the CPU or does
# something else stream capture forbids (cudaErrorStreamCaptureUnsupported, ...Invalidated,
# ...Implicit, torch's own "not allowed during capture" checks): all mention capture.
_CAPTURE_ERROR_MARKERS = ("captur",)


def is_static_input(value):
    """Parameters (and tensors torch marks static, e.g. lifted buffers) keep their address between
    calls: a graph reads them where they are instead of copying them into a buffer of its own."""
    return isinstance(value, torch.nn.Parameter) or getattr(value, "_dynamo_static_input_type", None) is not None


def copied_input_indices(args):
    """Positions of the tensor arguments that are copied into static buffers on every call."""
    return tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and not is_static_input(a))


def _value_key(value):
    # repr tells -0.0 from 0.0 and makes NaN equal to itself: both are baked into the graph.
    if type(value) in (float, complex):
        return (type(value), repr(value))
    return (type(value), value)


def input_signature(args, grad_enabled, inference_mode):
    """The key under which a call's recording is kept: tensor metadata (static inputs also by
    address), non-tensor values (baked in at capture), grad and inference mode. None when an
    argument cannot be hashed (such a call runs without a CUDA graph)."""
    parts = [grad_enabled, inference_mode]
    for a in args:
        if isinstance(a, torch.Tensor):
            address = a.data_ptr() if is_static_input(a) else None
            parts.append((tuple(a.shape), a.stride(), a.dtype, a.device, a.requires_grad, address))
        else:
            parts.append(_value_key(a))
    key = tuple(parts)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def unhashable_argument_reason(args):
    kinds = sorted({type(a).__name__ for a in args if not isinstance(a, torch.Tensor) and not _hashable(a)})
    return f"an argument of type {', '.join(kinds)} cannot be part of a graph's key"


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def tensor_kind_reason(t):
    """Why tensor t cannot take part in a CUDA graph recorded here, whatever its device."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter) and not isinstance(t, torch.nn.parameter.Buffer):
        return f"tensor subclass {type(t).__module__}.{type(t).__qualname__}"
    if t.layout != torch.strided:
        return f"{t.layout} tensors".replace("torch.", "")
    if t.is_nested:
        return "nested tensors"
    if t.is_quantized:
        return "quantized tensors"
    return None


def devices_reason(devices, device_type):
    """Why tensors on `devices` cannot share one graph of device_type ("cuda"), or None."""
    others = sorted({str(d) for d in devices if d.type != device_type})
    if others:
        names = " and ".join(d.upper() if d == "cpu" else d for d in others)
        return f"{names} tensors (a CUDA graph needs every tensor on one {device_type} device)"
    distinct = sorted({str(d) for d in devices})
    if len(distinct) > 1:
        return f"tensors on several devices ({', '.join(distinct)})"
    if not distinct:
        return f"no {device_type} tensors"
    return None


def autograd_reason(tensors, grad_enabled):
    """Training graphs are not recorded: the wrapper records forward work only, and a replay
    would return outputs without the autograd history eager gives them."""
    if grad_enabled and any(t.requires_grad for t in tensors):
        return ("autograd: an input or parameter requires grad while grad mode is on (run under "
                "torch.no_grad() or torch.inference_mode() to use CUDA graphs)")
    return None


def recordable_reason(tensors, device_type, grad_enabled):
    """The first reason the tensors of one call rule out a recording, or None."""
    for t in tensors:
        reason = tensor_kind_reason(t)
        if reason is not None:
            return reason
    return devices_reason([t.device for t in tensors], device_type) or autograd_reason(tensors, grad_enabled)


def graph_values_reason(gm, device_type):
    """Tensors the fx graph computes off the graph's device (a .cpu(), a CPU constant): capture
    would not record CPU work, so a replay would return what the capture computed."""
    for node in gm.graph.nodes:
        value = node.meta.get("val", node.meta.get("example_value"))
        values = value if isinstance(value, (list, tuple)) else (value,)
        for v in values:
            if isinstance(v, torch.Tensor) and v.device.type != device_type:
                where = "CPU" if v.device.type == "cpu" else str(v.device)
                return f"{where} tensors in the graph (node {node.name}; a CUDA graph records {device_type} work only)"
    return None


def module_tensors(gm):
    """The tensors a GraphModule reads as attributes (parameters, buffers, tensor constants):
    static by construction, since the graph reads them through the module on every call."""
    seen, tensors = set(), []
    candidates = list(gm.parameters()) + list(gm.buffers())
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = _attribute(gm, node.target)
            if isinstance(value, torch.Tensor):
                candidates.append(value)
    for t in candidates:
        if id(t) not in seen:
            seen.add(id(t))
            tensors.append(t)
    return tensors


def _attribute(root, dotted):
    value = root
    for part in dotted.split("."):
        value = getattr(value, part, None)
    return value


def data_ptrs(tensors):
    return [t.data_ptr() for t in tensors]


def versions(tensors):
    """Version counters (bumped by every in-place write); inference tensors have none (-1)."""
    return [-1 if t.is_inference() else t._version for t in tensors]


def changed_positions(before, after):
    return [i for i, (b, a) in enumerate(zip(before, after)) if b != a]


def storage_key(t):
    """Identity of t's memory: two tensors with one key share (part of) their storage."""
    storage = t.untyped_storage()
    return storage.data_ptr() if storage.nbytes() else ("empty", id(storage))


def written_input_alias_reason(args, written_positions, static_tensors):
    """An input the graph writes in place that shares memory with another input or a parameter:
    the recording copies each input into a buffer of its own, so the other one would not see the
    write as eager does."""
    if not written_positions:
        return None
    keys = {i: storage_key(a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    static_keys = {storage_key(t) for t in static_tensors}
    for i in written_positions:
        others = [k for j, k in keys.items() if j != i]
        if keys[i] in others or keys[i] in static_keys:
            return "an input written in place shares memory with another input or a parameter"
    return None


_SYNC_EXAMPLES = ".item(), nonzero, a data-dependent shape, a copy to the CPU"


def sync_reason(messages):
    """The reason given for a graph whose warm-up run synchronized with the CPU (what torch's
    sync debug mode reported): capturing it would fail, so it is not tried."""
    return f"the graph synchronizes with the CPU ({_SYNC_EXAMPLES}): torch reports '{messages[0].strip()}'"


def capture_failure_reason(error):
    """The reason given for a graph whose capture raised `error`."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if any(marker in text.lower() for marker in _CAPTURE_ERROR_MARKERS):
        return ("the graph does work that stream capture forbids (such as a sync with the CPU: "
                f"{_SYNC_EXAMPLES}): {text}")
    return f"capturing the graph raised {type(error).__name__}: {text}"


def same_values(a, b):
    """Whether two tensors hold equal elements, NaN equal to NaN (used once per recording)."""
    if torch.equal(a, b):
        return True
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return False
