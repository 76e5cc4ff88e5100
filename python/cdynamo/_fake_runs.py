"""Running an operation on fake tensors for its outputs' metadata, and turning its failures into graph breaks,
the traced code's own exceptions, or a retrace over symbolic sizes. Assumes the mode comes from _fake_mode."""
import functools
import logging
import threading

import torch

from ._trace_errors import OP_ERRORS_RAISED_IN_TRACE, TraceOpError, TraceUnsupported


def _data_dependent_exceptions():
    from torch._subclasses import fake_tensor

    names = ("DataDependentOutputException", "DynamicOutputShapeException", "UnsupportedOperatorException")
    found = tuple(getattr(fake_tensor, name) for name in names if hasattr(fake_tensor, name))
    try:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        found += (GuardOnDataDependentSymNode,)
    except ImportError:
        pass
    return found


_DATA_DEPENDENT = None


class outside_saved_tensor_hooks:
    """Lifts autograd's saved-tensor hooks (torch.utils.checkpoint's, saved_tensors_hooks blocks)
    for the duration: what tracing runs on fake tensors is not the program's forward, and a
    checkpoint counting the tensors its forward saved must not count the trace's too."""

    def __enter__(self):
        autograd = torch._C._autograd
        self._lifted = []
        while (top := autograd._top_saved_tensors_default_hooks(True)) is not None:
            self._lifted.append(top)
            autograd._pop_saved_tensors_default_hooks()
        return self

    def __exit__(self, *exc):
        for pack, unpack in reversed(self._lifted):
            torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
        return False


def _data_dependent_ops_break():
    """Whether operations of data-dependent output sizes break the graph (the frame's second
    compile). compile_frame.cpp sets the flag on cdynamo._trace_support, where the C++ side
    finds its helpers: it is read there."""
    from . import _trace_support

    return _trace_support.data_dependent_ops_break


def _scalar_outputs_captured():
    """Whether the trace keeps Tensor.item() in the graph (set by compile_frame.cpp)."""
    from . import _trace_support

    return _trace_support.scalar_outputs_captured


def _retraced_with_symbols(error, mode):
    """Whether a fake run that needed data can succeed over a ShapeEnv, with an unbacked symbol
    for what only the data gives: an output size (nonzero, a boolean mask, unique), or, where
    the trace keeps item() in the graph, a number read from a tensor (torch.arange(t.max()),
    torch.ones(2, n) with n a 0-d tensor: eager reads its item())."""
    if getattr(mode, "shape_env", None) is not None or _data_dependent_ops_break():
        return False
    kind = type(error).__name__
    return kind == "DynamicOutputShapeException" or (kind == "DataDependentOutputException" and _scalar_outputs_captured())


def fake_run(mode, what, fn, args, kwargs):
    """Runs fn on fake tensors; an operation that needs real data becomes TraceUnsupported."""
    global _DATA_DEPENDENT
    if _DATA_DEPENDENT is None:
        _DATA_DEPENDENT = _data_dependent_exceptions()
    try:
        if torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
            with outside_saved_tensor_hooks(), mode:
                return fn(*args, **kwargs)
        if getattr(mode, "shape_env", None) is not None:
            return _symbolic_fake_run(mode, fn, args, kwargs)
        with mode, _fake_tensor_log_held_back():  # an error here is reported as the trace's own
            return fn(*args, **kwargs)
    except _DATA_DEPENDENT as error:
        known = _output_known_from_metadata(mode, fn, args, kwargs)
        if known is not None:
            return known
        if _retraced_with_symbols(error, mode):
            from .shapes import RetraceDynamic

            raise RetraceDynamic(what, data_dependent=True) from None
        raise TraceUnsupported(
            f"{what} depends on the values inside a tensor ({type(error).__name__}); "
            "keep the computation in tensors, or move it out of the compiled function"
        ) from None
    except TraceUnsupported:
        raise
    except Exception as error:  # noqa: BLE001 - the user's op failed: eager will raise it properly
        message = f"{what} raised {type(error).__name__} while tracing: {error}"
        if type(error) in OP_ERRORS_RAISED_IN_TRACE:
            raise TraceOpError(message, error) from None
        raise TraceUnsupported(message) from None


