"""What the interpreter does with a call it has no rule of its own for (classify_callable: a graph node, folded now,
traced, or a graph break), and which objects are constants guarded by identity. Assumes the guards fix the callable."""
import collections
import functools
import logging
import operator
import sys
import types
import typing
import warnings

import torch

from ._class_queries import (buffer_registration_hooks_state, builds_namedtuple_by_fields, copies_attribute_by_attribute,
                             namedtuple_field_order, partial_without_dict)
from ._module_calls import is_nn_layer_method
from ._special_calls import _forward_side_effect, after_graph, break_graph, refuse, singledispatch_impl, transformed


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

# The time module's clock readings: each call gives another value, which no graph holds.
_CLOCK_READS = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
                "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns"}

_FOLDABLE_BUILTINS = {
    abs, min, max, round, int, float, bool, complex, str, divmod, pow, sum, sorted, repr, hash, chr, ord,
    all, any, reversed, slice,
}
# sys.intern of a constant string; the thread's id, a constant of the trace (reprlib's
# recursive_repr keys its in-progress set with it, which a per-trace constant serves as well).
_FOLDABLE_BUILTINS |= {__import__("sys").intern, __import__("_thread").get_ident}
_TENSOR_TORCH_FUNCTION = torch.Tensor.__torch_function__.__func__
# Methods of a NumPy array that read it and return new values (or views no one writes: the trace
# writes only arrays numpy made in it).
_NDARRAY_READING_METHODS = frozenset((
    "mean", "sum", "std", "var", "max", "min", "argmax", "argmin", "prod", "cumsum", "cumprod", "reshape",
    "transpose", "flatten", "ravel", "copy", "astype", "tolist", "item", "round", "clip", "any", "all", "dot",
    "squeeze", "nonzero", "argsort", "repeat", "take", "swapaxes", "conj", "trace", "diagonal",
))
_RE_COMPILE = getattr(__import__("re"), "_compile", None)
_FOLDABLE_TORCH_CLASSES = {torch.Size, torch.device, torch.finfo, torch.iinfo}
# Builtins computed now on constants only (on a traced value they break the graph: a graph node
# would compute a string from a tensor). format() has a stand-in (_polyfills.format_).
_CONSTANT_ONLY_BUILTINS = (bin, hex, oct, ascii, str.maketrans, bytes.maketrans, bytearray.maketrans)
# Builtin types whose values never change: their C methods compute new values from their arguments.
# re's compiled patterns and match objects are immutable too (pattern.findall(text) of constants),
# and so are torch's dtypes (torch.float32.to_complex()).
_IMMUTABLE_BUILTIN_TYPES = (int, float, complex, bool, str, bytes, tuple, frozenset, range, slice,
                            __import__("re").Pattern, __import__("re").Match, torch.dtype)


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
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(owner, numpy.generic):
        return True  # a NumPy scalar's method (np.float64(2.0).astype("int").item()): scalars never change
    if numpy is not None and type(owner) is numpy.ndarray and fn.__name__ in _NDARRAY_READING_METHODS:
        return True  # a constant array's (its contents are guarded): a new value from what it holds
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


def _class_factories():
    """Library functions that make a class from a description (names, types, defaults), and the
    dataclass field descriptions passed to them: made now from constants."""
    import dataclasses

    return (collections.namedtuple, dataclasses.make_dataclass, dataclasses.field)


def _inspection_functions():
    """Library functions that only inspect what they are given (a signature, a dataclass's
    fields): on values the guards fix (functions and classes by identity) they answer now."""
    import dataclasses
    import inspect

    return (inspect.signature, dataclasses.fields, dataclasses.is_dataclass, inspect.isclass, inspect.isfunction,
            inspect.ismethod)


# Changes to the warning filters: made after the graph, in order with the warnings.warn calls they govern.
_WARNING_FILTER_CHANGES = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)

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
    if not (isinstance(owner, type) and issubclass(owner, torch.autograd.Function) and owner is not torch.autograd.Function
            and getattr(fn, "__name__", None) == "apply"):
        return False
    # torch.autograd.Function's own apply, not a subclass's: a classmethod up to torch 2.13, a C
    # classmethod descriptor from 2.14 (then Cls.apply is a builtin method, without __func__).
    defining = next(cls for cls in owner.__mro__ if "apply" in vars(cls))
    return defining is torch.autograd.Function


_READING_SLOTS = {"__len__", "__getitem__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
                  "__repr__", "__str__", "__hash__", "__bool__"}
