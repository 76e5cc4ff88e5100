"""Python-side helpers of the C++ interpreter: fake-tensor propagation, callable policy, and
GraphModule assembly. Called at compile time only, never on the per-call path."""
import builtins
import collections
import functools
import logging
import math
import operator
import threading
import sys
import types
import typing
import warnings

import torch
import torch.fx

from . import utils
from ._special_calls import _forward_side_effect, break_graph, refuse, transformed


class TraceUnsupported(Exception):
    """Raised to the C++ interpreter: this operation cannot be captured; the message says why."""


class TraceOpError(TraceUnsupported):
    """An operation raised on fake tensors what eager raises on these shapes (a shape mismatch):
    a try/except of the traced code may handle `error`, else the graph breaks before the call."""

    def __init__(self, message, error):
        super().__init__(message)
        self.error = error


# Exceptions an operation raising on fake tensors passes to the traced code's handlers: only these
# exact classes (torch's checks raise them); fake-tensor and symbolic-shape failures are subclasses.
_OP_ERRORS_RAISED_IN_TRACE = (RuntimeError, ValueError, TypeError, IndexError)


# One FakeTensorMode per thread, shared by its traces: converting a real tensor to a fake one is
# the costliest step of tracing (0.07 to 0.25 ms), and the same parameters and inputs are met
# again and again (every layer's frames, the retrace after a graph break). The mode's own memo
# forgets a fake once nobody holds it, so the thread also keeps the fake of each live tensor
# (weakly keyed by the tensor). to_fake checks a remembered fake against the tensor's metadata
# now, so a tensor changed in place since (resize_, .data =, requires_grad_) or a fake changed by
# an in-place op of an earlier trace is converted afresh. _generation is bumped by cdynamo.reset().
_shared = threading.local()
_generation = 0


def reset_fake_mode():
    global _generation
    _generation += 1


def _make_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Parameters of nn.Modules called inside the trace are real tensors: let the mode convert them.
    return FakeTensorMode(allow_non_fake_inputs=True)


def _memo_tables(mode):
    """(describer, tensor memo) of the mode's converter, or None where torch lays them out otherwise
    (then every trace gets a mode of its own, as sharing would be unsafe without eviction)."""
    meta = getattr(getattr(mode, "fake_tensor_converter", None), "meta_converter", None)
    lookup = getattr(getattr(meta, "describer", None), "lookup_tensor", None)
    memo = getattr(meta, "tensor_memo", None)
    return (lookup, memo) if lookup is not None and memo is not None else None


def new_fake_mode():
    state = getattr(_shared, "state", None)
    if state is not None and state[0] == _generation:
        return state[1]
    from torch.utils.weak import WeakIdKeyDictionary

    mode = _make_fake_mode()
    if _memo_tables(mode) is None:
        return mode
    _shared.state = (_generation, mode, WeakIdKeyDictionary())
    return mode


def _matches(fake, tensor):
    return (
        fake.shape == tensor.shape
        and fake.stride() == tensor.stride()
        and fake.storage_offset() == tensor.storage_offset()
        and fake.dtype == tensor.dtype
        and fake.device == tensor.device
        and fake.requires_grad == tensor.requires_grad
        and fake.is_conj() == tensor.is_conj()
        and fake.is_neg() == tensor.is_neg()
    )


def _tensor_kind(tensor):
    if tensor.is_quantized:
        return "quantized tensor"
    if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
        return f"tensor of subclass {type(tensor).__qualname__}"
    return f"{str(tensor.layout).replace('torch.', '')} tensor of dtype {tensor.dtype} on {tensor.device}"


def to_fake(mode, tensor):
    state = getattr(_shared, "state", None)
    kept = state[2] if state is not None and state[1] is mode else None
    if kept is not None:
        fake = kept.get(tensor)
        if fake is not None and _matches(fake, tensor):
            return fake
    try:
        fake = mode.from_tensor(tensor, static_shapes=True)
    except Exception as error:  # noqa: BLE001 - quantized, some subclasses: fakes cannot stand in
        raise TraceUnsupported(
            f"a {_tensor_kind(tensor)} cannot be traced ({type(error).__name__}: {error}); "
            "the code that uses it runs eagerly"
        ) from None
    if _matches(fake, tensor):
        if kept is not None:
            kept[tensor] = fake
        return fake
    tables = _memo_tables(mode)
    tid = tables[0].get(tensor) if tables else None
    if tid is not None and tables[1].get(tid) is fake:
        tables[1].pop(tid, None)  # a remembered fake gone stale: forget it, convert again
        fake = mode.from_tensor(tensor, static_shapes=True)
        if kept is not None and _matches(fake, tensor):
            kept[tensor] = fake
    # (a fresh fake that still differs, for some exotic tensor, is used as is and not kept)
    return fake


