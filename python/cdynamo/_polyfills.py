"""Python stand-ins the interpreter traces in place of C-implemented callables (map, filter,
functools.reduce and partial, itertools' iterators and combinatorics, the operator module's
functions and attrgetter/itemgetter/methodcaller objects, heapq's C functions, torch.vmap and
torch.func's transforms, associative_scan, Variable, torch.FloatTensor(...), torch.jit.annotate)
and of library code it does not trace
(contextlib.nullcontext, functions decorated with @torch.no_grad() / @torch.enable_grad(), the
Python function behind a @torch.jit.script one, nn.Module's parameters()/children()/... walks
and state_dict()).
Each behaves as its original does for the arguments it accepts; this file is traced, not skipped."""
import collections
import contextlib
import functools
import itertools
import operator
import types
import weakref

import torch
try:
    from torch._higher_order_ops.associative_scan import associative_scan as _associative_scan
except ImportError:  # a torch without it: nothing to stand in for
    _associative_scan = None

from . import _special_calls
from ._trace_support import builds_namedtuple_by_fields, namedtuple_field_order, partial_without_dict


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


# sorted/min/max over objects whose classes compare in Python (interp/key_builtins.cpp): the
# builtins' algorithms with the same comparisons, so __lt__ and __gt__ run in the trace.
def sorted_(iterable, /, *, key=None, reverse=False):
    items = list(iterable)
    keys = items if key is None else [key(item) for item in items]
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
        items = args[0] if len(args) == 1 else args
        best, best_key = _NO_DEFAULT, None
        for item in items:
            item_key = item if key is None else key(item)
            if best is _NO_DEFAULT or better(item_key, best_key):
                best, best_key = item, item_key
        if best is _NO_DEFAULT:
            if default is not _NO_DEFAULT:
                return default
            raise ValueError(f"{name}() iterable argument is empty")
        return best

    return extreme


_NO_DEFAULT = object()
min_ = _extreme("min", lambda a, b: a < b)
max_ = _extreme("max", lambda a, b: a > b)


_NO_INITIAL = object()
_MISSING = object()


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


class NullContext:
    """contextlib.nullcontext, whose methods live in the standard library (not traced)."""

    def __init__(self, enter_result=None):
        self.enter_result = enter_result

    def __enter__(self):
        return self.enter_result

    def __exit__(self, *exc_info):
        return False


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


def _getter_call(getter):
    # operator.attrgetter("a.b", "c") / itemgetter(1, 2) objects: what they were made with is in
    # their __reduce__; the lookups are traced.
    _, names = getter.__reduce__()
    if type(getter) is operator.itemgetter:
        def get(obj):
            return obj[names[0]] if len(names) == 1 else tuple(obj[name] for name in names)
    else:
        def attribute(obj, dotted):
            for part in dotted.split("."):
                obj = getattr(obj, part)
            return obj

        def get(obj):
            return attribute(obj, names[0]) if len(names) == 1 else tuple(attribute(obj, name) for name in names)
    return get


def _methodcaller_call(caller):
    # operator.methodcaller("name", *args, **kwargs) objects: __reduce__ gives back what they
    # were made with (a partial of the class when there are keywords); the method call is traced.
    made_by, args = caller.__reduce__()
    if type(made_by) is functools.partial:
        name, keywords = made_by.args[0], dict(made_by.keywords)
    else:
        name, args, keywords = args[0], args[1:], {}

    def call(obj):
        return getattr(obj, name)(*args, **keywords)

    return call


# The operator module's functions, as the statements and expressions they stand for: the
# interpreter traces `a[b] = c`, `a += b`, `b in a` with its own rules (a list or dict changed in
# place, a tensor's item assignment a graph node), where a call of the C function would be one
# opaque graph node. operator.index and operator.length_hint keep their policy.
def add_(a, b): return a + b
def sub_(a, b): return a - b
def mul_(a, b): return a * b
def matmul_(a, b): return a @ b
def truediv_(a, b): return a / b
def floordiv_(a, b): return a // b
def mod_(a, b): return a % b
def pow_(a, b): return a ** b
def lshift_(a, b): return a << b
def rshift_(a, b): return a >> b
def and__(a, b): return a & b
def or__(a, b): return a | b
def xor_(a, b): return a ^ b
def lt_(a, b): return a < b
def le_(a, b): return a <= b
def eq_(a, b): return a == b
def ne_(a, b): return a != b
def gt_(a, b): return a > b
def ge_(a, b): return a >= b
def is__(a, b): return a is b
def is_not_(a, b): return a is not b
def neg_(a): return -a
def pos_(a): return +a
def invert_(a): return ~a
def abs_(a): return abs(a)
def not__(a): return not a
def truth_(a): return True if a else False
def contains_(a, b): return b in a
def getitem_(a, b): return a[b]


