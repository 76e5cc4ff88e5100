# Tests of the Triton build service: sm90 cubins and their launch metadata, the caches, the worker
# pool, build errors, the interpreter path. Assumes triton is installed (else skipped); a GPU only for the launch test.
"""The Triton build service (cdynamo.inductor.triton_build).

The compiles target sm90 and need no GPU (Triton bundles ptxas). On a machine with CUDA one more test
launches the cubins through the driver API exactly as the metadata says, with ctypes, the way the
C++ launcher will. Subprocess tests use the same cache folder to see the cache across processes.
"""
import ctypes
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

if importlib.util.find_spec("triton") is None:  # find_spec: importing triton here would hide the warm-path check
    pytest.skip("triton is not installed", allow_module_level=True)

import torch

from cdynamo import config, utils
from cdynamo.inductor import triton_build as tb

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(config.__file__)))

POINTWISE = f"""import triton
import triton.language as tl
{tb.LIBDEVICE_IMPORT}


@triton.jit
def fused_tanh_mul(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, libdevice.tanh(x) * y + SCALE * x, mask=mask)
"""

REDUCTION = """import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))
"""

POINTWISE_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
REDUCTION_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "stride": "i64", "BLOCK": "constexpr"}


def pointwise(scale=1.0, source=POINTWISE, **options):
    """A pointwise kernel; scale is baked into the source, so each scale is another kernel."""
    return tb.KernelDesc(
        source=source.replace("SCALE", repr(float(scale))),
        name="fused_tanh_mul",
        signature=POINTWISE_SIGNATURE,
        constexprs={"BLOCK": 1024},
        attrs=tb.divisibility_attrs(["x_ptr", "y_ptr", "out_ptr"]),
        options=options,
    )


def reduction(**options):
    return tb.KernelDesc(REDUCTION, "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024}, options=options)


# Kernels build in this process only when it does not interpret (then everything goes to the
# workers): `make test` runs this file once more with TRITON_INTERPRET=0 for these tests.
compiles_in_process = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="this process interprets: builds go to workers")


def inductor_counters():
    return utils.counters["inductor"]


@pytest.fixture(scope="module", autouse=True)
def private_triton_cache(tmp_path_factory):
    """Triton's own cache in a private folder (workers inherit it); the pool stopped at the end."""
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-own-cache"))
    yield
    tb.shutdown_pool()
    if saved is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = saved


@pytest.fixture(autouse=True)
def cache_dir(tmp_path):
    tb.clear_memory_cache()
    inductor_counters().clear()
    with config.patch(cache_dir=str(tmp_path)):
        yield str(tmp_path)


