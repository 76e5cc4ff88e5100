"""Which graph outputs alias which inputs in eager PyTorch, read before functionalization (which
loses it): the lowering returns those outputs as views of the inputs and copies the others.
Assumes fake example values on the graph's nodes (cdynamo's and torch.compile's frontends set
them), else runs the graph once on fresh fake tensors."""
import torch
import torch.fx
import torch.utils._pytree as pytree

META_KEY = "cdynamo_eager_aliases"


def storage_of(t):
    """The identity of t's storage (equal for every view of one storage, real or fake)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    return StorageWeakRef(t.untyped_storage())


def _same_storage(a, b):
    """a == b for storage_of results, None (a number's) equal to nothing."""
    return a is not None and b is not None and a == b


def _example_values(gm):
    """(input fakes, output fakes) from the nodes' example values, or None where one is missing."""
    nodes = list(gm.graph.nodes)
    def value(n):  # the frontend's example values, or those of make_fx and AOTAutograd graphs
        return n.meta.get("example_value", n.meta.get("val")) if isinstance(n, torch.fx.Node) else None

    inputs = [value(n) for n in nodes if n.op == "placeholder"]
    output = next(n for n in reversed(nodes) if n.op == "output")
    returned = pytree.tree_leaves(output.args[0])
    outputs = [value(n) for n in returned]
    held = [value(n) for n in nodes if n.op == "get_attr"]
    # Number inputs (a symbolic graph's sizes and scalars) alias nothing.
    numbers = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)
    if not all(isinstance(v, torch.Tensor) for v in outputs) or not all(isinstance(v, (torch.Tensor, *numbers)) for v in inputs):
        return None
    return inputs, outputs, [t for t in held if isinstance(t, torch.Tensor)]


def _fake_run(gm, example_inputs):
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    inputs = [mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t for t in example_inputs]
    before = list(inputs)
    from .._fake_mode import call_on_fake_state

    with mode, torch.no_grad():
        outputs, state = call_on_fake_state(mode, gm, inputs)
    return before, pytree.tree_leaves(outputs), list(state.values())


def _static(t):
    return all(isinstance(v, int) for v in (*t.shape, *t.stride(), t.storage_offset()))


def eager_aliases(gm, example_inputs):
    """One entry per flat output: ("fresh", j) (a tensor of its own, whose storage output j is
    the first to share: j is itself unless an earlier output is a view of it or it of that),
    ("same", k) (input k itself), ("output", j) (the same object as output j),
    ("view", k, sizes, strides, offset) (a view of input k, offset in elements from input k's
    first element), or ("keep",) (aliases a parameter, a buffer or something unknown)."""
    values = _example_values(gm)
    if values is None:
        values = _fake_run(gm, example_inputs)
    inputs, outputs, held = values
    input_storages = [storage_of(t) if isinstance(t, torch.Tensor) else None for t in inputs]
    output_storages = [storage_of(t) if isinstance(t, torch.Tensor) else None for t in outputs]
    held_storages = {storage_of(t) for t in held}
    entries = []
    for position, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor):
            entries.append(("keep",))
            continue
        earlier = next((j for j in range(position) if outputs[j] is out), None)
        if earlier is not None:  # x.contiguous() of a contiguous x is x itself
            entries.append(("output", earlier))
            continue
        storage = output_storages[position]
        same = next((k for k, t in enumerate(inputs) if t is out), None)
        view = next((k for k, s in enumerate(input_storages) if _same_storage(s, storage)), None)
        if same is not None:
            entries.append(("same", same))
        elif view is not None and out.dtype == inputs[view].dtype and _static(out):
            offset = out.storage_offset() - inputs[view].storage_offset()
            entries.append(("view", view, tuple(out.shape), tuple(out.stride()), offset))
        elif view is not None or storage in held_storages:
            entries.append(("keep",))
        else:  # the first output with this storage: its own, or shared with an earlier one
            group = next(j for j, s in enumerate(output_storages) if _same_storage(s, storage))
            entries.append(_fresh_entry(outputs, output_storages, position, group))
    return entries


def _element_range(t):
    low = t.storage_offset() + sum(min(0, (n - 1) * s) for n, s in zip(t.shape, t.stride()))
    high = t.storage_offset() + sum(max(0, (n - 1) * s) for n, s in zip(t.shape, t.stride()))
    return low, high


def _fresh_entry(outputs, storages, position, group):
    """("fresh", j), or with out's layout relative to the largest other output of its storage
    that holds all of out's elements (so the lowering can make out a view of that output's
    buffer, as eager's is of its storage): ("fresh", j, sizes, strides, offset, base strides, base)."""
    out = outputs[position]
    if not _static(out) or out.numel() == 0:
        return ("fresh", group)  # symbolic sizes: no element ranges to compare (they would guard)
    low, high = _element_range(out)
    best = None
    for j, other in enumerate(outputs):
        if j == position or not _same_storage(storages[j], storages[position]):
            continue
        if not _static(other) or other.dtype != out.dtype:
            continue
        other_low, other_high = _element_range(other)
        # Inside the other's elements, and the other without gaps (its buffer holds them all).
        if low < other_low or high > other_high or other_high - other_low + 1 != other.numel():
            continue
        if (low, high) == (other_low, other_high) and j > position and high - low + 1 == out.numel():
            continue  # two dense views of the same elements: the earlier is the base
        if best is None or other.numel() > outputs[best].numel():
            best = j
    if best is None:
        return ("fresh", group)
    base = outputs[best]
    offset = out.storage_offset() - base.storage_offset()
    return ("fresh", group, tuple(out.shape), tuple(out.stride()), offset, tuple(base.stride()), best)


def annotate(aten_gm, entries):
    """Stores the entries on the aten graph's output node for the C++ lowering to read."""
    output = next(n for n in reversed(aten_gm.graph.nodes) if n.op == "output")
    if len(pytree.tree_leaves(output.args[0])) == len(entries):
        output.meta[META_KEY] = entries


def shifted(entries, leading):
    """The entries for a program with `leading` more inputs before the graph's own (the
    parameters and buffers it writes): input positions move by that many."""
    if not leading:
        return entries
    return [(e[0], e[1] + leading, *e[2:]) if e[0] in ("same", "view") else e for e in entries]
