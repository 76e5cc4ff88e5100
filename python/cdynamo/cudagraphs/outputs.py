"""A recording's results: what each is (an input, a view, a constant, owned memory), owned buffers, liveness.
Assumes results are tensors or constants in a pytree; uses only torch calls that also run on CPU."""
import functools
from typing import NamedTuple

import torch
import torch.utils._pytree as pytree

from . import policy

# Owned buffers start at this byte boundary of the captured storage, so every element offset
# inside stays a whole number for any dtype and alignment modulo 64 bytes is kept.
_SPAN_ALIGNMENT = 64


class Unrecordable(Exception):
    """The outputs rule the recording out; the message is the reason given to the user."""


class OutputSpec(NamedTuple):
    """One result. kind: "constant" (value), "repeat" (the object at index `source` again),
    "arg"/"arg_view" (argument `source` or a view of it), "static"/"static_view" (a parameter or
    buffer, or a view of it), "owned" (in owned group `source`; `view_of` is the output whose
    view it is, as in eager). offset: elements from the input's offset (arg_view), the storage
    start (static_view) or the owned buffer's start (owned)."""

    kind: str
    source: object = None
    value: object = None
    size: tuple = ()
    stride: tuple = ()
    offset: int = 0
    dtype: object = None
    is_view: bool = False
    view_of: object = None


class OwnedGroup(NamedTuple):
    """Results sharing one storage: copied as one byte span [start, start + nbytes)."""

    start: int
    nbytes: int
    members: tuple


class OutputPlan(NamedTuple):
    specs: tuple
    groups: tuple
    build_order: tuple


def flatten(result):
    """The leaves of a callable's result and a function rebuilding a result from new leaves."""
    if isinstance(result, torch.Tensor):
        return [result], _single
    if type(result) in (tuple, list) and not any(type(v) in (tuple, list, dict) for v in result):
        return list(result), type(result)
    leaves, spec = pytree.tree_flatten(result)
    return leaves, functools.partial(pytree.tree_unflatten, treespec=spec)


def _single(leaves):
    return leaves[0]


def _extent_bytes(t):
    """One past the last byte of t inside its storage."""
    itemsize = t.element_size()
    if t.numel() == 0:
        return t.storage_offset() * itemsize
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return (last + 1) * itemsize


def _layout(t):
    return dict(size=tuple(t.shape), stride=tuple(t.stride()), dtype=t.dtype, is_view=t._is_view())


