"""A once-per-device check that the Triton target's whole path (code generation, the build
service, the C++ launcher through the CUDA driver) computes what eager computes with this
machine's GPU, driver and Triton, before any user graph relies on it. A failure makes graphs on
that device run as captured (aten's kernels), with the reason: never a crash or a wrong result."""
import copy
import functools
import glob
import hashlib
import os

from .. import utils


def _probe(x, idx, table):
    # One kernel, so that the check compiles quickly (here, while the build workers start): a gather
    # (indirect loads and the error flag), pointwise ops and a persistent row reduction with its
    # epilogue (softmax). The other kernel kinds are the tests' business; this checks the path.
    return ((table[idx] * 2 + x).softmax(-1),)


def probe_failure(device):
    """None when the Triton target computes the probe on `device` (a torch.device: CUDA, or the
    CPU through Triton's interpreter) as eager does, else what went wrong."""
    import torch
    import torch.fx

    from .. import _C
    from .compile_fx import aten_graph

    saved = copy.deepcopy(utils.counters["inductor"])  # the probe's compile is nobody's graph
    try:
        g = torch.Generator().manual_seed(0)
        inputs = [torch.randn(3, 300, generator=g).to(device), torch.tensor([3, 0, 5]).to(device),
                  torch.randn(8, 300, generator=g).to(device)]
        gm = torch.fx.symbolic_trace(_probe)
        compiled = _C._inductor_compile(aten_graph(gm, inputs), gm.forward, False, "triton", device.type)
        got, want = compiled(*inputs), _probe(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        for k, (a, b) in enumerate(zip(got, want)):
            if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-4, atol=1e-5):
                return f"output {k} differs from eager"
    except Exception as error:  # noqa: BLE001 - any failure means: do not use this path here
        message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        return f"{type(error).__name__}: {message}"
    finally:
        utils.counters["inductor"].clear()
        utils.counters["inductor"].update(saved)
    return None


def _loaded_driver():
    """(path, size, mtime) of the CUDA driver library this process loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            path = next((line.split()[-1] for line in maps if "libcuda.so" in line), None)
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (path, stat.st_size, stat.st_mtime_ns)


def _passed_marker(device_index):
    """Where a passed probe is remembered, keyed by all it depends on: the GPU, the driver, torch,
    Triton and this build of cdynamo (its extension and the inductor's Python files). None
    where one of them cannot be told (then the probe runs in every process)."""
    import torch

    from .. import _C
    from .triton_build import _triton_version

    driver = _loaded_driver()
    if driver is None:
        return None
    props = torch.cuda.get_device_properties(device_index)
    ours = [_C.__file__] + sorted(glob.glob(os.path.join(os.path.dirname(__file__), "*.py")))
    files = [(p, os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in ours]
    identity = repr((props.name, props.major, props.minor, str(getattr(props, "uuid", "")), driver,
                     torch.__version__, _triton_version(), files))
    digest = hashlib.sha256(identity.encode()).hexdigest()
    return os.path.join(utils.cache_root(), "triton", "selfcheck", digest)


def _remembered_pass(marker):
    return marker is not None and os.path.exists(marker)


def _remember_pass(marker):
    if marker is None:
        return
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w") as f:
            f.write("passed\n")
    except OSError:  # a read-only cache: the probe runs again next time, nothing worse
        pass


@functools.cache
def failure_reason(device_index):
    """None when the Triton target works on cuda:<device_index>, else why not (user terms). A
    pass is remembered in the cache folder: later processes on the same setup skip the probe."""
    import time

    import torch

    start = time.perf_counter()
    marker = _passed_marker(device_index)
    if _remembered_pass(marker):
        utils.counters["inductor"]["triton_selfcheck_remembered"] += 1
        return None
    from . import triton_build

    triton_build.start_pool()  # the probe's kernel builds in a worker (one is running when a graph compiled first)
    problem = probe_failure(torch.device("cuda", device_index))
    if problem is None:
        _remember_pass(marker)
    utils.add_time("triton_selfcheck", time.perf_counter() - start)
    if problem is None:
        return None
    return f"tensors on cuda:{device_index}, where the Triton target failed its self-check ({problem})"
