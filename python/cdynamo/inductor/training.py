"""Compiled training: AOTAutograd traces a graph that needs gradients into a joint forward and
backward and splits it (min-cut rematerialization); each half goes through the C++ pipeline as an
inference graph does. Assumes compile_fx chose the target for this graph (and checks the GPU's
path after the compile: targets.checked_on_device).

AOTAutograd's runtime (one autograd.Function per graph) keeps eager's semantics for input
mutations, outputs that alias inputs and non-differentiable outputs. What it does not keep is
restored here: an input whose gradient flows only from outputs the loss did not use gets None in
eager, not zeros (_NoneTangents below); a backward with create_graph=True gets differentiable
gradients (double_backward.py). A write into a tensor autograd saved, which eager reports
only at backward time, fails the joint trace: compile_fx runs such graphs with eager autograd."""
import contextlib
import functools
import operator
import threading

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .. import config, utils
from .._graph_module import lazy_graph_modules
from . import layout, output_aliases, pad_matmuls, symbolic_floats
from .double_backward import CreateGraphBackward

_WARNED = set()  # reasons a half ran with aten's kernels, warned about once each


def compile_training(gm, example_inputs, target, device_type):
    """A callable computing gm's outputs whose backward runs compiled programs."""
    from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    from ..backends.eager import _with_tuple_output, cuda_left_uninitialized
    from .decompositions import table
    from .triton_build import warm_up_for

    warm_up_for(target, device_type)  # the build workers start while the joint graph is traced
    tuple_gm, unwrap = _with_tuple_output(gm)
    tracker = _NoneTangents()
    # A joint graph of symbolic sizes: its halves must compile for every size (strict), and the
    # views its forward saves are laid out at each call's sizes.
    symbolic = any(isinstance(t, torch.Tensor) and _has_symbolic_layout(t) for t in example_inputs)

    # A symbolic joint graph whose half the pipeline cannot compile for every size (a float
    # computed from sizes: batch norm's n / (n - 1)) raises while AOTAutograd compiles, so that
    # the graph compiles per sizes met instead of running that half with aten's kernels.
    tracing = [True]

    def strict():
        return symbolic and tracing[0]

    def forward_compiler(fw_gm, fw_inputs):
        return make_boxed_func(_compile_half(fw_gm, target, device_type, "forward", strict()))

    def backward_compiler(bw_gm, bw_inputs):
        keep_nones = tracker.backward_of(bw_gm)  # read before compiling: that sets Nones aside
        return make_boxed_func(keep_nones(_compile_half(bw_gm, target, device_type, "backward", strict())))

    def partition(joint_gm, joint_inputs, **options):
        # Layouts are chosen on the joint graph: what the forward saves for the backward stays
        # channels-last (or padded) between the halves; only results and gradients get eager's.
        if config.channels_last_convolutions:
            layout.prefer_channels_last(joint_gm)
        if config.pad_matmuls:  # K and N static: the padding serves every size
            pad_matmuls.pad_misaligned_matmuls(joint_gm)
        with _common_subexpressions_merged(joint_gm, options.get("num_fwd_outputs")):
            fw_gm, bw_gm = min_cut_rematerialization_partition(joint_gm, joint_inputs, **options)
        _refuse_saved_written_inputs(fw_gm, bw_gm)
        if symbolic:
            _save_views_contiguous(fw_gm, bw_gm)
        return fw_gm, bw_gm

    with cuda_left_uninitialized(example_inputs), _float_symbols_hidden(example_inputs), lazy_graph_modules():
        compiled = aot_module_simplified(
            tuple_gm,
            example_inputs,
            fw_compiler=forward_compiler,
            bw_compiler=backward_compiler,
            partition_fn=partition,
            decompositions=table(),
            # Writes to inputs stay in the forward graph (trailing copy_) where autograd need not see
            # them (buffers, writes under no_grad): as Function outputs they would get tangents, and
            # an input written under no_grad a zero .grad where eager leaves None.
            keep_inference_input_mutations=True,
        )
    tracing[0] = False  # a backward compiled later (at the first backward) must never fail it
    utils.counters["inductor"]["training_graphs"] += 1
    create_graph = CreateGraphBackward(tuple_gm)

    top_hooks = torch._C._autograd._top_saved_tensors_default_hooks
    # Outputs that are one object in eager (x.float() of a float x returned beside x): AOTAutograd
    # hands out one alias per output.
    repeated = [(k, entry[1]) for k, entry in enumerate(output_aliases.eager_aliases(gm, example_inputs))
                if entry[0] == "output"]

    def run(*args):
        if top_hooks(False) is not None:
            # Saved-tensor hooks (torch.utils.checkpoint, offloading) count and pack each tensor
            # eager's forward saves; the graph as captured saves exactly those.
            utils.counters["inductor"]["training_under_saved_tensor_hooks"] += 1
            return gm.forward(*args)
        outputs = compiled(*args)
        node = call_node(outputs, args) if torch.is_grad_enabled() else None
        if node is not None:
            tracker.watch(node, outputs)
            create_graph.watch(node, args, len(outputs))
        if unwrap:
            return outputs[0]
        if repeated:
            outputs = list(outputs)
        for k, first in repeated:
            outputs[k] = outputs[first]
        return outputs

    return run


