"""Checks of tensor data that the graph runs where traced code branched on the data only to raise
(`if not valid: raise ValueError(...)`, `assert (x > 0).all()`, `assert n <= limit` of an unbacked
n = t.item()). Assumes the condition is a tensor whose truth value eager would take (one element;
bool() raises otherwise, as in eager) or a bool the graph computes from unbacked numbers."""
import torch
from torch._subclasses.fake_tensor import FakeTensor

_RUNS_AS_CAPTURED = "a check of tensor data that raises (an aten trace cannot keep a Python raise)"


def check_node(cls, args, raises_when, where):
    """The graph node for one such check: raises cls(*args) when bool(condition) is raises_when.
    args None: eager's arguments are computed from the data (an f-string of the tensor), which
    the graph does not keep; the message then says where the check is (for Python's own exception
    classes; for others, None: the branch stays a graph break)."""
    if args is None and cls.__module__ != "builtins":
        return None  # eager's own arguments are computed; a class of the program may need them as they are
    if args is None:
        args = (f"the check of tensor data at {where} failed (cdynamo ran it in the compiled graph; eager's "
                "message for it is computed from the data: call the function eagerly to see it)",)

    def check_tensor_data(condition):
        if isinstance(condition, (FakeTensor, torch.SymBool)):
            return None  # the trace's fake run: no data to check
        if bool(condition) == raises_when:
            raise cls(*args)
        return None

    check_tensor_data.__qualname__ = f"check_before_{cls.__name__}"
    check_tensor_data._cdynamo_runs_as_captured = _RUNS_AS_CAPTURED  # aot_eager, training graphs
    check_tensor_data._cdynamo_data_check = True  # the inductor runs it between compiled segments
    return check_tensor_data


def undecided_by_sizes(value):
    """value is a symbolic bool of an unbacked number (Tensor.item() under capture_scalar_outputs)
    that the sizes alone do not decide: only the data can."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return isinstance(value, torch.SymBool) and bool(free_unbacked_symbols(value)) and value.node.expr not in (True, False)


def assume(value, holds):
    """Tells the trace's ShapeEnv that value (an undecided_by_sizes bool) is `holds` on the path the
    trace goes on along: a check node in the graph makes sure of it when the graph runs."""
    torch._check(value if holds else torch.sym_not(value))