def fake_module(mode, module):
    """A shallow twin of a torch.nn layer whose parameters and buffers are the mode's fakes, for
    running its forward on fake tensors. With the real parameters every op would take
    FakeTensorMode's slow path (real inputs bypass its dispatch cache: layer_norm costs 6x); the
    layer itself is never touched, as another thread may be running it. Attributes the forward
    sets land on the twin."""
    twin = object.__new__(type(module))
    state = dict(module.__dict__)
    params, buffers, children = (type(module.__dict__[k])() for k in ("_parameters", "_buffers", "_modules"))
    for name, t in module._parameters.items():
        params[name] = None if t is None else to_fake(mode, t)
    for name, t in module._buffers.items():
        buffers[name] = None if t is None else to_fake(mode, t)
    for name, child in module._modules.items():
        children[name] = None if child is None else fake_module(mode, child)
    state.update(_parameters=params, _buffers=buffers, _modules=children)
    twin.__dict__.update(state)
    return twin


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


def data_assignment_refusal(target, value):
    """Why `target.data = value` cannot be a write of value's elements into target (None: it
    can): eager swaps target's storage for value's, so the metadata must already agree."""
    for what in ("shape", "dtype", "device"):
        if getattr(target, what) != getattr(value, what):
            return f"a tensor of another {what} ({getattr(value, what)} for {getattr(target, what)})"
    if target.stride() != value.stride():
        return f"a tensor of other strides ({value.stride()} for {target.stride()})"
    return None


# Set by the frontend (compile_frame.cpp) while it compiles a frame again with operations of
# data-dependent output sizes breaking the graph.
data_dependent_ops_break = False


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
        if (type(error).__name__ == "DynamicOutputShapeException" and getattr(mode, "shape_env", None) is None
                and not data_dependent_ops_break):
            # An output whose size depends on the data (nonzero, a boolean mask, unique): the
            # trace runs again over a ShapeEnv, where that size is an unbacked symbol.
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
        if type(error) in _OP_ERRORS_RAISED_IN_TRACE:
            raise TraceOpError(message, error) from None
        raise TraceUnsupported(message) from None


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


def structseq_fields(value):
    """Field names of a torch.return_types result (e.g. values, indices), or None."""
    fields = getattr(type(value), "__match_args__", None)
    if isinstance(value, tuple) and fields:
        return list(fields)
    return None


# torch functions that change global state or need real data: never captured into a graph.
_TORCH_UNSUPPORTED = {
    "manual_seed", "seed", "initial_seed", "set_grad_enabled", "set_default_dtype",
    "set_default_device", "set_default_tensor_type", "set_num_threads", "set_num_interop_threads",
    "use_deterministic_algorithms", "set_printoptions", "save", "load", "set_rng_state",
    "get_rng_state", "compile", "no_grad", "enable_grad", "inference_mode", "autocast",
    "set_anomaly_enabled", "set_flush_denormal", "from_numpy", "tolist",
    # autocast's state, set by torch.autocast's __enter__/__exit__ (a with-block on one is what
    # the trace supports).
    "set_autocast_enabled", "set_autocast_dtype", "set_autocast_cache_enabled", "autocast_increment_nesting",
    "autocast_decrement_nesting", "clear_autocast_cache", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype", "set_autocast_ipu_enabled", "set_autocast_ipu_dtype", "set_autocast_xla_enabled",
    "set_autocast_xla_dtype",
}