def run_python(code, **env):
    """Run code in a fresh interpreter that sees this checkout; its stdout's last line as JSON."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR, os.environ.get("PYTHONPATH", "")]), **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environment, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Compiling and metadata.


def test_pointwise_kernel_compiles_to_an_sm90_cubin_with_launch_metadata(cache_dir):
    built = tb.build(pointwise())
    assert built.cubin.startswith(b"\x7fELF")
    assert built.symbol == "fused_tanh_mul" and built.name == "fused_tanh_mul"
    assert built.target == tb.Target("cuda", 90, 32)
    assert (built.num_warps, built.num_ctas, built.cluster_dims, built.threads_per_block) == (4, 1, (1, 1, 1), 128)
    assert built.shared_bytes == 0 and built.global_scratch_bytes == 0 and built.profile_scratch_bytes == 0
    assert not built.launch_pdl and not built.launch_cooperative_grid
    # The constexpr BLOCK is no parameter; Triton's two scratch pointers come last.
    assert built.arg_names == ("x_ptr", "y_ptr", "out_ptr", "n")
    assert built.params == (
        ("x_ptr", "*fp32"),
        ("y_ptr", "*fp32"),
        ("out_ptr", "*fp32"),
        ("n", "i32"),
        ("<global_scratch>", "*i8"),
        ("<profile_scratch>", "*i8"),
    )
    assert built.implicit_params == ("<global_scratch>", "<profile_scratch>")
    assert built.entry_dir.startswith(os.path.join(cache_dir, "triton", built.key[:2], built.key))
    with open(built.cubin_path, "rb") as f:
        assert f.read() == built.cubin
    with open(built.source_path) as f:
        assert tb.LIBDEVICE_IMPORT in f.read()
    assert inductor_counters()["triton_compiled"] == 1


def test_reduction_kernel_uses_shared_memory_and_its_options():
    built = tb.build(reduction(num_warps=8))
    assert built.num_warps == 8 and built.threads_per_block == 256
    assert built.shared_bytes > 0  # the partial sums of the 8 warps meet in shared memory
    assert built.arg_names == ("x_ptr", "out_ptr", "n_cols", "stride")
    assert [kind for _, kind in built.params] == ["*fp32", "*fp32", "i32", "i64", "*i8", "*i8"]


def test_keys_follow_every_input_and_descriptions_are_checked():
    assert pointwise().key == pointwise(num_warps=4, enable_fp_fusion=False).key  # the defaults
    keys = {pointwise().key, pointwise(num_warps=8).key, pointwise(scale=2.0).key, pointwise(enable_fp_fusion=True).key}
    assert len(keys) == 4
    as_int, as_bool = (tb.KernelDesc(REDUCTION, "row_sum", REDUCTION_SIGNATURE, {"BLOCK": v}) for v in (1, True))
    assert as_int.key != as_bool.key
    assert pointwise() == pointwise() and hash(pointwise()) == hash(pointwise())
    with pytest.raises(ValueError, match="must be exactly the parameters typed 'constexpr'"):
        tb.KernelDesc(REDUCTION, "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024, "n_cols": 5})
    with pytest.raises(ValueError, match="unknown attrs .* options \\['num_warp'\\]"):
        tb.KernelDesc(REDUCTION, "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024}, options={"num_warp": 8})
    with pytest.raises(ValueError, match="unsupported type"):
        tb.KernelDesc(REDUCTION, "row_sum", dict(REDUCTION_SIGNATURE, stride="int"), {"BLOCK": 1024})


# ---------------------------------------------------------------------------------------------
# Caches.


def test_second_build_hits_memory_then_disk_and_a_new_process_compiles_nothing(cache_dir):
    desc = pointwise()
    first = tb.build(desc)
    assert tb.build(pointwise()) is first and inductor_counters()["triton_memory_hits"] == 1
    tb.clear_memory_cache()
    again = tb.build(pointwise())
    assert again == first and inductor_counters()["triton_disk_hits"] == 1
    assert inductor_counters()["triton_compiled"] == 1

    # A new process: disk hits without importing Triton or starting workers, well under 1 ms.
    seen = run_python(
        f"""
        import json, sys, time
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from cdynamo import config, utils
        from cdynamo.inductor import triton_build as tb
        from test_triton_build import pointwise
        config.cache_dir = {cache_dir!r}
        start = time.perf_counter()
        built = tb.build(pointwise())
        first = time.perf_counter() - start
        descs = [pointwise() for _ in range(200)]
        start = time.perf_counter()
        for desc in descs:
            tb.clear_memory_cache()
            tb.build(desc)
        disk = (time.perf_counter() - start) / len(descs)
        start = time.perf_counter()
        for desc in descs:
            tb.build(desc)
        memory = (time.perf_counter() - start) / len(descs)
        print(json.dumps({{"key": built.key, "first": first, "disk": disk, "memory": memory,
                          "triton": "triton" in sys.modules, "pool": tb.pool_started(),
                          "counters": dict(utils.counters["inductor"])}}))
        """
    )
    assert seen["key"] == first.key
    assert seen["counters"].get("triton_compiled", 0) == 0 and seen["counters"]["triton_disk_hits"] == 201
    assert not seen["triton"] and not seen["pool"]
    assert seen["disk"] < 1e-3 and seen["memory"] < 1e-4, seen


@compiles_in_process
def test_unfinished_or_corrupt_entries_are_rebuilt(cache_dir):
    built = tb.build(pointwise())
    with open(built.cubin_path, "r+b") as f:
        f.write(b"\0\0\0\0")
    tb.clear_memory_cache()
    rebuilt = tb.build(pointwise())
    assert rebuilt.cubin == built.cubin
    assert inductor_counters()["triton_cache_invalid"] == 1 and inductor_counters()["triton_compiled"] == 2
    os.remove(os.path.join(built.entry_dir, "meta.json"))  # as a build killed before its last rename
    tb.clear_memory_cache()
    tb.build(pointwise())
    assert inductor_counters()["triton_compiled"] == 3


def test_an_unusable_entry_is_counted_once_with_the_pool_running(cache_dir):
    built = tb.build(pointwise(scale=7.0))
    tb.build_many([pointwise(scale=8.0), pointwise(scale=9.0)])  # starts the pool
    with open(built.cubin_path, "r+b") as f:
        f.write(b"\0\0\0\0")
    tb.clear_memory_cache()
    assert tb.build(pointwise(scale=7.0)).cubin == built.cubin
    assert tb.pool_started() and inductor_counters()["triton_cache_invalid"] == 1


# ---------------------------------------------------------------------------------------------
# The pool.


def test_build_many_compiles_in_parallel_in_order_and_identical_kernels_once():
    descs = [pointwise(scale=s) for s in (1.0, 2.0, 3.0)] + [reduction()] + [pointwise(scale=2.0), reduction()]
    built = tb.build_many(descs)
    assert [b.key for b in built] == [d.key for d in descs]
    assert built[1] is built[4] and built[3] is built[5]
    assert inductor_counters()["triton_compiled"] == 4
    assert tb.pool_started()
    assert tb.build_many(descs) == built and inductor_counters()["triton_compiled"] == 4


def test_submit_is_asynchronous_and_shares_a_build_in_flight():
    first, second = tb.submit(pointwise(scale=5.0)), tb.submit(pointwise(scale=5.0))
    assert first is second
    built = first.result(timeout=120)
    assert built.symbol == "fused_tanh_mul" and inductor_counters()["triton_compiled"] == 1
    # submit leaves the work to the workers, and they never load the CUDA driver.
    assert inductor_counters()["triton_compiled_in_workers"] == 1
    assert inductor_counters()["triton_worker_loaded_cuda"] == 0
    assert tb.submit(pointwise(scale=5.0)).result() is built


@compiles_in_process
def test_a_large_pool_builds_every_kernel_in_its_workers(monkeypatch):
    # The waiting thread would import Triton's code generator to build one kernel of many.
    tb.shutdown_pool()
    monkeypatch.setenv("CDYNAMO_TRITON_WORKERS", str(tb.pool_module.HELPED_BELOW))
    try:
        tb.build_many([pointwise(scale=s) for s in (21.0, 22.0, 23.0, 24.0, 25.0)])
    finally:
        tb.shutdown_pool()
    assert inductor_counters()["triton_compiled"] == 5
    assert inductor_counters()["triton_compiled_in_workers"] == 5


# ---------------------------------------------------------------------------------------------
# Errors.


def assert_names_kernel_and_source(error, name, *quoted):
    message = str(error.value)
    assert f"kernel {name!r}" in message and error.value.kernel_name == name
    assert error.value.source_path in message and os.path.isfile(error.value.source_path)
    for text in quoted:
        assert text in message, message


def test_type_error_names_the_kernel_quotes_triton_and_keeps_the_source():
    bad = tb.KernelDesc(REDUCTION.replace("tl.sum(x, axis=0)", "tl.load(n_cols)"), "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024})
    with pytest.raises(tb.TritonBuildError) as error:
        tb.build(bad)
    assert_names_kernel_and_source(error, "row_sum", "CompilationError", "tl.load(n_cols)")
    with open(error.value.source_path) as f:
        assert f.read() == bad.source
    assert inductor_counters()["triton_compile_errors"] == 1


def test_syntax_error_and_signature_mismatch_are_reported():
    broken = tb.KernelDesc(REDUCTION.replace("cols = tl.arange", "cols = = tl.arange"), "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024})
    with pytest.raises(tb.TritonBuildError) as error:
        tb.build(broken)
    assert_names_kernel_and_source(error, "row_sum", "SyntaxError", "line 8")
    swapped = dict(x_ptr="*fp32", out_ptr="*fp32", stride="i64", n_cols="i32", BLOCK="constexpr")
    with pytest.raises(tb.TritonBuildError) as error:
        tb.build(tb.KernelDesc(REDUCTION, "row_sum", swapped, {"BLOCK": 1024}))
    assert_names_kernel_and_source(error, "row_sum", "the function's parameters are")


def test_errors_from_workers_reach_the_caller_and_good_kernels_still_build():
    bad = tb.KernelDesc(REDUCTION.replace("tl.sum(x, axis=0)", "tl.load(n_cols)"), "row_sum", REDUCTION_SIGNATURE, {"BLOCK": 1024})
    with pytest.raises(tb.TritonBuildError) as error:
        tb.build_many([pointwise(scale=7.0), bad, pointwise(scale=8.0)])
    assert_names_kernel_and_source(error, "row_sum", "CompilationError")
    assert tb.build_many([pointwise(scale=7.0), pointwise(scale=8.0)])  # both were built anyway


def test_a_worker_that_dies_or_hangs_fails_its_kernel_and_is_replaced(monkeypatch):
    dies = pointwise(source="import os\nos._exit(3)\n" + POINTWISE)
    with pytest.raises(tb.TritonBuildError) as error:
        tb.submit(dies).result(timeout=120)
    assert_names_kernel_and_source(error, "fused_tanh_mul", "died, exit code 3")

    monkeypatch.setattr(tb.pool_module, "compile_timeout_s", 1.0)
    hangs = pointwise(source="import time\ntime.sleep(60)\n" + POINTWISE)
    start = time.monotonic()
    with pytest.raises(tb.TritonBuildError) as error:
        tb.submit(hangs).result(timeout=120)
    assert time.monotonic() - start < 30
    assert_names_kernel_and_source(error, "fused_tanh_mul", "no result after 1 s")
    monkeypatch.undo()
    assert tb.submit(pointwise(scale=9.0)).result(timeout=120).cubin  # new workers took over


@compiles_in_process
def test_without_workers_kernels_build_in_this_process(monkeypatch, capfd):
    tb.shutdown_pool()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    try:
        tb.start_pool()
        deadline = time.monotonic() + 30
        while tb._pool.live_dispatchers and time.monotonic() < deadline:
            time.sleep(0.01)
        built = tb.build_many([pointwise(scale=11.0), pointwise(scale=12.0)])
    finally:
        tb.shutdown_pool()
    assert [b.cubin[:4] for b in built] == [b"\x7fELF"] * 2
    assert inductor_counters()["triton_compiled"] == 2 and inductor_counters()["triton_compiled_in_workers"] == 0
    assert "no Triton build worker could start" in capfd.readouterr().err


# ---------------------------------------------------------------------------------------------
# The interpreter and targets.


def test_interpreter_runs_kernels_on_cpu_tensors(cache_dir):
    seen = run_python(
        f"""
        import json, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import torch
        from cdynamo import config, utils
        from cdynamo.inductor import triton_build as tb
        from test_triton_build import pointwise, reduction
        config.cache_dir = {cache_dir!r}
        x, y = torch.randn(3000), torch.randn(3000)
        out = torch.empty(3000)
        desc = pointwise()  # libdevice.tanh: NumPy's under the interpreter
        fn = tb.load_interpreted(desc)
        tb.launch_interpreted(fn, (3,), (x, y, out, 3000), desc.constexpr_values)
        pointwise_error = (out - (torch.tanh(x) * y + x)).abs().max().item()
        rows = torch.randn(5, 700)
        sums = torch.empty(5)
        tb.launch_interpreted(tb.load_interpreted(reduction()), (5,), (rows, sums, 700, 700), {{"BLOCK": 1024}})
        reduction_error = (sums - rows.sum(1)).abs().max().item()
        # Cubins still build: in workers, where @triton.jit is not the interpreter's.
        cubin = tb.build(reduction(num_warps=2)).cubin
        print(json.dumps({{"pointwise": pointwise_error, "reduction": reduction_error, "file": fn.fn.__code__.co_filename,
                          "elf": cubin.startswith(b"\\x7fELF"), "counters": dict(utils.counters["inductor"])}}))
        """,
        TRITON_INTERPRET="1",
    )
    assert seen["pointwise"] < 1e-5 and seen["reduction"] < 1e-3
    assert seen["elf"] and seen["counters"]["triton_compiled_in_workers"] == 1
    assert seen["file"].startswith(os.path.join(cache_dir, "triton")) and seen["file"].endswith("kernel.py")


def test_load_interpreted_refuses_without_interpreter_mode(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        tb.load_interpreted(pointwise())


def test_target_of_reads_the_device_or_the_override():
    with tb.override_target(tb.Target("cuda", 80, 32)):
        assert tb.target_of(0) == tb.Target("cuda", 80, 32)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            tb.target_of(0)
    else:
        major, minor = torch.cuda.get_device_capability(0)
        assert tb.target_of(0) == tb.Target("cuda", major * 10 + minor, 32)


# ---------------------------------------------------------------------------------------------
# A launch through the driver API, as the C++ launcher will do it (GPU machines only).

_CTYPES_OF = {"i1": ctypes.c_int8, "i32": ctypes.c_int32, "i64": ctypes.c_int64, "fp32": ctypes.c_float}


def launch_with_driver(built, grid, args):
    """Launch built's cubin with cuLaunchKernel: params in built.params order, scratch pointers
    null when their size is 0, gridDim.x times num_ctas, shared_bytes of dynamic shared memory."""
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(result):
        assert result == 0, f"CUDA driver error {result}"

    torch.cuda.synchronize()  # the primary context is current on this thread from here on
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(built.cubin)))
    check(cuda.cuModuleGetFunction(ctypes.byref(function), module, built.symbol.encode()))
    programs = grid[0] * grid[1] * grid[2] * built.num_ctas
    scratch = {
        "<global_scratch>": torch.empty(programs * built.global_scratch_bytes, dtype=torch.uint8, device="cuda"),
        "<profile_scratch>": torch.empty(programs * built.profile_scratch_bytes, dtype=torch.uint8, device="cuda"),
    }
    values = []
    for name, kind in built.params:
        if kind.startswith("*"):
            tensor = args[name] if name in args else scratch[name]
            values.append(ctypes.c_uint64(tensor.data_ptr() if tensor.numel() else 0))
        else:
            values.append(_CTYPES_OF[kind](args[name]))
    params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    stream = torch.cuda.current_stream().cuda_stream
    check(cuda.cuLaunchKernel(function, grid[0] * built.num_ctas, grid[1], grid[2], built.threads_per_block, 1, 1,
                              built.shared_bytes, stream, params, None))
    torch.cuda.synchronize()
    check(cuda.cuModuleUnload(module))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cubins_launch_on_the_gpu_with_the_recorded_metadata():
    with tb.override_target(None):
        target = tb.target_of(0)
    pointwise_kernel, reduction_kernel = tb.build_many(
        [dataclasses.replace(pointwise(), target=target), dataclasses.replace(reduction(num_warps=8), target=target)]
    )
    x, y = torch.randn(3000, device="cuda"), torch.randn(3000, device="cuda")
    out = torch.empty(3000, device="cuda")
    launch_with_driver(pointwise_kernel, (3, 1, 1), {"x_ptr": x, "y_ptr": y, "out_ptr": out, "n": 3000})
    torch.testing.assert_close(out, torch.tanh(x) * y + x)
    rows, sums = torch.randn(5, 700, device="cuda"), torch.empty(5, device="cuda")
    launch_with_driver(reduction_kernel, (5, 1, 1), {"x_ptr": rows, "out_ptr": sums, "n_cols": 700, "stride": 700})
    torch.testing.assert_close(sums, rows.sum(1), rtol=1e-5, atol=1e-4)

