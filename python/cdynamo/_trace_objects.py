"""Objects that leave a trace: what the trace made, rebuilt by the transformed code after the graph (new_objects,
fill_object), lists and dicts it changed in place, and ContextVar tokens. Assumes _polyfills' stand-ins' layout."""
import functools
import types
from collections import OrderedDict as _OrderedDict, defaultdict as _defaultdict


class TracedContextToken:
    """What ContextVar.set() returns inside a trace: the trace keeps the value it set (the real
    context never changes), and reset() of this token takes it back; depth: how many values the
    trace had set on var before this one."""

    __slots__ = ("var", "depth")

    def __init__(self, var, depth):
        self.var = var
        self.depth = depth


def _unfilled_partial(*args, **kwargs):
    raise AssertionError("a functools.partial rebuilt after a trace was called before it was filled in")


def new_objects(*classes):
    """The objects a trace made, as the transformed code rebuilds them: instances first (so that
    references between them keep their identity), filled in by fill_object. A partial (made
    through _polyfills.classes.Partial) is first one of a placeholder: partial.__new__ needs a function.
    A function (a def or lambda the trace made, given as (the trace's function, its cell numbers)) is
    a new one of its code with empty cells."""
    cells = {}  # cell number -> the cell: functions that closed over one variable share its cell
    return tuple(functools.partial(_unfilled_partial) if cls is functools.partial
                 else _function_like(*cls, cells) if isinstance(cls, tuple) else cls.__new__(cls) for cls in classes)


def _function_like(made, cell_numbers, cells):
    """A function of made's code (a def or lambda the trace made); cell_numbers: one per free
    variable, the same number where two functions closed over the same cell."""
    closure = tuple(cells.setdefault(number, types.CellType()) for number in cell_numbers)
    function = types.FunctionType(made.__code__, made.__globals__, made.__name__, made.__defaults__, closure or None)
    function.__kwdefaults__, function.__qualname__ = made.__kwdefaults__, made.__qualname__
    function.__module__, function.__doc__ = made.__module__, made.__doc__
    return function


# In the __defaults__ of a def the trace made, a default only the trace holds (a tensor the graph
# computes): calls in the trace bind the trace's value; such a function does not leave the trace.
TRACED_DEFAULT = type("TracedDefault", (), {"__repr__": lambda self: "<a default the compiled graph computes>"})()


# What a pending attribute write of an object from the frame holds for `del obj.name` (replayed
# after the graph as the deletion).
DELETED_ATTRIBUTE = type("DeletedAttribute", (), {"__repr__": lambda self: "<a deleted attribute>"})()


class GraphGradFn:
    """What the trace reads as t.grad_fn of a tensor the graph computes that requires grad: not
    None (as eager's autograd node is not), and nothing more: the compiled graph makes no such node
    (its attributes, or the object itself leaving the function, stop the trace)."""

    __slots__ = ()

    def __getattr__(self, name):
        from ._trace_support import TraceUnsupported

        raise TraceUnsupported(f"reading grad_fn.{name} of a tensor the graph computes (its autograd node is not eager's)")

    def __repr__(self):
        return "<the grad_fn of a tensor the compiled graph computes>"


GRAPH_GRAD_FN = GraphGradFn()


# A cell the function's closure has that nothing was stored in yet (fill_object leaves it empty).
EMPTY_CELL = type("EmptyCell", (), {"__repr__": lambda self: "<empty cell>"})()


_PARTIAL_STATE = ("_func", "_args", "_keywords", "_has_dict")  # _polyfills.classes.Partial's own attributes


def _fill_partial(made, attributes):
    extra = {name: value for name, value in attributes.items() if name not in _PARTIAL_STATE}
    made.__setstate__((attributes["_func"], tuple(attributes["_args"]), dict(attributes["_keywords"]), extra or None))


def _stand_in_for(cls):
    from ._polyfills import STAND_IN_CLASSES

    return STAND_IN_CLASSES.get(cls)


def fill_object(obj, attributes, items):
    """Gives a new_objects() instance the state the trace left it in: its __dict__ and, for dict
    and list subclasses, its items (through the builtin base's methods: the class's own ran in the trace)."""
    if type(obj) is types.FunctionType:  # attributes: its cells' contents; items: its __dict__ or None
        for cell, contents in zip(obj.__closure__ or (), attributes):
            if contents is not EMPTY_CELL:
                cell.cell_contents = contents
        if items:
            obj.__dict__.update(items)
        return
    if type(obj) is list:  # a shared list, dict or set the trace made: its contents
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
    if stand_in is not None and hasattr(stand_in, "_cdynamo_init_from"):  # a real deque for a _polyfills.classes.Deque: attributes are the stand-in's
        obj.__init__(*(attributes[name] for name in stand_in._cdynamo_init_from))
        return
    try:
        object.__getattribute__(obj, "__dict__").update(attributes)
    except AttributeError:  # __slots__ only
        for name, value in attributes.items():
            object.__setattr__(obj, name, value)
    if isinstance(obj, list):  # a list subclass: its items through list's own extend
        list.extend(obj, items)
        return
    if items:
        import collections

        base = next(b for b in type(obj).__mro__ if b is dict or b is collections.OrderedDict)
        for key, value in items.items():
            base.__setitem__(obj, key, value)


def real_object(cls, attributes):
    """The real cls object a stand-in of the trace stands for, whose state (attributes) is all
    constants: made and filled as the transformed code does after a graph, for a call that takes it
    during the trace (a hook given to a tensor in the graph)."""
    (made,) = new_objects(cls)
    fill_object(made, attributes, None)
    return made


def replace_contents(target, contents):
    """A list or dict the traced code changed in place gets the contents the trace left it with."""
    if isinstance(target, list):
        target[:] = contents
    else:
        target.clear()
        target.update(contents)