_FOLDABLE_BUILTINS = {
    abs, min, max, round, int, float, bool, complex, str, divmod, pow, sum, sorted, repr, hash, chr, ord,
    all, any, reversed, slice,
}
# sys.intern of a constant string; the thread's id, a constant of the trace (reprlib's
# recursive_repr keys its in-progress set with it, which a per-trace constant serves as well).
_FOLDABLE_BUILTINS |= {__import__("sys").intern, __import__("_thread").get_ident}
_FOLDABLE_TORCH_CLASSES = {torch.Size, torch.device, torch.finfo, torch.iinfo}
# Builtins computed now on constants only (on a traced value they break the graph: a graph node
# would compute a string from a tensor).
_CONSTANT_ONLY_BUILTINS = (bin, hex, oct, ascii, str.maketrans, bytes.maketrans, bytearray.maketrans)
# Builtin types whose values never change: their C methods compute new values from their arguments.
_IMMUTABLE_BUILTIN_TYPES = (int, float, complex, bool, str, bytes, tuple, frozenset, range, slice)


def _pure_on_immutable_values(fn):
    """fn is a method of an immutable builtin type, written in C: reached through the class
    (str.upper, int.__add__), bound to a value of the type (range(9).index, (1j).conjugate), or a
    classmethod (int.from_bytes, float.fromhex). Called on constants it only computes a value."""
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType)):
        return any(fn.__objclass__ is cls for cls in _IMMUTABLE_BUILTIN_TYPES)
    if not isinstance(fn, types.BuiltinMethodType):
        return any(fn is f for f in _CONSTANT_ONLY_BUILTINS)
    owner = fn.__self__
    if isinstance(owner, type):  # a classmethod; a __new__ makes an instance of any subclass
        return any(owner is cls for cls in _IMMUTABLE_BUILTIN_TYPES) and fn.__name__ != "__new__"
    return any(type(owner) is cls for cls in _IMMUTABLE_BUILTIN_TYPES) or any(fn is f for f in _CONSTANT_ONLY_BUILTINS)


# Objects that never change and are wrapped as constants guarded by identity (besides classes,
# functions and modules): enum members, and type expressions such as typing.List[int] or int | None.
IDENTITY_CONSTANT_TYPES = tuple(
    t for t in (__import__("enum").Enum, types.GenericAlias, getattr(types, "UnionType", None),
                getattr(typing, "_BaseGenericAlias", None), getattr(typing, "_SpecialForm", None),
                getattr(torch.utils._pytree, "TreeSpec", None),  # pytree's specs are immutable
                # sys.version_info, sys.float_info, ...: the interpreter's own, fixed at startup
                *(type(getattr(sys, name, None)) for name in ("version_info", "float_info", "int_info", "hash_info",
                                                              "thread_info", "flags"))) if t is not None
)
# Questions about which object a value is: answered now where the guards fix that object.
_IDENTITY_QUESTIONS = (id, typing.get_origin, typing.get_args)


def _is_compiling_functions():
    """torch's "am I being compiled?" queries. Traced code is being compiled, so they answer True
    there (as under TorchDynamo): programs use them to pick trace-friendly paths."""
    import sys

    found = [torch.compiler.is_compiling, getattr(torch.compiler, "is_dynamo_compiling", None),
             getattr(torch._utils, "is_compiling", None)]
    dynamo = sys.modules.get("torch._dynamo")  # never imported by us: it is a peer, not a dependency
    if dynamo is not None:
        found.append(getattr(dynamo, "is_compiling", None))
        found.append(getattr(getattr(dynamo, "external_utils", None), "is_compiling", None))
    return [f for f in found if f is not None]


def _installation_queries():
    """Questions about what is installed (a package's version, whether a module can be found,
    whether CUDA or torch.distributed is there), asked by library code in forward (transformers'
    availability checks): answered now; the answer does not change while the process runs."""
    import sys

    return _installation_queries_given("torch.distributed" in sys.modules, "packaging.version" in sys.modules)


@functools.cache
def _installation_queries_given(distributed_imported, packaging_imported):
    """_installation_queries' tuple, made once per set of optional modules imported so far."""
    import importlib.metadata
    import importlib.util
    import sys

    found = [importlib.metadata.version, importlib.util.find_spec, importlib.metadata.packages_distributions,
             torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available]
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None:
        found += [getattr(distributed, "is_available", None), getattr(distributed, "is_initialized", None)]
    # Version numbers parsed to compare them (packaging.version.parse("2.1") < ...): immutable values.
    version_module = sys.modules.get("packaging.version")
    if version_module is not None:
        found += [version_module.Version, version_module.parse]
    return tuple(f for f in found if f is not None)