def setitem_(a, b, c):
    a[b] = c


def delitem_(a, b):
    del a[b]


def iadd_(a, b):
    a += b
    return a


def isub_(a, b):
    a -= b
    return a


def imul_(a, b):
    a *= b
    return a


def imatmul_(a, b):
    a @= b
    return a


def itruediv_(a, b):
    a /= b
    return a


def ifloordiv_(a, b):
    a //= b
    return a


def imod_(a, b):
    a %= b
    return a


def ipow_(a, b):
    a **= b
    return a


def ilshift_(a, b):
    a <<= b
    return a


def irshift_(a, b):
    a >>= b
    return a


def iand_(a, b):
    a &= b
    return a


def ior_(a, b):
    a |= b
    return a


def ixor_(a, b):
    a ^= b
    return a


def _concatenable(a):
    if not hasattr(a, "__getitem__"):
        raise TypeError(f"'{type(a).__name__}' object can't be concatenated")


def concat_(a, b):
    _concatenable(a)
    return a + b


def iconcat_(a, b):
    _concatenable(a)
    a += b
    return a


def countOf_(a, b):
    # Items equal to b, each compared as `in` compares (identity first).
    found = 0
    for item in a:
        if item is b or item == b:
            found += 1
    return found


def indexOf_(a, b):
    position = 0
    for item in a:
        if item is b or item == b:
            return position
        position += 1
    raise ValueError("sequence.index(x): x not in sequence")


def call_(obj, /, *args, **kwargs):
    return obj(*args, **kwargs)


_OPERATOR_STAND_INS = {
    getattr(operator, name): stand_in for name, stand_in in (
        ("add", add_), ("sub", sub_), ("mul", mul_), ("matmul", matmul_), ("truediv", truediv_),
        ("floordiv", floordiv_), ("mod", mod_), ("pow", pow_), ("lshift", lshift_), ("rshift", rshift_),
        ("and_", and__), ("or_", or__), ("xor", xor_), ("lt", lt_), ("le", le_), ("eq", eq_), ("ne", ne_),
        ("gt", gt_), ("ge", ge_), ("is_", is__), ("is_not", is_not_), ("neg", neg_), ("pos", pos_),
        ("invert", invert_), ("inv", invert_), ("abs", abs_), ("not_", not__), ("truth", truth_),
        ("contains", contains_), ("getitem", getitem_), ("setitem", setitem_), ("delitem", delitem_),
        ("iadd", iadd_), ("isub", isub_), ("imul", imul_), ("imatmul", imatmul_), ("itruediv", itruediv_),
        ("ifloordiv", ifloordiv_), ("imod", imod_), ("ipow", ipow_), ("ilshift", ilshift_),
        ("irshift", irshift_), ("iand", iand_), ("ior", ior_), ("ixor", ixor_), ("concat", concat_),
        ("iconcat", iconcat_), ("countOf", countOf_), ("indexOf", indexOf_), ("call", call_))
    if hasattr(operator, name)
}


def nullcontext_(enter_result=None):
    return NullContext(enter_result)


def partial_(func, /, *args, **keywords):
    # A call of a functools.partial, as a closure (a partial made in the trace is a Partial).
    def call(*more, **more_keywords):
        return func(*args, *more, **{**keywords, **more_keywords})

    return call


