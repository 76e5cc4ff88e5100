"""The C++ generator's indirect loads (gather, index, embedding) and "full" pointwise nodes of
reduction kernels (layer norm in one kernel): hand-built programs, then whole ops through
cdynamo.optimize("inductor") against eager (floats vs an fp64 reference, integers exact)."""
import glob
import os

import pytest
import torch
import torch.nn.functional as F

import cdynamo
from cdynamo import config
from cdynamo._C import _testing as T
from cpp_support import (
    C,
    L,
    assert_close_to_reference,
    buffer,
    kernel_cache_dir,  # noqa: F401  (autouse fixture)
    like,
    op,
    run,
)
from helpers import aten_graph

f32, i64 = torch.float32, torch.int64


def wrapped(position, size):
    """The lowering's negative-position wrap: p < 0 ? p + size : p."""
    neg = op("Lt", "Bool", position, C(0, i64))
    return op("Where", i64, neg, op("Add", i64, position, C(size, i64)), position)


def kernel(ranges, nodes, reduction_ranges=()):
    return {"kernel": "kernel0", "ranges": list(ranges), "reduction_ranges": list(reduction_ranges), "nodes": nodes}


# ---- indirect loads, hand-built ------------------------------------------------------------------


def gather_program(x, idx, out_dtype=f32):
    """out[i0, i1] = x[i0, idx[i0, i1]] (torch.gather along dim 1)."""
    n, k = idx.shape
    c = x.shape[1]
    pos = wrapped(L("idx", f"i0*{k} + i1", i64), c)
    body = ("Load", "Float32", "x", f"i0*{c} + ind0", [(pos, c)])
    return {"buffers": [like("x", x), like("idx", idx), buffer("out", [n, k], "output", out_dtype)],
            "outputs": ["out"], "steps": [kernel([n, k], [{"pointwise": "out", "body": body}])]}


@pytest.mark.parametrize("k", [3, 8, 37, 100])  # scalar only, one vector, vectors + tail
def test_gather_lanes_load_each_their_own_position(k):
    x, idx = torch.randn(5, 50), torch.randint(-50, 50, (5, k))
    prog = gather_program(x, idx)
    src = T.generate_cpp(prog)["kernel0"]
    assert "cd_index_checked" in src
    (out,) = run(prog, x, idx)
    assert torch.equal(out, torch.gather(x, 1, idx % 50))


def embedding_program(w, idx):
    """out[i0, i1] = w[idx[i0], i1]: the position is the same for every lane of a row."""
    n, d = idx.shape[0], w.shape[1]
    pos = wrapped(L("idx", "i0", i64), w.shape[0])
    body = ("Load", "Float32", "w", f"i1 + {d}*ind0", [(pos, w.shape[0])])
    return {"buffers": [like("w", w), like("idx", idx), buffer("out", [n, d], "output")],
            "outputs": ["out"], "steps": [kernel([n, d], [{"pointwise": "out", "body": body}])]}


def test_uniform_positions_give_contiguous_vector_loads():
    w, idx = torch.randn(30, 67), torch.tensor([0, 29, -1, 5, 5, -30])
    prog = embedding_program(w, idx)
    src = T.generate_cpp(prog)["kernel0"]
    assert "vectorized along the innermost loop" in src
    assert "cd_vload<cd_vf32>(b0 + " in src  # the row is read as vectors, not lane by lane
    (out,) = run(prog, w, idx)
    assert torch.equal(out, F.embedding(idx % 30, w))


def test_two_positions_and_integer_data():
    """out[i0, i1] = x[a[i0], b[i1]] (x[a[:, None], b] with int32 data): two ind variables."""
    x = torch.randint(-1000, 1000, (9, 11), dtype=torch.int32)
    a, b = torch.tensor([8, 0, -1, 3]), torch.arange(-11, 11)
    body = ("Load", "Int32", "x", "11*ind0 + ind1", [(wrapped(L("a", "i0", i64), 9), 9), (wrapped(L("b", "i1", i64), 11), 11)])
    prog = {"buffers": [like("x", x), like("a", a), like("b", b), buffer("out", [4, 22], "output", torch.int32)],
            "outputs": ["out"], "steps": [kernel([4, 22], [{"pointwise": "out", "body": body}])]}
    (out,) = run(prog, x, a, b)
    assert torch.equal(out, x[a[:, None], b])


