# closures, nonlocal, generators, comprehensions, lambdas, recursion
import torch, itertools, functools, operator
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def closure_cell_modified_after_def(x):
    k = 1
    def f(t): return t * k
    k = 5
    return f(x)

@probe(x)
def nested_closure_three_levels(x):
    a = 2
    def f():
        b = 3
        def g():
            return x * a * b
        return g
    return f()()

@probe(x)
def nonlocal_two_levels(x):
    n = 0
    def outer():
        def inner():
            nonlocal n
            n += 2
        inner(); inner()
    outer()
    return x + n

@probe(x)
def make_adder_factory(x):
    def make_adder(c):
        def add(t): return t + c
        return add
    a1, a2 = make_adder(1), make_adder(x)
    return a1(x), a2(x)

@probe(x)
def lambda_late_binding(x):
    fs = []
    for i in range(3):
        fs.append(lambda t: t * i)
    return [f(x) for f in fs]

@probe(x)
def closure_list_append(x):
    acc = []
    def push(v): acc.append(v)
    for i in range(3): push(x * i)
    return torch.stack(acc)

@probe(x)
def closure_inplace_tensor(x):
    buf = torch.zeros(3)
    def upd(t): buf.add_(t.sum(0))
    upd(x); upd(x)
    return buf

@probe(x)
def nonlocal_tensor_rebind(x):
    out = x
    def step():
        nonlocal out
        out = out * 2 + 1
    for _ in range(3): step()
    return out

@probe(x)
def function_attribute(x):
    def f(t): return t * f.scale
    f.scale = 3
    return f(x)

@probe(x)
def closure_cell_contents(x):
    k = 4
    def f(): return k
    return x * f.__closure__[0].cell_contents

@probe(x)
def closure_returned_to_caller(x):
    def mk(t):
        return lambda: t.sin()
    g = mk(x)
    return g() + 1

@probe(x)
def counter_closure_object(x):
    def counter():
        c = [0]
        def inc():
            c[0] += 1
            return c[0]
        return inc
    inc = counter(); inc(); inc()
    return x * inc()

@probe(x)
def immediately_invoked_lambda(x):
    return (lambda t, k=2: t ** k)(x)

@probe(x)
def decorator_with_args(x):
    def scale(k):
        def deco(fn):
            def w(t): return fn(t) * k
            return w
        return deco
    @scale(3)
    @scale(2)
    def f(t): return t + 1
    return f(x)

@probe(x)
def mutual_recursion(x):
    def ev(n): return True if n == 0 else od(n - 1)
    def od(n): return False if n == 0 else ev(n - 1)
    return x * ev(4) + od(3)

@probe(x)
def recursion_on_tensor(x):
    def f(t, n):
        return t if n == 0 else f(t * 2 + 1, n - 1)
    return f(x, 4)

@probe(x)
def recursive_nested_structure_sum(x):
    def tot(o):
        if isinstance(o, (list, tuple)): return sum(tot(v) for v in o)
        if isinstance(o, dict): return sum(tot(v) for v in o.values())
        return o
    return tot([x, (x, {"a": x * 2}), [[x]]])

# ---- generators
@probe(x)
def gen_yield_from(x):
    def inner():
        yield 1; yield 2
    def outer():
        yield 0
        yield from inner()
        yield 3
    return x * sum(outer())

@probe(x)
def gen_yield_from_return_value(x):
    def inner():
        yield 1
        return 10
    def outer():
        r = yield from inner()
        yield r
    return [x * v for v in outer()]

@probe(x)
def gen_of_tensor_rows(x):
    def g(t):
        for row in t: yield row * 2
    return list(g(x))

@probe(x)
def gen_send_accumulator(x):
    def acc():
        total = 0
        while True:
            v = yield total
            total += v
    g = acc(); next(g); g.send(2); r = g.send(3)
    return x * r

@probe(x)
def gen_next_default(x):
    g = (i for i in range(2))
    a = next(g); b = next(g); c = next(g, 7)
    return x * (a + b + c)