# Methods of list, dict and set that read their receiver and return new objects or its items.
_READING_METHODS = {dict: {"keys", "values", "items", "get", "__getitem__", "__contains__"},
                    list: {"index", "count", "__getitem__", "__contains__"},
                    set: {"__contains__", "issubset", "issuperset", "isdisjoint", "union", "intersection", "difference"}}
_IMMUTABLE_RECEIVERS = (int, float, complex, bool, str, bytes, tuple, frozenset, type(None), torch.Size, torch.dtype)


def _traced_file(filename):
    from .utils import inline_refusal

    return inline_refusal(filename) is None


def _is_custom_op(fn):
    custom_ops = sys.modules.get("torch._library.custom_ops")
    return custom_ops is not None and isinstance(fn, custom_ops.CustomOpDef)


def classify_callable(fn):
    """How the interpreter treats a call of fn that its own table of builtins (interp/builtins.cpp:
    len, isinstance, zip, getattr, super, ...) does not cover: 'graph' (a node in the graph),
    'fold' (computed now on constants), 'user_function', 'true' (a constant True), 'construct_module' (an nn.Module class: made now
    when stateless), 'graph_autograd_function' (Cls.apply of an autograd.Function: a node calling
    autograd_function_node(fn)), 'fold_identity' (computed now where the guards fix which object
    each argument is), 'fold_constant' (computed now; its arguments must be constants),
    'graph_transform' (transformed: a node of transform_node's), 'make_generator' (torch.Generator:
    the graph's own, reset by a node at each call), 'autograd_grad' (a node of
    torch.autograd.grad, or a break where it differentiates what the graph did not compute), 'deferred_call' (print, warnings.warn: made after
    the graph with the arguments the trace knows), 'refuse' (refuse, break_graph: a graph break with the reason
    a stand-in gives), or 'unsupported:<reason>'."""
    if ALLOWED_IN_GRAPH.get(id(fn)) is fn:
        return "graph"
    if DISALLOWED_IN_GRAPH.get(id(fn)) is fn:
        module, name = getattr(fn, "__module__", None), getattr(fn, "__name__", repr(fn))
        return f"unsupported:{module + '.' if module else ''}{name} is marked with cdynamo.disallow_in_graph"
    if isinstance(fn, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return "graph"  # torch.ops.aten.add, torch.ops.aten.add.Tensor: operators, not Python to trace
    if _is_custom_op(fn):
        return "graph"  # @torch.library.custom_op called as itself: its operator, whose fake gives the shapes
    if _is_autograd_function_apply(fn):
        refusal = _forward_side_effect(fn.__self__)
        if refusal:
            return f"unsupported:{fn.__self__.__name__}.apply: its forward {refusal}"
        return "graph_autograd_function"  # one node; autograd runs the user's backward as in eager
    if fn is transformed:
        return "graph_transform"
    if fn is torch.Generator:
        return "make_generator"  # the graph's own generator, fresh at each call (with_blocks.cpp)
    if fn is torch.autograd.grad:
        return "autograd_grad"  # a node when the graph computed what it differentiates (calls.cpp)
    if getattr(fn, "__func__", None) is _TENSOR_TORCH_FUNCTION:
        return "tensor_torch_function"  # super().__torch_function__(...): torch's operator, results of the class
    if fn is torch._C._disabled_torch_function_impl:
        return "disabled_torch_function"  # torch's operator, on plain tensors
    if fn is singledispatch_impl:
        return "fold_constant"  # which implementation a singledispatch function picks for a class
    if fn is _RE_COMPILE:
        return "fold_constant"  # re's pattern compiler (and its cache): a pattern made now from constants
    if fn is refuse or fn is break_graph:
        return "refuse"
    if fn is after_graph:
        return "after_graph"
    if fn is getattr(sys.modules.get("torch.nn.attention"), "sdpa_kernel", None):
        return "fold_constant"  # a context manager object, entered by a graph node (with_blocks.cpp)
    from ._polyfills.nn_modules import register_traced_hook, remove_traced_hook
    if fn is register_traced_hook or fn is remove_traced_hook:
        return "module_hook"  # hooks registered in the trace: the interpreter's own (module_calls.cpp)
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
    if fn is print or fn is warnings.warn or fn in _WARNING_FILTER_CHANGES:
        return "deferred_call"  # made after the graph, with the arguments the trace knows
    if getattr(fn, "__name__", None) == "fromkeys" and isinstance(getattr(fn, "__self__", None), type) \
            and issubclass(fn.__self__, dict):
        return "fold"  # dict.fromkeys(names): a new dict of constants
    if fn in _FOLDABLE_BUILTINS or fn in _FOLDABLE_TORCH_CLASSES or any(fn is f for f in _installation_queries()):
        return "fold"
    if fn is copies_attribute_by_attribute:
        return "fold"
    if (fn is namedtuple_field_order or fn is builds_namedtuple_by_fields or fn is partial_without_dict
            or fn is buffer_registration_hooks_state):
        return "fold_constant"  # questions about a class, which the guards fix
    if any(fn is f for f in _class_factories()):
        # A namedtuple or dataclass class made in the function (their code is made with eval and
        # exec): made now from the constant names: one class per compiled code, where eager makes
        # one per call.
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
            # An exception object of constants: made now, raised (or not) by the trace. Of traced
            # values it would hold their fakes: the graph ends before it, and eager makes it.
            return "fold_constant"
        if issubclass(fn, torch.overrides.TorchFunctionMode):
            # Made now, a constant the graph's block enters (_global_state.function_mode_node).
            from ._global_state import function_mode_refusal

            refusal = function_mode_refusal(fn)
            return f"unsupported:{refusal}" if refusal else "fold_constant"  # of constants only
        if issubclass(fn, torch.nn.Module):
            return "construct_module"  # made now if stateless (ACT2FN["gelu"], nn.ReLU()): see module_has_state
        if issubclass(fn, torch.Tensor):
            return "unsupported:constructing a tensor subclass inside a compiled function"
        if fn is torch._C.DisableTorchFunctionSubclass or fn is torch._C.DisableTorchFunction:
            return "fold_constant"  # a with-block's manager (with_blocks.cpp): it holds no state
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
        if isinstance(fn, types.FunctionType) and getattr(sys.modules.get(module), name, None) is not fn:
            # A closure a torch call returned (torch.func.vjp's vjp_fn): fx writes a node's
            # target as module.name, which would not find it.
            return f"unsupported:calling {fn.__qualname__} of {module}, a function torch made that a graph cannot name"
        return "graph"
    if isinstance(fn, (types.FunctionType, types.MethodType)):
        return "user_function"
    if isinstance(fn, types.MethodWrapperType) and fn.__name__ == "__init__" and fn == object.__init__.__get__(fn.__self__):
        return "fold"  # super().__init__() reaching object's: checks its arguments, changes nothing
    if isinstance(fn, types.MethodWrapperType) and type(fn.__self__) in _IMMUTABLE_RECEIVERS:
        return "fold"  # (3).__eq__, "a".__add__: a slot of an immutable value, computed now on constants
    if isinstance(fn, types.MethodWrapperType) and fn.__name__ in _READING_SLOTS and type(fn.__self__) in (list, dict, set):
        return "fold"  # a constant list's __len__ (a folded sum's result): reads it, changes nothing
    if isinstance(fn, types.BuiltinFunctionType) and name in _READING_METHODS.get(type(getattr(fn, "__self__", None)), ()):
        # A constant container's reading method (a class's __dataclass_fields__.values(), read by
        # dataclasses.replace): the trace never changes a constant container, so it reads the same.
        return "fold"
    if module == "time" and name in _CLOCK_READS:
        return (f"unsupported:time.{name}() reads the clock when called, which a graph cannot do "
                "(it would keep the trace's reading); time the compiled call from outside it")
    if isinstance(fn, types.BuiltinFunctionType):
        return f"unsupported:calling the builtin {name}() is not supported yet"
    return f"unsupported:calling {type(fn).__name__} objects is not supported yet"


# A logger call that would emit nothing now is skipped by the trace, guarded on the logger's level
# (deferred_calls.cpp, Tracer::silent_log_call): a call decision like the ones above.
_LOG_METHOD_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40, "exception": 40, "critical": 50,
                      "fatal": 50}


def silent_log_level(logger, method, first_argument):
    """The level of logger.<method>(...) (logger a logging.Logger) when the call would emit nothing
    now (logger.isEnabledFor(level) is False), else None."""
    level = first_argument if method == "log" else _LOG_METHOD_LEVELS.get(method)
    if not isinstance(level, int) or getattr(logging.Logger, method, None) is None:
        return None
    return None if logger.isEnabledFor(level) else level


def op_writes_arguments(fn):
    """An operator (torch.ops.x.y, an overload, a custom op's) that writes one of its arguments:
    its node stays in the graph even when it returns nothing (a custom op with mutates_args)."""
    if isinstance(fn, torch._ops.OpOverloadPacket):
        schemas = [getattr(fn, name)._schema for name in fn.overloads()]
    elif isinstance(fn, torch._ops.OpOverload):
        schemas = [fn._schema]
    else:
        return False
    return any(a.alias_info is not None and a.alias_info.is_write for s in schemas for a in s.arguments)