@pytest.mark.parametrize("k", [3, 40])
def test_out_of_range_positions_raise_index_error_and_read_nothing_outside(k):
    x, idx = torch.randn(4, 50), torch.randint(0, 50, (4, k))
    idx[2, k - 1] = 1 << 40  # far outside the storage: a read there would crash
    with pytest.raises(IndexError, match="out of bounds"):
        run(gather_program(x, idx), x, idx)
    idx[2, k - 1] = 50
    with pytest.raises(IndexError):
        run(gather_program(x, idx), x, idx)
    idx[2, k - 1] = 49  # the same program is fine again: the error does not stick
    (out,) = run(gather_program(x, idx), x, idx)
    assert torch.equal(out, torch.gather(x, 1, idx))


@pytest.mark.parametrize("k", [3, 40])
def test_masked_indirect_loads_skip_masked_off_lanes(k):
    """out = idx >= 0 ? x[i0, idx] : -1.0, with idx = -7 (out of range) where masked off."""
    x, idx = torch.randn(4, 50), torch.randint(0, 50, (4, k))
    idx[:, ::3] = -7
    p = L("idx", f"i0*{k} + i1", i64)
    mask = op("Ge", "Bool", p, C(0, i64))
    body = ("MaskedLoad", "Float32", "x", "i0*50 + ind0", mask, C(-1.0), [(p, 50)])
    prog = {"buffers": [like("x", x), like("idx", idx), buffer("out", [4, k], "output")],
            "outputs": ["out"], "steps": [kernel([4, k], [{"pointwise": "out", "body": body}])]}
    (out,) = run(prog, x, idx)
    assert torch.equal(out, torch.where(idx >= 0, torch.gather(x, 1, idx.clamp(min=0)), -1.0))


def test_indirect_load_inside_a_reduction():
    """s[i0] = sum over r0 of x[i0, idx[i0, r0]] (a gather feeding a row sum)."""
    x, idx = torch.randn(6, 40), torch.randint(0, 40, (6, 33))
    body = ("Load", "Float32", "x", "i0*40 + ind0", [(L("idx", "i0*33 + r0", i64), 40)])
    prog = {"buffers": [like("x", x), like("idx", idx), buffer("s", [6], "output")], "outputs": ["s"],
            "steps": [kernel([6], [{"reduction": "s", "type": "Sum", "body": body}], [33])]}
    (s,) = run(prog, x, idx)
    assert_close_to_reference(s, torch.gather(x.double(), 1, idx).sum(1), f32)


# ---- full pointwise nodes, hand-built -------------------------------------------------------------


def row_normalize_program(n, r, out_strides=None):
    """mean[i0] = sum(x[i0, :]) / r; out[i0, r0] = x[i0, r0] - mean[i0] (one kernel)."""
    x = L("x", f"i0*{r} + r0")
    s = L("s", "i0")
    centred = op("Sub", f32, L("x", f"i0*{r} + i1"), op("Div", f32, s, C(float(r))))
    return {"buffers": [buffer("x", [n, r], "input"), buffer("s", [n]), buffer("out", [n, r], "output", f32, out_strides)],
            "outputs": ["out"],
            "steps": [kernel([n], [{"reduction": "s", "type": "Sum", "body": x},
                                   {"pointwise": "out", "body": centred, "full": True}], [r])]}


@pytest.mark.parametrize("n,r", [(3, 5), (7, 16), (5, 1000), (1, 37)])
def test_full_pointwise_after_a_reduction_vectorizes_along_r(n, r):
    x = torch.randn(n, r)
    prog = row_normalize_program(n, r)
    src = T.generate_cpp(prog)["kernel0"]
    if r >= 8:
        assert "vectorized along the innermost reduction loop" in src
        assert "cd_vstore(b" in src  # the full node stores vectors
    assert "b2[" not in src  # the row sum (a local after x and out) stays in a register
    (out,) = run(prog, x)
    assert_close_to_reference(out, x.double() - x.double().mean(1, keepdim=True), f32)


def test_full_pointwise_with_a_transposed_output():
    n, r = 6, 40
    x = torch.randn(n, r)
    (out,) = run(row_normalize_program(n, r, out_strides=[1, n]), x)
    assert out.stride() == (1, n)
    assert_close_to_reference(out, x.double() - x.double().mean(1, keepdim=True), f32)


