# python scalars that become symbolic on later calls (automatic dynamic / unspec): do they still behave like int/float?
import torch, math
from common import x, xr
import common
P = []
probe = common.collector(P)

x6 = torch.randn(6, 3)

@probe(x, 2, args2=(x, 3))
def sym_int_type_name(x, n):
    return x * n, type(n).__name__, type(n) is int

@probe(x, 2, args2=(x, 3))
def sym_int_isinstance(x, n):
    return x * n, isinstance(n, int), isinstance(n, (float, int))

@probe(x, 2, args2=(x, 3))
def sym_int_str_format(x, n):
    return x * n, str(n), f"n={n}", "%d" % n, "{:03d}".format(n)

@probe(x, 0.5, args2=(x, 1.5))
def sym_float_type_isinstance(x, f):
    return x * f, type(f).__name__, isinstance(f, float)

@probe(x, 0.5, args2=(x, 1.5))
def sym_float_str(x, f):
    return x * f, str(f), f"{f:.2f}", repr(f)

@probe(x, 0.5, args2=(x, 1.5))
def sym_float_methods(x, f):
    return x * f, f.is_integer(), round(f, 1), int(f), math.floor(f), math.isfinite(f)

@probe(x, 2, args2=(x, 5))
def sym_int_methods(x, n):
    return x * n, n.bit_length(), n // 2, n % 2 == 0, -n, abs(-n), divmod(n, 2), float(n)

@probe(x, 2, args2=(x, 5))
def sym_int_as_container_ops(x, n):
    return x * n, [0] * n, list(range(n)), {n: "v"}, (n in (2, 5)), max(n, 3), min(n, 3)

@probe(x, 2, args2=(x, 5))
def sym_int_as_dict_key_lookup(x, n):
    d = {2: "two", 5: "five"}
    return x * n, d[n], d.get(n)

@probe(x, 2, args2=(x, 5))
def sym_int_branching(x, n):
    if n > 3:
        return x + 1, "big"
    return x - 1, "small"

@probe(x, args2=(x6,))
def sym_shape_type_and_str(x):
    n = x.shape[0]
    return x * 2, type(n).__name__, isinstance(n, int), str(n), f"{x.shape}", str(tuple(x.shape))

@probe(x, args2=(x6,))
def sym_shape_list_and_range(x):
    n = x.shape[0]
    return [i for i in range(n)], [1] * n, x.new_zeros(n), n % 2

@probe(x, args2=(x6,))
def sym_shape_in_python_math(x):
    n = x.shape[0]
    return x * math.sqrt(n), math.ceil(n / 4), math.log2(n), n ** 2, 1 / n

@probe(x, args2=(x6,))
def sym_shape_as_dict_key(x):
    d = {4: "four", 6: "six"}
    return x.sum(), d[x.shape[0]]

@probe(x, args2=(x6,))
def sym_shape_compare_to_tuple(x):
    return x.sum(), x.shape == (4, 3), tuple(x.shape) == (6, 3), list(x.shape)

@probe(x, args2=(x6,))
def sym_shape_hash_and_set(x):
    s = {x.shape[0], 4}
    return x.sum(), len(s)

@probe(x, args2=(x6,))
def sym_shape_json_like_dict(x):
    return {"rows": x.shape[0], "cols": x.shape[1], "numel": x.numel()}

@probe(x, args2=(x6,))
def sym_shape_bool_and_int_conv(x):
    n = x.shape[0]
    return x.sum(), bool(n), int(n), float(n), n == 6, n != 4

@probe(x, args2=(x6,))
def sym_size_numel_to_torch_full(x):
    return torch.full((x.shape[0],), float(x.shape[0])), torch.tensor(x.shape[0]), torch.tensor([x.shape[0], 1])

@probe(x, args2=(x6,))
def sym_shape_format_spec(x):
    return x.sum(), f"{x.shape[0]:04d}", "%s" % x.shape[0], "{}".format(x.size(0)), str(x.size())
