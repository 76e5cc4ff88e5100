"""Built-in backends that run the captured graph without generating code: "eager" and "aot_eager"."""
import contextlib

from .registry import register_backend


@register_backend
def eager(gm, example_inputs):
    """Run the captured torch.fx graph as it is."""
    # The bound forward, not gm itself: nn.Module.__call__ costs microseconds per call.
    return gm.forward


def _return_graph_unchanged(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(gm.forward)


def _with_tuple_output(gm):
    """`gm` itself if it returns a tuple or list, else a copy returning a 1-tuple, and whether
    the result then needs unwrapping. AOTAutograd accepts only graphs with tuple outputs (what
    cdynamo's frontend produces); user-built graphs may return a bare tensor."""
    import torch.fx

    output_node = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    if isinstance(output_node.args[0], (tuple, list)):
        return gm, False
    graph = torch.fx.Graph()
    result = graph.graph_copy(gm.graph, {})
    graph.output((result,))
    return torch.fx.GraphModule(gm, graph), True


@contextlib.contextmanager
def cuda_left_uninitialized(example_inputs):
    """AOTAutograd saves and restores the CUDA RNG state around its trace whenever CUDA is
    available, which initializes CUDA in a process that has not used it (a CPU model on a GPU
    machine): a CUDA context the user did not ask for, and a non-reentrant checkpoint's forward
    then fails ("device state was initialized in the forward pass"). For graphs without CUDA
    tensors in such a process, torch.cuda.is_available() answers False while the trace runs
    (callers hold the tracing lock; another thread asking meanwhile is told the same)."""
    import torch

    on_cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs)
    if on_cuda or torch.cuda.is_initialized() or not torch.cuda.is_available():
        yield
        return
    available = torch.cuda.is_available
    torch.cuda.is_available = lambda: False
    try:
        yield
    finally:
        torch.cuda.is_available = available


@register_backend
def aot_eager(gm, example_inputs):
    """Trace forward (and backward) to aten with AOTAutograd and core-aten decompositions, then
    run those graphs unchanged: checks that the aten lowering path gives eager's results."""
    # Imported here: AOTAutograd and the decomposition table take about a second to import.
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._subclasses.fake_tensor import DynamicOutputShapeException
    from torch.fx.experimental.symbolic_shapes import PendingUnbackedSymbolNotFound

    from ..inductor.targets import autograd_state_reason
    from ..symbolic_graphs import symbolic_example_inputs

    if autograd_state_reason(gm) is not None:
        return gm.forward  # AOTAutograd's functional graphs would drop the new leaf's requires_grad
    tuple_gm, unwrap = _with_tuple_output(gm)
    # A graph with symbolic sizes is traced on its own fake inputs (their ShapeEnv): AOTAutograd's
    # graphs then take any sizes the frontend's guards admit.
    traced_inputs = symbolic_example_inputs(gm) or example_inputs
    try:
        with cuda_left_uninitialized(example_inputs):
            compiled = aot_module_simplified(
                tuple_gm,
                traced_inputs,
                fw_compiler=_return_graph_unchanged,
                bw_compiler=_return_graph_unchanged,
                decompositions=core_aten_decompositions(),
                keep_inference_input_mutations=True,
            )
    except PendingUnbackedSymbolNotFound:
        # AOTAutograd's functionalization loses numbers read from tensors that its graphs hold
        # only in a write's bounds (out[start:end] = ... with start = t[i].item()): as captured.
        return gm.forward
    except DynamicOutputShapeException:
        # An operator whose fake needs the data for an intermediate size (CTC loss: the frontend
        # knew its result's sizes, _fake_runs._known_output_rule): aten tracing cannot run it.
        return gm.forward
    if not unwrap:
        return compiled

    def run_single_output(*args):
        return compiled(*args)[0]

    return run_single_output