def test_softmax_over_an_outer_dim_vectorizes_across_the_kept_dim():
    """softmax(x, 0) of a contiguous [R, N]: kernel ranges [N], reduction [R]; the full node's
    lanes are N consecutive columns."""
    r, n = 30, 77
    x = torch.randn(r, n) * 5
    xr = L("x", f"i1*{n} + i0")  # as a full node: i1 is r0
    xm = L("x", f"r0*{n} + i0")
    m, se = L("m", "i0"), L("se", "i0")
    prog = {"buffers": [buffer("x", [r, n], "input"), buffer("m", [n]), buffer("se", [n]),
                        buffer("out", [n, r], "output", f32, [1, n])],
            "outputs": ["out"],
            "steps": [kernel([n], [{"reduction": "m", "type": "Max", "body": xm},
                                   {"reduction": "se", "type": "Sum", "body": op("Exp", f32, op("Sub", f32, xm, m))},
                                   {"pointwise": "out", "body": op("Div", f32, op("Exp", f32, op("Sub", f32, xr, m)), se),
                                    "full": True}], [r])]}
    src = T.generate_cpp(prog)["kernel0"]
    assert "vectorized along the innermost loop" in src
    (out,) = run(prog, x)
    assert_close_to_reference(out.t(), torch.softmax(x.double(), 0), f32)


def test_softmax_of_one_long_vector_runs_every_loop_in_parallel():
    n = 300_001  # no i loops: the reductions and the full node split their r loop into chunks
    x = torch.randn(n) * 3
    xr, m, se = L("x", "r0"), L("m", "0"), L("se", "0")
    prog = {"buffers": [buffer("x", [n], "input"), buffer("m", []), buffer("se", []), buffer("out", [n], "output")],
            "outputs": ["out"],
            "steps": [kernel([], [{"reduction": "m", "type": "Max", "body": xr},
                                  {"reduction": "se", "type": "Sum", "body": op("Exp", f32, op("Sub", f32, xr, m))},
                                  {"pointwise": "out", "body": op("Div", f32, op("Exp", f32, op("Sub", f32, L("x", "i0"), m)), se),
                                   "full": True}], [n])]}
    src = T.generate_cpp(prog)["kernel0"]
    assert src.count("omp parallel for") == 3
    (out,) = run(prog, x)
    assert_close_to_reference(out, torch.softmax(x.double(), 0), f32, rtol=1e-5, atol=1e-9)


def test_full_locals_stay_in_registers_within_a_run_and_go_to_memory_across_loops():
    """y = 2x (full, local); t = y + 1 (full, local, read by the next node of the same loop);
    s = sum(y) (a reduction: y must be in memory); out = t / s (full, after the reduction)."""
    n, r = 4, 50
    x = torch.randn(n, r).abs() + 0.1
    xi = L("x", f"i0*{r} + i1")
    y, t = L("y", f"i0*{r} + i1"), L("t", f"i0*{r} + i1")
    prog = {"buffers": [buffer("x", [n, r], "input"), buffer("y", [n, r]), buffer("t", [n, r]), buffer("s", [n]),
                        buffer("out", [n, r], "output")],
            "outputs": ["out"],
            "steps": [kernel([n], [{"pointwise": "y", "body": op("Mul", f32, xi, C(2.0)), "full": True},
                                   {"pointwise": "t", "body": op("Add", f32, y, C(1.0)), "full": True},
                                   {"reduction": "s", "type": "Sum", "body": L("y", f"i0*{r} + r0")},
                                   {"pointwise": "out", "body": op("Div", f32, t, L("s", "i0")), "full": True}], [r])]}
    src = T.generate_cpp(prog)["kernel0"]
    # ABI order: x (input), out (output), then locals y, t, s: y is stored, s stays in a register.
    assert "b2 + " in src or "b2[" in src
    assert "b4[" not in src
    (out,) = run(prog, x)
    xd = x.double()
    assert_close_to_reference(out, (2 * xd + 1) / (2 * xd).sum(1, keepdim=True), f32)


def test_full_pointwise_over_two_reduction_dims():
    """A group-norm-like kernel: ranges [N, G], reduction [C/G, HW]."""
    n, g, cg, hw = 2, 3, 4, 25
    x = torch.randn(n, g * cg, hw)
    xr = L("x", f"i0*{g * cg * hw} + i1*{cg * hw} + r0*{hw} + r1")
    xf = L("x", f"i0*{g * cg * hw} + i1*{cg * hw} + i2*{hw} + i3")
    mean = op("Div", f32, L("s", "i0*3 + i1"), C(float(cg * hw)))
    prog = {"buffers": [like("x", x), buffer("s", [n, g]), buffer("out", [n, g, cg, hw], "output")],
            "outputs": ["out"],
            "steps": [kernel([n, g], [{"reduction": "s", "type": "Sum", "body": xr},
                                      {"pointwise": "out", "body": op("Sub", f32, xf, mean), "full": True}], [cg, hw])]}
    (out,) = run(prog, x)
    xd = x.double().reshape(n, g, cg, hw)
    assert_close_to_reference(out, xd - xd.mean((2, 3), keepdim=True), f32)