def vmap_(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    # torch.vmap(func): calling the result is one graph node running vmap of func (transform_node).
    def call(*args, **kwargs):
        options = {"in_dims": in_dims, "out_dims": out_dims, "randomness": randomness, "chunk_size": chunk_size}
        return _special_calls.transformed(torch.vmap, _as_function(func), options, *args, **kwargs)

    return call


def _function_transform(transform):
    # torch.func.grad(func, argnums=0, has_aux=False) and the like: the same, by keyword.
    def stand_in(func, **options):
        def call(*args, **kwargs):
            return _special_calls.transformed(transform, _as_function(func), options, *args, **kwargs)

        return call

    return stand_in


def associative_scan_(combine_fn, xs, dim, reverse=False, combine_mode="pointwise"):
    # "pointwise" has torch.compile build one scan kernel from combine_fn; "generic" computes the
    # same scan from torch operators and vmap (torch's own code, traced), which a graph holds.
    if combine_mode == "pointwise" and not all(
            leaf.device.type in ("cuda", "xpu") for leaf in torch.utils._pytree.tree_leaves(xs)):
        raise ValueError("For combine_mode='pointwise', all input tensors need to be on CUDA or XPU")
    return _ASSOCIATIVE_SCAN_AS_WRITTEN(combine_fn, xs, dim, reverse=reverse, combine_mode="generic")


def variable_(data, requires_grad=False, volatile=False):
    # torch.autograd.Variable(t) (PyTorch 0.3 code): a new tensor sharing t's data, without its
    # history; requires_grad=True makes it a leaf. volatile is ignored, as torch ignores it now.
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    made = data.detach()
    if requires_grad:
        made.requires_grad_()
    return made


def _legacy_constructor(original, dtype):
    # torch.FloatTensor(2, 3), torch.LongTensor([1, 2]), torch.Tensor(size) (pre-1.0 code): sizes
    # give an uninitialised tensor, a list of numbers its values; other arguments break the graph
    # and the original makes the tensor.
    def make(*given):
        args = tuple(given[0]) if len(given) == 1 and isinstance(given[0], torch.Size) else given
        if all(type(a) is int for a in args):
            return torch.empty(args, dtype=dtype)
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            return torch.tensor(args[0], dtype=dtype if dtype is not None else torch.get_default_dtype())
        _special_calls.break_graph("a legacy tensor constructor with arguments other than sizes or a list of numbers")
        return original(*given)

    return make


_LEGACY_CONSTRUCTORS = {
    getattr(torch, name): _legacy_constructor(getattr(torch, name), dtype) for name, dtype in (
        ("FloatTensor", torch.float32), ("DoubleTensor", torch.float64), ("HalfTensor", torch.float16),
        ("BFloat16Tensor", torch.bfloat16), ("LongTensor", torch.int64), ("IntTensor", torch.int32),
        ("ShortTensor", torch.int16), ("CharTensor", torch.int8), ("ByteTensor", torch.uint8),
        ("BoolTensor", torch.bool), ("Tensor", None))
}
_partials = weakref.WeakKeyDictionary()  # a partial object from outside -> its stand-in


def _partial_call(partial):
    """A call of an existing partial object: its function, arguments and keywords as they are
    now (the object itself is guarded by identity; its keywords dict is copied)."""
    found = _partials.get(partial)
    if found is None:
        found = _partials[partial] = partial_(partial.func, *partial.args, **dict(partial.keywords))
    return found


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


# nn.Module's own iteration methods (library code, not traced): the same walk over _modules,
# _parameters and _buffers, duplicates told apart by identity as torch does.
def _module_named_modules(self, memo=None, prefix="", remove_duplicate=True):
    if memo is None:
        memo = []
    if remove_duplicate:
        if any(self is seen for seen in memo):
            return
        memo.append(self)
    yield prefix, self
    for name, child in self._modules.items():
        if child is None:
            continue
        child_prefix = prefix + ("." if prefix else "") + name
        for item in _module_named_modules(child, memo, child_prefix, remove_duplicate):
            yield item


def _module_modules(self):
    for _, module in _module_named_modules(self):
        yield module


def _module_named_children(self):
    memo = []
    for name, child in self._modules.items():
        if child is not None and not any(child is seen for seen in memo):
            memo.append(child)
            yield name, child


def _module_children(self):
    for _, child in _module_named_children(self):
        yield child


def _named_members(module, attribute, prefix, recurse, remove_duplicate):
    seen = []
    modules = _module_named_modules(module, prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, module)]
    for module_prefix, owner in modules:
        for name, value in getattr(owner, attribute).items():
            if value is None:
                continue
            if remove_duplicate:
                if any(value is other for other in seen):
                    continue
                seen.append(value)
            yield module_prefix + ("." if module_prefix else "") + name, value


def _member_walks(attribute):
    """named_parameters/parameters (or the buffers' pair) over module.<attribute>."""

    def named(self, prefix="", recurse=True, remove_duplicate=True):
        for item in _named_members(self, attribute, prefix, recurse, remove_duplicate):
            yield item

    def plain(self, recurse=True):
        for _, value in _named_members(self, attribute, "", recurse, True):
            yield value

    return named, plain


_module_named_parameters, _module_parameters = _member_walks("_parameters")
_module_named_buffers, _module_buffers = _member_walks("_buffers")


