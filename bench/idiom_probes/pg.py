# tensor methods & attributes, torch functions with python scalars, in-place/input mutation
import torch, math, functools, operator, torch.nn as nn, torch.nn.functional as F
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def size_negative_dims(x):
    return x.reshape(x.size(-1), -1) * x.size()[-2] + len(x.shape[-2:])

@probe(x)
def new_methods(x):
    return x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2,), 3.0), x.new_empty(4).shape, x.new_tensor([1, 2]), x.new_zeros(x.shape[1:])

@probe(x)
def torch_size_ops_more(x):
    s = x.shape
    t = s + (5,)
    return x.new_zeros(t).shape, s[1:], list(s), s == (4, 3), s.index(3), s.count(4), torch.Size([2, 3]).numel(), isinstance(s[0], int)

@probe(x)
def contiguous_branch(x):
    y = x.t()
    if not y.is_contiguous():
        y = y.contiguous()
    return y, y.is_contiguous(), y.stride()

@probe(x)
def dtype_predicates(x):
    i = x.long()
    return (x.is_floating_point(), i.is_floating_point(), torch.is_tensor(x), torch.is_floating_point(x),
            x.dtype.is_floating_point, i.dtype.is_signed, x.is_complex(), torch.is_complex(x))

@probe(x)
def dtype_conversions(x):
    return x.to(torch.float64), x.double().dtype, x.to(dtype=x.dtype), x.half().float(), x.to(x), x.int().dtype, x.type(torch.float64)

@probe(x)
def dtype_membership_branch(x):
    if x.dtype in (torch.float16, torch.bfloat16):
        return x.float()
    elif x.dtype == torch.float32:
        return x * 2
    return x

@probe(x)
def finfo_iinfo(x):
    return x.clamp(min=torch.finfo(x.dtype).min, max=torch.finfo(x.dtype).max) + torch.finfo(x.dtype).eps + torch.iinfo(torch.int8).max

@probe(x)
def element_size_stride_offset(x):
    y = x[1:]
    return x * (y.element_size() + y.storage_offset() + y.stride(0) + x.itemsize + x.nbytes)

@probe(x)
def ndim_T_mT(x):
    return x.T * x.ndim + x.mT.sum() + x.unsqueeze(0).mT.shape[-1]

@probe(x)
def tensor_type_string(x):
    return x.type(), x * len(x.type())

@probe(x)
def item_into_python(x):
    v = x.sum().item()
    return x * v

@probe(x)
def tolist(x):
    return x.tolist()

@probe(x)
def advanced_indexing(x):
    return x[None, ..., 1], x[[0, 2]], x[:, None, :].shape, x[..., None].shape, x[torch.tensor([1, 3]), 0], x[1:3, [0, 2]]

@probe(x)
def bool_mask_index(x):
    return x[x > 0]

@probe(x)
def setitem_on_clone(x):
    y = x.clone()
    y[1:3] = 0.5
    y[:, 0] += 1
    y[y < -1] = -1
    y[..., -1] = torch.arange(4.0)
    return y

@probe(x)
def input_inplace_add(x):
    x.add_(1)
    return x * 2

@probe(x)
def input_setitem(x):
    x[0] = 0
    x[:, -1].mul_(3)
    return x.sum()

@probe(x)
def input_copy_return_none(x):
    x.copy_(torch.ones_like(x))

@probe(x)
def returns_input_itself(x):
    return x

@probe(x)
def returns_view_of_input(x):
    return x[1:], x.view(-1), x.t()

@probe(x)
def inplace_on_view_of_input(x):
    x[0].mul_(2)
    v = x.view(12)
    v[5] = 100.0
    return v.sum()

@probe(x, torch.zeros(4, 3))
def out_kwarg(x, o):
    torch.add(x, 1, out=o)
    return o * 2

@probe(x)
def tensor_constructors(x):
    return torch.tensor([1, 2, 3]) + 0, torch.tensor(x.shape), torch.as_tensor([1.0, 2.0]), torch.tensor(3.5) * x, torch.tensor([[1, 2]], dtype=torch.float64)