def _has_native_constructor(cls):
    """True when making a cls runs no Python code that could change the program: neither __init__
    nor __new__ is a function, or they are functions free of side effects (an exception class
    whose __init__ keeps a code: made at trace time, once more than eager makes it)."""
    import inspect

    from ._special_calls import _code_side_effect

    for name in ("__init__", "__new__"):
        found = inspect.getattr_static(cls, name, None)
        if isinstance(found, (staticmethod, classmethod)):
            return False
        if isinstance(found, types.FunctionType) and (name == "__new__" or _code_side_effect([found.__code__], found.__globals__)):
            return False
    return True


def _inspection_functions():
    """Library functions that only inspect what they are given (a signature, a dataclass's
    fields): on values the guards fix (functions and classes by identity) they answer now."""
    import dataclasses
    import inspect

    return (inspect.signature, dataclasses.fields, dataclasses.is_dataclass, inspect.isclass, inspect.isfunction,
            inspect.ismethod)


# cdynamo.allow_in_graph / disallow_in_graph: id(fn) -> fn (kept alive, so the id stays its own).
ALLOWED_IN_GRAPH = {}
DISALLOWED_IN_GRAPH = {}


def _is_numpy_callable(fn):
    """numpy's functions, ufuncs and scalar types, except numpy.random's (global state)."""
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    if isinstance(fn, type):
        return issubclass(fn, numpy.generic)
    if isinstance(fn, numpy.ufunc):
        return True
    module = getattr(fn, "__module__", None) or ""
    return (module == "numpy" or module.startswith("numpy.")) and not module.startswith("numpy.random") \
        and callable(fn)


def _is_autograd_function_apply(fn):
    """fn is Cls.apply of a torch.autograd.Function subclass: the graph calls it as eager does,
    and the fake run of its forward gives the output's metadata (a forward that needs real data
    fails that run, and the call breaks the graph with the reason)."""
    owner = getattr(fn, "__self__", None)
    return (isinstance(owner, type) and issubclass(owner, torch.autograd.Function) and owner is not torch.autograd.Function
            and getattr(fn, "__func__", None) is torch.autograd.Function.apply.__func__)


class TracedContextToken:
    """What ContextVar.set() returns inside a trace: the trace keeps the value it set (the real
    context never changes), and reset() of this token takes it back; depth: how many values the
    trace had set on var before this one."""

    __slots__ = ("var", "depth")

    def __init__(self, var, depth):
        self.var = var
        self.depth = depth


_COPY_PROTOCOL = ("__deepcopy__", "__copy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
                  "__getnewargs__", "__getnewargs_ex__", "__slots__")


def copies_attribute_by_attribute(cls):
    """Whether copy.deepcopy copies instances of cls as copy's default reduction does for a plain
    class: a new object (no __init__) whose __dict__ holds a deep copy of each attribute. Folded
    at trace time (cls is a guarded constant)."""
    import copy
    import copyreg

    if not isinstance(cls, type) or not isinstance(getattr(cls, "__dict__", None), types.MappingProxyType):
        return False
    if type(cls) is not type or cls in copy._deepcopy_dispatch or cls in copyreg.dispatch_table:
        return False
    if any(base is not object and (base.__module__ == "builtins" or base.__flags__ & (1 << 9) == 0) for base in cls.__mro__):
        return False  # a builtin base (dict, list, Exception) or a class written in C
    if issubclass(cls, (torch.nn.Module, torch.Tensor)):
        return False
    return not any(name in vars(base) for base in cls.__mro__[:-1] for name in _COPY_PROTOCOL)


_TUPLE_FIELD = type(__import__("collections").namedtuple("_Probe", "field").field)  # collections._tuplegetter


def namedtuple_field_order(cls):
    """The field names of namedtuple class cls in the tuple's order, where reading each by name
    reads the tuple's item at its position (the accessor namedtuple made, not overridden); else
    None. Computed at trace time: cls is guarded by identity."""
    import inspect

    fields = getattr(cls, "_fields", None)
    if type(fields) is not tuple:
        return None
    for position, name in enumerate(fields):
        accessor = inspect.getattr_static(cls, name, None) if type(name) is str else None
        if type(accessor) is not _TUPLE_FIELD or accessor.__reduce__()[1][0] != position:
            return None
    return fields