def describe(leaves, args, static_tensors, device):
    """The OutputPlan of one run's results `leaves` of a call with `args`; Unrecordable if a
    replay could not give them back as eager does."""
    arg_storages, static_storages = {}, {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            arg_storages.setdefault(policy.storage_key(a), i)
    for k, t in enumerate(static_tensors):
        static_storages.setdefault(policy.storage_key(t), k)
    specs, owned = [], {}
    for j, leaf in enumerate(leaves):
        specs.append(_describe_leaf(j, leaf, leaves, args, static_tensors, arg_storages,
                                    static_storages, owned, device))
    groups = tuple(_owned_group(leaves, members, specs) for members in owned.values())
    for g, group in enumerate(groups):
        for j in group.members:
            specs[j] = specs[j]._replace(source=g, offset=_offset_in(leaves[j], group.start))
    _link_views(specs, groups)
    return OutputPlan(tuple(specs), groups, _build_order(specs))


def _describe_leaf(j, leaf, leaves, args, static_tensors, arg_storages, static_storages, owned, device):
    if not isinstance(leaf, torch.Tensor):
        if isinstance(leaf, policy.CONSTANT_TYPES):
            return OutputSpec("constant", value=leaf)
        raise Unrecordable(f"a result of type {type(leaf).__name__} (not a tensor or a constant)")
    for earlier in range(j):
        if leaves[earlier] is leaf:
            return OutputSpec("repeat", source=earlier)
    if leaf.device != device:
        raise Unrecordable(f"results on {leaf.device} (the graph runs on {device})")
    for i, a in enumerate(args):
        if a is leaf:
            return OutputSpec("arg", source=i)
    key = policy.storage_key(leaf)
    if key in arg_storages:
        return _view_spec("arg_view", arg_storages[key], leaf, args[arg_storages[key]])
    for k, t in enumerate(static_tensors):
        if t is leaf:
            return OutputSpec("static", source=k)
    if key in static_storages:
        return OutputSpec("static_view", source=static_storages[key], offset=leaf.storage_offset(), **_layout(leaf))
    if leaf.requires_grad:
        raise Unrecordable("results that require grad")
    owned.setdefault(key, []).append(j)
    return OutputSpec("owned", **_layout(leaf))


def _view_spec(kind, source, leaf, base):
    if leaf.dtype != base.dtype:
        raise Unrecordable("a result that views an input as another dtype")
    offset = leaf.storage_offset() - base.storage_offset()
    if offset < 0:
        raise Unrecordable("a result that starts before the input it views")
    return OutputSpec(kind, source=source, offset=offset, **_layout(leaf))


def _owned_group(leaves, members, specs):
    start = min(leaves[j].storage_offset() * leaves[j].element_size() for j in members)
    start -= start % _SPAN_ALIGNMENT
    end = max(_extent_bytes(leaves[j]) for j in members)
    return OwnedGroup(start, max(end - start, 0), tuple(members))


def _offset_in(leaf, start_byte):
    return (leaf.storage_offset() * leaf.element_size() - start_byte) // leaf.element_size()


def _link_views(specs, groups):
    """A result that eager returns as a view of another result of the same storage is rebuilt
    as a view of that one (out[1]._base is out[0] as in eager)."""
    for group in groups:
        bases = [j for j in group.members if not specs[j].is_view]
        for j in group.members:
            if specs[j].is_view:
                base = next((b for b in bases if specs[b].dtype == specs[j].dtype), None)
                specs[j] = specs[j]._replace(view_of=base)


def _build_order(specs):
    """Results that others are built from come first."""
    first = [j for j, s in enumerate(specs) if s.kind != "repeat" and s.view_of is None]
    second = [j for j, s in enumerate(specs) if s.kind != "repeat" and s.view_of is not None]
    return tuple(first + second + [j for j, s in enumerate(specs) if s.kind == "repeat"])


def alias_owned(plan, leaves):
    """Buffers over the memory where a capture left its owned results (the recording's own pool,
    which each replay writes again), and one tensor per owned result inside them. Each buffer is
    a new storage sharing that memory and keeping it alive (through DLPack), so that its users
    are the recording and what it hands out (Liveness), whatever else still holds the capture's
    tensors (a backend's own caches)."""
    from torch.utils import dlpack

    buffers = [dlpack.from_dlpack(dlpack.to_dlpack(_byte_span(leaves[group.members[0]], group)))
               for group in plan.groups]
    return buffers, tensors_in(plan, buffers)


def tensors_in(plan, buffers):
    """One tensor per owned result, laid out as recorded, inside `buffers`."""
    tensors = {}
    for spec_index, spec in enumerate(plan.specs):
        if spec.kind == "owned":
            storage = buffers[spec.source].untyped_storage()
            tensors[spec_index] = torch.empty(0, dtype=spec.dtype, device=buffers[spec.source].device).set_(
                storage, spec.offset, spec.size, spec.stride)
    return tensors


def _byte_span(leaf, group):
    return torch.empty(0, dtype=torch.uint8, device=leaf.device).set_(
        leaf.untyped_storage(), group.start, (group.nbytes,), (1,))


def copies_of(buffers):
    """Fresh copies of owned buffers, for results the caller keeps beyond the next replay."""
    return [buffer.clone() for buffer in buffers]


def build_results(plan, owned_tensors, args, static_tensors):
    """The leaves handed back for one call: new tensor objects over the recording's memory, the
    caller's own tensors where eager returns an input or a view of one."""
    leaves = [None] * len(plan.specs)
    for j in plan.build_order:
        leaves[j] = _build_leaf(plan.specs[j], j, leaves, owned_tensors, args, static_tensors)
    return leaves


def _build_leaf(spec, j, leaves, owned_tensors, args, static_tensors):
    kind = spec.kind
    if kind == "owned":
        if spec.view_of is not None:
            return leaves[spec.view_of].as_strided(spec.size, spec.stride, spec.offset)
        own = owned_tensors[j]
        return own.view(spec.size) if spec.is_view else own.detach()
    if kind == "arg":
        return args[spec.source]
    if kind == "arg_view":
        base = args[spec.source]
        return base.as_strided(spec.size, spec.stride, base.storage_offset() + spec.offset)
    if kind == "static":
        return static_tensors[spec.source]
    if kind == "static_view":
        return static_tensors[spec.source].as_strided(spec.size, spec.stride, spec.offset)
    if kind == "repeat":
        return leaves[spec.source]
    return spec.value


class Liveness:
    """Whether anything outside the recording still refers to its owned buffers: counted on the
    storages (every returned tensor, and every view the caller made of one, holds a reference),
    against the count the recording's own references make."""

    def __init__(self, buffers, owned_tensors):
        self._keep = owned_tensors  # the recording's own references, part of the baseline
        self._storages = [buffer.untyped_storage() for buffer in buffers]
        self._baseline = [torch._C._storage_Use_Count(s._cdata) for s in self._storages]

    def held(self):
        for storage, baseline in zip(self._storages, self._baseline):
            if torch._C._storage_Use_Count(storage._cdata) > baseline:
                return True
        return False
