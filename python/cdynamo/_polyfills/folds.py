"""Stand-ins for C functions folding values into one: functools.reduce, collections._count_elements, format().
Assumes the iterable is consumed in order, calling only what the original calls."""


def reduce_(function, iterable, *initial):
    """functools.reduce. The initial value, when given, is never compared by identity with a
    sentinel: it may be a list or dict the trace built, which `is` cannot weigh against an object."""
    if len(initial) > 1:
        raise TypeError(f"reduce expected at most 3 arguments, got {2 + len(initial)}")
    iterator = iter(iterable)
    if not initial:
        try:
            value = next(iterator)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    else:
        value = initial[0]
    for item in iterator:
        value = function(value, item)
    return value


def count_elements_(mapping, iterable):
    """collections._count_elements (Counter.update's C helper): counts each element."""
    get = mapping.get
    for element in iterable:
        mapping[element] = get(element, 0) + 1


def format_(value, format_spec=""):
    """format(): the value's own __format__ (a class's, written in Python, runs in the trace)."""
    if not isinstance(format_spec, str):
        raise TypeError(f"format() argument 2 must be str, not {type(format_spec).__name__}")
    return type(value).__format__(value, format_spec)
