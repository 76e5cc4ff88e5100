"""The Triton target without a GPU: the inductor op sweep again with config.cpu_backend = "triton"
(the generated kernels run on CPU tensors in Triton's interpreter), kernel shapes the sweep does
not reach (looped and outer-dimension reductions, NaN in arg reductions, narrow integers,
out-of-range gathers), and the generated source itself."""
import pytest
import torch
import torch.nn.functional as F

import cdynamo
from cdynamo.utils import counters

pytest.importorskip("triton")

from cpp_support import C, L, T, buffer, like, op  # noqa: E402
from test_inductor_sweep import *  # noqa: E402,F401,F403  (the sweep's tests, collected again here)
from test_inductor_sweep import check  # noqa: E402
from test_inductor_models import (  # noqa: E402,F401  (whole models, also on this target)
    test_layernorm_gelu_linear, test_mlp, test_small_cnn_with_batchnorm, test_tiny_gpt, test_torchvision_resnet18,
    test_transformers_gpt2_and_bert)


@pytest.fixture(autouse=True)
def triton_on_cpu():
    with cdynamo.config.patch(cpu_backend="triton", suppress_errors=False):
        yield


# float16 is the GPU's working type; the sweep's own dtype lists leave it out (the C++ target
# converts it in software): the same ops once more in float16 on this target.
@pytest.mark.parametrize("shape_name", ["odd", "wide", "scalar"])
def test_float16_sweep(shape_name):
    import test_inductor_sweep as sweep

    shape = sweep.SHAPES[shape_name]
    f16 = torch.float16
    check(sweep.unary_float_ops, sweep.make(shape, f16))
    check(sweep.unary_positive_ops, sweep.make(shape, f16, positive=True), expect_graphs=2)
    a, b = sweep.make(shape, f16, seed=1), sweep.make(shape, f16, seed=2)
    check(sweep.binary_ops, a, b, expect_graphs=3)
    check(sweep.float_binary_ops, a, b, expect_graphs=4)
    if shape:
        check(sweep.reduction_ops, a, expect_graphs=5)
        check(sweep.float_reduction_ops, a, expect_graphs=6)


def test_graphs_go_to_the_triton_target():
    check(lambda x: (x.sin() + 1).relu(), torch.randn(9, 5))
    assert counters["inductor_targets"]["triton (cpu)"] == 1
    assert counters["inductor"]["triton_kernels"] >= 1


@pytest.mark.parametrize("cols", [10000, 8193])
def test_looped_row_reductions(cols):
    check(lambda x: (x.sum(1), torch.softmax(x, 1), x.argmax(1), x.amax(1), F.layer_norm(x, (cols,))),
          torch.randn(3, cols))


@pytest.mark.parametrize("rows", [300, 2000])
def test_reductions_over_an_outer_dimension(rows):
    check(lambda x: (x.sum(0), x.max(0).values, x.argmin(0), x.mean(0)), torch.randn(rows, 50))


# (1, 65536, 8) over dim 1: few outputs and a long strided range, batch norm's backward over
# channels-last N, H, W; a split per row would read one element per cache line.
@pytest.mark.parametrize("shape,dim", [((4096, 40), 0), ((3, 1024, 70), 1), ((2048, 8), 0), ((1, 65536, 8), 1)])
def test_outer_reductions_over_few_outputs_split_in_two(shape, dim):
    """Few output columns reduced over a long strided range: partial results per chunk of the
    range ([chunks, outputs...]), then their reduction; arg reductions and mean stay whole."""
    from helpers import aten_graph

    fn = lambda x: (x.sum(dim), x.amax(dim), (x > 1).any(dim), x.argmax(dim), x.mean(dim))  # noqa: E731
    x = torch.randn(shape)
    scheduled = T.schedule(aten_graph(fn, x), {"split_long_reductions": True})
    partials = [line for line in scheduled.splitlines() if "_partial: buffer" in line]
    outputs = [s for k, s in enumerate(shape) if k != dim]
    assert len(partials) == 4, scheduled  # sum, amax, any and mean's sum; argmax stays whole
    assert all(f"[{shape[dim] // 256}, {', '.join(map(str, outputs))}]" in line for line in partials), scheduled
    check(fn, x)


