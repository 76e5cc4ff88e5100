"""Python classes standing in for C ones a compiled function makes (deque, partial, nullcontext, SimpleNamespace); calls of partials.
Assumes _trace_objects.fill_object makes the real object leaving the trace (_cdynamo_init_from, _PARTIAL_STATE)."""
import collections
import functools
import types
import weakref

from .._class_queries import partial_without_dict


class NullContext:
    """contextlib.nullcontext, whose methods live in the standard library (not traced)."""

    def __init__(self, enter_result=None):
        self.enter_result = enter_result

    def __enter__(self):
        return self.enter_result

    def __exit__(self, *exc_info):
        return False


def nullcontext_(enter_result=None):
    return NullContext(enter_result)


def partial_(func, /, *args, **keywords):
    # A call of a functools.partial, as a closure (a partial made in the trace is a Partial).
    def call(*more, **more_keywords):
        return func(*args, *more, **{**keywords, **more_keywords})

    return call


_partials = weakref.WeakKeyDictionary()  # a partial object from outside -> its stand-in


def _partial_call(partial):
    """A call of an existing partial object: its function, arguments and keywords as they are
    now (the object itself is guarded by identity; its keywords dict is copied)."""
    found = _partials.get(partial)
    if found is None:
        found = _partials[partial] = partial_(partial.func, *partial.args, **dict(partial.keywords))
    return found


# Classes written in C that a compiled function makes: a Python class stands in for each while
# the trace runs (type(), isinstance() and __class__ answer the real class), and leaving the
# trace the object becomes a real one (_trace_objects.fill_object, from _cdynamo_init_from).
class Deque:
    """collections.deque, as a list of items and a maxlen."""

    _cdynamo_stands_for = collections.deque

    def __init__(self, iterable=(), maxlen=None):
        if maxlen is not None:
            if not isinstance(maxlen, int):
                raise TypeError("an integer is required")
            if maxlen < 0:
                raise ValueError("maxlen must be non-negative")
        self._maxlen = maxlen
        self._items = []
        self.extend(iterable)

    _cdynamo_init_from = ("_items", "_maxlen")  # the real deque's __init__ arguments

    @property
    def maxlen(self):
        return self._maxlen

    def append(self, item):
        self._items.append(item)
        if self._maxlen is not None and len(self._items) > self._maxlen:
            del self._items[0]

    def appendleft(self, item):
        self._items.insert(0, item)
        if self._maxlen is not None and len(self._items) > self._maxlen:
            self._items.pop()

    def extend(self, iterable):
        for item in list(iterable):  # taken whole first: q.extend(q) doubles it
            self.append(item)

    def extendleft(self, iterable):
        for item in list(iterable):
            self.appendleft(item)

    def pop(self):
        if not self._items:
            raise IndexError("pop from an empty deque")
        return self._items.pop()

    def popleft(self):
        if not self._items:
            raise IndexError("pop from an empty deque")
        return self._items.pop(0)

    def clear(self):
        del self._items[:]

    def rotate(self, n=1):
        size = len(self._items)
        if size:
            n = n % size
            if n:
                self._items[:] = self._items[size - n:] + self._items[:size - n]

    def count(self, item):
        return self._items.count(item)

    def index(self, item, *bounds):
        start, stop, _ = slice(*bounds).indices(len(self._items))
        for position in range(start, stop):
            if self._items[position] == item:
                return position
        raise ValueError(f"{item!r} is not in deque")

    def remove(self, item):
        for position in range(len(self._items)):
            if self._items[position] == item:
                del self._items[position]
                return
        raise ValueError(f"{item!r} is not in deque")

    def reverse(self):
        self._items.reverse()

    def insert(self, position, item):
        if self._maxlen is not None and len(self._items) >= self._maxlen:
            raise IndexError("deque already at its maximum size")
        self._items.insert(position, item)

    def copy(self):
        return Deque(self._items, self._maxlen)

    def _index(self, position):
        if not isinstance(position, int):
            raise TypeError(f"sequence index must be integer, not '{type(position).__name__}'")
        if not -len(self._items) <= position < len(self._items):
            raise IndexError("deque index out of range")
        return position

    def __getitem__(self, position):
        return self._items[self._index(position)]

    def __setitem__(self, position, item):
        self._items[self._index(position)] = item

    def __delitem__(self, position):
        del self._items[self._index(position)]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __reversed__(self):
        return reversed(self._items)

    def __contains__(self, item):
        return item in self._items

    def __eq__(self, other):
        return isinstance(other, collections.deque) and list(self) == list(other)

    def __iadd__(self, other):
        self.extend(other)
        return self

    def __add__(self, other):
        if not isinstance(other, collections.deque):
            raise TypeError(f'can only concatenate deque (not "{type(other).__name__}") to deque')
        return Deque(self._items + list(other), self._maxlen)


class Partial:
    """functools.partial: its function, arguments and keywords (read-only, as partial's), and
    whether other attributes were set on it (then a partial of it does not merge it in). Leaving
    the trace it becomes a real partial (_trace_objects.fill_object reads these attributes)."""

    _cdynamo_stands_for = functools.partial

    def __init__(self, func, /, *args, **keywords):
        if isinstance(func, Partial):
            if not func._has_dict:
                func, args, keywords = func._func, func._args + args, {**func._keywords, **keywords}
        elif type(func) is functools.partial and partial_without_dict(func):  # one made outside
            func, args, keywords = func.func, func.args + args, {**func.keywords, **keywords}
        if not callable(func):
            raise TypeError("the first argument must be callable")
        object.__setattr__(self, "_func", func)
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_keywords", keywords)
        object.__setattr__(self, "_has_dict", False)

    @property
    def func(self):
        return self._func

    @property
    def args(self):
        return self._args

    @property
    def keywords(self):
        return self._keywords

    def __setattr__(self, name, value):
        if name in ("func", "args", "keywords"):
            raise AttributeError("readonly attribute")
        object.__setattr__(self, "_has_dict", True)
        object.__setattr__(self, name, value)

    def __call__(self, /, *args, **keywords):
        return self._func(*self._args, *args, **{**self._keywords, **keywords})


_NOT_CACHED = object()


def cached_property_get_(self, instance, owner=None):
    # functools.cached_property.__get__ without the lock 3.11 takes around the computation (a
    # trace runs on one thread; 3.12 dropped the lock): the instance's __dict__ holds the value.
    if instance is None:
        return self
    if self.attrname is None:
        raise TypeError("Cannot use cached_property instance without calling __set_name__ on it.")
    cache = instance.__dict__
    value = cache.get(self.attrname, _NOT_CACHED)
    if value is _NOT_CACHED:
        value = self.func(instance)
        cache[self.attrname] = value
    return value


class Namespace:
    """types.SimpleNamespace: attributes in its __dict__ (the real one leaving the trace takes them)."""

    _cdynamo_stands_for = types.SimpleNamespace
    __hash__ = None

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __eq__(self, other):
        if not isinstance(other, types.SimpleNamespace):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __repr__(self):
        name = "namespace" if type(self) is types.SimpleNamespace else type(self).__name__
        return name + "(" + ", ".join(f"{key}={value!r}" for key, value in self.__dict__.items()) + ")"
