"""The inductor backend: an aten-level graph lowered to cdynamo's loop IR, fused, and compiled to
C++/OpenMP kernels run by a C++ runtime. Usable as cdynamo's backend "inductor" and as a backend
of PyTorch's own compiler: torch.compile(model, backend=cdynamo.inductor)."""
import sys
import types

from .. import config
from ..backends.registry import register_backend


@register_backend(name="inductor")
def inductor(gm, example_inputs):
    """backend(gm, example_inputs) -> callable, like every cdynamo backend."""
    from ..symbolic_graphs import per_shape
    from . import data_dependent

    # Sizes only the data decides (nonzero, boolean masks): those operations run eagerly and
    # the segments between them compile as graphs of their own.
    compiled = data_dependent.compile_split(gm, example_inputs, inductor)
    if compiled is not None:
        return compiled
    # A graph with symbolic sizes compiles once for all sizes where its kernels can take them as
    # arguments (symbolic.py says where); otherwise once per sizes met. CUDA graphs record one
    # graph per input sizes either way (CudaGraphed keys its recordings by them).
    from . import symbolic

    compiled = symbolic.try_compile(gm, example_inputs)
    if compiled is not None:
        return _with_cudagraphs(compiled, gm, example_inputs) if config.cudagraphs else compiled
    return per_shape(_compile_static, gm, example_inputs)


def _with_cudagraphs(compiled, gm, example_inputs):
    """compile(mode="reduce-overhead") and options={"triton.cudagraphs": True}."""
    from ..cudagraphs import cudagraphify

    return cudagraphify(compiled, gm, example_inputs)


def _compile_static(gm, example_inputs):
    from .compile_fx import compile_fx

    compiled = compile_fx(gm, example_inputs)
    return _with_cudagraphs(compiled, gm, example_inputs) if config.cudagraphs else compiled


class _CallableModule(types.ModuleType):
    """Lets `cdynamo.inductor` itself be passed as a backend (torch.compile(backend=cdynamo.inductor))."""

    def __call__(self, gm, example_inputs):
        return inductor(gm, example_inputs)


sys.modules[__name__].__class__ = _CallableModule
