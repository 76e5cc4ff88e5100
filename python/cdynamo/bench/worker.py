"""Benchmarks one model on every requested backend inside one process (the runner starts one per
model): same inputs, same threads; writes one JSON record per backend. `python -m
cdynamo.bench.worker TASK.json RECORDS.jsonl`."""
import copy
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback

import torch

from . import measure
from .backends import EAGER, get_backend
from .registry import get_model

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def error_reason(error):
    """One line naming the exception: what the dashboard shows in its "works" column."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    # Errors that wrap another one (e.g. a backend failure) say the most useful thing last.
    if len(lines) > 1 and len(first) < 40:
        first = f"{first} {lines[-1]}"
    return f"{type(error).__name__}: {first}"[:300]


class BackendRun:
    """What one backend did in this process: its compiled callable and its measurements."""

    def __init__(self, spec, record):
        self.spec = spec
        self.record = record
        self.compiled = None
        self.samples = []
        self.tiny_samples = []

    @property
    def works(self):
        return self.record["status"] in ("ok", "graph_breaks", "fallback")

    def fail(self, error, stage):
        self.record.update(
            status="error", works=f"error: {error_reason(error)}", reason=error_reason(error),
            failed_stage=stage, traceback=traceback.format_exc()[-2000:],
        )
        self.compiled = None


def base_record(task, spec):
    return {
        "run_id": task.get("run_id", ""),
        "model": spec.name,
        "family": spec.family,
        "mode": task["mode"],
        "backend": None,
        "device": task["device"],
        "dtype": task["dtype"],
        "threads": task["threads"],
        "small": bool(task.get("small")),
        "status": None,
        "works": None,
        "reason": "",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
    }


def compile_phase(run, pristine_model, inputs, reference, task, cache_root):
    """Cold compile (empty caches), warm compile (in-memory caches reset, disk caches kept),
    accuracy of the first result against the fp64 reference, graphs and breaks, peak memory."""
    spec, record, device, train = run.spec, run.record, task["device"], task["mode"] == "train"
    model = copy.deepcopy(pristine_model)
    spec.set_cache_dir(tempfile.mkdtemp(prefix=spec.name.replace(":", "-") + "-", dir=cache_root))
    spec.reset_in_memory()
    with measure.PeakMemory(device) as peak:
        compiled = spec.compile(model)
        cold_s, first_result = measure.timed_call(lambda: measure.run_step(compiled, inputs, train), device)
        stats = spec.compile_stats()
        spec.reset_in_memory()
        warm_s, _ = measure.timed_call(lambda: measure.run_step(compiled, inputs, train), device)
    record.update(
        cold_compile_s=cold_s,
        warm_compile_s=warm_s,
        max_rel_err=measure.max_relative_error(first_result, reference),
        peak_mem_mb=peak.peak_bytes / 2**20,
        graphs=stats.get("graphs"),
        graph_breaks=stats.get("graph_breaks"),
        break_reasons=stats.get("break_reasons", {}),
    )
    if spec.compiler == "none":
        record.update(status="ok", works="yes")
    elif not stats["graphs"]:
        top_reason = next(iter(stats["break_reasons"]), "no graph captured")
        record.update(status="fallback", works=f"ran eagerly: {top_reason}"[:300], reason=top_reason)
    elif stats["graph_breaks"]:
        top_reason = next(iter(stats["break_reasons"]))
        record.update(status="graph_breaks", works=f"graph breaks ({stats['graph_breaks']})", reason=top_reason)
    else:
        record.update(status="ok", works="yes")
    run.compiled = compiled


def calls_per_repeat(seconds_per_call, min_repeat_s):
    """How many back-to-back calls make one repeat last at least min_repeat_s (timer resolution
    and per-call noise stop mattering)."""
    if seconds_per_call <= 0:
        return 1000
    return max(1, math.ceil(min_repeat_s / seconds_per_call))


def timing_phase(runs, inputs, task, samples_attribute="samples", warmup=None, repeats=None, min_repeat_s=None):
    """Median time per call of each working backend, repeats interleaved (eager, b1, b2, eager,
    ...) so drift on a shared machine hits every backend alike. The first warm-up call may
    recompile: another backend's reset emptied the shared in-memory cache."""
    device, train = task["device"], task["mode"] == "train"
    warmup = max(1, task["warmup"] if warmup is None else warmup)
    repeats = task["repeats"] if repeats is None else repeats
    min_repeat_s = task["min_repeat_s"] if min_repeat_s is None else min_repeat_s
    per_call = {}
    for run in runs:
        try:
            for _ in range(warmup):
                seconds, _ = measure.timed_call(lambda: measure.run_step(run.compiled, inputs, train), device)
            per_call[run] = seconds
        except Exception as error:  # noqa: BLE001  (a backend's failure is a result)
            run.fail(error, "warm-up")
    active = [run for run in runs if run.works]
    calls = {run: calls_per_repeat(per_call[run], min_repeat_s) for run in active}
    # Bound the timing of slow models: fewer repeats (never under 3) rather than a suite that
    # never ends.
    round_s = sum(calls[run] * per_call[run] for run in active)
    if round_s > 0 and repeats * round_s > task["max_timing_s"]:
        repeats = max(3, int(task["max_timing_s"] / round_s))
    for _ in range(repeats):
        for run in active:
            if not run.works:
                continue
            n = calls[run]
            try:
                def repeat():
                    for _ in range(n):
                        measure.run_step(run.compiled, inputs, train)

                seconds, _ = measure.timed_call(repeat, device)
                getattr(run, samples_attribute).append(seconds / n)
            except Exception as error:  # noqa: BLE001
                run.fail(error, "timing")
    return calls