def _has_state_dict_hooks(module):
    return any(m._state_dict_pre_hooks or m._state_dict_hooks for m in _module_modules(module))


def _module_state_dict(self, *args, destination=None, prefix="", keep_vars=False):
    """nn.Module.state_dict: the same entries in the same order. The result lacks the
    `_metadata` attribute (module versions), which load_state_dict reads only when present.
    Hooks and the deprecated positional arguments run the original (a graph break there)."""
    if args or _has_state_dict_hooks(self):
        return _STATE_DICT_AS_WRITTEN(self, *args, destination=destination, prefix=prefix, keep_vars=keep_vars)
    if destination is None:
        destination = collections.OrderedDict()
    _save_state(self, destination, prefix, keep_vars)
    return destination


def _save_state(module, destination, prefix, keep_vars):
    if type(module)._save_to_state_dict is not torch.nn.Module._save_to_state_dict:
        module._save_to_state_dict(destination, prefix, keep_vars)
    else:
        for name, param in module._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in module._buffers.items():
            if buf is not None and name not in module._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(module).get_extra_state is not torch.nn.Module.get_extra_state:
            destination[prefix + "_extra_state"] = module.get_extra_state()
    for name, child in module._modules.items():
        if child is not None:
            _save_state(child, destination, prefix + name + ".", keep_vars)


