# correctness-risky semantics: aliasing of outputs, in-place results, mutation order against reads,
# second calls after changes (guards), side effects replayed after the graph
import torch, torch.nn as nn, collections, functools, dataclasses
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(3)
x6 = torch.randn(6, 3)

@probe(x)
def inplace_result_identity_and_alias(x):
    y = x.clone()
    z = y.mul_(2)
    w = z.add_(1)
    return y is z, z is w, y, w

@probe(x)
def inplace_on_input_returns_input_object(x):
    r = x.add_(1)
    return r

@probe(x)
def setitem_result_then_read_old_view(x):
    y = x.clone()
    v = y[0]
    y[0] = 5.0
    return v, y

@probe(x)
def returned_same_tensor_twice(x):
    y = x * 2
    return y, y, [y]

@probe(x)
def view_of_input_then_input_mutated(x):
    v = x.view(-1)
    x.mul_(3)
    return v

@probe(x)
def input_returned_and_mutated_after(x):
    out = [x]
    x.add_(1)
    return out

@probe([x, x * 2])
def list_input_elements_swapped(l):
    l[0], l[1] = l[1], l[0]
    return l[0] - l[1]

@probe({"a": x, "b": 1})
def dict_input_rebind_and_read(d):
    d["a"] = d["a"] * 2
    d["b"] += 1
    d["c"] = d.pop("a")
    return d["c"] + d["b"]

@probe(x)
def list_aliasing_through_two_names(x):
    a = [x]
    b = a
    b.append(x * 2)
    c = a[:]
    c.append(x * 3)
    return len(a), len(c), a is b, torch.stack(a)

@probe(x)
def dict_values_view_live_after_mutation(x):
    d = {"a": x}
    vs = d.values()
    d["b"] = x * 2
    return len(vs), list(vs)[-1]

@probe(x)
def generator_sees_later_mutation(x):
    l = [1, 2]
    g = (v * 2 for v in l)
    l.append(3)
    return x * sum(g)

@probe(x)
def closure_sees_list_mutation_after_creation(x):
    l = [x]
    f = lambda: sum(l)
    l.append(x * 10)
    return f()

class Box:
    def __init__(self, v): self.v = v

@probe(Box(x))
def object_input_attr_swap_and_read(b):
    old = b.v
    b.v = b.v * 2
    return old, b.v

@probe(x)
def object_shared_between_two_containers(x):
    o = Box(x)
    l = [o]
    d = {"o": o}
    d["o"].v = x * 5
    return l[0].v

_STATE = {"n": 0}
def _state_reset(): _STATE["n"] = 0

@probe(x, reset=_state_reset, state=lambda: dict(_STATE), args2=(x,))
def global_dict_counter_two_calls(x):
    _STATE["n"] += 1
    return x * _STATE["n"]

_LOG = []
@probe(x, reset=lambda: _LOG.clear(), state=lambda: list(_LOG), args2=(x,))
def global_list_growth_two_calls(x):
    _LOG.append(len(_LOG))
    return x * len(_LOG)

class Acc2:
    total = 0

@probe(x, reset=lambda: setattr(Acc2, "total", 0), state=lambda: Acc2.total, args2=(x,))
def class_attr_accumulate_two_calls(x):
    Acc2.total += 2
    return x + Acc2.total

@probe(x, 2, args2=(x, 2.0))
def int_then_float_same_value(x, k):
    return x * k, type(k).__name__, k / 3

@probe(x, [1, 2], args2=(x, [1, 2, 3]))
def list_arg_len_changes_loop(x, l):
    for v in l:
        x = x + v
    return x

@probe(x, (1, "a"), args2=(x, (1, "b")))
def tuple_arg_string_changes(x, t):
    return x * t[0] if t[1] == "a" else x - t[0]

@probe(x, None, args2=(x, 3))
def none_then_int_arg(x, k):
    return x if k is None else x * k

@probe(x, args2=(x.t(),))
def transposed_input_second_call(x):
    return x.contiguous().view(-1)[:3], x.is_contiguous()

@probe(x, args2=(x[:, :2],))
def narrower_input_second_call(x):
    return x.sum(1), x.shape[1]

@probe(x, args2=(x.double(),))
def dtype_change_second_call(x):
    return x * 2, x.dtype

@probe(x, args2=(x6,))
def size_dependent_python_branch_second_call(x):
    if x.shape[0] > 5:
        return x[:5].sum(0)
    return x.sum(0) * 2

