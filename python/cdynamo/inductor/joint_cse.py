"""Common-subexpression elimination of AOTAutograd's joint graph, before the min-cut partition.
Assumes a functional aten graph (writes only as trailing copy_ into inputs) with fake values in meta.

AOTAutograd's partitioner runs its own (torch._functorch.config.cse), whose first use imports
torch._inductor's pattern matcher and lowerings: about a second of every process's first training
compile, more where Python must compile their sources. This pass merges the same nodes on the
same terms, in place, and the partitioner's is turned off around the partition (training.py)."""
import torch
import torch.fx

# Factories whose results hold no defined values: two of them are two buffers, never one.
_UNINITIALIZED = frozenset(("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"))


def eliminate_common_subexpressions(gm, num_forward_outputs):
    """Replaces each node that repeats an earlier one (the same pure operator on the same
    arguments, between the same writes) by that earlier node; returns how many were merged.
    A value only the forward needs is never merged with one the backward needs (the partitioner
    would save it for the backward as an extra output), nor anything that shares memory with a
    graph output (the outputs stay separate tensors, as in eager)."""
    graph = gm.graph
    output = graph.output_node()
    backward_values = _backward_dependencies(output, num_forward_outputs)
    output_storages = {s for s in map(_storage_of, output.all_input_nodes) if s is not None}
    first_of = {}
    region = 0  # the writes seen so far: reads after a write never merge with reads before it
    merged = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if _writes(node):
            region += 1
            continue
        if not _mergeable(node) or _storage_of(node) in output_storages:
            continue
        try:
            key = (region, node.target, node in backward_values, _frozen(node.args), _frozen(node.kwargs))
            earlier = first_of.setdefault(key, node)
        except TypeError:  # an argument that cannot be a key: the node stays
            continue
        if earlier is not node:
            node.replace_all_uses_with(earlier)
            graph.erase_node(node)
            merged += 1
    return merged


def _backward_dependencies(output, num_forward_outputs):
    outputs = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    stack = [n for n in outputs[num_forward_outputs:] if isinstance(n, torch.fx.Node)]
    seen = set()
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.all_input_nodes)
    return seen


def _writes(node):
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _mergeable(node):
    """A pure aten operator (or a getitem of one's results) with defined, deterministic values."""
    import operator

    if node.target is operator.getitem:
        return True
    if not isinstance(node.target, torch._ops.OpOverload) or node.is_impure():
        return False
    if torch.Tag.nondeterministic_seeded in node.target.tags:
        return False
    if node.target.overloadpacket.__name__ in _UNINITIALIZED:
        return False
    return not _holds_unbacked_symbol(node.meta.get("val"))


def _holds_unbacked_symbol(value):
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) and bool(free_unbacked_symbols(value))


def _storage_of(node):
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        return None
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(value.untyped_storage())
    except (NotImplementedError, RuntimeError):
        return None


def _frozen(value):
    """A hashable stand-in for an argument that tells apart what Python's == would not: 1, 1.0
    and True; 0.0 and -0.0. Nodes stand for themselves, symbolic numbers for their node."""
    if isinstance(value, torch.fx.Node):
        return value
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, *map(_frozen, value))
    if isinstance(value, dict):
        return ("dict", *((k, _frozen(v)) for k, v in sorted(value.items())))
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return ("symbolic", id(value.node))
    if isinstance(value, slice):
        return ("slice", _frozen(value.start), _frozen(value.stop), _frozen(value.step))
    return (type(value), value)
