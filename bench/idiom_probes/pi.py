# higher-order ops, autograd.Function, numpy interop, pytree, mini python autograd, misc
import torch, numpy as np, math, operator, functools, collections, torch.nn as nn
import torch.utils._pytree as pytree
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def hop_cond(x):
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))

@probe(x)
def hop_cond_closure(x):
    k = x.mean()
    def t_(a): return a + k
    def f_(a): return a - k
    return torch.cond(x.shape[0] > 2, t_, f_, (x,))

@probe(x)
def vmap_basic(x):
    return torch.vmap(lambda r: r * r.sum())(x)

@probe(x)
def vmap_in_dims(x):
    return torch.func.vmap(torch.add, in_dims=(0, None))(x, torch.ones(3))

@probe(x)
def func_grad(x):
    return torch.func.grad(lambda t: (t ** 2).sum())(x)

@probe(x)
def func_jacrev_small(x):
    return torch.func.jacrev(lambda t: t.sin())(x[0])

@probe(xr)
def checkpoint_fn(x):
    return torch.utils.checkpoint.checkpoint(lambda t: t.sin() * 2, x, use_reentrant=False)

class MyFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, k):
        ctx.save_for_backward(t)
        ctx.k = k
        return t * k
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * ctx.k, None

@probe(xr)
def autograd_function_apply(x):
    return MyFn.apply(x, 3)

@probe(xr)
def autograd_function_then_grad_flag(x):
    y = MyFn.apply(x * 2, 2)
    return y, y.requires_grad

@probe(x)
def numpy_from_tensor_roundtrip(x):
    a = x.numpy()
    return torch.from_numpy(np.sin(a) * 2)

@probe(x)
def numpy_scalar_constants(x):
    return x * np.pi + np.float32(2.0) + int(np.int64(3))

@probe(np.arange(6, dtype=np.float32).reshape(2, 3))
def numpy_array_input(a):
    return np.sum(a, axis=0) * 2 + a.mean()

@probe(x)
def numpy_shape_math(x):
    return x.reshape(int(np.prod(x.shape)))

@probe(x)
def pytree_tree_map(x):
    return pytree.tree_map(lambda t: t * 2, {"a": [x, (x, x)], "b": x})

@probe(x)
def pytree_flatten_unflatten(x):
    leaves, spec = pytree.tree_flatten({"a": [x, 1], "b": (x,)})
    leaves = [l * 2 for l in leaves]
    return pytree.tree_unflatten(leaves, spec)

# tiny python autograd (tape-based), like test_python_autograd
class Var:
    tape = None
    def __init__(self, v, name=None):
        self.v = v
        self.name = name or Var.fresh()
    _n = [0]
    @staticmethod
    def fresh():
        Var._n[0] += 1
        return f"v{Var._n[0]}"
    def __mul__(self, o):
        r = Var(self.v * o.v)
        def back(g):
            return {self.name: g * o.v, o.name: g * self.v}
        Var.tape.append((r.name, back))
        return r
    def __add__(self, o):
        r = Var(self.v + o.v)
        def back(g):
            return {self.name: g, o.name: g}
        Var.tape.append((r.name, back))
        return r

def _grads(out, inputs):
    grads = {out.name: torch.ones_like(out.v)}
    for name, back in reversed(Var.tape):
        if name not in grads: continue
        for k, g in back(grads[name]).items():
            grads[k] = grads[k] + g if k in grads else g
    return [grads.get(i.name, torch.zeros_like(i.v)) for i in inputs]

@probe(x)
def python_tape_autograd(x):
    Var.tape = []
    a, b = Var(x, "a"), Var(x * 2, "b")
    c = a * b + a
    ga, gb = _grads(c, [a, b])
    Var.tape = None
    return c.v, ga, gb

@probe(x)
def reduce_over_dict_items_operator(x):
    d = {"a": x, "b": x * 2}
    return functools.reduce(operator.add, d.values())

@probe(x)
def counter_elements_most_common(x):
    c = collections.Counter({"a": 3, "b": 1})
    return x * len(list(c.elements())), c.most_common(1)

@probe(x)
def builtin_iter_sentinel(x):
    vals = [1, 2, 0, 3]
    it = iter(vals)
    got = list(iter(lambda: next(it), 0))
    return x * sum(got)

@probe(x)
def builtin_vars_of_module_level_namedtuple(x):
    P2 = collections.namedtuple("P2", "a b")
    return x * P2(1, 2).b

@probe(x)
def super_with_explicit_args(x):
    return _Child().f(x)

class _Par:
    def f(self, t): return t + 1
class _Child(_Par):
    def f(self, t): return super(_Child, self).f(t) * 2

@probe(x)
def torch_no_grad_nested_fn_returning_closure(x):
    with torch.no_grad():
        f = lambda t: t * 2
    return f(x)

@probe(x)
def sorted_with_tensor_keys_python(x):
    sizes = {"a": x[:1], "b": x, "c": x[:2]}
    order = sorted(sizes, key=lambda k: sizes[k].shape[0])
    return order, sizes[order[0]]

@probe(x)
def getattr_torch_function_by_name(x):
    outs = [getattr(torch, n)(x) for n in ["sin", "cos", "exp"]]
    return torch.stack(outs), [getattr(torch.nn.functional, "relu")(x)]

@probe(x)
def isinstance_torch_types(x):
    return x * (isinstance(x.dtype, torch.dtype) + isinstance(x.device, torch.device) + isinstance(x.shape, torch.Size)
                + isinstance(nn.Linear(1, 1), nn.Module) + isinstance(torch.float32, torch.dtype))

@probe(x)
def device_construction_compare(x):
    return x.to(torch.device("cpu")) * (x.device == torch.device("cpu")) + (str(x.device) == "cpu")

@probe(x)
def dtype_to_str_and_back(x):
    name = str(x.dtype).split(".")[-1]
    return x.to(getattr(torch, name)) * len(name), name

@probe(x)
def python_random_seeded(x):
    import random
    random.seed(0)
    return x * random.random()

@probe(x, 2, args2=(x, 5))
def unspec_int_in_range_loop(x, n):
    out = x
    for i in range(n):
        out = out + i
    return out

@probe(x, 0.1, args2=(x, 0.2))
def unspec_float_in_math(x, eps):
    return x / math.sqrt(eps) + math.log(eps)

@probe(x, 3, args2=(x, 4))
def unspec_int_used_as_shape(x, n):
    return torch.zeros(n, 3) + x[0], torch.arange(n) * n
