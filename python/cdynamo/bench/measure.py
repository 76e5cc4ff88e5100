"""Measurement primitives used inside a worker: timing with device sync (batches of calls between
two synchronizations), error against an fp64 reference, kernel launches counted by the profiler on
CUDA, peak memory (sampled RSS on the CPU, the allocator's peak on CUDA), and casts."""
import copy
import gc
import math
import os
import resource
import statistics
import threading
import time

import torch


def flatten_tensors(value):
    """Every tensor in a (nested) model output: tensors, tuples, lists, dicts and transformers'
    ModelOutput (a dict), in a stable order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for key in value for t in flatten_tensors(value[key])]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten_tensors(item)]
    return []


def max_relative_error(actual, reference):
    """max over output tensors of max|actual - reference| / max|reference|.

    Normalised by the tensor's largest magnitude rather than elementwise: elementwise relative
    error explodes on values near zero, which says nothing about a compiler. Non-float outputs
    must match exactly (error 0 or inf). Raises ValueError if the structures differ."""
    actual, reference = flatten_tensors(actual), flatten_tensors(reference)
    if len(actual) != len(reference):
        raise ValueError(f"{len(actual)} output tensors, the reference has {len(reference)}")
    worst = 0.0
    for got, want in zip(actual, reference):
        if got.shape != want.shape:
            raise ValueError(f"output shape {tuple(got.shape)}, reference {tuple(want.shape)}")
        # Compared where the reference lives: copying a GPU model's fp64 logits to the host
        # would cost more than the comparison.
        got, want = got.detach().to(want.device), want.detach()
        if not want.is_floating_point():
            worst = max(worst, 0.0 if torch.equal(got.to(want.dtype), want) else float("inf"))
            continue
        if want.numel() == 0:
            continue
        got, want = got.double(), want.double()
        scale = want.abs().max().item()
        error = (got - want).abs().max().item()
        if error != error:  # NaN anywhere in the difference
            return float("nan")
        worst = max(worst, error / scale if scale > 0 else error)
    return worst


def cast_floats(value, dtype=None, device=None):
    """`value` (a tensor or nested tuple/list/dict of them) with floating tensors cast to dtype
    and every tensor moved to device; integer inputs (token ids) keep their dtype."""
    if isinstance(value, torch.Tensor):
        target_dtype = dtype if dtype is not None and value.is_floating_point() else value.dtype
        return value.to(device=device or value.device, dtype=target_dtype)
    if isinstance(value, dict):
        return {key: cast_floats(item, dtype, device) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(cast_floats(item, dtype, device) for item in value)
    return value


def call_model(model, inputs):
    """Calls with positional inputs (a tuple) or keyword inputs (a dict)."""
    return model(**inputs) if isinstance(inputs, dict) else model(*inputs)


def loss_of(output):
    """A scalar to backpropagate from: the sum of the means of every floating output."""
    floats = [t for t in flatten_tensors(output) if t.is_floating_point()]
    if not floats:
        raise ValueError("the model has no floating-point output to compute a loss from")
    return sum(t.float().mean() for t in floats)


def train_step(model, inputs):
    """One training step without the optimizer update (so repeated steps compute the same
    thing): forward, loss, backward. Returns the loss and the gradients, for accuracy checks."""
    for parameter in model.parameters():
        parameter.grad = None
    loss = loss_of(call_model(model, inputs))
    loss.backward()
    return [loss.detach()] + [p.grad for p in model.parameters() if p.grad is not None]


def run_step(model, inputs, train):
    if train:
        return train_step(model, inputs)
    with torch.no_grad():
        return call_model(model, inputs)


def fp64_reference(model, inputs, train):
    """Eager result in float64 on a deep copy: the reference every backend (eager included) is
    compared against."""
    reference_model = copy.deepcopy(model).double()
    return run_step(reference_model, cast_floats(inputs, torch.float64), train)


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed_call(fn, device):
    """Seconds one call of fn() takes, device work included; returns (seconds, result)."""
    synchronize(device)
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    return time.perf_counter() - start, result


def batched_timing(fn, device, warmup=3, repeats=7, min_batch_s=0.02, max_timing_s=3.0):
    """Median time of one call of fn() with device work included: after `warmup` calls, each
    repeat times a batch of back-to-back calls between two synchronizations (so launches overlap
    as in a real loop and the sync's own cost is spread over the batch), long enough to last
    min_batch_s. Fewer repeats (never under 3) when they would take over max_timing_s.
    Returns sample_stats of the per-call seconds plus "calls_per_batch" and "repeats"."""
    per_call = 0.0
    for _ in range(max(1, warmup)):
        per_call, _ = timed_call(fn, device)
    calls = max(1, math.ceil(min_batch_s / per_call)) if per_call > 0 else 1000
    if repeats * calls * per_call > max_timing_s:
        repeats = max(3, int(max_timing_s / (calls * per_call)))

    def batch():
        for _ in range(calls):
            fn()

    samples = [timed_call(batch, device)[0] / calls for _ in range(repeats)]
    return {**sample_stats(samples), "calls_per_batch": calls, "repeats": repeats}


def cpu_side_seconds(fn, device, warmup=20, repeats=200):
    """sample_stats of the CPU time one call of fn() takes to return, the GPU's work excluded:
    each call is timed alone and the device is synchronized after the timer stopped, so the
    launch queue never fills and the figure is what the CPU spends issuing the call."""
    for _ in range(warmup):
        fn()
        synchronize(device)
    samples = []
    collecting = gc.isenabled()
    gc.disable()  # a collection inside one timed call would be charged to that call
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            result = fn()
            stop = time.perf_counter()
            del result
            synchronize(device)
            samples.append(stop - start)
    finally:
        if collecting:
            gc.enable()
    return sample_stats(samples)


# Names of the profiler's CPU-side events for one kernel launch: the runtime API (aten, cuBLAS,
# cuDNN) and the driver API (Triton's launchers), and for a replay of a whole CUDA graph.
KERNEL_LAUNCH_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cuLaunchKernel",
    "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
})
GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})


def cuda_kernel_counts(fn):
    """What one call of fn() runs on the GPU, from torch.profiler (CUPTI): {"kernels": kernels that
    ran on the device (memcpy/memset not counted), "launch_calls": kernel launch API calls on the
    CPU, "graph_launches": CUDA graph replays}. Counted, not assumed: a compiler that fused more
    than the source suggests shows fewer kernels, a CUDA graph shows as one replay."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        fn()
        torch.cuda.synchronize()
    counts = {"kernels": 0, "launch_calls": 0, "graph_launches": 0}
    for event in profiler.events():
        if event.device_type == DeviceType.CUDA:
            if not event.name.startswith(("Memcpy", "Memset")):
                counts["kernels"] += 1
        elif event.name in KERNEL_LAUNCH_CALLS:
            counts["launch_calls"] += 1
        elif event.name in GRAPH_LAUNCH_CALLS:
            counts["graph_launches"] += 1
    return counts


def sample_stats(samples):
    """Median and quartiles of a list of per-call times (seconds)."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return {"median": ordered[0], "p25": ordered[0], "p75": ordered[0]}
    quartiles = statistics.quantiles(ordered, n=4, method="inclusive")
    return {"median": statistics.median(ordered), "p25": quartiles[0], "p75": quartiles[2]}


def current_rss_bytes():
    """Resident set size now (Linux /proc); falls back to the max RSS so far elsewhere."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return max_rss_bytes()


def max_rss_bytes():
    """The process's peak RSS so far (getrusage reports KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class PeakMemory:
    """Peak memory of what runs inside `with PeakMemory(device) as peak:`, in bytes above what
    was in use when it began: torch's allocator peak on CUDA; on the CPU the RSS sampled every
    millisecond by a thread (getrusage's max RSS is a high-water mark for the whole process, so
    it cannot tell one backend from the next; tracemalloc does not see tensor memory at all)."""

    def __init__(self, device, interval_s=0.001):
        self.device = device
        self.interval_s = interval_s
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self._baseline = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        else:
            self._baseline = current_rss_bytes()
            self._highest = self._baseline
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(self.interval_s):
            self._highest = max(self._highest, current_rss_bytes())

    def __exit__(self, *exc_info):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.peak_bytes = torch.cuda.max_memory_allocated() - self._baseline
        else:
            self._stop.set()
            self._thread.join()
            self._highest = max(self._highest, current_rss_bytes())
            self.peak_bytes = self._highest - self._baseline
        return False
