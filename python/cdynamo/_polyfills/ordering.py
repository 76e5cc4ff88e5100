"""sorted/min/max, heapq's and bisect's C functions written out, so that classes' __lt__ and __gt__ run in the trace.
Assumes the C code's comparisons in its order: sorted stable (a merge sort), heaps kept with `<` only."""


# sorted/min/max over objects whose classes compare in Python (interp/key_builtins.cpp): the
# builtins' algorithms with the same comparisons, so __lt__ and __gt__ run in the trace.
def sorted_(iterable, /, *, key=None, reverse=False):
    items = list(iterable)
    return sorted_by_keys_(items, items if key is None else [key(item) for item in items], reverse)


def sorted_by_keys_(items, keys, reverse=False):
    # The sort with each item's key computed already (sorted(key=...) whose keys are objects
    # comparing in Python, such as functools.cmp_to_key's: key_builtins.cpp computed them once).
    order = list(range(len(items)))
    width = 1
    while width < len(order):  # bottom-up merge sort: stable, as list.sort is
        merged = []
        for start in range(0, len(order), 2 * width):
            left, right = order[start:start + width], order[start + width:start + 2 * width]
            while left and right:
                # reverse=True reverses each comparison, keeping equal items in their order.
                right_first = keys[left[0]] < keys[right[0]] if reverse else keys[right[0]] < keys[left[0]]
                merged.append(right.pop(0) if right_first else left.pop(0))
            merged.extend(left)
            merged.extend(right)
        order = merged
        width *= 2
    return [items[i] for i in order]


def _extreme(name, better):
    def extreme(*args, key=None, default=_NO_DEFAULT):
        if not args:
            raise TypeError(f"{name} expected at least 1 argument, got 0")
        items = list(args[0] if len(args) == 1 else args)
        return by_keys(items, items if key is None else [key(item) for item in items], default)

    def by_keys(items, keys, default=_NO_DEFAULT):
        best, best_key = _NO_DEFAULT, None
        for item, item_key in zip(items, keys):
            if best is _NO_DEFAULT or better(item_key, best_key):
                best, best_key = item, item_key
        if best is _NO_DEFAULT:
            if default is not _NO_DEFAULT:
                return default
            raise ValueError(f"{name}() iterable argument is empty")
        return best

    return extreme, by_keys


_NO_DEFAULT = object()
min_, min_by_keys_ = _extreme("min", lambda a, b: a < b)
max_, max_by_keys_ = _extreme("max", lambda a, b: a > b)


class CmpKey:
    """What functools.cmp_to_key(cmp)(obj) makes: an object comparing through cmp."""

    __slots__ = ("obj", "cmp")
    __hash__ = None

    def __init__(self, obj, cmp):
        self.obj = obj
        self.cmp = cmp

    def __lt__(self, other):
        return self.cmp(self.obj, other.obj) < 0

    def __gt__(self, other):
        return self.cmp(self.obj, other.obj) > 0

    def __eq__(self, other):
        return self.cmp(self.obj, other.obj) == 0

    def __le__(self, other):
        return self.cmp(self.obj, other.obj) <= 0

    def __ge__(self, other):
        return self.cmp(self.obj, other.obj) >= 0


def cmp_to_key_(mycmp):
    # functools.cmp_to_key (C): a key function whose keys compare in the trace.
    def key(obj):
        return CmpKey(obj, mycmp)

    return key


# heapq's C functions (heapq.nlargest/nsmallest/merge, which are Python, call them): the same
# heap invariant on the same list, kept with `<` only as the C code compares.
def _sift_up(heap, index, before):
    item = heap[index]
    while index > 0:
        parent = (index - 1) >> 1
        if not before(item, heap[parent]):
            break
        heap[index] = heap[parent]
        index = parent
    heap[index] = item


def _sift_down(heap, index, before):
    size, item = len(heap), heap[index]
    while True:
        child = 2 * index + 1
        if child >= size:
            break
        if child + 1 < size and before(heap[child + 1], heap[child]):
            child += 1
        if not before(heap[child], item):
            break
        heap[index] = heap[child]
        index = child
    heap[index] = item


def _smaller(a, b):
    return a < b


def _larger(a, b):
    return b < a


def _heap_functions(before):
    def heapify(heap):
        for index in reversed(range(len(heap) // 2)):
            _sift_down(heap, index, before)

    def heappop(heap):
        last = heap.pop()  # IndexError on an empty heap, as heapq's
        if not heap:
            return last
        top, heap[0] = heap[0], last
        _sift_down(heap, 0, before)
        return top

    def heapreplace(heap, item):
        top, heap[0] = heap[0], item
        _sift_down(heap, 0, before)
        return top

    return heapify, heappop, heapreplace


heapify_, heappop_, heapreplace_ = _heap_functions(_smaller)
_heapify_max_, _heappop_max_, _heapreplace_max_ = _heap_functions(_larger)


def heappush_(heap, item):
    heap.append(item)
    _sift_up(heap, len(heap) - 1, _smaller)


def heappushpop_(heap, item):
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        _sift_down(heap, 0, _smaller)
    return item


# bisect's C functions: the same binary search with `<` only (key applied to the list's items, not
# to x), so that classes' __lt__ runs in the trace; insort inserts with the list's insert.
def _bisect(a, x, lo, hi, key, right):
    if lo < 0:
        raise ValueError("lo must be non-negative")
    if hi is None:
        hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        item = a[mid] if key is None else key(a[mid])
        if (not x < item) if right else item < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def bisect_left_(a, x, lo=0, hi=None, *, key=None):
    return _bisect(a, x, lo, hi, key, right=False)


def bisect_right_(a, x, lo=0, hi=None, *, key=None):
    return _bisect(a, x, lo, hi, key, right=True)


def insort_left_(a, x, lo=0, hi=None, *, key=None):
    a.insert(bisect_left_(a, x if key is None else key(x), lo, hi, key=key), x)


def insort_right_(a, x, lo=0, hi=None, *, key=None):
    a.insert(bisect_right_(a, x if key is None else key(x), lo, hi, key=key), x)