def test_a_reduction_over_channels_last_n_h_w_splits_with_chunks_outermost():
    """Batch norm's backward sums over N, H, W of a channels-last tensor: several reduced
    dimensions, strided by the channel count. Chunks outermost keep each load a block of
    consecutive channels (a row split read one element per cache line)."""
    from helpers import aten_graph

    fn = lambda x: (x.sum((0, 2, 3)), (x * x).sum((0, 2, 3)))  # noqa: E731
    x = torch.randn(4, 8, 128, 128).to(memory_format=torch.channels_last)
    scheduled = T.schedule(aten_graph(fn, x), {"split_long_reductions": True})
    partials = [line for line in scheduled.splitlines() if "_partial: buffer" in line]
    assert partials and all("[256, 8]" in line for line in partials), scheduled
    # N, H, W are one flat range in every load: the chunks cut it without a division or modulo
    # per element (a chunk of two rows of W once left `(2*i0 + r0 // 128) % 128` in each load).
    loads = [line for line in scheduled.splitlines() if "load x_1[" in line]
    assert loads and not any("//" in line or "%" in line.split("=", 1)[1].split(":")[0] for line in loads), scheduled
    check(fn, x)


def test_a_symbolic_outer_reduction_splits_by_a_divisor_of_its_range(capfd):
    """A bias gradient's sum over batch x length rows with the length symbolic (8*s rows): the
    chunk count divides the range at every length, so no chunk runs past its end."""
    fn = lambda x: (x.view(-1, 40).sum(0), (x * x).view(-1, 40).amax(0))  # noqa: E731
    compiled = cdynamo.optimize("inductor")(fn)
    with cdynamo.config.patch(debug={"ir"}, graph_cache=False):  # every graph compiles here
        for length in (300, 301, 333, 64):
            x = torch.randn(8, length, 40)
            for got, expected in zip(compiled(x), fn(x)):
                torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)  # another summation order
    assert counters["dynamic"]["symbolic programs"] == 1
    log = capfd.readouterr().err
    symbolic = log[log.rindex("inputs: arg0_1"):]  # the last program compiled: the symbolic one
    partials = [line for line in symbolic.splitlines() if "_partial = reduce" in line]
    assert len(partials) == 2 and all(" [8, 40] over [s" in line for line in partials), symbolic


def test_a_bare_symbolic_range_splits_with_its_last_chunk_masked(capfd):
    """No chunk count divides a bare size symbol at every size: chunks of ceil(s / chunks), the
    positions past s masked out of sums and products (a duplicate for max, min, any, all)."""
    def fn(x):
        return x.sum(0), x.amax(0), x.amin(0), (x > 1.5).any(0), (x > -3).all(0), (1 + x / 64).prod(0)

    compiled = cdynamo.optimize("inductor")(fn)
    with cdynamo.config.patch(debug={"ir"}, graph_cache=False):
        for rows in (1001, 1337, 1500, 769):
            x = torch.randn(rows, 24)
            for got, expected in zip(compiled(x), fn(x)):
                torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)  # another summation order
    assert counters["dynamic"]["symbolic programs"] == 1
    log = capfd.readouterr().err
    symbolic = log[log.rindex("inputs: arg0_1"):]
    partials = [line for line in symbolic.splitlines() if "_partial = reduce" in line]
    assert len(partials) == 6, symbolic  # one per reduction, each split
    assert "min(" in symbolic  # the clamped position


def test_nan_wins_arg_and_value_reductions_like_eager():
    x = torch.randn(4, 7)
    x[1, 3] = float("nan")
    x[2, 0] = float("nan")
    check(lambda x: (x.argmax(1), x.amax(1), x.argmin(0), x.amin(0), torch.maximum(x, x.flip(0))), x)


