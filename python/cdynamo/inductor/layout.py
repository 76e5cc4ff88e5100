"""Layout choice on the aten graph: 2-D convolutions run channels-last (on CUDA cuDNN's fastest
layout with tensor cores; on the CPU oneDNN's native activation layout, where the activations
outweigh the weight reorders it costs), and everything between them follows.

Assumes the functional, decomposed aten graph of compile_fx.aten_graph, with fake tensors in
node.meta["val"]. Eager semantics are kept: values returned from the graph get the strides
eager gives them."""
import math

import torch
import torch.fx

from .. import config

aten = torch.ops.aten
_CHANNELS_LAST = torch.channels_last


def meta_value(node):
    """The fake tensor (or other value) a node of the aten graph computes."""
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def hint(size):
    """A size of a traced value as an int (a SymInt's value when traced), without a guard:
    passes choose by these and stay correct at every size."""
    return int(size.node.hint) if isinstance(size, torch.SymInt) else int(size)


def hinted(sizes):
    """A view's size arguments (ints, SymInts or the graph nodes computing them) as ints."""
    return [hint(meta_value(v)) if isinstance(v, torch.fx.Node) else hint(v) for v in sizes]


# Devices whose 2-D convolutions are faster channels-last, and the dtypes for which they are.
_RELAID_DTYPES = {
    "cpu": (torch.float32, torch.bfloat16),
    "cuda": (torch.float32, torch.float16, torch.bfloat16),
}


# The relaid operations: where each keeps its input, weight and (for backward) gradient, and its
# `transposed` flag.
_CONVOLUTIONS = {
    aten.convolution.default: {"input": 0, "weight": 1, "grad": None, "transposed": 6},
    aten.convolution_backward.default: {"input": 1, "weight": 2, "grad": 0, "transposed": 7},
}


def _is_relaid_conv2d(node):
    if node.op != "call_function" or node.target not in _CONVOLUTIONS:
        return False
    where = _CONVOLUTIONS[node.target]
    x, weight = meta_value(node.args[where["input"]]), meta_value(node.args[where["weight"]])
    transposed = node.args[where["transposed"]] if len(node.args) > where["transposed"] else node.kwargs.get("transposed", False)
    return (
        isinstance(x, torch.Tensor)
        and isinstance(weight, torch.Tensor)
        and x.dim() == 4
        and x.dtype in _RELAID_DTYPES.get(x.device.type, ())
        and (x.device.type != "cpu" or torch.backends.mkldnn.is_available())
        and not transposed
    )


def _relaid_positions(conv):
    """The argument positions of a relaid convolution (or its backward) that get channels-last
    copies. Activations (and gradients) always. Weights on CUDA, where one generated copy, shared
    by the forward and the backward, replaces the permuting copy cuDNN's callers make inside every
    convolution and every backward (ResNet-18 training: 34 such copies per step); on the CPU only
    when frozen constants keep their copies between calls, as oneDNN reorders weights into its own
    blocked layout anyway."""
    where = _CONVOLUTIONS[conv.target]
    positions = [where["input"]] + ([where["grad"]] if where["grad"] is not None else [])
    if config.freeze_constants or meta_value(conv.args[where["input"]]).device.type == "cuda":
        positions.append(where["weight"])
    return positions


def _tensor_of(gm, node):
    if node.op == "get_attr":
        target = gm
        for part in node.target.split("."):
            target = getattr(target, part)
        return target
    return node.meta["val"]


def repropagate(gm, fake_mode):
    """Recomputes node.meta["val"] of every call_function node on fake tensors, in order."""
    def value(n):
        return _tensor_of(gm, n)

    with fake_mode:
        for node in list(gm.graph.nodes):
            if node.op != "call_function":
                continue
            if node.target in VIEWS:
                _densify_for_view(gm, node)
            args = torch.fx.node.map_arg(node.args, value)
            kwargs = torch.fx.node.map_arg(node.kwargs, value)
            args, kwargs = _unaliased_written_arguments(node.target, args, kwargs)
            node.meta["val"] = node.target(*args, **kwargs)