@probe(x)
def gen_zip_two_generators(x):
    g1 = (i * 2 for i in range(3)); g2 = (t for t in x)
    return [a * b for a, b in zip(g1, g2)]

@probe(x)
def gen_infinite_islice(x):
    def nat():
        n = 0
        while True:
            yield n; n += 1
    return x * sum(itertools.islice(nat(), 5))

@probe(x)
def gen_throw_caught(x):
    def g():
        try:
            yield 1
        except ValueError:
            yield 100
    it = g(); next(it)
    return x * it.throw(ValueError)

@probe(x)
def gen_close_runs_finally(x):
    log = []
    def g():
        try:
            yield 1; yield 2
        finally:
            log.append(1)
    it = g(); next(it); it.close()
    return x * len(log)

@probe(x)
def gen_running_tensor_state(x):
    def running(t):
        s = torch.zeros_like(t[0])
        for r in t:
            s = s + r
            yield s
    return torch.stack(list(running(x)))

@probe(x)
def gen_into_dict(x):
    return dict((f"k{i}", x[i]) for i in range(3))

@probe(x)
def gen_any_short_circuit(x):
    seen = []
    def chk(v):
        seen.append(v); return v > 2
    return x * any(chk(v) for v in [1, 3, 5]), seen

@probe(x)
def gen_enumerate_of_generator(x):
    g = (t * 2 for t in x)
    return [i * t for i, t in enumerate(g)]

@probe(x)
def gen_function_with_return_stops(x):
    def g(n):
        for i in range(10):
            if i == n: return
            yield i
    return x * len(list(g(3)))

@probe(x)
def gen_exhausted_twice(x):
    g = (i for i in range(3))
    a = list(g); b = list(g)
    return x * (len(a) + len(b))

@probe(x)
def gen_passed_to_torch_cat(x):
    return torch.cat(tuple(t.unsqueeze(0) for t in x), 0)

@probe(x)
def gen_sum_of_shapes(x):
    ts = [x, x[:2], x[:1]]
    return x * sum(t.shape[0] for t in ts)

@probe(x)
def gen_yield_tuple_unpack(x):
    def pairs(t):
        for i in range(t.shape[0]):
            yield i, t[i]
    return sum(i * r for i, r in pairs(x))

@probe(x)
def gen_nested_generators(x):
    def a(): yield from range(3)
    def b(): 
        for v in a(): yield v * 10
    return x * max(b())

@probe(x)
def gen_iter_protocol_manual(x):
    g = iter([x, x + 1])
    out = []
    while True:
        try:
            out.append(next(g))
        except StopIteration:
            break
    return out

# ---- comprehensions
@probe(x)
def set_comprehension(x):
    s = {i % 3 for i in range(10)}
    return x * len(s)

@probe(x)
def dict_comp_cond_tensor(x):
    return {i: x[i] for i in range(x.shape[0]) if i % 2 == 0}

@probe(x)
def nested_comp_closure_outer(x):
    m = 3
    return [[x[i, j] * m for j in range(x.shape[1])] for i in range(2)]

@probe(x)
def comp_walrus(x):
    ys = [y for i in range(4) if (y := i * i) > 2]
    return x * sum(ys)

@probe(x)
def comp_zip_rows(x):
    return sum(a * b for a, b in zip(x, x.flip(0)))

@probe(x)
def comp_unbind_unsqueeze(x):
    return torch.cat([t.unsqueeze(0) for t in x.unbind(0)], 0)

@probe(x)
def comp_multiple_for_if(x):
    return x * len([(i, j) for i in range(4) if i % 2 for j in range(i) if j != 1])

@probe(x)
def comp_dict_invert(x):
    d = {"a": 1, "b": 2}
    inv = {v: k for k, v in d.items()}
    return x * len(inv[2]), inv

@probe(x)
def comp_over_dict_of_tensors(x):
    d = {"a": x, "b": x * 2}
    return {k: v.sum(0) for k, v in d.items() if k != "c"}
