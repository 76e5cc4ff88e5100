"""Questions the stand-ins (_polyfills) ask about a class or object the guards fix by identity, answered at trace
time: whether deepcopy copies it attribute by attribute, a namedtuple's field layout, a partial's own dict."""
import functools
import types

import torch


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


def buffer_registration_hooks_state():
    """(any registered, all return None) of nn.Module's global buffer registration hooks: asked
    by the register_buffer stand-in, answered at trace time (torch's hook tables are not guarded)."""
    hooks = getattr(torch.nn.modules.module, "_global_buffer_registration_hooks", None) or {}
    return bool(hooks), all(getattr(hook, "_cdynamo_returns_none", False) for hook in hooks.values())


def _class_making_metaclasses():
    """Metaclasses whose class creation runs no Python code of the program (type's is C; ABCMeta's
    only sets up its registry; torch.Tensor's _TensorMeta is C): a class statement in traced code
    is made with them at trace time."""
    import abc

    import torch

    return (type, abc.ABCMeta, type(torch.Tensor))


def class_making_metaclass(bases, keywords):
    """The metaclass of `class C(*bases, **keywords)` (as CPython computes it from `metaclass=` and
    the bases' types), when making the class now runs no Python code of the program: one of
    _class_making_metaclasses(), no keyword but `metaclass=` (which is taken out of keywords), and no
    base with an __init_subclass__ written in Python. None otherwise (or on a metaclass conflict,
    which eager reports)."""
    winner = keywords.pop("metaclass", None)
    if winner is None:
        winner = type(bases[0]) if bases else type
    if not isinstance(winner, type) or keywords:
        return None
    for base in bases:
        meta = type(base)
        if issubclass(winner, meta):
            continue
        if not issubclass(meta, winner):
            return None
        winner = meta
    if not any(winner is m for m in _class_making_metaclasses()):
        return None
    native_init_subclass = object.__dict__["__init_subclass__"]
    for base in bases:
        for cls in base.__mro__:
            found = cls.__dict__.get("__init_subclass__")
            if found is not None and found is not native_init_subclass:
                return None
    return winner