@probe(x)
def creation_from_shape(x):
    return torch.arange(x.shape[0]), torch.full_like(x, 7), torch.zeros(x.shape), torch.ones(*x.shape, dtype=torch.int32), torch.empty_like(x).shape, torch.zeros_like(x, dtype=torch.bool)

@probe(x)
def python_scalar_ops(x):
    return x + 2.5, 3 - x, 2 ** x, x ** 2, x // 2, x % 3, torch.add(x, 1, alpha=2), -x, +x, abs(x), 1 / (x.abs() + 1)

@probe(x)
def int_tensor_division_modes(x):
    i = (x * 10).long()
    return torch.div(i, 3, rounding_mode="floor"), torch.div(i, 3, rounding_mode="trunc"), i / 3, i // 3, i % 3

@probe(x)
def bool_tensor_ops(x):
    a, b = x > 0, x < 0.5
    return a & b, a | b, ~a, a ^ b, a.any(), a.all(dim=1), a.sum(), a.float().mean()

@probe(x)
def comparisons_return_tensors(x):
    return x == x, x != 0, x >= 0, torch.eq(x, x).all(), torch.equal(x, x)

@probe(x)
def data_dependent_if(x):
    if x.sum() > 0:
        return x + 1
    return x - 1

@probe(x)
def loop_range_len(x):
    out = []
    for i in range(len(x)):
        out.append(x[i] * i)
    return torch.stack(out)

@probe(x)
def view_star_shape(x):
    y = x.unsqueeze(0).unsqueeze(0)
    return y.view(-1, *y.shape[2:]), y.permute(*reversed(range(y.dim()))).shape, x.flatten(0).unflatten(0, (2, 6)).shape

@probe(x)
def prod_of_shape(x):
    return x.reshape(math.prod(x.shape)), x.reshape(functools.reduce(operator.mul, x.shape, 1)).shape, x.numel() // x.shape[0]

@probe(x)
def sum_dims_keepdim(x):
    return x.sum(dim=(0, 1), keepdim=True), x.mean(-1, keepdim=True), x.amax(dim=0), x.var(0, unbiased=False), x.std(correction=0)

@probe(x)
def topk_sort_unpack(x):
    v, i = torch.topk(x, 2, dim=1)
    s = torch.sort(x, descending=True, dim=0)
    return v, i, s.values, s.indices, x.max(dim=1).indices

@probe(x)
def broadcast_shapes_expand(x):
    s = torch.broadcast_shapes(x.shape, (1, 3))
    return x.expand(*s) + x.expand_as(x), x.repeat(*[2, 1]).shape, s

@probe(x)
def cat_with_generator_stack_neg(x):
    return torch.cat(list(t for t in x.chunk(2)), dim=-1), torch.stack([x, x], dim=-1).shape

@probe(x)
def masked_fill_inf(x):
    mask = torch.ones(4, 3).triu().bool()
    return F.softmax(x.masked_fill(mask, float("-inf")), dim=-1).nan_to_num(0.0), x.clamp(max=math.inf)

@probe(x)
def softmax_dtype_kwarg(x):
    return F.softmax(x, dim=-1, dtype=torch.float64), F.log_softmax(x, 1)

@probe(x)
def pad_interpolate(x):
    y = F.pad(x, tuple([1, 1]), value=0.5)
    z = F.interpolate(x.unsqueeze(0), scale_factor=2.0, mode="linear", align_corners=False)
    return y, z

@probe(x)
def requires_grad_on_intermediate(x):
    y = x.clone().detach().requires_grad_(True)
    return y * 2

@probe(xr)
def requires_grad_queries(x):
    y = x * 2
    return y.requires_grad, y.grad_fn is not None, x.grad is None, x.is_leaf

