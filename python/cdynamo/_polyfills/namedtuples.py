"""Stand-ins for a namedtuple class's _make and _replace, which build the tuple with tuple.__new__ (not called).
Assumes collections.namedtuple writes each of the two methods on one code object, by which it is recognised."""
import collections
import weakref

from .. import _special_calls
from .._class_queries import builds_namedtuple_by_fields, namedtuple_field_order


# A namedtuple class's _make and _replace (collections.namedtuple writes them for each class, on one
# code each): _make builds the tuple with tuple.__new__, which the interpreter does not call. Where
# the class's __new__ is the one namedtuple generated (binding the fields in order) and no __init__
# is added, cls(*items) makes the same tuple; other classes keep the call (a graph break).
_NamedTupleProbe = collections.namedtuple("_NamedTupleProbe", "field")
_NAMEDTUPLE_MAKE_CODE = _NamedTupleProbe._make.__func__.__code__
_NAMEDTUPLE_REPLACE_CODE = _NamedTupleProbe._replace.__code__
_namedtuple_methods = weakref.WeakKeyDictionary()  # a class's _make/_replace function -> its stand-in


def _closure_values(function):
    return dict(zip(function.__code__.co_freevars, (cell.cell_contents for cell in function.__closure__ or ())))


def _namedtuple_make(function):
    num_fields = _closure_values(function)["num_fields"]

    def make(cls, iterable):
        items = tuple(iterable)
        if len(items) != num_fields:
            raise TypeError(f"Expected {num_fields} arguments, got {len(items)}")
        if not builds_namedtuple_by_fields(cls):
            _special_calls.break_graph(f"{cls.__name__}._make() of a class with its own __new__ or __init__")
            return tuple.__new__(cls, items)
        return cls(*items)

    return make


def _namedtuple_replace(function):
    field_names = _closure_values(function)["field_names"]

    def replace(self, /, **changes):
        # The items in order; read by name where that reads them (a namedtuple passed in is not
        # iterated by the interpreter, its fields are read).
        by_name = namedtuple_field_order(type(self))
        items = self if by_name is None else [getattr(self, name) for name in by_name]
        made = type(self)._make(map(changes.pop, field_names, items))  # (a namedtuple has no instance dict)
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return made

    return replace


def _namedtuple_method(function):
    code = function.__code__
    if code is not _NAMEDTUPLE_MAKE_CODE and code is not _NAMEDTUPLE_REPLACE_CODE:
        return None
    found = _namedtuple_methods.get(function)
    if found is None:
        make = _namedtuple_make if code is _NAMEDTUPLE_MAKE_CODE else _namedtuple_replace
        found = _namedtuple_methods[function] = make(function)
    return found
