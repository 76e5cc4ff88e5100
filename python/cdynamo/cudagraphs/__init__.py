"""CUDA graphs for compiled callables: cudagraphify(fn, gm) and the "cudagraphs" backend (the graph run as it is).
Assumes torch with CUDA at run time; anything else runs without graphs, saying why."""
from ..backends.registry import register_backend
from .wrapper import CudaGraphed

__all__ = ["CudaGraphed", "cudagraphify", "cudagraphs"]


def cudagraphify(fn, gm=None, example_inputs=None, runtime=None):
    """fn (a backend's compiled callable) run through CUDA graphs, or without them, saying why,
    where they would not give eager's results. gm is the fx graph fn was compiled from: its
    parameters and buffers are read where they are, never copied. runtime: the CUDA calls
    (tests pass a CPU stand-in)."""
    from ..backends.registry import _without_lazy_stub
    from .policy import graph_values_reason, module_tensors

    if runtime is None:
        from .runtime import cuda_runtime

        runtime = cuda_runtime()
    statics = module_tensors(gm) if gm is not None else []
    refusal = graph_values_reason(gm, runtime.device_type) if gm is not None else None
    return CudaGraphed(_without_lazy_stub(fn), runtime, statics, gm, refusal)


@register_backend(name="cudagraphs")
def cudagraphs(gm, example_inputs):
    """The captured graph run as it is (gm.forward), recorded into CUDA graphs and replayed: one
    recording per input sizes met (and per value of the number inputs); sizes the graph returns as
    numbers are computed beside it."""
    from ..symbolic_graphs import NumberOutputs, graph_is_symbolic

    if not graph_is_symbolic(gm):
        return cudagraphify(gm.forward, gm, example_inputs)
    split = NumberOutputs(gm, keep_examples=True)
    if not split.runs_tensor_graph:
        return split.number_fn
    return split.wrap(cudagraphify(split.tensor_gm.forward, split.tensor_gm, example_inputs))