@contextlib.contextmanager
def _common_subexpressions_merged(joint_gm, num_forward_outputs):
    """The joint graph's common subexpressions merged by joint_cse.py, and the partitioner's own
    pass (torch._functorch.config.cse, which imports torch._inductor) off meanwhile; as it is
    where the partitioner does not say which outputs are the forward's, or cse is off."""
    from torch._functorch import config as functorch_config

    if num_forward_outputs is None or not functorch_config.cse:
        yield
        return
    from .joint_cse import eliminate_common_subexpressions

    eliminate_common_subexpressions(joint_gm, num_forward_outputs)
    with functorch_config.patch(cse=False):
        yield


@contextlib.contextmanager
def _float_symbols_hidden(example_inputs):
    """AOTAutograd runs torch's tensorify pass whenever the fake mode has a ShapeEnv: a float
    symbol in it that the graph does not turn into a tensor makes the pass ask torch.compile's
    frontend to start over (TensorifyScalarRestartAnalysis). cdynamo gives training graphs their
    floats as constants (symbolic._compile_training): the ShapeEnv's float symbols, which the
    graph no longer reads, are set aside while AOTAutograd traces."""
    from torch.fx.experimental.symbolic_shapes import SymT, symbol_is_type

    from .symbolic import symbol_values

    env = next((t.fake_mode.shape_env for t in example_inputs if getattr(t, "fake_mode", None) is not None), None)
    tables = [] if env is None else [symbol_values(env)]
    hidden = [{s: v for s, v in table.items() if symbol_is_type(s, SymT.FLOAT)} for table in tables]
    for table, floats in zip(tables, hidden):
        for symbol in floats:
            del table[symbol]
    try:
        yield
    finally:
        for table, floats in zip(tables, hidden):
            table.update(floats)


def _has_symbolic_layout(t):
    return any(isinstance(v, torch.SymInt) for v in (*t.shape, *t.stride(), t.storage_offset()))


def eager_autograd_reason(gm):
    """Why AOTAutograd's autograd.Function would not give eager's gradients for gm (None when it
    would), read from the frontend's fake values. An input that requires grad written in place
    (under no_grad, or through `x.detach()`) becomes an output with a tangent: a zero .grad where
    eager leaves None, or a backward that reads the written value. A view of such an input made
    under no_grad is, in eager, a view autograd does not follow back to the input; AOTAutograd
    replays it with gradients (so also a returned view, made under no_grad, of a tensor the graph
    computed with gradients). Those graphs keep eager autograd."""
    def value(node):
        v = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None
        return v if isinstance(v, torch.Tensor) else None

    inputs = [v for n in gm.graph.nodes if n.op == "placeholder" and (v := value(n)) is not None and v.requires_grad]
    storages = {output_aliases.storage_of(v) for v in inputs}

    def shares_memory(node):
        v = value(node)
        return v is not None and output_aliases.storage_of(v) in storages

    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    returned = set(output.all_input_nodes)
    made_with_grad = set()  # storages of tensors computed with gradients in this graph
    grad_enabled = True  # the graph needs gradients: it starts with grad mode on
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
            grad_enabled = bool(node.args[0])
            continue
        written = _written_argument(gm, node)
        if written is not None and shares_memory(written):
            return f"an input that requires grad is written in place ({node.format_node()})"
        if not grad_enabled and node.op != "placeholder" and shares_memory(node):
            return f"a view of an input that requires grad is made under no_grad ({node.format_node()})"
        v = value(node)
        if v is None or node.op == "placeholder":
            continue
        if grad_enabled and v.requires_grad:
            made_with_grad.add(output_aliases.storage_of(v))
        elif not grad_enabled and node in returned and output_aliases.storage_of(v) in made_with_grad:
            # AOTAutograd replays returned views from their base with gradients: eager's view,
            # made under no_grad, has none.
            return f"a returned view of a tensor that requires grad is made under no_grad ({node.format_node()})"
    return None


@functools.cache
def _inplace_operators():
    from .._python_rules import inplace_to_plain

    return frozenset(inplace_to_plain()) | {operator.setitem}