def builds_namedtuple_by_fields(cls):
    """Whether cls(*items) makes the tuple of items, as tuple.__new__(cls, items) does: cls.__new__ is
    the one collections.namedtuple generated and no __init__ is added. At trace time, as above."""
    import inspect

    new = inspect.getattr_static(cls, "__new__", None)
    new = new.__func__ if isinstance(new, staticmethod) else new
    return (type(new) is types.FunctionType and new.__globals__.get("_tuple_new") is tuple.__new__
            and inspect.getattr_static(cls, "__init__", None) is object.__init__)


def partial_without_dict(partial):
    """Whether a functools.partial object has no attribute dict of its own (a partial of it then
    takes over its function and arguments). At trace time: the object is guarded by identity."""
    return type(partial) is functools.partial and partial.__reduce__()[2][3] is None


_READING_SLOTS = {"__len__", "__getitem__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
                  "__repr__", "__str__", "__hash__", "__bool__"}
_IMMUTABLE_RECEIVERS = (int, float, complex, bool, str, bytes, tuple, frozenset, type(None), torch.Size, torch.dtype)


def _traced_file(filename):
    from .utils import inline_refusal

    return inline_refusal(filename) is None


def classify_callable(fn):
    """How the interpreter treats a call of fn that its own table of builtins (interp/builtins.cpp:
    len, isinstance, zip, getattr, super, ...) does not cover: 'graph' (a node in the graph),
    'fold' (computed now on constants), 'user_function', 'true' (a constant True), 'construct_module' (an nn.Module class: made now
    when stateless), 'graph_autograd_function' (Cls.apply of an autograd.Function: a node calling
    autograd_function_node(fn)), 'fold_identity' (computed now where the guards fix which object
    each argument is), 'fold_constant' (computed now; its arguments must be constants),
    'graph_transform' (transformed: a node of transform_node's), 'deferred_call' (print, warnings.warn: made after
    the graph with the arguments the trace knows), 'refuse' (refuse, break_graph: a graph break with the reason
    a stand-in gives), or 'unsupported:<reason>'."""
    if ALLOWED_IN_GRAPH.get(id(fn)) is fn:
        return "graph"
    if DISALLOWED_IN_GRAPH.get(id(fn)) is fn:
        module, name = getattr(fn, "__module__", None), getattr(fn, "__name__", repr(fn))
        return f"unsupported:{module + '.' if module else ''}{name} is marked with cdynamo.disallow_in_graph"
    if isinstance(fn, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return "graph"  # torch.ops.aten.add, torch.ops.aten.add.Tensor: operators, not Python to trace
    if _is_autograd_function_apply(fn):
        refusal = _forward_side_effect(fn.__self__)
        if refusal:
            return f"unsupported:{fn.__self__.__name__}.apply: its forward {refusal}"
        return "graph_autograd_function"  # one node; autograd runs the user's backward as in eager
    if fn is transformed:
        return "graph_transform"
    if fn is refuse or fn is break_graph:
        return "refuse"
    if any(fn is f for f in _is_compiling_functions()):
        return "true"
    if any(fn is f for f in _inspection_functions()):
        return "inspect"
    if fn in _IDENTITY_QUESTIONS:
        return "fold_identity"
    if _is_numpy_callable(fn):
        return "fold_numpy"
    if (getattr(fn, "__module__", None) or "").startswith("numpy.random"):
        return "unsupported:numpy.random draws from numpy's global random state"
    if fn is print or fn is warnings.warn:
        return "deferred_call"  # made after the graph, with the arguments the trace knows
    if getattr(fn, "__name__", None) == "fromkeys" and isinstance(getattr(fn, "__self__", None), type) \
            and issubclass(fn.__self__, dict):
        return "fold"  # dict.fromkeys(names): a new dict of constants
    if fn in _FOLDABLE_BUILTINS or fn in _FOLDABLE_TORCH_CLASSES or any(fn is f for f in _installation_queries()):
        return "fold"
    if fn is copies_attribute_by_attribute:
        return "fold"
    if fn is namedtuple_field_order or fn is builds_namedtuple_by_fields or fn is partial_without_dict:
        return "fold_constant"  # questions about a class, which the guards fix
    if fn is collections.namedtuple:
        # A namedtuple class made in the function (its code is made with eval): made now from the
        # constant names: one class per compiled code, where eager makes one per call.
        return "fold_constant"
    module = getattr(fn, "__module__", None) or ""
    if isinstance(fn, types.BuiltinFunctionType) and module in ("math", "operator", "_operator"):
        return "fold"
    if module in ("math",):
        return "fold"
    if any(fn is cls for cls in (operator.attrgetter, operator.itemgetter, operator.methodcaller)):
        # Made now from constants (their calls are traced: _polyfills); one holding a value the
        # trace computes would keep that trace-time value in the graph.
        return "fold_constant"
    if module in ("operator", "_operator"):
        return "graph"
    if isinstance(fn, type):
        if issubclass(fn, BaseException) and _has_native_constructor(fn):
            return "fold"  # an exception object: made now, raised (or not) by the trace
        if issubclass(fn, torch.nn.Module):
            return "construct_module"  # made now if stateless (ACT2FN["gelu"], nn.ReLU()): see module_has_state
        if issubclass(fn, torch.Tensor):
            return "unsupported:constructing a tensor subclass inside a compiled function"
        if issubclass(fn, __import__("enum").Enum):
            return "fold_constant"  # Color(1): the member of that value, or eager's ValueError
        params = getattr(fn, "__dataclass_params__", None)
        if params is not None and params.frozen and type(fn) is type:
            return "fold_constant"  # a frozen dataclass of constants is a constant (pytree's TreeSpec)
        return f"unsupported:constructing a {fn.__name__} object inside a compiled function"
    name = getattr(fn, "__name__", "")
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType) and _traced_file(call.__code__.co_filename):
        return "python_call"  # an object whose class's __call__ is traced Python (weight_norm's hook)
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if isinstance(function, types.FunctionType) and module.startswith("torch") and _traced_file(function.__code__.co_filename):
        return "user_function"  # torch's own files in config.trace_dirs
    if isinstance(function, types.FunctionType) and is_nn_layer_method(function):
        return "user_function"  # nn.LayerNorm.forward(self, x) called by name from a subclass
    objclass = getattr(fn, "__objclass__", None)
    if objclass is not None and isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase):
        return "graph"
    if _pure_on_immutable_values(fn):
        return "fold_constant"  # str.upper("ab"), int.from_bytes(b"..", "little"), hex(255), range(9).index(5)
    if module == "torch" or module.startswith("torch.") or module.startswith("torch._C"):
        if name in _TORCH_UNSUPPORTED or module.startswith(("torch.cuda", "torch.distributed", "torch.random", "torch.autograd", "torch.utils")):
            return f"unsupported:torch.{name} changes global state or reads real data"
        return "graph"
    if isinstance(fn, (types.FunctionType, types.MethodType)):
        return "user_function"
    if isinstance(fn, types.MethodWrapperType) and type(fn.__self__) in _IMMUTABLE_RECEIVERS:
        return "fold"  # (3).__eq__, "a".__add__: a slot of an immutable value, computed now on constants
    if isinstance(fn, types.MethodWrapperType) and fn.__name__ in _READING_SLOTS and type(fn.__self__) in (list, dict, set):
        return "fold"  # a constant list's __len__ (a folded sum's result): reads it, changes nothing
    if isinstance(fn, types.BuiltinFunctionType):
        return f"unsupported:calling the builtin {name}() is not supported yet"
    return f"unsupported:calling {type(fn).__name__} objects is not supported yet"


