"""The Python half of the inductor's Triton target: builds the kernels the C++ code generator
wrote (cubins for the C++ launcher on CUDA; interpreter callables on CPU tensors).

Called from C++ (target/triton_target.cpp) as build_kernels(descriptions): one dict per kernel
with "name", "source", "function", "device", "signature", "scalars", "reduction", "config"
(XBLOCK, RBLOCK, num_warps, num_stages) and "candidates". Returns, per kernel, a callable
launch(*tensors) for CPU tensors (Triton's interpreter, TRITON_INTERPRET=1), or for CUDA a dict
with "cubin", "symbol", "num_warps", "shared", "implicit_params", "device_index", "config".
"""
import hashlib
import importlib.util
import os
import sys

from .. import config, utils

INTERPRET_ENV = "TRITON_INTERPRET"


class _interpreting:
    """TRITON_INTERPRET=1 while a module's @triton.jit decorators run: Triton reads the variable
    when it decorates, so these kernels are interpreted and the process's other kernels are not."""

    def __enter__(self):
        # Triton's own modules (its standard library, gluon) must be decorated normally first:
        # they check later that the mode they were decorated in is the mode in force.
        import triton  # noqa: F401
        import triton.language  # noqa: F401

        try:
            import triton.experimental.gluon  # noqa: F401
        except ImportError:
            pass
        self.saved = os.environ.get(INTERPRET_ENV)
        os.environ[INTERPRET_ENV] = "1"

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(INTERPRET_ENV, None)
        else:
            os.environ[INTERPRET_ENV] = self.saved


def _module_from_source(source, function, interpret):
    """The @triton.jit function of a generated module, imported from a file (Triton's JIT reads
    its source through inspect)."""
    key = hashlib.sha256(source.encode()).hexdigest()
    folder = os.path.join(os.path.expanduser(config.cache_dir), "triton_src", key[:2])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"k{key}.py")
    if not os.path.exists(path):
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            f.write(source)
        os.replace(temporary, path)
    name = f"cdynamo_triton_{'interpreted_' if interpret else ''}{key}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        if interpret:
            from . import triton_interpreter

            with _interpreting():
                spec.loader.exec_module(module)
            triton_interpreter.patch_module(module)
        else:
            spec.loader.exec_module(module)
        sys.modules[name] = module
    return getattr(module, function)


def _interpreted_launch(desc):
    kernel = _module_from_source(desc["source"], desc["function"], interpret=True)
    xblock, rblock, num_warps, _ = desc["config"]
    scalars = list(desc["scalars"])
    constexprs = {"XBLOCK": xblock}
    if desc["reduction"]:
        constexprs["RBLOCK"] = rblock
    grid = ((scalars[0] + xblock - 1) // xblock,)

    def launch(*tensors):
        kernel[grid](*tensors, *scalars, **constexprs)

    return launch


def build_kernels(descriptions):
    results = [None] * len(descriptions)
    cuda = []
    for k, desc in enumerate(descriptions):
        if desc["device"] == "cpu":
            results[k] = _interpreted_launch(desc)
        else:
            cuda.append(k)
    if cuda:
        from . import triton_build

        built = triton_build.build_for_launch([descriptions[k] for k in cuda])
        for k, result in zip(cuda, built):
            results[k] = result
    utils.counters["inductor"]["triton_kernels"] += len(descriptions)
    return results
