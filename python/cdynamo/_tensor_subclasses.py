"""torch.Tensor subclasses with __torch_function__ in traced code (interp/tensor_subclasses.cpp):
which classes dispatch, the Tensor methods Python's operators call, and the graph run as plain tensors."""
import operator

import torch

ALIAS = torch.ops.aten.alias.default  # the node of Tensor.as_subclass (another object over the same data)
_UNARY = (operator.neg, operator.pos, operator.invert)
_BINARY = (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
           operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.eq,
           operator.ne, operator.lt, operator.le, operator.gt, operator.ge, operator.iadd, operator.isub, operator.imul,
           operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
           operator.ior, operator.ixor, operator.ilshift, operator.irshift)


def _record_operator_dispatch():
    """What torch's own operators give __torch_function__, found by running each on a recording
    subclass (at import: while a frame compiles, dispatch is off): {(op, tensor on the left):
    (func, operands reversed: the right-hand tensor first)}; absent where torch calls none."""
    seen = []

    class Recording(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func, args))
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))

    def run(op, tensor_on_left, dtype):
        seen.clear()
        tensor = torch.ones(2, dtype=dtype).as_subclass(Recording)
        if op in _UNARY:
            op(tensor)
        elif tensor_on_left:
            op(tensor, torch.ones(2, dtype=dtype))
        else:
            op(2, tensor)
        return tensor

    table = {}
    cases = [(op, True) for op in _UNARY] + [(op, left) for op in _BINARY for left in (True, False)]
    for op, tensor_on_left in cases:
        for dtype in (torch.float64, torch.int64):  # bitwise operators: integers
            try:
                tensor = run(op, tensor_on_left, dtype)
                break
            except Exception:  # noqa: BLE001  (an operator torch does not define for these operands)
                tensor = None
        if tensor is not None and seen:
            func, args = seen[0]
            table[op, tensor_on_left] = (func, not tensor_on_left and bool(args) and args[0] is tensor)
    return table


_OPERATOR_DISPATCH = _record_operator_dispatch()


def operator_method(op, tensor_on_left):
    """For `a op b` (a tensor on the left, or a number on the left and a tensor on the right), or
    a unary operator: (func, operands reversed) as torch passes them to __torch_function__, or
    None when torch calls none for it."""
    return _OPERATOR_DISPATCH.get((op, tensor_on_left))


def has_live_torch_function(cls):
    """cls is a torch.Tensor subclass whose __torch_function__ runs on its tensors' operations
    (their results are of the subclass); nn.Parameter's, and FakeTensor's, do not count."""
    from torch._subclasses.fake_tensor import FakeTensor

    if cls is torch.Tensor or not issubclass(cls, torch.Tensor) or issubclass(cls, FakeTensor):
        return False
    handler = getattr(cls, "__torch_function__", None)
    return getattr(handler, "__func__", handler) is not torch._C._disabled_torch_function_impl


def runs_own_torch_function(cls):
    """A live class whose __torch_function__ is its own code (which the trace runs), not torch.Tensor's."""
    handler = getattr(cls, "__torch_function__", None)
    default = torch.Tensor.__torch_function__.__func__
    return has_live_torch_function(cls) and getattr(handler, "__func__", handler) is not default


def traced_class(tensor):
    """The class the trace keeps for an input tensor (Value::cls): its own when it is a subclass
    other than nn.Parameter, else None."""
    cls = type(tensor)
    return None if cls is torch.Tensor or cls is torch.nn.Parameter else cls


def is_nowrap_function(func):
    """torch.Tensor.__torch_function__ returns these functions' results as they are (no subclass)."""
    return func in torch.overrides.get_default_nowrap_functions()


def plain_examples(examples):
    """The graph's example inputs as the backend sees them: tensors of a live subclass as plain
    tensors (the graph runs on plain tensors, running_plain), or None when there are none."""
    if not any(isinstance(t, torch.Tensor) and has_live_torch_function(type(t)) for t in examples):
        return None
    return [t.as_subclass(torch.Tensor) if isinstance(t, torch.Tensor) and has_live_torch_function(type(t)) else t
            for t in examples]


def running_plain(compiled, examples, output_classes):
    """compiled run as the trace ran it: inputs of a live subclass passed as plain tensors, the
    subclasses' __torch_function__ off (the trace ran it), and each output given the class the
    trace gave it (output_classes: a class or None per output). compiled itself when nothing
    needs it."""
    live = [i for i, t in enumerate(examples) if isinstance(t, torch.Tensor) and has_live_torch_function(type(t))]
    classes = [(i, cls) for i, cls in enumerate(output_classes) if cls is not None]
    if not live and not classes:
        return compiled
    disabled = torch._C.DisableTorchFunctionSubclass
    plain = torch.Tensor

    def run(*args):
        if live:
            args = list(args)
            for i in live:
                if type(args[i]) is not plain:
                    args[i] = args[i].as_subclass(plain)
        with disabled():
            outputs = compiled(*args)
        if not classes:
            return outputs
        rewrapped = list(outputs)
        for i, cls in classes:
            rewrapped[i] = rewrapped[i].as_subclass(cls)
        return type(outputs)(rewrapped) if isinstance(outputs, tuple) else rewrapped

    return run


def subclass_refusal(cls):
    """Why a tensor of class cls cannot reach an operation the trace does not dispatch (a layer
    kept as one node, a tensor attribute), or None: there the trace gives results of the class
    as torch.Tensor's __torch_function__ does, which a __torch_function__ of the class's own
    that does more than hand the call on to super()'s would not."""
    if not runs_own_torch_function(cls):
        return None
    function = getattr(cls.__torch_function__, "__func__", cls.__torch_function__)
    code = getattr(function, "__code__", None)
    if code is not None and set(code.co_names) <= {"super", "__torch_function__"} and not code.co_freevars[1:]:
        return None  # return super().__torch_function__(func, types, args, kwargs ...)
    return f"a {cls.__qualname__} tensor, whose own __torch_function__ cdynamo does not run"