def test_narrow_integers_wrap_like_eager():
    a = torch.randint(-100, 100, (5, 9), dtype=torch.int8)
    check(lambda a: (a + a, a * a, a // 3, a % 7, a >> 2, a << 3, -a, a.abs(), a.sum(1)), a)


def test_out_of_range_gather_raises_index_error():
    table = torch.randn(10, 4)
    fn = cdynamo.optimize("inductor")(lambda t, i: F.embedding(i, t) * 2)
    assert torch.equal(fn(table, torch.tensor([1, 9])), F.embedding(torch.tensor([1, 9]), table) * 2)
    with pytest.raises(IndexError, match="out of bounds"):
        fn(table, torch.tensor([1, 10]))


def test_transposed_and_catted_layouts():
    check(lambda x: (x.t().contiguous() + 1, torch.cat([x, x * 2], 1).sum(), x[:, ::2] * 3), torch.randn(33, 65))


@pytest.mark.parametrize("fn, shape", [
    (lambda x: x.t().contiguous() * 2, (67, 130)),
    (lambda x: x.permute(0, 2, 3, 1).contiguous() + 1, (2, 20, 9, 33)),
    (lambda x: x.transpose(1, 2).contiguous().sin(), (3, 40, 50)),
    (lambda x: (x + x.t()).relu(), (64, 64)),
])
def test_transposes_run_on_2d_tiles(fn, shape):
    check(fn, torch.randn(shape))


def test_a_transpose_is_one_2d_tiled_kernel():
    prog = {"buffers": [buffer("x", [40, 50], "input"), buffer("y", [50, 40], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k0", "ranges": [50, 40],
                       "nodes": [{"pointwise": "y", "body": L("x", "i1*50 + i0")}]}]}
    kernel = T.generate_triton(prog)["k0"]
    assert "rindex = tl.program_id(1) * RBLOCK + tl.arange(0, RBLOCK)[None, :]" in kernel
    assert "tl.store(p1 + (rindex + (40 * xindex))" in kernel  # columns walk the store contiguously
    assert "tl.load(p0 + (xindex + (50 * rindex))" in kernel  # rows walk the load contiguously


# ---- generated source ------------------------------------------------------------------------

f32 = torch.float32


def pointwise_program():
    return {"buffers": [like("x", torch.randn(7, 13)), buffer("y", [7, 13], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k0", "ranges": [7, 13],
                       "nodes": [{"pointwise": "y", "body": op("Tanh", f32, L("x", "i0*13 + i1"))}]}]}


def row_sum_program(rows, cols):
    return {"buffers": [buffer("x", [rows, cols], "input"), buffer("s", [rows], "output")], "outputs": ["s"],
            "steps": [{"kernel": "k0", "ranges": [rows], "reduction_ranges": [cols],
                       "nodes": [{"reduction": "s", "type": "Sum", "body": L("x", f"i0*{cols} + r0")}]}]}


def test_pointwise_source_is_one_flat_masked_block():
    source = T.generate_triton(pointwise_program())["k0"]
    kernel = source[source.index("def cd_kernel"):]
    assert "def cd_kernel(p0, p1, xnumel, XBLOCK: tl.constexpr):" in kernel
    assert "xmask = xindex < xnumel" in kernel
    # contiguous dims collapse to the flat index: no division or modulo left
    assert "tl.load(p0 + xindex, mask=xmask, other=0)" in kernel
    assert "libdevice.tanh(" in kernel and "tl.store(p1 + xindex" in kernel
    assert "//" not in kernel and "%" not in kernel


def test_short_rows_are_persistent_and_long_rows_loop():
    short = T.generate_triton(row_sum_program(64, 1000))["k0"]
    assert "for roffset" not in short and "tl.sum(" in short and "rindex = tl.arange(0, RBLOCK)[None, :]" in short
    long = T.generate_triton(row_sum_program(4, 100000))["k0"]
    assert "for roffset in range(0, rnumel, RBLOCK):" in long
    assert "tl.full([XBLOCK, RBLOCK], 0.0, tl.float32)" in long  # the accumulator tile


def column_sum_program(rows, cols):
    return {"buffers": [buffer("x", [rows, cols], "input"), buffer("s", [cols], "output")], "outputs": ["s"],
            "steps": [{"kernel": "k0", "ranges": [cols], "reduction_ranges": [rows],
                       "nodes": [{"reduction": "s", "type": "Sum", "body": L("x", f"r0*{cols} + i0")}]}]}


def test_outer_reductions_stream_what_the_l2_cannot_hold():
    # One pass over more than the L2 holds: the loads move through it evict_first; a smaller
    # input may still be in the L2 for the next kernel and loads as usual.
    big = T.generate_triton(column_sum_program(4096, 8192))["k0"]
    small = T.generate_triton(column_sum_program(1024, 8192))["k0"]
    assert "for roffset in range(0, rnumel, RBLOCK):" in big and 'eviction_policy="evict_first"' in big
    assert "for roffset in range(0, rnumel, RBLOCK):" in small and "eviction_policy" not in small
    # a row reduction reads memory in order; nothing to stream
    assert "eviction_policy" not in T.generate_triton(row_sum_program(8192, 4096))["k0"]


def test_sources_name_no_buffer_and_are_shared_by_identical_kernels():
    a = T.generate_triton(pointwise_program())["k0"]
    renamed = pointwise_program()
    renamed["buffers"][0]["name"] = "other_input"
    renamed["steps"][0]["nodes"][0]["body"] = op("Tanh", f32, L("other_input", "i0*13 + i1"))
    assert T.generate_triton(renamed)["k0"] == a


def test_64_bit_indexing_from_2_to_the_31_elements():
    narrow = T.generate_triton(row_sum_program(2, 1000))["k0"]
    assert "to(tl.int64) * XBLOCK" not in narrow
    wide = T.generate_triton(row_sum_program(1 << 16, 1 << 15))["k0"]
    assert "xoffset = tl.program_id(0).to(tl.int64) * XBLOCK" in wide


@pytest.mark.parametrize("text, simplified", [
    ("64*s0*(i0 // 4) + 16*s0*(i0 % 4) + 16*i1 + i2", "(i2 + (16*i0*s0) + (16*i1))"),  # heads merged back
    ("(x // (16*s)) // 4", "(x // (64*s))"),
    ("4*s*s*((x // (s*s)) // 4) + s*s*((x // (s*s)) % 4) + s*((x // s) % s) + x % s", "x"),
    ("32*(x // 32) + x % 32", "x"),
])
def test_reshapes_over_symbolic_sizes_recombine(text, simplified):
    assert T.parse_index(text) == simplified


def test_symbolic_kernels_walk_contiguous_data_by_the_flat_index(monkeypatch):
    """A symbolic length with a transposed operand in the kernel: the contiguous load and the
    store are the flat index itself, with no division by a size (each costs tens of
    instructions on a GPU and hides contiguity from Triton), and a numel that is a multiple of
    16 at every length is declared one."""
    from cdynamo.inductor import triton_runtime

    descriptions = []
    build = triton_runtime.build_kernels
    monkeypatch.setattr(triton_runtime, "build_kernels", lambda ds: descriptions.extend(ds) or build(ds))
    fn = lambda x, y: torch.relu(x) * 2 + y.transpose(1, 2)  # noqa: E731
    compiled = cdynamo.optimize("inductor")(fn)
    with cdynamo.config.patch(graph_cache=False):
        for length in (5, 7, 9, 1):
            x, y = torch.randn(2, length, 32), torch.randn(2, 32, length)
            torch.testing.assert_close(compiled(x, y), fn(x, y))
    symbolic = [d for d in descriptions if d["varying"]]
    assert len(symbolic) == 1, [d["source"] for d in descriptions]
    kernel = symbolic[0]["source"]
    assert "tl.load(p0 + xindex, mask=xmask" in kernel and "tl.store(p2 + xindex," in kernel, kernel
    assert symbolic[0]["multiples_of_16"] == ["xnumel"]


def test_a_transpose_of_symbolic_length_runs_on_2d_tiles(monkeypatch):
    from cdynamo.inductor import triton_runtime

    descriptions = []
    build = triton_runtime.build_kernels
    monkeypatch.setattr(triton_runtime, "build_kernels", lambda ds: descriptions.extend(ds) or build(ds))
    fn = lambda x: (x.transpose(1, 2) * 2).contiguous()  # noqa: E731
    compiled = cdynamo.optimize("inductor")(fn)
    with cdynamo.config.patch(graph_cache=False):
        for length in (40, 41, 17, 3):
            x = torch.randn(2, length, 32)
            got = compiled(x)
            torch.testing.assert_close(got, fn(x))
            assert got.stride() == fn(x).stride()
    symbolic = [d for d in descriptions if d["varying"]]
    assert len(symbolic) == 1 and symbolic[0]["tiled"], [d["source"] for d in descriptions]


# ---- the same kernels compiled for the GPU (sm90 cubins; no GPU needed) ------------------------


@pytest.fixture
def cubins_too():
    from cdynamo.inductor import triton_build, triton_runtime

    triton_runtime.cubin_check_target = triton_build.Target("cuda", 90, 32)
    try:
        yield
    finally:
        triton_runtime.cubin_check_target = None


def test_generated_kernels_compile_for_sm90(cubins_too):
    def fn(x, w, idx, table, h):
        y = F.gelu(F.layer_norm(x, (x.shape[-1],))) @ w
        return (y, torch.softmax(x, -1), x.argmax(1), x.sum(0), F.embedding(idx, table) * 2,
                (h.float() * 2).half(), x[:, ::3].t() + 1, torch.where(x > 0, x, 0.1 * x).amax())

    check(fn, torch.randn(16, 96), torch.randn(96, 8), torch.tensor([[1, 2], [3, 4]]), torch.randn(10, 4),
          torch.randn(7, 9, dtype=torch.float16))
    assert counters["inductor"]["triton_compiled"] + counters["inductor"]["triton_disk_hits"] >= 4


@pytest.mark.parametrize("case", ["looped", "outer", "split", "narrow_ints", "bf16", "transpose"])
def test_more_kernel_kinds_compile_for_sm90(cubins_too, case):
    inputs = {
        "looped": (lambda x: (torch.softmax(x, 1), x.argmax(1), F.layer_norm(x, (10000,))), torch.randn(3, 10000)),
        "outer": (lambda x: (x.sum(0), x.argmin(0), x.amax(0)), torch.randn(3000, 40)),
        "split": (lambda x: (x.sum(), x.amax(), (x > 2).any()), torch.randn(1 << 17)),
        "narrow_ints": (lambda a: (a * a + 3, a // 3, a % 7, a >> 2, a.sum(1)),
                        torch.randint(-100, 100, (5, 9), dtype=torch.int8)),
        "bf16": (lambda x: (F.gelu(x) * 2, torch.softmax(x, -1), x.var(1)), torch.randn(6, 70, dtype=torch.bfloat16)),
        "transpose": (lambda x: x.transpose(1, 2).contiguous() * 2, torch.randn(3, 40, 50)),
    }
    fn, x = inputs[case]
    check(fn, x)


def test_cuda_kernels_get_launch_data_without_a_gpu(monkeypatch):
    """The CUDA half of build_kernels (cubins, symbols, warps, the unaligned variant) on the very
    descriptions an interpreted compile makes, with the GPU's target named instead of read."""
    from cdynamo.inductor import triton_build, triton_runtime

    seen = []
    interpret = triton_runtime.build_kernels
    monkeypatch.setattr(triton_runtime, "build_kernels", lambda descs: seen.extend(descs) or interpret(descs))
    check(lambda x: (torch.softmax(x, 1), x.t() + 1, x.sum()), torch.randn(64, 300))
    assert len(seen) >= 3
    monkeypatch.setattr(triton_build, "target_of", lambda index: triton_build.Target("cuda", 90, 32))
    launches = interpret([dict(desc, device="cuda:0") for desc in seen])
    for desc, launch in zip(seen, launches):
        assert launch["cubin"] and launch["symbol"] and launch["num_warps"] >= 1, desc["name"]
        assert launch["device_index"] == 0 and tuple(launch["config"]) == tuple(desc["config"])
    assert launches[0]["unaligned"]()["cubin"]


def test_compiled_graph_cache_rebuilds_triton_programs(tmp_path):
    fn = lambda x, w: (F.gelu(F.layer_norm(x, (64,))) @ w).softmax(-1)  # noqa: E731
    x, w = torch.randn(8, 64), torch.randn(64, 32)
    with cdynamo.config.patch(cache_dir=str(tmp_path), graph_cache=True):
        first = cdynamo.optimize("inductor")(fn)(x, w)
        assert counters["inductor"]["graph_cache_store"] == 1
        cdynamo.reset()
        second = cdynamo.optimize("inductor")(fn)(x, w)
    assert counters["inductor"]["graph_cache_hit"] == 1
    assert torch.equal(first, second) and torch.allclose(second, fn(x, w), atol=1e-6)
    with cdynamo.config.patch(cache_dir=str(tmp_path), graph_cache=True, cpu_backend="cpp"):
        cdynamo.reset()
        cdynamo.optimize("inductor")(fn)(x, w)  # another target: another entry, not this one
    assert counters["inductor"]["graph_cache_hit"] == 1


def test_async_compile_runs_eagerly_until_the_triton_kernels_are_built():
    fn = lambda x: torch.softmax(x * 3, -1)  # noqa: E731
    x = torch.randn(4, 33)
    with cdynamo.config.patch(async_compile=True):
        compiled = cdynamo.optimize("inductor")(fn)
        assert torch.allclose(compiled(x), fn(x), atol=1e-6)  # eager fallback or compiled: equal either way
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and counters["inductor"]["triton_kernels"] == 0:
            time.sleep(0.05)
        assert torch.allclose(compiled(x), fn(x), atol=1e-6)
    assert counters["inductor"]["triton_kernels"] >= 1


def test_max_autotune_times_each_candidate_once_and_keeps_the_fastest(tmp_path, monkeypatch):
    from cdynamo.inductor import autotune, triton_build, triton_runtime

    seen = []
    real_build = triton_runtime.build_kernels
    monkeypatch.setattr(triton_runtime, "build_kernels", lambda descs: seen.extend(descs) or real_build(descs))
    check(lambda x: (x * 2).sin(), torch.randn(5000))  # a pointwise kernel with several candidates
    descs = [dict(d, device="cuda:0") for d in seen]
    assert len(descs[0]["candidates"]) >= 2
    calls = []

    def fake_timer(desc, info, launch_config):  # the GPU's answer, made up: the last candidate wins
        calls.append(launch_config)
        assert info["cubin"][:4] == b"\x7fELF"
        return 1.0 if launch_config != tuple(desc["candidates"][-1]) else 0.5

    def choose():
        return autotune.choose_configs(descs, lambda d, c: triton_runtime._kernel_desc(d, c, True),
                                       triton_runtime._launch_info, timer=fake_timer)

    with cdynamo.config.patch(cache_dir=str(tmp_path)), triton_build.override_target(triton_build.Target()):
        assert choose()[0] == tuple(descs[0]["candidates"][-1])
        assert len(calls) == len(descs[0]["candidates"]) and counters["inductor"]["autotuned_kernels"] == 1
        assert choose()[0] == tuple(descs[0]["candidates"][-1])  # stored: not timed again
    assert len(calls) == len(descs[0]["candidates"]) and counters["inductor"]["autotune_cache_hits"] == 1


def test_the_gpu_self_check_probe_passes_through_the_interpreter():
    from cdynamo.inductor import triton_selfcheck

    counters["inductor"]["before"] = 1
    assert triton_selfcheck.probe_failure(torch.device("cpu")) is None
    assert dict(counters["inductor"]) == {"before": 1}  # the probe counts as nobody's graph
    from helpers import aten_graph

    g = torch.Generator().manual_seed(0)
    inputs = (torch.randn(3, 300, generator=g), torch.tensor([3, 0, 5]), torch.randn(8, 300, generator=g))
    summary = T.schedule_summary(aten_graph(triton_selfcheck._probe, *inputs))
    assert summary["kernels"] == 1  # one kernel: a cold check compiles alone, with no build pool


@pytest.mark.parametrize("row", [2, 12])
def test_masked_gather_at_a_constant_position(row):
    # mask varies along x, the position does not: the load and the error flag broadcast to the mask
    table = torch.randn(10, 4)
    i64 = torch.int64
    mask = op("Lt", torch.bool, ("Index", "int64", "i0"), C(3, i64))
    gathered = ("MaskedLoad", "float32", "t", "ind0*4 + i1", mask, C(-1.0), [(C(row, i64), 10)])
    prog = {"buffers": [like("t", table), buffer("y", [6, 4], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k0", "ranges": [6, 4], "nodes": [{"pointwise": "y", "body": gathered}]}]}
    if row >= 10:
        with pytest.raises(IndexError):
            T.run_program(prog, [table], None, "triton")
        return
    (y,) = T.run_program(prog, [table], None, "triton")
    expected = torch.full((6, 4), -1.0)
    expected[:3] = table[row]
    assert torch.equal(y, expected)