@probe(x)
def index_select_tril_diag(x):
    return x.index_select(1, torch.tensor([0, 2])), torch.tril(x, diagonal=-1), torch.triu(x, 1), torch.diagonal(x), x.diag()

@probe(x)
def linalg_cdist(x):
    return torch.linalg.norm(x, dim=-1), torch.cdist(x, x), torch.linalg.vector_norm(x, ord=1)

@probe(x)
def where_with_python_scalars(x):
    return torch.where(x > 0, x, 0.0), torch.where(x > 0, 1.0, -1.0), x.where(x > 0, torch.zeros_like(x))

@probe(x)
def scalar_tensor_arith(x):
    s = torch.tensor(2.0)
    return x * s + float(3), s.dim(), s.shape

@probe(x)
def clone_memory_format_and_layout(x):
    y = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    return y.is_contiguous(memory_format=torch.channels_last), x.layout == torch.strided

@probe(x)
def tensor_iteration_enumerate(x):
    out = x.new_zeros(3)
    for i, row in enumerate(x):
        out = out + row * i
    return out

@probe(x)
def split_sizes_list(x):
    a, b, c = x.split([1, 1, 2])
    d = torch.tensor_split(x, 3, dim=1)
    return a, b, c, d

@probe(x)
def einsum_builtin_string(x):
    eq = ",".join(["ij"] * 2) + "->i"
    return torch.einsum(eq, x, x)

@probe(x)
def fill_and_zero_inplace_chain(x):
    y = torch.empty(4, 3).fill_(2.0)
    z = x.clone().zero_()
    return y, z, x.clone().fill_diagonal_(5.0)

@probe(x)
def scatter_index_add(x):
    idx = torch.tensor([0, 1, 0, 1])
    return torch.zeros(2, 3).index_add(0, idx, x), torch.zeros(2, 3).scatter_reduce(0, idx.unsqueeze(1).expand(4, 3), x, "amax", include_self=False)

@probe(x)
def torch_functions_keyword_scalars(x):
    return torch.clamp(x, min=-0.5, max=0.5), torch.full((2, 2), fill_value=3), torch.linspace(0, 1, steps=5), torch.pow(x, exponent=2), torch.lerp(x, x * 2, 0.5)

@probe(x)
def tensor_dunder_methods(x):
    return x.__add__(1), x.__rsub__(1), x.__getitem__(0), x.__len__(), x.__matmul__(x.t()), x.__neg__()

@probe(x)
def torch_get_default_dtype(x):
    return x.to(torch.get_default_dtype()) * (x.dtype == torch.get_default_dtype())

@probe(x)
def complex_tensor_ops(x):
    c = torch.complex(x, x * 2)
    return c.real, c.imag, c.abs(), torch.view_as_real(c).shape

@probe(x)
def unique_and_nonzero(x):
    return torch.nonzero(x > 0)

@probe(x)
def type_as_and_to_other(x):
    i = torch.tensor([1, 2, 3])
    return i.type_as(x), x.to(i.dtype), i.to(x)

@probe(x)
def narrow_select_movedim(x):
    return x.narrow(0, 1, 2), x.select(1, 0), x.unsqueeze(0).movedim(0, -1).shape, x.roll(1, 0), x.flip(-1)

@probe(x)
def tensor_bool_of_numel_one_data(x):
    t = torch.tensor([True])
    return x * (1 if t else 2)

@probe(x)
def shape_int_math_in_torch_call(x):
    b, d = x.shape
    h = d // 3
    return x.view(b, h, d // h).transpose(1, 2).reshape(b, -1) * math.sqrt(d) / (b * h)

@probe(x)
def nn_functional_misc(x):
    return F.gelu(x, approximate="tanh"), F.normalize(x, dim=-1), F.one_hot(torch.tensor([0, 2]), num_classes=3), F.cross_entropy(x, torch.tensor([0, 1, 2, 0]))

@probe(x)
def tensor_hash_id_as_dict_key(x):
    d = {x: 1}
    y = x + 0
    d[y] = 2
    return x * d[x] + len(d)