def run_task(task, write_record):
    """Runs the whole task; `write_record(record)` receives each backend's record: first a
    "compiled" record per backend, then the "final" ones after timing."""
    spec = get_model(task["model"])
    device, dtype, train = task["device"], DTYPES[task["dtype"]], task["mode"] == "train"
    torch.set_num_threads(task["threads"])
    if device == "cuda":
        # The anchors' GPU figures use TF32 matmuls; every backend here gets the same setting.
        torch.set_float32_matmul_precision("high")
    backend_names = [EAGER] + [name for name in task["backends"] if name != EAGER]
    runs = []
    for name in backend_names:
        record = base_record(task, spec)
        record["backend"] = name
        runs.append(BackendRun(get_backend(name), record))

    try:
        model, inputs = spec.builder(bool(task.get("small")))
        model = model.to(device=device, dtype=dtype)
        model.train(train)
        inputs = measure.cast_floats(inputs, dtype, device)
        reference = measure.fp64_reference(model, inputs, train)
    except Exception as error:  # noqa: BLE001  (a model that cannot be built fails every backend)
        for run in runs:
            run.fail(error, "build")
            run.record["phase"] = "final"
            write_record(run.record)
        return

    # Every system's modules are imported before any is measured: whichever came first would
    # otherwise pay for importing what they share (fx, fake tensors, AOTAutograd).
    for run in runs:
        try:
            run.spec.prepare()
        except Exception as error:  # noqa: BLE001
            run.fail(error, "import")
    cache_root = tempfile.mkdtemp(prefix="cdynamo-bench-cache-")
    try:
        for run in runs:
            if run.record["status"] == "error":
                write_record(dict(run.record, phase="compiled"))
                continue
            try:
                compile_phase(run, model, inputs, reference, task, cache_root)
            except Exception as error:  # noqa: BLE001
                run.fail(error, "compile")
            write_record(dict(run.record, phase="compiled"))
            _progress(f"{spec.name}: {run.spec.name}: {run.record['works']}")

        eager_run = runs[0]
        timing_phase([run for run in runs if run.works], inputs, task)
        if spec.tiny_inputs is not None and not train and eager_run.works:
            tiny = spec.tiny_inputs(inputs)
            timing_phase(
                [run for run in runs if run.works], tiny, task, "tiny_samples",
                warmup=3, repeats=task["repeats"], min_repeat_s=0.02,
            )
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)

    eager_stats = measure.sample_stats(eager_run.samples) if eager_run.samples else None
    eager_tiny = measure.sample_stats(eager_run.tiny_samples) if eager_run.tiny_samples else None
    for run in runs:
        record = run.record
        record["phase"] = "final"
        record["process_max_rss_mb"] = measure.max_rss_bytes() / 2**20
        if run.works and run.samples:
            stats = measure.sample_stats(run.samples)
            record.update(
                time_ms=stats["median"] * 1e3, time_p25_ms=stats["p25"] * 1e3, time_p75_ms=stats["p75"] * 1e3,
                repeats=len(run.samples),
            )
            if eager_stats:
                record.update(
                    eager_time_ms=eager_stats["median"] * 1e3,
                    eager_time_p25_ms=eager_stats["p25"] * 1e3,
                    eager_time_p75_ms=eager_stats["p75"] * 1e3,
                )
        if run.works and run.tiny_samples and eager_tiny:
            tiny_median = measure.sample_stats(run.tiny_samples)["median"]
            record.update(tiny_call_us=tiny_median * 1e6, overhead_us=(tiny_median - eager_tiny["median"]) * 1e6)
        write_record(record)


def _progress(message):
    sys.stderr.write(f"  [worker] {message}\n")
    sys.stderr.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write("usage: python -m cdynamo.bench.worker TASK.json RECORDS.jsonl\n")
        return 2
    with open(argv[0]) as task_file:
        task = json.load(task_file)
    with open(argv[1], "a") as records:
        def write_record(record):
            records.write(json.dumps(record, default=str) + "\n")
            records.flush()

        run_task(task, write_record)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
