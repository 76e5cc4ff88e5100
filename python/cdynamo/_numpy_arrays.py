"""NumPy arrays made from traced tensors (t.numpy(), np.asarray(t)): a TracedArray holding the tensor,
whose operations and the numpy functions called on it are torch operations in the graph with
NumPy's semantics (axis/keepdims, ddof=0, true division and means of integers in float64), until
torch.from_numpy / torch.as_tensor / torch.tensor takes the tensor back. Traced, not skipped."""
import builtins
import operator

import numpy as np
import torch

from . import _special_calls

_TORCH_DTYPE = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "int64": torch.int64,
    "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
    "complex64": torch.complex64, "complex128": torch.complex128,
}
_NUMPY_DTYPE = {str(t): np.dtype(name) for name, t in _TORCH_DTYPE.items()}


_PYTHON_TYPES = {float: "float64", int: "int64", bool: "bool", complex: "complex128"}


def _torch_dtype(dtype):
    # np.float32 (a scalar type), np.dtype("float32"), "float32" or float, as NumPy reads them.
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, type):
        name = _PYTHON_TYPES.get(dtype) or dtype.__name__
    else:
        name = dtype.name
    return _TORCH_DTYPE[name]


class TracedArray:
    """An ndarray whose values are a traced tensor (never seen by real NumPy)."""

    __array_priority__ = 1000  # numbers and arrays defer to it in mixed arithmetic

    def __init__(self, tensor):
        self.tensor = tensor

    shape = property(lambda self: tuple(self.tensor.shape))
    ndim = property(lambda self: self.tensor.dim())
    size = property(lambda self: self.tensor.numel())
    dtype = property(lambda self: _NUMPY_DTYPE[str(self.tensor.dtype)])
    T = property(lambda self: TracedArray(self.tensor.permute(list(range(self.tensor.dim() - 1, -1, -1)))))

    def __bool__(self):
        return bool(self.tensor)  # NumPy's truth: its one value's (more raise), as the tensor's

    def __len__(self):
        if self.tensor.dim() == 0:
            raise TypeError("len() of unsized object")  # NumPy's error for a 0-d array
        return self.tensor.shape[0]

    def __getitem__(self, index):
        return TracedArray(self.tensor[_tensors(index)])

    def astype(self, dtype, copy=True):
        return TracedArray(self.tensor.to(_torch_dtype(dtype), copy=copy))

    def copy(self):
        return TracedArray(self.tensor.clone())

    def reshape(self, *shape):
        return TracedArray(self.tensor.reshape(*shape))

    def transpose(self, *axes):
        return TracedArray(self.tensor.permute(*axes) if axes else self.T.tensor)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis, keepdims=keepdims)

    def sum(self, axis=None, keepdims=False):
        return sum_(self, axis, keepdims=keepdims)

    def std(self, axis=None, ddof=0, keepdims=False):
        return std(self, axis, ddof=ddof, keepdims=keepdims)

    def var(self, axis=None, ddof=0, keepdims=False):
        return var(self, axis, ddof=ddof, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return amax(self, axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return amin(self, axis, keepdims=keepdims)

    def argmax(self, axis=None):
        return argmax(self, axis)

    def argmin(self, axis=None):
        return argmin(self, axis)

    def __setitem__(self, index, value):
        self.tensor[_tensors(index)] = _tensors(value)

    def squeeze(self, axis=None):
        return TracedArray(self.tensor.squeeze() if axis is None else self.tensor.squeeze(axis))

    def flatten(self):
        return TracedArray(self.tensor.reshape(-1).clone())  # NumPy's flatten copies

    def ravel(self):
        return TracedArray(self.tensor.reshape(-1))

    def item(self):
        return self.tensor.item()

    def tolist(self):
        return self.tensor.tolist()

    def __float__(self):
        return float(self.tensor)  # NumPy's rule too: one element, else TypeError

    def __int__(self):
        return int(self.tensor)

    def __neg__(self):
        return TracedArray(-self.tensor)

    def __abs__(self):
        return TracedArray(self.tensor.abs())


def _tensors(value):
    """value with every TracedArray in it replaced by its tensor (indices, operands)."""
    if isinstance(value, TracedArray):
        return value.tensor
    if isinstance(value, tuple):
        return tuple(_tensors(v) for v in value)
    if isinstance(value, list):
        return [_tensors(v) for v in value]
    return value


def _as_tensor(value):
    if isinstance(value, TracedArray):
        return value.tensor
    if isinstance(value, torch.Tensor):
        return tensor_numpy(value).tensor  # np.exp(t): NumPy reads the tensor through __array__
    if isinstance(value, (list, tuple)) and value and builtins.any(isinstance(v, (TracedArray, list, tuple)) for v in value):
        parts = [_as_tensor(v) for v in value]  # np.array([a, b]) of arrays: stacked, in NumPy's common dtype
        dtype = parts[0].dtype
        for part in parts[1:]:
            dtype = torch.promote_types(dtype, part.dtype)
        return torch.stack([part.to(dtype) for part in parts])
    return torch.as_tensor(value)


def _true_division_operand(t):
    return t.to(torch.float64) if not (t.is_floating_point() or t.is_complex()) else t


def _binary(op, reflected=False):
    def method(self, other):
        if isinstance(other, np.ndarray) and other.size <= CONSTANT_ARRAY_LIMIT:
            other = TracedArray(torch.as_tensor(other))  # a constant array (thresholds): its values
        if not isinstance(other, (TracedArray, torch.Tensor, int, float, bool)):
            return NotImplemented  # a NumPy scalar: not a value a graph holds
        if isinstance(other, torch.Tensor):  # a tensor's operator takes the array: a tensor, by torch's rules
            return op(other, self.tensor) if reflected else op(self.tensor, other)
        a, b = self.tensor, (other if isinstance(other, (int, float, bool)) else _as_tensor(other))
        if isinstance(other, float):  # an integer array and a Python float make float64 in NumPy
            a = _true_division_operand(a)
        if op is operator.truediv:  # integers divide into float64 in NumPy, float32 in torch
            a, b = _true_division_operand(a), (_true_division_operand(b) if isinstance(b, torch.Tensor) else b)
        return TracedArray(op(b, a) if reflected else op(a, b))

    return method


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("pow", operator.pow), ("matmul", operator.matmul)):
    setattr(TracedArray, f"__{_name}__", _binary(_op))
    setattr(TracedArray, f"__r{_name}__", _binary(_op, reflected=True))
def _inplace(tensor_method):
    # arr += 1 changes the array, and so the tensor it was made from, as NumPy's does (a dtype
    # it cannot hold raises in torch as in NumPy).
    def method(self, other):
        if not isinstance(other, (TracedArray, torch.Tensor, int, float, bool)):
            return NotImplemented
        getattr(self.tensor, tensor_method)(other if isinstance(other, (int, float, bool)) else _as_tensor(other))
        return self

    return method


for _name, _method in (("add", "add_"), ("sub", "sub_"), ("mul", "mul_"), ("truediv", "div_"),
                       ("floordiv", "floor_divide_"), ("mod", "remainder_"), ("pow", "pow_"),
                       ("and", "bitwise_and_"), ("or", "bitwise_or_")):
    setattr(TracedArray, f"__i{_name}__", _inplace(_method))
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne), ("and", operator.and_), ("or", operator.or_)):
    setattr(TracedArray, f"__{_name}__", _binary(_op))