VIEWS = (aten.view.default, aten._unsafe_view.default)  # also read by pad_matmuls


def _densify_for_view(gm, node):
    """A view whose input a pass re-laid out (x.view(n, -1) after a convolution, now
    channels-last) may no longer be expressible on its strides: it reads a contiguous copy then,
    as eager's contiguous value was."""
    source = meta_value(node.args[0])
    if not isinstance(source, torch.Tensor):
        return
    try:
        source.view(torch.fx.node.map_arg(node.args[1], meta_value))  # sizes a graph node computes
    except (RuntimeError, ValueError):  # fake tensors' view raises ValueError
        with gm.graph.inserting_before(node):
            dense = gm.graph.call_function(aten.clone.default, (node.args[0],), {"memory_format": torch.contiguous_format})
        dense.meta["val"] = aten.clone.default(source, memory_format=torch.contiguous_format)
        node.replace_input_with(node.args[0], dense)


def _unaliased_written_arguments(target, args, kwargs):
    """In-place ops (squeeze_ from a 1-D linear, copy_ into an input) run on copies of the
    values they write, so the producers' own meta["val"] keep their shapes and strides."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return args, kwargs
    written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if not written:
        return args, kwargs

    def copy(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).copy_(t)

    args, kwargs = list(args), dict(kwargs)
    for position, argument in enumerate(schema.arguments):
        if argument not in written:
            continue
        if argument.name in kwargs:
            kwargs[argument.name] = copy(kwargs[argument.name])
        elif position < len(args) and not argument.kwarg_only:
            args[position] = copy(args[position])
    return tuple(args), kwargs


def fake_mode_of(gm):
    """The fake mode of the aten graph's meta values, or None when it holds no fake tensor."""
    return next(
        (v.fake_mode for n in gm.graph.nodes if isinstance(v := meta_value(n), torch.Tensor) and hasattr(v, "fake_mode")),
        None,
    )


def _returned_nodes(gm):
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    returned = output_node.args[0]
    return output_node, list(returned) if isinstance(returned, (list, tuple)) else [returned]


def returned_layouts(gm):
    """(shape, strides) of each value the graph returns, None for non-tensors: what eager gives,
    taken before a pass changes layouts."""
    _, returned = _returned_nodes(gm)
    return [(v.shape, v.stride()) if isinstance(v := meta_value(n), torch.Tensor) else None for n in returned]


def _same_shape_and_strides(a, b):
    """Whether two (shape, strides) are one layout; symbolic ones compare as expressions, with no
    guard (a pass's choice must not restrict the sizes the program serves)."""
    def exprs(sizes):
        return [s.node.expr if isinstance(s, torch.SymInt) else s for s in sizes]

    return all(exprs(x) == exprs(y) for x, y in zip(a, b))


def restore_returned_layouts(gm, fake_mode, eager_layouts):
    """Returned values keep eager's strides (a caller may .view() them): a value whose layout a
    pass changed is cloned back to eager's contiguous or channels-last layout at the end."""
    graph = gm.graph
    output_node, returned = _returned_nodes(gm)
    new_returned = list(returned)
    for k, (node, layout) in enumerate(zip(returned, eager_layouts)):
        value = meta_value(node)
        if layout is None or not isinstance(value, torch.Tensor) or _same_shape_and_strides((value.shape, value.stride()), layout):
            continue
        eager_like = torch.empty_strided(hinted(layout[0]), hinted(layout[1]), device="meta")
        if eager_like.is_contiguous():
            memory_format = torch.contiguous_format
        elif eager_like.is_contiguous(memory_format=_CHANNELS_LAST):
            memory_format = _CHANNELS_LAST
        else:
            continue
        with graph.inserting_before(output_node):
            restore = graph.call_function(aten.clone.default, (node,), {"memory_format": memory_format})
        with fake_mode:
            restore.meta["val"] = aten.clone.default(value, memory_format=memory_format)
        new_returned[k] = restore
    if new_returned != returned:
        original = output_node.args[0]
        output_node.args = (type(original)(new_returned) if isinstance(original, (list, tuple)) else new_returned[0],)