# Classes written in C that a compiled function makes: a Python class stands in for each while
# the trace runs (type(), isinstance() and __class__ answer the real class), and leaving the
# trace the object becomes a real one (_trace_support.fill_object calls _cdynamo_fill).
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
    the trace it becomes a real partial (_trace_support.fill_object reads these attributes)."""

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


def _as_function(func):
    # The transforms' graph node holds a function: a partial made in the trace becomes the closure
    # it calls.
    return partial_(func.func, *func.args, **func.keywords) if isinstance(func, Partial) else func


STAND_IN_CLASSES = {collections.deque: Deque, functools.partial: Partial}


# Callables replaced wherever they are called.
def count_elements_(mapping, iterable):
    """collections._count_elements (Counter.update's C helper): counts each element."""
    get = mapping.get
    for element in iterable:
        mapping[element] = get(element, 0) + 1


def _as_written(original):
    # A function object of its own: calls of the original (its recursion included) come back to
    # the stand-in, this one runs the original's code as written.
    function = types.FunctionType(original.__code__, original.__globals__, original.__name__, original.__defaults__,
                                  original.__closure__)
    function.__kwdefaults__ = original.__kwdefaults__
    return function


_DEEPCOPY_AS_WRITTEN = _as_written(__import__("copy").deepcopy)
_COPY_AS_WRITTEN = _as_written(__import__("copy").copy)
_ASSOCIATIVE_SCAN_AS_WRITTEN = _as_written(_associative_scan) if _associative_scan is not None else None
_STATE_DICT_AS_WRITTEN = _as_written(torch.nn.Module.state_dict)


def copy_(x):
    """copy.copy, with the instances of plain classes copied as copy's default reduction does:
    a new object (no __init__) sharing the attribute values."""
    from cdynamo._trace_support import copies_attribute_by_attribute

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
    from cdynamo._trace_support import copies_attribute_by_attribute

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


def jit_annotate_(the_type, the_value):
    # torch.jit.annotate(List[T], []): the value itself (the list stays the one the trace made).
    return the_value


_BY_OBJECT = {
    map: map_,
    functools.reduce: reduce_,
    itertools.chain: chain_,
    itertools.islice: islice_,
    itertools.product: product_,
    itertools.accumulate: accumulate_,
    itertools.combinations: combinations_,
    itertools.permutations: permutations_,
    itertools.combinations_with_replacement: combinations_with_replacement_,
    filter: filter_,
    itertools.filterfalse: filterfalse_,
    itertools.zip_longest: zip_longest_,
    itertools.groupby: groupby_,
    itertools.count: count_,
    itertools.repeat: repeat_,
    itertools.cycle: cycle_,
    itertools.pairwise: pairwise_,
    itertools.starmap: starmap_,
    itertools.takewhile: takewhile_,
    itertools.dropwhile: dropwhile_,
    itertools.compress: compress_,
    itertools.tee: tee_,
    contextlib.nullcontext: nullcontext_,
    __import__("copy").deepcopy: deepcopy_,
    __import__("copy").copy: copy_,
    __import__("collections")._count_elements: count_elements_,
    torch.vmap: vmap_,
    **{transform: _function_transform(transform) for transform in (
        torch.func.grad, torch.func.grad_and_value, torch.func.jacrev, torch.func.jacfwd, torch.func.hessian)},
    torch.autograd.Variable: variable_,
    torch.jit.annotate: jit_annotate_,
    **{getattr(__import__("heapq"), name): stand_in for name, stand_in in (
        ("heapify", heapify_), ("heappop", heappop_), ("heapreplace", heapreplace_), ("heappush", heappush_),
        ("heappushpop", heappushpop_), ("_heapify_max", _heapify_max_), ("_heappop_max", _heappop_max_),
        ("_heapreplace_max", _heapreplace_max_)) if hasattr(__import__("heapq"), name)},
    **_LEGACY_CONSTRUCTORS,
    torch.nn.Module.named_modules: _module_named_modules,
    torch.nn.Module.modules: _module_modules,
    torch.nn.Module.named_children: _module_named_children,
    torch.nn.Module.children: _module_children,
    torch.nn.Module.named_parameters: _module_named_parameters,
    torch.nn.Module.parameters: _module_parameters,
    torch.nn.Module.named_buffers: _module_named_buffers,
    torch.nn.Module.buffers: _module_buffers,
    torch.nn.Module.state_dict: _module_state_dict,
    **_OPERATOR_STAND_INS,
}

# torch's context decorators wrap the function in torch/utils/_contextlib.py's decorate_context,
# which enters `ctx_factory()` (a clone of the decorator's context manager) around the call.
_GRAD_MODES = (torch.no_grad, torch.enable_grad)
_DECORATE_CONTEXT_CODE = torch.no_grad()(lambda: None).__code__
_decorated = weakref.WeakKeyDictionary()  # decorated function -> its stand-in


def _grad_mode_call(func, mode):
    def call(*args, **kwargs):
        with mode():
            return func(*args, **kwargs)

    return call


def _decorated_replacement(fn):
    if getattr(fn, "__code__", None) is not _DECORATE_CONTEXT_CODE or not fn.__closure__:
        return None
    found = _decorated.get(fn)
    if found is not None:
        return found
    cells = dict(zip(fn.__code__.co_freevars, (cell.cell_contents for cell in fn.__closure__)))
    factory, func = cells.get("ctx_factory"), cells.get("func")
    mode = type(getattr(factory, "__self__", None))
    if func is None or mode not in _GRAD_MODES or getattr(factory, "__name__", "") != "clone":
        return None  # another context manager (inference_mode, autocast): not replaced
    found = _decorated[fn] = _grad_mode_call(func, mode)
    return found


if _associative_scan is not None:
    _BY_OBJECT[_associative_scan] = associative_scan_
_BY_ID = {id(original): stand_in for original, stand_in in _BY_OBJECT.items()}  # _BY_OBJECT keeps them alive


def replacement_for(fn):
    """The function the interpreter traces in place of a call of fn, or None. Looks only at
    identities and plain attributes of functions and builtins: no code of the callable runs."""
    found = _BY_ID.get(id(fn))
    if found is not None:
        return found
    if type(fn) is types.BuiltinFunctionType:
        if fn.__self__ is itertools.chain and fn.__name__ == "from_iterable":
            return chain_from_iterable
        return None
    if type(fn) is types.FunctionType:
        return _namedtuple_method(fn) or _decorated_replacement(fn)
    if type(fn) is functools._lru_cache_wrapper and type(getattr(fn, "__wrapped__", None)) is types.FunctionType:
        return fn.__wrapped__  # @functools.lru_cache / cache: the function itself (same answers, no cache)
    if type(fn) is functools.partial:
        return _partial_call(fn)
    if type(fn) in (operator.attrgetter, operator.itemgetter):
        return _getter_call(fn)
    if type(fn) is operator.methodcaller:
        return _methodcaller_call(fn)
    if type(fn).__name__ == "OptimizedCallable" and type(fn).__module__ == "cdynamo._C" and isinstance(fn._callback, tuple):
        # A compiled function called from compiled code: its function is traced in place (the
        # outer compile's backend applies, as under torch._dynamo's nested optimize). Not so
        # for disable()'d or run()-only functions: their calls stay outside the graphs.
        return fn._fn if type(fn._fn) is types.FunctionType else None
    if type(fn) is torch.jit.ScriptFunction:  # @torch.jit.script: its Python source, kept by torch
        original = getattr(fn, "_torchdynamo_inline", None)
        return original if type(original) is types.FunctionType else None
    return None
