"""One job of the GPU benchmark in its own process (a case, a system, a phase: run, cold or warm),
written as one JSON record. Assumes the runner set the job's TORCHINDUCTOR/TRITON/CDYNAMO_CACHE_DIR.
`python -m cdynamo.bench.gpu_worker TASK.json RECORD.json`"""
import gc
import importlib.metadata
import json
import os
import platform
import sys
import time
import traceback

import torch

from . import gpu_cases, measure
from .backends import get_backend
from .worker import DTYPES, error_reason

# Written into a cache folder by the cold run that filled it: a warm run without it would time a
# cold compile and call it warm.
COLD_MARKER = "cold-run-finished"


def configure(task):
    """Threads, TF32 and the seed: the same for every system of a run."""
    if task.get("threads"):
        torch.set_num_threads(task["threads"])
    # TF32 matmuls and convolutions for float32, as anchors.md's GPU table measured them.
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)


def environment(device):
    def version(package):
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return None

    info = {"torch_version": torch.__version__, "triton_version": version("triton"),
            "python_version": platform.python_version()}
    if device == "cuda":
        info["device_name"] = torch.cuda.get_device_name()
    return info


def build_case(case, task, **build_args):
    """(model, inputs) of the case on the job's device and dtype; integer inputs keep theirs."""
    dtype = DTYPES[task["dtype"]]
    model, inputs = case.build(bool(task["small"]), **build_args)
    model = model.to(device=task["device"], dtype=dtype)
    model.train(case.train)
    return model, measure.cast_floats(inputs, dtype, task["device"])


def compile_stats(spec):
    """Graphs and breaks, plus the compiler's inductor counters and what they say a user would
    want to know (graphs that ran as captured, eager autograd) as notes."""
    stats = spec.compile_stats()
    if spec.compiler == "none":
        return {}, []
    if spec.compiler == "cdynamo":
        import cdynamo

        counters = cdynamo.counters
    else:
        import torch._dynamo.utils

        counters = torch._dynamo.utils.counters
    inductor = {str(key): int(value) for key, value in counters.get("inductor", {}).items()}
    stats["inductor_counters"] = inductor
    if spec.compiler == "cdynamo":  # where the first call's compile went (utils.timings' phases)
        from cdynamo import utils

        stats["compile_timings_s"] = {str(k): round(float(v), 4) for k, v in utils.timings.items()}
    # cdynamo's CUDA-graph layer counts recordings, replays and why it ran a call without one.
    cudagraphs = {str(key): int(value) for key, value in counters.get("cudagraphs", {}).items()}
    if cudagraphs:
        stats["cudagraphs_counters"] = cudagraphs
    notes = []
    if stats.get("graph_breaks"):
        top = next(iter(stats["break_reasons"]), "")
        notes.append(f"{stats['graph_breaks']} graph breaks ({top[:80]})")
    if not stats.get("graphs"):
        notes.append("no graph captured: ran eagerly")
    for key, count in inductor.items():
        if key.startswith("eager_fallback: "):
            notes.append(f"{count} graph(s) ran as captured: {key.split(': ', 1)[1][:80]}")
    if inductor.get("autograd_fallback"):
        notes.append(f"{inductor['autograd_fallback']} graph(s) ran with eager autograd")
    notes += [f"CUDA graphs {key} ({count}×)"[:120] for key, count in cudagraphs.items() if key.startswith("skipped: ")]
    return stats, notes


def cdynamo_ignores_modes():
    """Whether cdynamo.compile accepts a mode it cannot know: then mode= is ignored, not
    implemented (the CPU check; on CUDA the replay of a graph is looked for instead)."""
    import cdynamo

    try:
        cdynamo.compile(lambda x: x, backend="eager", mode="no-such-mode")
    except Exception:  # noqa: BLE001  (any refusal means modes are checked)
        return False
    return True


def check_compile_mode(case, spec, task, step, record):
    """None, or why the job's compile mode did not do what it says: "reduce-overhead" must replay a
    CUDA graph (counted by the profiler; on the CPU, cdynamo must at least refuse unknown modes)."""
    if case.compile_mode != "reduce-overhead" or spec.compiler == "none":
        return None
    if task["device"] == "cuda":
        counts = record["kernel_counts"] = measure.cuda_kernel_counts(step)
        if not any(counts.values()):
            record["notes"].append("the profiler saw no GPU activity: CUDA graph replay not checked")
            return None
        if counts["graph_launches"] == 0:
            return (f"mode='reduce-overhead' replayed no CUDA graph ({counts['launch_calls']} kernels "
                    f"launched one by one)")
        return None
    if spec.compiler == "cdynamo" and cdynamo_ignores_modes():
        return "cdynamo.compile ignores mode= (it accepts mode='no-such-mode' as well)"
    return None