def _reduce(fn, a, axis, keepdims, **kwargs):
    t = _as_tensor(a)
    if axis is None:
        result = fn(t, **kwargs)
        return TracedArray(result.reshape((1,) * t.dim()) if keepdims else result)
    return TracedArray(fn(t, dim=axis, keepdim=keepdims, **kwargs))


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out(out)
    return _reduce(torch.mean, _floating(a, dtype), axis, keepdims)


def sum_(a, axis=None, dtype=None, out=None, keepdims=False):
    _no_out(out)
    t = _as_tensor(a)
    return _reduce(torch.sum, TracedArray(t), axis, keepdims, **({"dtype": _torch_dtype(dtype)} if dtype else {}))


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm's 2-norm (of the flattened array, or along an axis): its Frobenius norm too."""
    if ord not in (None, 2, "fro") or (ord == 2 and axis is None and _as_tensor(x).dim() > 1):
        raise NotImplementedError(f"numpy.linalg.norm with ord={ord!r} of a traced array")
    t = _floating(x, None).tensor
    if axis is None:
        result = torch.linalg.vector_norm(t)
        return TracedArray(result.reshape((1,) * t.dim()) if keepdims else result)
    return TracedArray(torch.linalg.vector_norm(t, dim=axis, keepdim=keepdims))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    t = _as_tensor(x)
    return TracedArray(torch.nan_to_num(t, nan=nan, posinf=posinf, neginf=neginf) if t.is_floating_point() else t.clone())


