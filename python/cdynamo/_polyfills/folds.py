"""Stand-ins for C functions folding an iterable into one value: functools.reduce, collections._count_elements.
Assumes the iterable is consumed in order, calling only what the original calls."""
_NO_INITIAL = object()


def reduce_(function, iterable, initial=_NO_INITIAL):
    iterator = iter(iterable)
    if initial is _NO_INITIAL:
        try:
            value = next(iterator)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    else:
        value = initial
    for item in iterator:
        value = function(value, item)
    return value


def count_elements_(mapping, iterable):
    """collections._count_elements (Counter.update's C helper): counts each element."""
    get = mapping.get
    for element in iterable:
        mapping[element] = get(element, 0) + 1
