"""copy.copy and copy.deepcopy: plain classes' instances copied attribute by attribute, as copy's default reduction.
Assumes other objects run the original as written; _MISSING, deepcopy's memo sentinel, is compared by identity."""
from .as_written import _as_written

_MISSING = object()
_DEEPCOPY_AS_WRITTEN = _as_written(__import__("copy").deepcopy)
_COPY_AS_WRITTEN = _as_written(__import__("copy").copy)


def copy_(x):
    """copy.copy, with the instances of plain classes copied as copy's default reduction does:
    a new object (no __init__) sharing the attribute values."""
    from cdynamo._class_queries import copies_attribute_by_attribute

    cls = type(x)
    if not copies_attribute_by_attribute(cls):
        return _COPY_AS_WRITTEN(x)
    y = object.__new__(cls)
    for name, value in x.__dict__.items():
        object.__setattr__(y, name, value)  # as __dict__.update: no __setattr__ of the class runs
    return y


def deepcopy_(x, memo=None, _nil=_MISSING):
    """copy.deepcopy, with the instances of plain classes copied as copy's default reduction
    does (object.__reduce_ex__, which the interpreter cannot call, is what it would use)."""
    from cdynamo._class_queries import copies_attribute_by_attribute

    cls = type(x)
    if not copies_attribute_by_attribute(cls):
        return _DEEPCOPY_AS_WRITTEN(x, memo)
    if memo is None:
        memo = {}
    found = memo.get(id(x), _nil)
    if found is not _nil:
        return found
    y = object.__new__(cls)
    memo[id(x)] = y
    for name, value in x.__dict__.items():
        object.__setattr__(y, name, deepcopy_(value, memo))  # as __dict__.update: no __setattr__ of the class runs
    return y