def is_leaf_module(module):
    """torch.nn's own layers run as one call_module node; containers are traced through."""
    cls = type(module)
    if isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)):
        return False
    return cls.__module__.startswith(("torch.nn.", "torch.ao.nn."))


def _graph_module_class():
    # torch.fx's lazy GraphModule generates and compiles its Python code only when forward or
    # code is first used (a GraphModule in every other respect): the inductor backend, when its
    # compiled-graph cache answers, never does, and the codegen cost a tenth of warm tracing.
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule

        return _LazyGraphModule
    except ImportError:
        return torch.fx.GraphModule


def make_graph_module(root, graph, code_name):
    gm = _graph_module_class()(root, graph, class_name="GraphModule")
    utils.record_graph(code_name, gm)
    return gm


def binary_operators():
    """BINARY_OP's argument order (NB_ADD=0 ... NB_XOR=12, then in-place forms)."""
    plain = [operator.add, operator.and_, operator.floordiv, operator.lshift, operator.matmul,
             operator.mul, operator.mod, operator.or_, operator.pow, operator.rshift, operator.sub,
             operator.truediv, operator.xor]
    inplace = [operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift, operator.imatmul,
               operator.imul, operator.imod, operator.ior, operator.ipow, operator.irshift,
               operator.isub, operator.itruediv, operator.ixor]
    return tuple(plain + inplace)


