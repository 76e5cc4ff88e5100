"""Lazy stand-ins of the iterators of builtins and itertools (map, filter, chain, islice, groupby, tee, combinatorics).
Assumes they run as generators the interpreter traces; filter_ onward pull items only where the C __next__ would."""


def map_(function, iterable, *iterables):
    # Lazy, as map is: `function` runs as items are taken.
    if not iterables:
        for item in iterable:
            yield function(item)
        return
    for items in zip(iterable, *iterables):
        yield function(*items)


def enumerate_(iterable, start=0):
    # enumerate over an iterator the program holds elsewhere (interp/builtins.cpp): lazy, as
    # enumerate is.
    for item in iterable:
        yield start, item
        start += 1


def chain_(*iterables):
    return chain_from_iterable(iterables)


def chain_from_iterable(iterables):
    for iterable in iterables:
        for item in iterable:
            yield item


def islice_(iterable, *bounds):
    bounds = slice(*bounds)
    start, stop, step = bounds.start or 0, bounds.stop, bounds.step or 1
    if start < 0 or (stop is not None and stop < 0) or step <= 0:
        raise ValueError("Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    # Pulls exactly the items islice does: none past `stop` (the rest stay in the iterator).
    iterator = iter(iterable)
    taken, next_index = 0, start
    while True:
        try:
            while taken < next_index:
                next(iterator)
                taken += 1
            if stop is not None and taken >= stop:
                return
            item = next(iterator)
        except StopIteration:
            return
        taken += 1
        yield item
        next_index += step
        if stop is not None and next_index > stop:
            next_index = stop


def product_(*iterables, repeat=1):
    pools = [tuple(pool) for pool in iterables] * repeat
    combos = [()]
    for pool in pools:
        combos = [combo + (item,) for combo in combos for item in pool]
    yield from combos


def accumulate_(iterable, func=None, *, initial=None):
    iterator = iter(iterable)
    total = initial
    if initial is None:
        for first in iterator:
            total = first
            break
        else:
            return
    yield total
    for item in iterator:
        total = total + item if func is None else func(total, item)
        yield total


def combinations_(iterable, r):
    pool = tuple(iterable)
    if r > len(pool):
        return
    indices = list(range(r))
    yield tuple(pool[i] for i in indices)
    while True:
        for i in reversed(range(r)):
            if indices[i] != i + len(pool) - r:
                break
        else:
            return
        indices[i] += 1
        for j in range(i + 1, r):
            indices[j] = indices[j - 1] + 1
        yield tuple(pool[i] for i in indices)


def permutations_(iterable, r=None):
    pool = tuple(iterable)
    r = len(pool) if r is None else r
    for indices in product_(range(len(pool)), repeat=r):
        if len(set(indices)) == r:
            yield tuple(pool[i] for i in indices)


def combinations_with_replacement_(iterable, r):
    pool = tuple(iterable)  # taken, and r checked, when made (as the C object does)
    if r < 0:
        raise ValueError("r must be non-negative")
    return _with_replacement(pool, r)


def _with_replacement(pool, r):
    if not pool and r:
        return
    indices = [0] * r
    yield tuple(pool[i] for i in indices)
    while True:
        for i in reversed(range(r)):
            if indices[i] != len(pool) - 1:
                break
        else:
            return
        indices[i:] = [indices[i] + 1] * (r - i)
        yield tuple(pool[i] for i in indices)


# Iterators of builtins and itertools that a compiled function makes. Each takes iter() of its
# iterables when made, as the C object does (a non-iterable raises there), and pulls an item only
# where the C object's __next__ would: the rest stay in the iterator the program may hold.
def filter_(function, iterable):
    return _kept(function, iter(iterable), True)


def filterfalse_(predicate, iterable):
    return _kept(predicate, iter(iterable), False)


def _kept(function, iterator, keep):
    for item in iterator:
        if (True if (item if function is None else function(item)) else False) is keep:
            yield item


def zip_longest_(*iterables, fillvalue=None):
    return _zip_longest(list(iter(iterable) for iterable in iterables), fillvalue)


def _zip_longest(iterators, fillvalue):
    active = len(iterators)
    while active:
        row = []
        for position in range(len(iterators)):
            if iterators[position] is None:
                row.append(fillvalue)
                continue
            try:
                row.append(next(iterators[position]))
            except StopIteration:
                active -= 1
                if not active:
                    return  # the last one ran out: no row, and later ones are not pulled
                iterators[position] = None
                row.append(fillvalue)
        yield tuple(row)


class _Groupby:
    """A groupby's state, shared by the group iterators it hands out: the key being grouped
    (target), the item read ahead and its key (current; has_current is False once a group handed
    it out), and which group may still run (a group stops once the next one is asked for).
    Flags, not sentinels, tell what is there: items may be anything."""

    def __init__(self, iterator, key):
        self.iterator, self.key = iterator, key
        self.target = self.current_key = self.current = self.group = None
        self.has_target = self.has_current = False

    def step(self):
        try:
            value = next(self.iterator)
        except StopIteration:
            return False
        key = value if self.key is None else self.key(value)
        self.current, self.current_key, self.has_current = value, key, True
        return True


def _equal(a, b):
    return a is b or a == b  # as `in` and the C code compare: identity first


def groupby_(iterable, key=None):
    return _groups(_Groupby(iter(iterable), key))


def _groups(state):
    while True:
        state.group = None
        while not state.has_current or (state.has_target and _equal(state.target, state.current_key)):
            if not state.step():
                return
        state.target, state.has_target = state.current_key, True
        token = state.group = object()
        yield state.current_key, _group(state, state.target, token)


def _group(state, target, token):
    while state.group is token:
        if not state.has_current and not state.step():
            return
        if not _equal(target, state.current_key):
            return
        value = state.current
        state.current = state.current_key = None
        state.has_current = False
        yield value


def count_(start=0, step=1):
    value = start
    while True:
        yield value
        value += step


def repeat_(obj, times=None):
    return _forever(obj) if times is None else _repeated(obj, range(times))


def _forever(obj):
    while True:
        yield obj


def _repeated(obj, times):
    for _ in times:
        yield obj


def cycle_(iterable):
    return _cycled(iter(iterable))


def _cycled(iterator):
    saved = []
    for item in iterator:
        saved.append(item)
        yield item
    while saved:
        for item in saved:
            yield item


def pairwise_(iterable):
    return _pairs(iter(iterable))


def _pairs(iterator):
    try:
        previous = next(iterator)
    except StopIteration:
        return
    for item in iterator:
        yield previous, item
        previous = item


def starmap_(function, iterable):
    return _starred(function, iter(iterable))


def _starred(function, iterator):
    for args in iterator:
        yield function(*args)


def takewhile_(predicate, iterable):
    return _taken_while(predicate, iter(iterable))


def _taken_while(predicate, iterator):
    for item in iterator:
        if not predicate(item):
            return
        yield item


def dropwhile_(predicate, iterable):
    return _dropped_while(predicate, iter(iterable))


def _dropped_while(predicate, iterator):
    for item in iterator:
        if not predicate(item):
            yield item
            break
    for item in iterator:
        yield item


def compress_(data, selectors):
    return _compressed(iter(data), iter(selectors))


def _compressed(data, selectors):
    while True:
        try:
            datum = next(data)
            selector = next(selectors)
        except StopIteration:
            return
        if selector:
            yield datum


class _Tee:
    """The items tee's iterators share: each pulls from the iterator only when it is ahead of the
    others, and reads what another pulled from the list."""

    def __init__(self, iterator):
        self.iterator, self.items, self.running = iterator, [], False

    def has(self, position):
        """Whether there is an item at position, pulling it when none of the iterators has yet."""
        if position < len(self.items):
            return True
        if self.running:
            raise RuntimeError("cannot re-enter the tee iterator")
        self.running = True
        try:
            self.items.append(next(self.iterator))
        except StopIteration:
            return False
        finally:
            self.running = False
        return True


def tee_(iterable, n=2):
    if n < 0:
        raise ValueError("n must be >= 0")
    shared = _Tee(iter(iterable))
    return tuple(_teed(shared) for _ in range(n))


def _teed(shared):
    position = 0
    while shared.has(position):
        position += 1
        yield shared.items[position - 1]


def call_iterator_(function, sentinel):
    """iter(function, sentinel): calls function until it returns the sentinel (compared as
    CPython compares it: the same object, or ==)."""
    while True:
        value = function()
        if value is sentinel or sentinel == value:
            return
        yield value