def _written_argument(gm, node):
    """The node whose tensor `node` writes in place, or None."""
    first = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
    if isinstance(node.kwargs.get("out"), torch.fx.Node):
        return node.kwargs["out"]
    if node.op == "call_method":
        name = node.target
    elif node.op == "call_function":
        if node.target in _inplace_operators():
            return first
        name = getattr(node.target, "__name__", "")
    elif node.op == "call_module":
        return first if getattr(gm.get_submodule(node.target), "inplace", False) is True else None
    else:
        return None
    if node.kwargs.get("inplace") is True or (name.endswith("_") and not name.startswith("__")):
        return first
    return None


def _refuse_saved_written_inputs(fw_gm, bw_gm):
    """Raises (the graph then runs with eager autograd) when the forward saves for the backward
    an input it writes in place, or a view of one: the backward would read the written value
    (the partitioner recomputes from inputs without knowing they change)."""
    written = {output_aliases.storage_of(n.args[0].meta["val"]) for n in fw_gm.graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten.copy_.default and n.args[0].op == "placeholder"}
    forward_values = {n.name: n.meta.get("val") for n in fw_gm.graph.nodes}
    for node in bw_gm.graph.nodes:
        value = forward_values.get(node.name) if node.op == "placeholder" else None
        if isinstance(value, torch.Tensor) and output_aliases.storage_of(value) in written:
            raise RuntimeError("the backward would read an input the forward writes in place")


def _save_views_contiguous(fw_gm, bw_gm):
    """A symbolic forward returns the strided views it saves (a transposed attention matrix) as
    contiguous copies, and the backward, traced on the views, would copy each back into the
    view's layout on every call: the forward saves contiguous clones, which the backward is
    compiled to read. Broadcast (stride 0) views are left as they are (the program reads one element of
    a copy along the broadcast dimension)."""
    output = fw_gm.graph.output_node()
    returned = list(output.args[0])
    forward_nodes = {n.name: n for n in fw_gm.graph.nodes if n.op != "placeholder"}
    for placeholder in bw_gm.graph.nodes:
        node = forward_nodes.get(placeholder.name) if placeholder.op == "placeholder" else None
        val = node.meta.get("val") if node is not None else None
        if not isinstance(val, torch.Tensor) or returned.count(node) != 1 or not _has_symbolic_layout(val):
            continue
        hints = [layout.hint(s) for s in val.stride()]
        if 0 in hints or hints == _contiguous_strides([layout.hint(s) for s in val.shape]):
            continue
        with fw_gm.graph.inserting_after(node):
            copy = fw_gm.graph.call_function(torch.ops.aten.clone.default, (node,),
                                             {"memory_format": torch.contiguous_format})
        with val.fake_mode:
            copy.meta["val"] = torch.ops.aten.clone.default(val, memory_format=torch.contiguous_format)
        returned[returned.index(node)] = copy
        placeholder.meta["val"] = copy.meta["val"]
    output.args = (tuple(returned),)
    fw_gm.recompile()


def _contiguous_strides(sizes):
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= max(size, 1)
    return list(reversed(strides))


# --- one half: None outputs set aside, eager's aliasing read, the C++ pipeline ----------------

def _compile_half(part_gm, target, device_type, kind, strict=False):
    """part_gm (functional aten) as a callable; a backward graph's None gradients (inputs that
    need none) are put back around the compiled program, which returns only tensors."""
    from .. import _C

    output = next(n for n in reversed(part_gm.graph.nodes) if n.op == "output")
    returned = list(pytree.tree_leaves(output.args[0]))
    tensor_positions = [k for k, v in enumerate(returned) if isinstance(v, torch.fx.Node)]
    if len(tensor_positions) != len(returned):
        output.args = (tuple(returned[k] for k in tensor_positions),)
        part_gm.graph.lint()
        part_gm.recompile()
    utils.log("graphs", lambda: f"inductor {kind} graph:\n{part_gm.code}")
    try:
        program = _compile_program(part_gm, target, device_type)
    except Exception as error:  # noqa: BLE001 - a backward compiles at the first backward: never fail it
        if strict:
            raise
        reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        utils.log_and_warn_once("graphs", f"cdynamo inductor: the {kind} graph runs with aten's kernels ({reason})",
                                reason, _WARNED)
        utils.counters["inductor"]["eager_fallback"] += 1
        program = part_gm.forward
    if len(tensor_positions) == len(returned):
        return program
    width = len(returned)

    def with_nones(*args):
        values = [None] * width
        for k, v in zip(tensor_positions, program(*args)):
            values[k] = v
        return values

    return with_nones