def inplace_to_plain():
    """operator.iadd -> operator.add, ...: what an in-place operator computes on an immutable left side."""
    ops = binary_operators()
    return dict(zip(ops[13:], ops[:13]))


# nn.Module's own methods traced like the user's code: train()/eval() set `training` flags (a
# detection backbone freezing its batch norms inside forward).
_TRACED_MODULE_METHODS = ("Module.train", "Module.eval")


def is_nn_layer_method(fn):
    """A method of one of torch.nn's (or torch.ao.nn's) own layer classes: forward() reached
    through super() from a subclass (a layer's forward is otherwise one call_module node), or
    another method of the layer (BatchNorm._check_input_dim, FloatFunctional.add): traced like the
    user's code. nn.Module's own methods (torch.nn.modules.module) are not."""
    module = getattr(fn, "__module__", "") or ""
    if module == "torch.nn.modules.module" and getattr(fn, "__qualname__", "") in _TRACED_MODULE_METHODS:
        return True
    if not (module.startswith("torch.nn.modules.") or module.startswith("torch.ao.nn.")) or module == "torch.nn.modules.module":
        return False
    if getattr(fn, "__name__", "") == "forward":
        return True
    owner = sys.modules.get(module)
    qualname = getattr(fn, "__qualname__", "").split(".")
    cls = getattr(owner, qualname[0], None) if owner is not None and len(qualname) == 2 else None
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def compare_operators():
    """COMPARE_OP's argument order (Py_LT ... Py_GE)."""
    return (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)


def unary_operators():
    return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert, "not": operator.not_}


_ = (builtins, math)


_LOG_METHOD_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "exception": 40, "critical": 50,
                      "fatal": 50}


def silent_log_level(logger, method, first_argument):
    """The level of logger.<method>(...) (logger a logging.Logger) when the call would emit nothing
    now (logger.isEnabledFor(level) is False), else None."""
    level = first_argument if method == "log" else _LOG_METHOD_LEVELS.get(method)
    if not isinstance(level, int) or getattr(logging.Logger, method, None) is None:
        return None
    return None if logger.isEnabledFor(level) else level


def module_has_state(module):
    """Whether a module made inside a compiled function holds parameters or buffers (state a
    graph would have to make on every call; one made at trace time is reused)."""
    return any(True for _ in module.parameters()) or any(True for _ in module.buffers())


def is_compiled_module(module):
    """module is what cdynamo.compile(m) returned (with a backend, not disable=True): a call
    from compiled code traces m itself."""
    from .eval_frame import OptimizedModule

    return isinstance(module, OptimizedModule) and isinstance(module.__dict__["_compiled_call"]._callback, tuple)


def module_hooks(module):
    """None when calling module runs no hook (its own or torch.nn's global ones), else what
    Module._call_impl would run, in its order: pre=[(hook, with_kwargs)], forward=[(hook,
    with_kwargs)], backward (whether backward hooks wrap the call)."""
    from torch.nn.modules import module as impl

    def table(name):
        return getattr(impl, name, None) or {}

    global_pre, global_forward = table("_global_forward_pre_hooks"), table("_global_forward_hooks")
    backward = bool(module._backward_hooks or module._backward_pre_hooks or table("_global_backward_hooks")
                    or table("_global_backward_pre_hooks"))
    if not (module._forward_hooks or module._forward_pre_hooks or global_pre or global_forward or backward):
        return None
    forward_with_kwargs = set(module._forward_hooks_with_kwargs) | set(table("_global_forward_hooks_with_kwargs"))
    pre = [(hook, key in module._forward_pre_hooks_with_kwargs)
           for key, hook in (*global_pre.items(), *module._forward_pre_hooks.items())]
    forward = [(hook, key in forward_with_kwargs) for key, hook in (*global_forward.items(), *module._forward_hooks.items())]
    return types.SimpleNamespace(pre=pre, forward=forward, backward=backward)