def first_call(spec, model, inputs, train, device):
    """Compiles and runs once with the in-memory caches empty: (seconds, result, stats, notes)."""
    spec.reset_in_memory()
    compiled = spec.compile(model)
    seconds, result = measure.timed_call(lambda: measure.run_step(compiled, inputs, train), device)
    stats, notes = compile_stats(spec)
    return compiled, seconds, result, stats, notes


def run_model_job(case, spec, task, record):
    device, train, phase = task["device"], case.train, task["phase"]
    model, inputs = build_case(case, task)
    record["built_from"] = getattr(model, "built_from", None)
    reference = None if phase == "warm" else measure.fp64_reference(model, inputs, train)
    gc.collect()
    if spec.compiler != "none":
        # One eager call first, in every compiled job alike: CUDA's lazy start (cuBLAS handles,
        # cuDNN) is not charged to compiling.
        measure.timed_call(lambda: measure.run_step(model, inputs, train), device)
        start = time.perf_counter()
        spec.prepare(extra_trace_files=(gpu_cases.__file__,))
        record["import_s"] = time.perf_counter() - start
    # Peak memory of compiling and the first call only: on the CPU it is sampled by a thread,
    # which would steal time from the timed calls' OpenMP threads.
    with measure.PeakMemory(device) as peak:
        compiled, seconds, result, stats, notes = first_call(spec, model, inputs, train, device)
    record.update(first_call_s=seconds, notes=notes, peak_mem_mb=peak.peak_bytes / 2**20, **stats)
    if phase == "warm":
        record["status"] = "ok"
        return
    record["max_rel_err"] = measure.max_relative_error(result, reference)
    del result, reference

    def step():
        return measure.run_step(compiled, inputs, train)

    timing = measure.batched_timing(step, device, task["warmup"], task["repeats"], task["min_batch_s"],
                                    task["max_timing_s"])
    record.update(time_ms=timing["median"] * 1e3, time_p25_ms=timing["p25"] * 1e3, time_p75_ms=timing["p75"] * 1e3,
                  repeats=timing["repeats"], calls_per_batch=timing["calls_per_batch"])
    if case.bytes_moved is not None:
        record["bytes_moved"] = case.bytes_moved(inputs)
        record["tbps"] = record["bytes_moved"] / timing["median"] / 1e12
    if task.get("kernel_counts") and device == "cuda":
        record["kernel_counts"] = measure.cuda_kernel_counts(step)
    problem = check_compile_mode(case, spec, task, step, record)
    record["status"] = "error" if problem else "ok"
    record["error"] = problem


def run_copy_job(case, spec, task, record):
    """The copy bandwidth: eager dst.copy_(src), bytes read plus bytes written per second."""
    module, inputs = build_case(case, task)
    timing = measure.batched_timing(lambda: module(*inputs), task["device"], task["warmup"], task["repeats"],
                                    task["min_batch_s"], task["max_timing_s"])
    record.update(time_ms=timing["median"] * 1e3, time_p25_ms=timing["p25"] * 1e3, time_p75_ms=timing["p75"] * 1e3,
                  repeats=timing["repeats"], bytes_moved=case.bytes_moved(inputs))
    record.update(tbps=record["bytes_moved"] / timing["median"] / 1e12, status="ok")


