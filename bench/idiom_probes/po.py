# numbers that change between calls (unspecialized ints/floats) meeting dtypes: type promotion,
# integer tensors, half precision, large ints, python arithmetic on them; more live-iterator cases
import torch, math
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(4)
xi = torch.tensor([[1, -2, 3], [4, 5, -6]])
xi32 = xi.int()
xh = torch.randn(2, 3).half()
xb = torch.tensor([True, False, True])
xu8 = torch.tensor([1, 200, 255], dtype=torch.uint8)

@probe(xi, 0.5, args2=(xi, 1.5))
def int_tensor_times_float_arg(t, f):
    return t * f, (t * f).dtype, t + f, t / f

@probe(xi32, 3, args2=(xi32, 5))
def int32_tensor_with_int_arg(t, n):
    return t * n, t + n, t // n, t % n, (t * n).dtype

@probe(xh, 0.25, args2=(xh, 0.75))
def half_tensor_with_float_arg(t, f):
    return t * f, (t + f).dtype, torch.full((2,), f, dtype=t.dtype)

@probe(xb, 2, args2=(xb, 3))
def bool_tensor_with_int_arg(t, n):
    return t * n, t + n, (t * n).dtype

@probe(xu8, 10, args2=(xu8, 100))
def uint8_tensor_with_int_arg_wraps(t, n):
    return t + n, t * n, (t + n).dtype

@probe(x, 0.5, args2=(x, 1.5))
def float_arg_to_full_and_tensor(x, f):
    return torch.full((2,), f), torch.tensor(f), torch.tensor([f, 1.0]), torch.full((2,), f).dtype

@probe(x, 3, args2=(x, 4))
def int_arg_to_full_and_tensor(x, n):
    return torch.full((2,), n), torch.tensor(n), torch.tensor([n, 1]), torch.full((2,), n).dtype, torch.arange(n).dtype

@probe(xi, 2, args2=(xi, 3))
def int_tensor_pow_int_arg(t, n):
    return t ** n, torch.pow(t, n), n ** 2, 2 ** n

@probe(x, 2 ** 40, args2=(x, 2 ** 41))
def large_int_arg(x, n):
    return x * (n // 2 ** 39), torch.tensor(n), n % 7

@probe(x, -3, args2=(x, -5))
def negative_int_arg_floor_div_mod(x, n):
    return x * (n // 2), n % 2, divmod(n, 4), x * abs(n)

@probe(x, 0.1, args2=(x, 0.2))
def float_arg_python_math_precision(x, f):
    s = f + 0.2
    return x * s, s == 0.30000000000000004, repr(s), math.floor(f * 10), round(f * 3, 3)

@probe(x, 1e-8, args2=(x, 1e-9))
def tiny_float_arg_eps(x, eps):
    return x / (x.abs() + eps), eps * 1e8

@probe(x, float("inf"), args2=(x, 1e30))
def inf_float_arg_clamp(x, hi):
    return x.clamp(max=hi), math.isinf(hi)

@probe(x, 2, args2=(x, 3))
def int_arg_true_division_and_types(x, n):
    return x * (n / 2), type(n / 2).__name__, x.sum() / n, (x / n).dtype

@probe(xi, 2, args2=(xi, 3))
def int_tensor_true_div_int_arg(t, n):
    return t / n, (t / n).dtype, torch.div(t, n, rounding_mode="floor"), torch.div(t, n, rounding_mode="trunc")

@probe(x, 2.0, args2=(x, 3.0))
def float_arg_is_integer_branch(x, f):
    if f.is_integer() and int(f) % 2 == 0:
        return x * f
    return x - f

@probe(x, True, args2=(x, False))
def bool_arg_arithmetic(x, b):
    return x * b, b + 1, int(b), x + (1 if b else 0)

@probe(xi, 1.0, args2=(xi, 2.0))
def int_tensor_where_float_arg(t, f):
    return torch.where(t > 0, t, f), torch.where(t > 0, t, f).dtype

@probe(xi, 3, args2=(xi, 4))
def int_tensor_clamp_int_arg(t, n):
    return t.clamp(max=n), t.clamp(min=-n).dtype

@probe(xi, 0.5, args2=(xi, 2.5))
def int_tensor_clamp_float_arg(t, f):
    return t.clamp(max=f), t.clamp(max=f).dtype

@probe(xi, 2, args2=(xi, 3))
def int_tensor_add_alpha_int_arg(t, n):
    return torch.add(t, t, alpha=n), t.mul(n).sub(n)

@probe(x, 0.5, args2=(x, 0.25))
def float_arg_in_lerp_and_addcmul(x, w):
    return torch.lerp(x, x.flip(0), w), torch.addcmul(x, x, x, value=w)

@probe(x, 3, args2=(x, 4))
def int_arg_as_dim_size_topk(x, k):
    return x.flatten().topk(k).values, x.flatten()[:k].sum()

@probe(x)
def list_iterator_after_append(x):
    l = [x, x * 2]
    it = iter(l)
    l.append(x * 3)
    return sum(it)

@probe(x)
def list_iterator_after_pop(x):
    l = [x, x * 2, x * 3]
    it = iter(l)
    next(it)
    l.pop(0)
    return list(it)

@probe(x)
def enumerate_over_list_mutated_in_loop(x):
    l = [1, 2, 3]
    out = []
    for i, v in enumerate(l):
        if i == 0:
            l.append(4)
        out.append(v)
    return x * sum(out), out

@probe(x)
def dict_items_view_after_update(x):
    d = {"a": x}
    it = d.items()
    d["b"] = x + 1
    return [k for k, _ in it], len(it)

@probe(x)
def map_over_list_mutated_before_consume(x):
    l = [1, 2]
    m = map(lambda v: v * 10, l)
    l.append(3)
    return x * sum(m)

@probe(x)
def worklist_for_loop_appends_to_its_list(x):
    queue = [3]
    seen = []
    for n in queue:
        seen.append(n)
        if n > 0:
            queue.append(n - 1)
    return x * len(seen), seen