def squeeze(a, axis=None):
    return TracedArray(_as_tensor(a)).squeeze(axis)


def _floating(a, dtype):
    t = _as_tensor(a)
    return TracedArray(t.to(_torch_dtype(dtype)) if dtype is not None else _true_division_operand(t))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _no_out(out)
    return _reduce(torch.std, _floating(a, dtype), axis, keepdims, correction=ddof)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _no_out(out)
    return _reduce(torch.var, _floating(a, dtype), axis, keepdims, correction=ddof)


def amax(a, axis=None, out=None, keepdims=False):
    _no_out(out)
    return _reduce(torch.amax, a, axis, keepdims) if axis is not None else _reduce(torch.max, a, None, keepdims)


def amin(a, axis=None, out=None, keepdims=False):
    _no_out(out)
    return _reduce(torch.amin, a, axis, keepdims) if axis is not None else _reduce(torch.min, a, None, keepdims)


def argmax(a, axis=None, out=None):
    _no_out(out)
    t = _as_tensor(a)
    return TracedArray(torch.argmax(t) if axis is None else torch.argmax(t, dim=axis))


def argmin(a, axis=None, out=None):
    _no_out(out)
    t = _as_tensor(a)
    return TracedArray(torch.argmin(t) if axis is None else torch.argmin(t, dim=axis))


def argsort(a, axis=-1, kind=None, order=None):
    if order is not None:
        return _special_calls.refuse("numpy.argsort with order= on an array made from a tensor")
    t = _as_tensor(a)
    return TracedArray(torch.argsort(t.flatten() if axis is None else t, dim=-1 if axis is None else axis, stable=True))


def sort(a, axis=-1, kind=None, order=None):
    if order is not None:
        return _special_calls.refuse("numpy.sort with order= on an array made from a tensor")
    t = _as_tensor(a)
    return TracedArray(torch.sort(t.flatten() if axis is None else t, dim=-1 if axis is None else axis, stable=True)[0])


def concatenate(arrays, axis=0):
    tensors = [_as_tensor(a) for a in arrays]
    return TracedArray(torch.cat([t.flatten() for t in tensors]) if axis is None else torch.cat(tensors, dim=axis))


def stack(arrays, axis=0):
    return TracedArray(torch.stack([_as_tensor(a) for a in arrays], dim=axis))


def where(condition, x, y):
    return TracedArray(torch.where(_as_tensor(condition), _as_tensor(x), _as_tensor(y)))


def clip(a, a_min, a_max):
    return TracedArray(torch.clamp(_as_tensor(a), _tensors(a_min), _tensors(a_max)))


def asarray(a, dtype=None):
    t = _as_tensor(a)
    return TracedArray(t.detach() if dtype is None else t.detach().to(_torch_dtype(dtype)))


def _no_out(out):
    if out is not None:
        _special_calls.refuse("numpy's out= on an array made from a tensor")


def _unary(fn, floating=True):
    def ufunc(x, /):
        t = _as_tensor(x)
        return TracedArray(fn(_true_division_operand(t) if floating else t))

    return ufunc