def _same_layout(a, b):
    return _same_shape_and_strides((a.shape, a.stride()), (b.shape, b.stride()))


def _call_onednn_directly(convs):
    """float32 convolutions call oneDNN's own convolution op (mkldnn._convolution_pointwise with
    no post-op): on the same channels-last input it runs faster than aten's convolution, which
    reaches oneDNN through more layers and copies (bench/README.md, convnets)."""
    pointwise = getattr(getattr(torch.ops, "mkldnn", None), "_convolution_pointwise", None)
    if pointwise is None:
        return
    for conv in convs:
        x, weight, bias, stride, padding, dilation, transposed, output_padding, groups = conv.args
        if meta_value(x).device.type != "cpu" or meta_value(x).dtype != torch.float32 or transposed or any(output_padding):
            continue
        conv.target = pointwise.default
        conv.args = (x, weight, bias, list(padding), list(stride), list(dilation), groups, "none", [], "")


# On the CPU a channels-last convolution reorders its (contiguous) weight on every call, and in
# training its weight gradient back: it pays where the activations outweigh the weights. Measured
# on ResNet-18 (2 threads, oneDNN; bench/README.md, layout on the CPU): inference gains from about
# a third (128x128, batch 8: 0.93x of the contiguous time; 224x224, batch 8: 0.65x) and loses
# below (224x224, batch 1: 1.42x; 64x64, batch 10: 1.83x); training lost at every size measured
# (224x224, batch 8: 1.10x). Frozen weights are reordered once, so they always pay.
_CPU_ACTIVATIONS_PER_WEIGHT = 1 / 3


def _relayout_pays(convs):
    """Whether relaying these convolutions (CPU or CUDA, the same device) beats eager's layout."""
    if meta_value(convs[0].args[0]).device.type != "cpu":
        return True
    if any(conv.target is aten.convolution_backward.default for conv in convs):
        return False
    if config.freeze_constants:
        return True
    activations = weights = 0
    for conv in convs:
        where = _CONVOLUTIONS[conv.target]
        activations += math.prod(hinted(meta_value(conv.args[where["input"]]).shape))
        weights += math.prod(hinted(meta_value(conv.args[where["weight"]]).shape))
    return activations >= _CPU_ACTIVATIONS_PER_WEIGHT * weights


def prefer_channels_last(gm):
    """Rewrites gm in place when it holds 2-D convolutions worth relaying; returns whether it changed."""
    convs = [n for n in gm.graph.nodes if _is_relaid_conv2d(n)]
    if not convs or not _relayout_pays(convs):
        return False
    fake_mode = fake_mode_of(gm)
    if fake_mode is None:
        return False
    eager_layouts = returned_layouts(gm)

    graph = gm.graph
    inserted = {}  # value -> its channels-last copy, shared by every convolution (and backward) reading it
    for conv in convs:
        for position in _relaid_positions(conv):
            arg = conv.args[position]
            clone = inserted.get(arg)
            if clone is None:
                with graph.inserting_before(conv):
                    clone = inserted[arg] = graph.call_function(aten.clone.default, (arg,), {"memory_format": _CHANNELS_LAST})
            args = list(conv.args)
            args[position] = clone
            conv.args = tuple(args)
    repropagate(gm, fake_mode)
    # A clone of a value that already is channels-last (the output of an earlier convolution,
    # through pointwise ops that keep the layout) copies for nothing.
    for clone in inserted.values():
        if _same_layout(meta_value(clone.args[0]), meta_value(clone)):
            clone.replace_all_uses_with(clone.args[0])
            graph.erase_node(clone)

    _call_onednn_directly([conv for conv in convs if conv.target is aten.convolution.default])

    restore_returned_layouts(gm, fake_mode, eager_layouts)
    graph.lint()
    gm.recompile()
    return True