# ---- end to end through the inductor backend ------------------------------------------------------


@pytest.fixture
def fresh_cache(tmp_path):
    cdynamo.reset()
    with config.patch(cache_dir=str(tmp_path), async_compile=False, suppress_errors=False):
        yield tmp_path
    cdynamo.reset()


def compiled_kernels(cache):
    return len(glob.glob(os.path.join(str(cache), "kernels", "*", "*", "kernel.cpp")))


def check_float(fn, *args, kernels=None, cache=None, rtol=None, atol=None):
    out = cdynamo.optimize("inductor")(fn)(*args)
    ref = fn(*[a.double() if a.is_floating_point() else a for a in args])
    assert_close_to_reference(out, ref, args[0].dtype, rtol=rtol, atol=atol)
    if kernels is not None:
        assert compiled_kernels(cache) == kernels


def test_layer_norm_end_to_end_is_one_kernel(fresh_cache):
    x, w, b = torch.randn(33, 1000), torch.randn(1000), torch.randn(1000)
    check_float(lambda x, w, b: F.layer_norm(x, (1000,), w, b), x, w, b, kernels=1, cache=fresh_cache, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_and_log_softmax_end_to_end(fresh_cache, dim):
    x = torch.randn(37, 203) * 4
    # Over the last dim one kernel; over dim 0 the scheduler keeps the reductions apart (for now).
    check_float(lambda x: torch.softmax(x, dim), x, kernels=1 if dim == -1 else None, cache=fresh_cache, rtol=1e-5, atol=1e-7)
    check_float(lambda x: torch.log_softmax(x, dim), x, rtol=1e-5, atol=1e-5)


def test_group_norm_end_to_end(fresh_cache):
    x, w, b = torch.randn(3, 12, 7, 9), torch.randn(12), torch.randn(12)
    check_float(lambda x, w, b: F.group_norm(x, 4, w, b), x, w, b, rtol=1e-5, atol=1e-5)


def test_embedding_gather_index_select_and_advanced_indexing_end_to_end(fresh_cache):
    w = torch.randn(50, 64)
    i = torch.tensor([[0, 49, -1], [7, 7, -50]])
    x = torch.randn(50, 60)  # i holds -50..49: in range for both dims, like eager needs
    g = torch.randint(-60, 60, (50, 40))
    cases = [
        (lambda w, i: F.embedding(i % 50, w) * 2, (w, i)),
        (lambda x, g: torch.gather(x, 1, g % 60) + 1, (x, g)),
        (lambda x, i: torch.index_select(x, 0, i.flatten() % 20), (x, i)),
        (lambda x, i: torch.index_select(x, 1, i.flatten() % 60), (x, i)),  # eager rejects negatives here
        (lambda x, i: x[i], (x, i)),
        (lambda x, i: x[i, i], (x, i)),
        (lambda x, i: x[:, i.flatten()], (x, i)),
    ]
    for fn, args in cases:
        out = cdynamo.optimize("inductor")(fn)(*args)
        ref = fn(*[a.double() if a.is_floating_point() else a for a in args])
        assert_close_to_reference(out, ref, f32)
    ints = torch.randint(-100, 100, (50, 3))
    out = cdynamo.optimize("inductor")(lambda t, i: t[i] * 3)(ints, i)
    assert torch.equal(out, ints[i] * 3)


def test_out_of_range_index_raises_index_error_end_to_end(fresh_cache):
    x = torch.randn(10, 16)
    f = cdynamo.optimize("inductor")(lambda x, i: F.embedding(i, x) + 1)
    assert torch.equal(f(x, torch.tensor([9, 0])), F.embedding(torch.tensor([9, 0]), x) + 1)
    with pytest.raises(IndexError):
        f(x, torch.tensor([10, 0]))
    with pytest.raises(IndexError):
        f(x, torch.tensor([-11, 0]))


def test_kernel_counts_with_both_features_on():
    x = torch.randn(4, 8)
    counts = {
        "layer_norm": (lambda x: F.layer_norm(x, (8,)), 1),
        "softmax": (lambda x: x.softmax(-1), 1),
        "log_softmax": (lambda x: x.log_softmax(-1), 1),
        "embedding": (lambda x: F.embedding(torch.tensor([3, 0]), x), 1),
    }
    for name, (fn, kernels) in counts.items():
        s = T.schedule_summary(aten_graph(fn, x))
        assert (s["kernels"], s["externs"]) == (kernels, 0), name
