"""The Triton target on a GPU: the inductor op sweep and the Triton target's own cases again, on
CUDA tensors (compiled cubins launched from C++ through the driver API), plus what only a GPU
shows: no Python call per launch, torch's current stream, misaligned inputs, CUDA graphs.
Skipped without CUDA; CI has no GPU, the GPU machine runs it (bench/gpu_machine.sh tests)."""
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import cdynamo  # noqa: E402
import test_inductor_sweep as sweep  # noqa: E402
from cdynamo.utils import counters  # noqa: E402
from test_inductor_sweep import *  # noqa: E402,F401,F403
from test_triton_target import (  # noqa: E402,F401
    test_looped_row_reductions, test_narrow_integers_wrap_like_eager, test_nan_wins_arg_and_value_reductions_like_eager,
    test_reductions_over_an_outer_dimension, test_transposed_and_catted_layouts)

_cpu_check = sweep.check


def cuda_check(fn, *inputs, **kwargs):
    moved = [t.cuda() if isinstance(t, torch.Tensor) else t for t in inputs]
    return _cpu_check(fn, *moved, **kwargs)


@pytest.fixture(autouse=True)
def on_cuda(monkeypatch):
    monkeypatch.setattr(sweep, "check", cuda_check)
    import test_triton_target

    monkeypatch.setattr(test_triton_target, "check", cuda_check)
    # fp32 exactly as eager computes it: no TF32 in matmuls for these comparisons.
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    with cdynamo.config.patch(suppress_errors=False):
        yield


def test_cuda_graphs_run_on_the_triton_target():
    x = torch.randn(64, 128, device="cuda")
    fn = lambda x: torch.softmax(x * 2, -1).sum(1)  # noqa: E731
    compiled = cdynamo.optimize("inductor")(fn)
    assert torch.allclose(compiled(x), fn(x), atol=1e-5)
    assert counters["inductor_targets"]["triton (cuda)"] == 1


def test_misaligned_inputs_get_the_unaligned_variant():
    base = torch.randn(1 + 4096, device="cuda")
    fn = cdynamo.optimize("inductor")(lambda x: x.sin() * 2)
    aligned = base[:4096].clone()
    assert torch.allclose(fn(aligned), aligned.sin() * 2)
    odd = base[1:]  # 4 bytes past a 16-byte boundary
    assert torch.allclose(fn(odd), odd.sin() * 2)


def test_kernels_launch_on_the_current_stream():
    x = torch.randn(1 << 20, device="cuda")
    fn = cdynamo.optimize("inductor")(lambda x: (x.sin() + 1).relu())
    fn(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = fn(x)
    stream.synchronize()
    assert torch.allclose(y, (x.sin() + 1).relu())


def test_reduce_overhead_mode_replays_the_compiled_program():
    x = torch.randn(8, 256, device="cuda")
    fn = lambda x: F.layer_norm(x, (256,)).relu()  # noqa: E731
    compiled = cdynamo.compile(fn, mode="reduce-overhead")
    for _ in range(4):
        out = compiled(x)
    assert torch.allclose(out, fn(x), atol=1e-5)
    assert counters["cudagraphs"]["replays"] >= 1


def test_the_triton_path_passes_its_self_check_here():
    from cdynamo.inductor import triton_selfcheck

    assert triton_selfcheck.failure_reason(torch.cuda.current_device()) is None


@torch.no_grad()
def test_cuda_convolutions_run_channels_last_and_return_eager_strides(monkeypatch):
    from cdynamo.inductor import compile_fx, layout

    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # both layouts' fp32 exactly

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 16, 3, padding=1)).cuda().eval()
    x = torch.randn(4, 3, 20, 20, device="cuda")
    gm = compile_fx.aten_graph(torch.fx.symbolic_trace(model), [x])
    assert layout.prefer_channels_last(gm)
    convolutions = [n for n in gm.graph.nodes if "convolution" in str(n.target)]
    assert all(n.meta["val"].is_contiguous(memory_format=torch.channels_last) for n in convolutions)
    out, expected = cdynamo.optimize("inductor")(model)(x), model(x)
    assert out.stride() == expected.stride()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)


def test_a_passed_self_check_is_remembered_across_processes(tmp_path):
    from cdynamo.inductor import triton_selfcheck

    check_uncached = triton_selfcheck.failure_reason.__wrapped__
    with cdynamo.config.patch(cache_dir=str(tmp_path)):
        assert check_uncached(torch.cuda.current_device()) is None
        assert counters["inductor"]["triton_selfcheck_remembered"] == 0
        assert check_uncached(torch.cuda.current_device()) is None
    assert counters["inductor"]["triton_selfcheck_remembered"] == 1


def test_a_device_failing_its_self_check_runs_graphs_as_captured(tmp_path, monkeypatch):
    from cdynamo.inductor import triton_selfcheck

    monkeypatch.setattr(triton_selfcheck, "probe_failure", lambda device: "output 0 differs from eager")
    triton_selfcheck.failure_reason.cache_clear()
    x = torch.randn(64, device="cuda")
    fn = lambda x: (x.sin() + 1).relu()  # noqa: E731
    try:
        with cdynamo.config.patch(cache_dir=str(tmp_path)):
            out = cdynamo.optimize("inductor")(fn)(x)
    finally:
        triton_selfcheck.failure_reason.cache_clear()
    torch.testing.assert_close(out, fn(x))
    reasons = [k for k in counters["inductor"] if k.startswith("eager_fallback: ")]
    assert reasons == ["eager_fallback: tensors on cuda:0, where the Triton target failed its self-check "
                       "(output 0 differs from eager)"]


def test_training_graphs_compile_both_halves_to_triton():
    w = torch.randn(8, 8, device="cuda", requires_grad=True)
    x = torch.randn(4, 8, device="cuda")
    fn = lambda x: (x @ w).relu().pow(2).sum()
    fn(x).backward()
    expected, w.grad = w.grad, None
    with cdynamo.config.patch(compiled_training=True):
        cdynamo.optimize("inductor")(fn)(x).backward()
    torch.testing.assert_close(w.grad, expected)
    assert counters["inductor"]["training_graphs"] == 1 and counters["inductor"]["autograd_fallback"] == 0
    assert counters["inductor_targets"]["triton (cuda)"] == 1
