"""libdevice under Triton's interpreter: the interpreter runs kernels on NumPy arrays but has no
extern functions (triton.language.extra.libdevice is a stub the GPU compiler replaces), so the
generated kernels' libdevice calls (exp, tanh, pow, ...) get NumPy implementations here: the
very source that runs on the GPU runs in CI. Assumes the module's kernels are interpreted."""
import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

# libdevice function name -> NumPy function.
_FUNCTIONS = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "erfc": _erfc,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "nearbyint": np.rint, "rint": np.rint, "fmod": np.fmod,
    "pow": np.power, "atan2": np.arctan2, "copysign": np.copysign,
}



def _apply(fn, args):
    from triton import language as tl
    from triton.runtime.interpreter import TensorHandle

    tensors = [a for a in args if isinstance(a, tl.tensor)]
    first = tensors[0]
    data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*data)).astype(first.handle.data.dtype)
    shaped = next((t for t in tensors if t.handle.data.shape == result.shape), first)
    return tl.tensor(TensorHandle(result, first.dtype.scalar), shaped.type)


class NumpyLibdevice:
    """Stands in for `libdevice` in interpreted kernel modules: each function on NumPy data."""

    def __getattr__(self, name):
        fn = _FUNCTIONS.get(name)
        if fn is None:
            raise AttributeError(f"cdynamo's interpreter support has no NumPy version of libdevice.{name}")
        return lambda *args: _apply(fn, args)


def patch_module(module):
    """Makes an interpreted kernel module's libdevice calls run on NumPy."""
    module.libdevice = NumpyLibdevice()