def launch_variant(case, spec, task, count):
    """One launch-overhead variant (count independent kernels per call): compile, check against
    fp64, CPU µs per call, kernels per call (counted on CUDA, by construction on the CPU)."""
    device = task["device"]
    module, inputs = build_case(case, task, count=count)
    reference = measure.fp64_reference(module, inputs, train=False)
    compiled = spec.compile(module)
    seconds, result = measure.timed_call(lambda: measure.run_step(compiled, inputs, False), device)
    error = measure.max_relative_error(result, reference)
    cpu = measure.cpu_side_seconds(lambda: measure.run_step(compiled, inputs, False), device,
                                   repeats=task["launch_repeats"])
    kernels = {"kernels": count, "counted_by": "construction: one op per input (no launches on the CPU)"}
    if device == "cuda":
        counted = measure.cuda_kernel_counts(lambda: measure.run_step(compiled, inputs, False))
        if counted["kernels"]:
            kernels = dict(counted, counted_by="torch.profiler (CUPTI): kernels that ran on the device")
        else:  # CUPTI saw nothing (a profiler that cannot run here): say so rather than divide by 0
            kernels = dict(counted, kernels=count, counted_by="construction (the profiler saw no kernels)")
    return {"ops": count, "first_call_s": seconds, "max_rel_err": error, "cpu_us_per_call": cpu["median"] * 1e6,
            "cpu_us_p25": cpu["p25"] * 1e6, "cpu_us_p75": cpu["p75"] * 1e6, **kernels}


def run_launch_job(case, spec, task, record):
    """CPU µs per kernel launch: the slope of CPU time per call over kernels per call between
    the two variants, so costs paid once per call (guards, the call itself) cancel out."""
    if spec.compiler != "none":
        spec.prepare(extra_trace_files=(gpu_cases.__file__,))
        spec.reset_in_memory()
    counts = gpu_cases.LAUNCH_COUNTS_SMALL if task["small"] else gpu_cases.LAUNCH_COUNTS
    variants = [launch_variant(case, spec, task, count) for count in counts]
    few, many = variants
    record.update(variants=variants, first_call_s=many["first_call_s"],
                  max_rel_err=max(v["max_rel_err"] for v in variants))
    stats, notes = compile_stats(spec)
    record.update(notes=notes, **stats)
    if many["kernels"] > few["kernels"]:
        slope = (many["cpu_us_per_call"] - few["cpu_us_per_call"]) / (many["kernels"] - few["kernels"])
        record["us_per_launch"] = slope
    record["us_per_kernel_at_most"] = many["cpu_us_per_call"] / max(1, many["kernels"])
    record["status"] = "ok"


JOBS = {gpu_cases.MODEL: run_model_job, gpu_cases.COPY: run_copy_job, gpu_cases.LAUNCH: run_launch_job}


def check_caches(task):
    """A warm job needs the caches its cold job filled; a cold job must start from empty ones."""
    cache_dir = task.get("cache_dir")
    if not cache_dir:
        return
    marker = os.path.join(cache_dir, COLD_MARKER)
    if task["phase"] == "warm" and not os.path.exists(marker):
        raise RuntimeError(f"no finished cold run filled {cache_dir}: a warm compile cannot be measured")
    if task["phase"] == "cold" and os.path.exists(marker):
        raise RuntimeError(f"{cache_dir} holds a previous run's caches: a cold compile cannot be measured")


def mark_cold_done(task, record):
    if task["phase"] == "cold" and task.get("cache_dir") and record.get("first_call_s") is not None:
        os.makedirs(task["cache_dir"], exist_ok=True)
        open(os.path.join(task["cache_dir"], COLD_MARKER), "w").close()


def run_job(task):
    """The job's record; a failure is a result: status "error" with the one-line reason."""
    case = gpu_cases.get_case(task["case"])
    spec = get_backend(task["system"], mode=case.compile_mode)
    record = {key: task[key] for key in ("case", "system", "phase", "device", "dtype", "small")}
    record["run_id"] = task.get("run_id")
    record.update(status=None, error=None, notes=[], timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"))
    try:
        configure(task)
        record.update(environment(task["device"]))
        check_caches(task)
        JOBS[case.kind](case, spec, task, record)
    except Exception as failure:  # noqa: BLE001  (reported, never raised: the run goes on)
        record.update(status="error", error=error_reason(failure), traceback=traceback.format_exc()[-3000:])
    mark_cold_done(task, record)
    record["process_max_rss_mb"] = measure.max_rss_bytes() / 2**20
    return record


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write("usage: python -m cdynamo.bench.gpu_worker TASK.json RECORD.json\n")
        return 2
    with open(argv[0]) as task_file:
        task = json.load(task_file)
    record = run_job(task)
    with open(argv[1], "w") as out:
        json.dump(record, out, default=str)
    if record.get("traceback"):
        sys.stderr.write(record["traceback"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