def _compile_program(part_gm, target, device_type):
    """part_gm's tensor outputs through the C++ pipeline. A forward with symbolic sizes also
    returns the sizes its backward needs (SymInt outputs): computed from the inputs beside it."""
    from .. import _C
    from ..symbolic_graphs import NumberOutputs

    split = NumberOutputs(part_gm, keep_examples=True)
    if not split.runs_tensor_graph:
        return split.number_fn
    tensor_gm = split.tensor_gm
    symbolic_floats.tensorify_size_floats(tensor_gm)
    output_aliases.annotate(tensor_gm, output_aliases.eager_aliases(tensor_gm, ()))
    # GPU kernels build behind: the forward's join the backward's in the build workers while
    # AOTAutograd lowers the backward (one batch instead of two in turn); the first call waits.
    build_behind = device_type == "cuda"
    program = _C._inductor_compile(tensor_gm, tensor_gm.forward, False, target, device_type, build_behind)
    # Inputs met in another layout than traced (a gradient autograd laid out otherwise, a saved
    # expand returned as a copy) are copied into the traced one by the program itself.
    return split.wrap(program)


# --- None gradients as eager gives them ---------------------------------------------------------

def call_node(outputs, args):
    """The autograd node AOTAutograd made for this call: the grad_fn of an output that is not one
    of the call's own arguments returned as it is (those keep the node that made them)."""
    passed = {id(a) for a in args}
    return next((t.grad_fn for t in outputs if isinstance(t, torch.Tensor) and id(t) not in passed
                 and type(t.grad_fn).__name__ == "CompiledFunctionBackward"), None)


class _NoneTangents:
    """Eager leaves .grad None on an input reached only through outputs the loss did not use;
    AOTAutograd's backward gets zeros for those outputs' gradients and would return zero
    gradients. A pre-hook on each call's backward node notes which outputs got no gradient; the
    backward then returns None for every gradient that depends only on those outputs' tangents
    (read from the backward graph's data flow). The node runs right after its pre-hook on the
    same thread, so the note is thread-local."""

    def __init__(self):
        self._pending = threading.local()

    def watch(self, node, outputs):
        """Registers the pre-hook on a call's backward node (call_node: one node per call)."""
        # The outputs with a tangent: those the node computes (not views made after it).
        with_tangent = [k for k, t in enumerate(outputs) if isinstance(t, torch.Tensor) and t.grad_fn is node]
        if len(with_tangent) < 2:
            return  # one such output: the node runs only when it has a gradient
        count, pending = len(outputs), self._pending

        def note_missing(grad_outputs):
            # The node's outputs are the call's outputs, or only those with a tangent (inputs
            # returned as they are have none); more (mutated inputs, views' bases): positions
            # unknown, zeros kept.
            if len(grad_outputs) == count:
                pending.missing = frozenset(j for j, k in enumerate(with_tangent) if grad_outputs[k] is None)
            elif len(grad_outputs) == len(with_tangent):
                pending.missing = frozenset(j for j, g in enumerate(grad_outputs) if g is None)

        node.register_prehook(note_missing)

    def backward_of(self, bw_gm):
        """A wrapper for bw_gm's compiled program that returns None for gradients fed only by
        tangents of outputs that got no gradient."""
        placeholders = [n for n in bw_gm.graph.nodes if n.op == "placeholder"]
        tangents = [k for k, n in enumerate(placeholders) if n.name.startswith("tangents")]
        feeds = _tangents_feeding_each_output(bw_gm, {placeholders[k]: j for j, k in enumerate(tangents)})
        if not any(feeds):
            return lambda program: program
        return lambda program: self._keeping_nones(program, len(tangents), feeds)

    def _keeping_nones(self, program, tangent_count, feeds):
        pending = self._pending

        def run(*args):
            missing = getattr(pending, "missing", None)
            pending.missing = None
            grads = program(*args)
            if not missing or max(missing) >= tangent_count:
                return grads
            return [None if g is not None and feeds[j] and feeds[j] <= missing else g for j, g in enumerate(grads)]

        return run


def _tangents_feeding_each_output(bw_gm, tangent_index):
    """For each output of the backward graph, the set of tangent positions it depends on."""
    reached = {}
    for node in bw_gm.graph.nodes:
        if node.op == "placeholder":
            reached[node] = frozenset({tangent_index[node]}) if node in tangent_index else frozenset()
        elif node.op != "output":
            deps = set()
            for arg in node.all_input_nodes:
                deps |= reached[arg]
            reached[node] = frozenset(deps)
    output = next(n for n in reversed(bw_gm.graph.nodes) if n.op == "output")
    return [reached[v] if isinstance(v, torch.fx.Node) else frozenset() for v in pytree.tree_leaves(output.args[0])]
