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


_COMPARISONS = {
    "EQ": np.equal, "NE": np.not_equal, "GT": np.greater, "GE": np.greater_equal, "LT": np.less, "LE": np.less_equal,
}


def _fix_comparisons():
    """Triton's interpreter stores a comparison's result in the left operand's element type
    (float data under an int1 type), which NumPy then refuses to combine with |, & or ^.
    Comparisons here return bool data, as the GPU does."""
    from triton.language import int1
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    if getattr(InterpreterBuilder, "_cdynamo_comparisons", False):
        return
    for name in dir(InterpreterBuilder):
        kind = name[-2:]
        if not (name.startswith("create_icmp") or name.startswith("create_fcmp")) or kind not in _COMPARISONS:
            continue
        # fcmpO*: false where an operand is NaN; fcmpU*: true there; icmp*: integers.
        nan_rule = "ordered" if name.startswith("create_fcmpO") else "unordered" if name.startswith("create_fcmpU") else None

        def compare(self, lhs, rhs, op=_COMPARISONS[kind], nan_rule=nan_rule):
            with np.errstate(invalid="ignore"):
                out = np.asarray(op(lhs.data, rhs.data)).astype(np.bool_)
                if nan_rule is not None:
                    nan = np.isnan(lhs.data) | np.isnan(rhs.data)
                    out = out & ~nan if nan_rule == "ordered" else out | nan
            return TensorHandle(out, int1)

        setattr(InterpreterBuilder, name, compare)
    InterpreterBuilder._cdynamo_comparisons = True


def _scalar_index(tensor):
    data = np.asarray(tensor.handle.data)
    if data.size != 1:
        raise TypeError(f"a block of {data.size} elements has no single int value")
    return int(data.reshape(-1)[0])


def _fix_scalar_index():
    """Scalar kernel arguments are one-element arrays under the interpreter; some Triton releases
    (3.6) turn them into Python ints (as `range(0, rnumel, RBLOCK)` needs) by int(array), which
    NumPy 2.5 refuses for arrays that are not 0-dimensional. The conversion here takes the element."""
    from triton.runtime import interpreter

    patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
    if patch_tensor is None or getattr(patch_tensor, "_cdynamo_index", False):
        return

    def patched(tensor, scope, *rest, **kwargs):
        patch_tensor(tensor, scope, *rest, **kwargs)
        scope.set_attr(tensor, "__index__", _scalar_index)

    patched._cdynamo_index = True
    interpreter._patch_lang_tensor = patched


def _halves_reduce(self, inputs):
    """ReduceOps.generic_reduce by halves: the combine function (our NaN-aware max, argmax's
    (value, index) pairs) runs on whole arrays, log2(n) times, instead of once per element in
    Python. Pairs combine as a GPU's tree does; every combine here is order-insensitive but
    float addition, whose rounding then follows the GPU's rather than a left fold's."""
    from triton import language as tl

    original_axis = self.axis
    inputs, axis = self.unravel(inputs, self.axis)
    dtypes = [t.dtype for t in inputs]
    parts = [np.asarray(t.handle.data) for t in inputs]
    while parts[0].shape[axis] > 1:
        n = parts[0].shape[axis]
        half = n // 2
        left = [self.to_tensor(np.take(p, range(half), axis=axis), d) for p, d in zip(parts, dtypes)]
        right = [self.to_tensor(np.take(p, range(half, 2 * half), axis=axis), d) for p, d in zip(parts, dtypes)]
        combined = self.combine_fn.fn(*left, *right)
        combined = combined if isinstance(combined, tuple) else (combined,)
        merged = [np.asarray(c.handle.data if isinstance(c, tl.core.tensor) else c) for c in combined]
        merged = [np.broadcast_to(m, l.handle.data.shape).astype(p.dtype) for m, l, p in zip(merged, left, parts)]
        if n % 2:  # the odd one out joins the next round
            merged = [np.concatenate([m, np.take(p, [n - 1], axis=axis)], axis=axis) for m, p in zip(merged, parts)]
        parts = merged
    ret = []
    for data, dtype in zip(parts, dtypes):
        data = np.squeeze(data, axis=axis)
        if self.keep_dims:
            data = np.expand_dims(data, axis) if original_axis is not None else data.reshape((1,) * parts[0].ndim)
        elif original_axis is None:
            data = data.item()
        ret.append(self.to_tensor(data, dtype))
    return ret


def _fix_generic_reduce():
    from triton.runtime import interpreter

    reduce_ops = getattr(interpreter, "ReduceOps", None)
    if reduce_ops is None or getattr(reduce_ops, "_cdynamo_halves", False) or not hasattr(reduce_ops, "unravel"):
        return
    reduce_ops.generic_reduce = _halves_reduce
    reduce_ops._cdynamo_halves = True


def patch_module(module):
    """Makes an interpreted kernel module's libdevice calls run on NumPy (and the interpreter's
    comparisons return bool data, its scalars convert to ints on every NumPy, and its reductions
    with a combine function run on whole arrays)."""
    _fix_comparisons()
    _fix_scalar_index()
    _fix_generic_reduce()
    module.libdevice = NumpyLibdevice()