def _elementwise(fn):
    def ufunc(x, y, /):
        return TracedArray(fn(_as_tensor(x), _as_tensor(y)))

    return ufunc


FUNCTIONS = {
    np.mean: mean, np.sum: sum_, np.std: std, np.var: var, np.max: amax, np.amax: amax, np.min: amin,
    np.amin: amin, np.argmax: argmax, np.argmin: argmin, np.argsort: argsort, np.sort: sort,
    np.concatenate: concatenate, np.stack: stack, np.where: where, np.clip: clip, np.asarray: asarray,
    np.array: asarray, np.exp: _unary(torch.exp), np.log: _unary(torch.log), np.sqrt: _unary(torch.sqrt),
    np.sin: _unary(torch.sin), np.cos: _unary(torch.cos), np.tanh: _unary(torch.tanh),
    np.abs: _unary(torch.abs, floating=False), np.absolute: _unary(torch.abs, floating=False),
    np.square: _unary(torch.square, floating=False), np.floor: _unary(torch.floor, floating=False),
    np.ceil: _unary(torch.ceil, floating=False), np.maximum: _elementwise(torch.maximum),
    np.minimum: _elementwise(torch.minimum), np.matmul: _elementwise(torch.matmul), np.dot: _elementwise(torch.matmul),
    np.power: _elementwise(torch.pow), np.add: _elementwise(torch.add), np.subtract: _elementwise(torch.sub),
    np.multiply: _elementwise(torch.mul), np.linalg.norm: norm, np.squeeze: squeeze,
    np.logical_and: _elementwise(torch.logical_and), np.logical_or: _elementwise(torch.logical_or),
    np.logical_xor: _elementwise(torch.logical_xor), np.logical_not: _unary(torch.logical_not, floating=False),
    np.nan_to_num: nan_to_num,
}


CONSTANT_ARRAY_LIMIT = 65536  # elements: a larger array ends the graph where the trace needs it


def is_constant_array(value):
    """An ndarray the trace holds as a constant: a plain one of a dtype torch has and at most
    CONSTANT_ARRAY_LIMIT elements (read from the frame, its contents guarded: array_state)."""
    return (type(value) is np.ndarray and value.dtype.name in _TORCH_DTYPE and value.size <= CONSTANT_ARRAY_LIMIT
            and value.dtype.byteorder in "=|")


def array_state(value):
    """What a guard compares of an array read from the frame: its dtype, shape and bytes (a
    change of any recompiles), or None for what is no longer an ndarray."""
    if type(value) is not np.ndarray:
        return None
    return value.dtype.str, value.shape, value.tobytes()


def array_tensor(values, dtype):
    """The tensor of a constant array's values (values: its tolist()) that a graph makes where a
    torch operation is given the array, as torch converts one."""
    return torch.tensor(values, dtype=_TORCH_DTYPE[dtype])


def replacement(fn):
    """The function traced in place of numpy's fn called on arrays made from tensors, or None."""
    return FUNCTIONS.get(fn)


def tensor_numpy(t, *, force=False):
    """t.numpy(): eager refuses tensors that require grad (unless force) and those off the CPU."""
    if t.requires_grad and not force:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    if t.device.type != "cpu" and not force:
        raise TypeError(f"can't convert {t.device.type} device type tensor to numpy. "
                        "Use Tensor.cpu() to copy the tensor to host memory first.")
    return TracedArray(t.detach().cpu() if force else t.detach())


def to_tensor(fn, array, *args, **kwargs):
    """torch.from_numpy / as_tensor / asarray (the array's own memory: its tensor) and torch.tensor
    (a copy) of a TracedArray; dtype= and device= as those functions take them."""
    t = array.tensor
    if fn is torch.tensor:
        t = t.clone()
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    if args or builtins.any(k not in ("dtype", "device", "requires_grad") for k in kwargs):
        return _special_calls.refuse(f"{fn.__name__}() of an array made from a tensor with these arguments")
    if dtype is not None or device is not None:
        t = t.to(device=device, dtype=dtype)
    if kwargs.get("requires_grad"):
        t = t.requires_grad_()
    return t