from collections import OrderedDict as _OrderedDict, defaultdict as _defaultdict  # noqa: E402


def _unfilled_partial(*args, **kwargs):
    raise AssertionError("a functools.partial rebuilt after a trace was called before it was filled in")


def new_objects(*classes):
    """The objects a trace made, as the transformed code rebuilds them: instances first (so that
    references between them keep their identity), filled in by fill_object. A partial (made
    through _polyfills.classes.Partial) is first one of a placeholder: partial.__new__ needs a function."""
    return tuple(functools.partial(_unfilled_partial) if cls is functools.partial else cls.__new__(cls) for cls in classes)


_PARTIAL_STATE = ("_func", "_args", "_keywords", "_has_dict")  # _polyfills.classes.Partial's own attributes


def _fill_partial(made, attributes):
    extra = {name: value for name, value in attributes.items() if name not in _PARTIAL_STATE}
    made.__setstate__((attributes["_func"], tuple(attributes["_args"]), dict(attributes["_keywords"]), extra or None))


def _stand_in_for(cls):
    from ._polyfills import STAND_IN_CLASSES

    return STAND_IN_CLASSES.get(cls)


def fill_object(obj, attributes, items):
    """Gives a new_objects() instance the state the trace left it in: its __dict__ and, for dict
    subclasses, its items (through the builtin base's __setitem__: the class's own ran in the trace)."""
    if isinstance(obj, list):  # a shared list, dict or set the trace made: its contents
        obj.extend(attributes)
        return
    if type(obj) in (dict, set):
        obj.update(attributes)
        return
    if type(obj) is _defaultdict:  # items: its default_factory
        obj.default_factory = items
        obj.update(attributes)
        return
    if type(obj) is _OrderedDict:
        obj.update(attributes)
        return
    if type(obj) is functools.partial:  # for a _polyfills.classes.Partial: attributes are the stand-in's
        _fill_partial(obj, attributes)
        return
    stand_in = _stand_in_for(type(obj))
    if stand_in is not None:  # a real deque for a _polyfills.classes.Deque: attributes are the stand-in's
        obj.__init__(*(attributes[name] for name in stand_in._cdynamo_init_from))
        return
    try:
        object.__getattribute__(obj, "__dict__").update(attributes)
    except AttributeError:  # __slots__ only
        for name, value in attributes.items():
            object.__setattr__(obj, name, value)
    if items:
        import collections

        base = next(b for b in type(obj).__mro__ if b is dict or b is collections.OrderedDict)
        for key, value in items.items():
            base.__setitem__(obj, key, value)


def replace_contents(target, contents):
    """A list or dict the traced code changed in place gets the contents the trace left it with."""
    if isinstance(target, list):
        target[:] = contents
    else:
        target.clear()
        target.update(contents)


def resolve_relative_import(name, frame_globals, level):
    """The absolute module name of `from <level dots><name> import ...` in code with these globals,
    or None outside a package (the import system's own rule: __package__, else __spec__.parent)."""
    import importlib.util

    package = frame_globals.get("__package__")
    if package is None and frame_globals.get("__spec__") is not None:
        package = frame_globals["__spec__"].parent
    if not package:
        return None
    try:
        return importlib.util.resolve_name("." * level + name, package)
    except ImportError:
        return None


def dict_view_types():
    """The classes of dict.keys(), values() and items(), by method name."""
    sample = {}
    return {"keys": type(sample.keys()), "values": type(sample.values()), "items": type(sample.items())}


def as_dict_view(items, view_type):
    """A real view of the kind view_type over the trace's snapshot of it (constants)."""
    if view_type is type({}.items()):
        return dict(items).items()
    if view_type is type({}.keys()):
        return dict.fromkeys(items).keys()
    return dict(enumerate(items)).values()