@probe(x, args2=(x6,))
def size_used_in_list_len_second_call(x):
    rows = [x[i] * i for i in range(x.shape[0])]
    return torch.stack(rows), len(rows)

class Cfg:
    def __init__(self): self.scale = 2; self.on = True

@probe(x, Cfg(), args2=(x, None))
def object_arg_then_none(x, c):
    return x * (c.scale if c is not None else 1)

_M = nn.Linear(3, 3)
def _m_reset():
    with torch.no_grad():
        _M.weight.fill_(0.5)
def _m_between():
    with torch.no_grad():
        _M.weight.mul_(2)

@probe(x, reset=_m_reset, between=_m_between, args2=(x,))
def parameter_changed_inplace_between_calls(x):
    return _M(x)

@probe(x, reset=lambda: setattr(_M, "extra", 1), between=lambda: setattr(_M, "extra", 4), args2=(x,))
def module_python_attr_changed_between_calls(x):
    return _M(x) * _M.extra

class Cache:
    def __init__(self): self.store = {}
    def get(self, k, fn):
        if k not in self.store:
            self.store[k] = fn()
        return self.store[k]

_CACHE = Cache()
@probe(x, reset=lambda: _CACHE.store.clear(), state=lambda: sorted(_CACHE.store), args2=(x,))
def memo_cache_object_two_calls(x):
    a = _CACHE.get("a", lambda: 3)
    b = _CACHE.get("b", lambda: 4)
    return x * a + b

@probe(x)
def deque_maxlen_eviction_returns(x):
    d = collections.deque(maxlen=2)
    for i in range(4):
        d.append(x * i)
    return list(d), d.maxlen

@probe(x)
def sort_in_place_list_of_tensors_by_python_key(x):
    l = [x[2], x[0], x[1]]
    keys = {id(l[0]): 2, id(l[1]): 0, id(l[2]): 1}
    l.sort(key=lambda t: keys[id(t)])
    return torch.stack(l)

@probe(x)
def nested_function_mutates_outer_list_then_returns(x):
    out = []
    def visit(t, depth):
        out.append(t * depth)
        if depth < 3:
            visit(t + 1, depth + 1)
    visit(x, 1)
    return out

@probe(x)
def exception_after_partial_mutation(x):
    l = []
    try:
        l.append(x)
        l.append(x * 2)
        raise ValueError
    except ValueError:
        pass
    return l

@probe(x)
def finally_mutation_visible(x):
    d = {}
    def f():
        try:
            return x * 2
        finally:
            d["done"] = True
    r = f()
    return r, d

@probe(x)
def mutation_inside_comprehension_condition(x):
    seen = []
    r = [v for v in range(5) if not seen.append(v) and v % 2]
    return x * len(r), seen

@probe(x)
def default_dict_factory_called_count(x):
    calls = []
    def fac():
        calls.append(1)
        return x * 0
    d = collections.defaultdict(fac)
    d["a"] += 1
    d["a"] += 1
    d["b"]
    return d["a"], len(calls), sorted(d)

@probe(x)
def iterator_partially_consumed_then_listed(x):
    it = iter([x, x * 2, x * 3])
    first = next(it)
    return first, list(it), list(it)

@probe(x)
def zip_consumes_one_extra(x):
    a = iter([1, 2, 3])
    b = [10, 20]
    pairs = list(zip(a, b))
    return x * len(pairs), list(a)

@probe(xr)
def requires_grad_output_of_mixed_ops(x):
    a = x.detach()
    b = a + x
    with torch.no_grad():
        c = x * 2
    return b.requires_grad, c.requires_grad, (c + a).requires_grad, b

@probe(x)
def tensor_setitem_with_tensor_index_and_broadcast(x):
    y = torch.zeros(4, 3)
    idx = torch.tensor([0, 2])
    y[idx] = x[:2]
    y[idx, 1] += 10
    return y

@probe(x)
def index_put_accumulate_duplicates(x):
    y = torch.zeros(3)
    idx = torch.tensor([0, 0, 2])
    y.index_put_((idx,), torch.ones(3), accumulate=True)
    return y

@probe(x)
def chained_views_setitem_propagates(x):
    y = x.clone()
    y.t()[1][2] = 100.0
    y.view(2, 6)[1, 0] = -100.0
    return y

@probe(x)
def inplace_on_slice_of_list_element(x):
    l = [x.clone(), x.clone()]
    l[1][0].zero_()
    return l