# Calls whose fake needs the data only for intermediate values: what they return has sizes the
# arguments' metadata gives. CTC loss's kernel sizes its alignment table by the longest target
# (a value of target_lengths); its loss is one number per sample, or their reduction.
def _ctc_loss_like(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """A fake of F.ctc_loss's result: its shape, dtype, device and autograd history (from log_probs)."""
    per_sample = (log_probs * 0).sum(dim=(0, 2)) if log_probs.dim() == 3 else (log_probs * 0).sum()
    return per_sample if reduction == "none" else per_sample.sum()


def _known_output_rule(fn):
    """The rule standing in for fn's fake (found by identity: a callable may not be hashable), or None."""
    return _ctc_loss_like if fn is torch.nn.functional.ctc_loss else None


def traces_only_with_data(gm, node):
    """Whether node calls what _known_output_rule stands in for (aten tracing, which runs the
    real operator's fake, cannot trace it: the inductor runs such a node eagerly)."""
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), torch.nn.CTCLoss)
    return node.op == "call_function" and _known_output_rule(node.target) is not None


def _output_known_from_metadata(mode, fn, args, kwargs):
    """The fake result of a call _known_output_rule knows (a function, or a CTCLoss module: its
    attributes are the function's keywords), or None."""
    if isinstance(fn, torch.nn.CTCLoss):
        kwargs = dict(kwargs, blank=fn.blank, reduction=fn.reduction, zero_infinity=fn.zero_infinity)
        fn = torch.nn.functional.ctc_loss
    rule = _known_output_rule(fn)
    if rule is None:
        return None
    with mode:
        return rule(*args, **kwargs)


_CONCRETE_ONLY = "expected to contain only concrete integers"


# aten operators whose kernels, run by fake tensors as their meta, reject symbolic sizes (after
# specialising some of them on the way): with symbolic sizes, their Python decompositions run.
_DECOMPOSED_WHEN_SYMBOLIC = ("constant_pad_nd.default", "baddbmm.default")


def _symbolic_fake_run(mode, fn, args, kwargs):
    """fn on fakes with symbolic sizes. FakeTensorMode prefers an operator's decomposition with
    symbolic sizes unless it has a Python meta function: those of _DECOMPOSED_WHEN_SYMBOLIC are
    hidden from it meanwhile. Another operator that rejects symbolic sizes the same way makes fn
    run again with a dispatch mode decomposing it (not always: under a Python dispatch mode,
    torch before 2.13 specialises every size a kernel reads). FakeTensorMode logs such failures
    as errors: the log is held back."""
    from torch._decomp import meta_table
    from torch._dispatch.python import enable_python_dispatcher

    hidden = {op: meta_table.pop(op) for op in _decomposed_when_symbolic() if op in meta_table}
    try:
        try:
            # The Python dispatcher runs composite operators' symbolic-size-aware Python
            # kernels (matmul's, on torch 2.11, otherwise reads sizes as ints: specialising them).
            with mode, enable_python_dispatcher(), _fake_tensor_log_held_back():
                return fn(*args, **kwargs)
        except RuntimeError as error:
            if _CONCRETE_ONLY not in str(error):
                raise
        with mode, _decompose_where_rejected()(), _fake_tensor_log_held_back():
            return fn(*args, **kwargs)
    finally:
        meta_table.update(hidden)


_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")


class _FakeTensorLogFilter(logging.Filter):
    """Drops fake_tensor's records while this thread holds them back (per thread: traces of
    other threads keep their logging)."""

    held_back = threading.local()

    def filter(self, record):
        return not getattr(self.held_back, "depth", 0)


_FAKE_TENSOR_LOG.addFilter(_FakeTensorLogFilter())


class _fake_tensor_log_held_back:
    """FakeTensorMode logs an operator's failure as an error before raising it; the trace turns
    the failure into a graph break or the traced code's exception, and says so itself."""

    def __enter__(self):
        state = _FakeTensorLogFilter.held_back
        state.depth = getattr(state, "depth", 0) + 1

    def __exit__(self, *exc_info):
        _FakeTensorLogFilter.held_back.depth -= 1
        return False


@functools.cache
def _decompose_where_rejected():
    """A dispatch mode running an operator's decomposition where its kernel rejected symbolic sizes."""
    from torch._decomp import decomposition_table
    from torch.utils._python_dispatch import TorchDispatchMode

    class DecomposeWhereRejected(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                return func(*args, **kwargs)
            except RuntimeError as error:
                if _CONCRETE_ONLY not in str(error) or func not in decomposition_table:
                    raise
                return decomposition_table[func](*args, **kwargs)

    return DecomposeWhereRejected


@functools.cache
def _decomposed_when_symbolic():
    from torch._decomp import decomposition_table

    ops = (functools.reduce(getattr, name.split("."), torch.ops.aten) for name in _DECOMPOSED_WHEN_SYMBOLIC)
    return frozenset(op for op in ops if op in decomposition_table)
