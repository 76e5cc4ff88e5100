"""Padding of CUDA matmuls whose leading dimensions break cuBLAS's 16-byte alignment: GPT-2's
LM head (N = 50257 columns) runs an align-1 kernel at a third of the speed of an aligned one.

Assumes the functional aten graph of compile_fx.aten_graph with fake tensors in node.meta["val"].
mm/addmm/bmm get zero-padded operands and a wider result, read back through a slice; values
returned from the graph keep eager's strides (layout.restore_returned_layouts)."""
import math

import torch

from . import layout

aten = torch.ops.aten
_MATMULS = (aten.mm.default, aten.addmm.default, aten.bmm.default)
_DEVICES = ("cuda",)  # where cuBLAS runs them (tests add "cpu" to run the rewrite on the CPU)
_ALIGN_BYTES = 16  # cuBLAS's vectorised kernels need every leading dimension on 16 bytes

# A rough cost model, measured on the H200 (bench/README.md): an unaligned matmul takes about
# 2.5x its aligned time; a padding copy moves bytes at about 3 TB/s and costs a launch.
_UNALIGNED_SLOWDOWN = 1.5  # extra time over the aligned kernel, in units of its time
_MATMUL_FLOPS = {torch.float32: 4e14, torch.float16: 8e14, torch.bfloat16: 8e14}
_COPY_BYTES_PER_S = 3e12
_LAUNCH_S = 4e-6


def _padded(size, align):
    return -(-size // align) * align


def _operands(node):
    """(bias or None, a, b) of a matmul node."""
    if node.target is aten.addmm.default:
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return None
        return node.args[0], node.args[1], node.args[2]
    return None, node.args[0], node.args[1]


def _plan(node):
    """(pad_k, pad_n) for a matmul worth padding, else None."""
    if node.op != "call_function" or node.target not in _MATMULS:
        return None
    operands = _operands(node)
    if operands is None:
        return None
    a, b, out = (layout.meta_value(n) for n in (operands[1], operands[2], node))
    if not all(isinstance(t, torch.Tensor) for t in (a, b, out)) or out.device.type not in _DEVICES:
        return None
    if out.dtype not in _MATMUL_FLOPS or a.dtype != out.dtype or b.dtype != out.dtype:
        return None
    align = _ALIGN_BYTES // out.element_size()
    k, n = a.shape[-1], b.shape[-1]
    if not isinstance(k, int) or not isinstance(n, int):
        return None  # a symbolic K or N: no padding serves every size
    # Symbolic sizes elsewhere (the rows of a symbolic graph) are costed at their traced values.
    m, shape = layout.hint(a.shape[-2]), layout.hinted(out.shape)
    pad_k, pad_n = _padded(k, align) - k, _padded(n, align) - n
    if (pad_k == 0 and pad_n == 0) or 0 in (m, k, n):
        return None
    batch = math.prod(shape[:-2])
    copied = layout.hint(b.numel()) // (k * n) * (k + pad_k) * (n + pad_n)  # elements the padding copies write
    copied += batch * m * (k + pad_k) if pad_k else 0
    dense_copy = pad_n and any(_needs_dense(user, shape, pad_n) for user in node.users)
    copied += math.prod(shape) if dense_copy else 0
    extra_s = _UNALIGNED_SLOWDOWN * 2 * batch * m * n * k / _MATMUL_FLOPS[out.dtype]
    cost_s = 2 * copied * out.element_size() / _COPY_BYTES_PER_S + _LAUNCH_S * (1 + bool(pad_k) + bool(dense_copy))
    return (pad_k, pad_n) if extra_s > cost_s else None


def _narrowed_probe(shape, pad_n):
    """A meta tensor laid out as the slice of the wider result."""
    return torch.empty((*shape[:-1], shape[-1] + pad_n), device="meta")[..., : shape[-1]]


def _needs_dense(user, shape, pad_n):
    """Whether a reader of the result needs it dense: the graph's output (eager's strides are
    restored by a copy), or a view the slice's strides cannot take."""
    if user.op == "output":
        return True
    if user.target not in layout.VIEWS:
        return False
    if any(u.op == "output" for u in user.users):
        return True
    try:
        _narrowed_probe(shape, pad_n).view(layout.hinted(user.args[1]))
    except (RuntimeError, ValueError):
        return True
    return False


def _rewrite(graph, node, pad_k, pad_n):
    bias, a, b = _operands(node)
    shape = layout.meta_value(node).shape
    with graph.inserting_before(node):
        if pad_k:
            a = graph.call_function(aten.constant_pad_nd.default, (a, [0, pad_k], 0.0))
        b = _padded_operand(graph, b, pad_k, pad_n)
        if pad_n and bias is not None and layout.meta_value(bias).dim() >= 1 and layout.meta_value(bias).shape[-1] == shape[-1]:
            bias = graph.call_function(aten.constant_pad_nd.default, (bias, [0, pad_n], 0.0))
    node.args = (bias, a, b) if node.target is aten.addmm.default else (a, b)
    if not pad_n:
        return
    with graph.inserting_after(node):
        narrowed = graph.call_function(aten.slice.Tensor, (node, -1, 0, shape[-1]))
    # A view the slice's strides cannot take gets its contiguous copy from layout.repropagate.
    node.replace_all_uses_with(narrowed, delete_user_cb=lambda user: user is not narrowed)


def _padded_operand(graph, b, pad_k, pad_n):
    """b [..., K, N] zero-padded to [..., K + pad_k, N + pad_n], in b's own order: a transposed
    weight (linear's, K-major) is padded as the weight and transposed back, so cuBLAS keeps
    its transposed-operand kernel (faster on the H200 than reading a re-laid-out copy)."""
    value = layout.meta_value(b)
    if value.dim() == 2 and value.stride(0) == 1 and value.stride(1) == value.shape[0]:
        weight = graph.call_function(aten.permute.default, (b, [1, 0]))
        padded = graph.call_function(aten.constant_pad_nd.default, (weight, [0, pad_k, 0, pad_n], 0.0))
        return graph.call_function(aten.permute.default, (padded, [1, 0]))
    return graph.call_function(aten.constant_pad_nd.default, (b, [0, pad_n, 0, pad_k], 0.0))


def pad_misaligned_matmuls(gm):
    """Rewrites gm in place where padding a CUDA matmul pays for itself; returns whether it changed."""
    plans = [(node, plan) for node in gm.graph.nodes if (plan := _plan(node)) is not None]
    fake_mode = layout.fake_mode_of(gm)
    if not plans or fake_mode is None:
        return False
    eager_layouts = layout.returned_layouts(gm)
    for node, (pad_k, pad_n) in plans:
        _rewrite(gm.graph, node, pad_k, pad_n)
    layout.repropagate(gm, fake_mode)
    layout.restore_returned_layouts(gm, fake_mode, eager_layouts)
    gm.graph.lint()
    gm.recompile()
    return True
