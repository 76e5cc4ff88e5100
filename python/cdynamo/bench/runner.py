"""Runs the suite: one worker subprocess per model (all its backends side by side inside), records
appended to results.jsonl as each model finishes (so a rerun resumes), then the CSV, JSON,
Markdown, dashboard and history of the results."""
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from . import report
from .backends import default_backends, get_backend, order_backends
from .dashboard import write_dashboard
from .registry import select_models


@dataclasses.dataclass
class SuiteOptions:
    models: list = None  # names; None: all (or the --quick subset)
    backends: list = None  # names; None: every backend (unavailable ones reported as skipped)
    device: str = "cpu"
    threads: int = 2
    dtype: str = "float32"
    train: bool = False
    quick: bool = False
    small: bool = False  # small sizes of every model: a smoke test, not a benchmark
    out: str = os.path.join("bench", "results", "suite")
    fresh: bool = False
    warmup: int = 3
    repeats: int = 9
    min_repeat_s: float = 0.1
    max_timing_s: float = 120.0  # per model: timing of all its backends together
    timeout_s: float = 3600.0  # per model subprocess
    history: str = None  # default: <out>/history.jsonl
    python: str = sys.executable
    progress: bool = True

    @property
    def mode(self):
        return "train" if self.train else "infer"


def _config_fields(options):
    return {
        "mode": options.mode, "device": options.device, "dtype": options.dtype,
        "threads": options.threads, "small": bool(options.small),
    }


class Progress:
    """A progress bar over models: tqdm when installed, else one stderr line per step."""

    def __init__(self, total, enabled=True):
        self.total, self.done, self.enabled = total, 0, enabled
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="model", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def start(self, label):
        if self.bar is not None:
            self.bar.set_description(label)
        elif self.enabled:
            sys.stderr.write(f"[{self.done + 1}/{self.total}] {label} ...\n")
            sys.stderr.flush()

    def finish(self, label, message):
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
            self.bar.write(f"{label}: {message}", file=sys.stderr)
        elif self.enabled:
            sys.stderr.write(f"[{self.done}/{self.total}] {label}: {message}\n")
            sys.stderr.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def skipped_record(spec, backend, options, reason, run_id):
    return {
        "run_id": run_id, "model": spec.name, "family": spec.family, "backend": backend,
        **_config_fields(options), "status": "skipped", "works": f"skipped ({reason})", "reason": reason,
        "phase": "final", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def run_worker(spec, backends, options, run_id, log_path):
    """Runs one model's worker subprocess; returns its final records. Backends whose final
    record never came (a crash, a timeout) get an error record saying so, keeping what their
    "compiled" record had measured."""
    task = {
        "model": spec.name, "backends": backends, **_config_fields(options), "run_id": run_id,
        "warmup": options.warmup, "repeats": options.repeats, "min_repeat_s": options.min_repeat_s,
        "max_timing_s": options.max_timing_s,
    }
    env = dict(os.environ)
    # Thread pools of torch, OpenMP (generated kernels) and BLAS all get the same count.
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[variable] = str(options.threads)
    with tempfile.TemporaryDirectory(prefix="cdynamo-bench-task-") as scratch:
        task_path, records_path = os.path.join(scratch, "task.json"), os.path.join(scratch, "records.jsonl")
        with open(task_path, "w") as task_file:
            json.dump(task, task_file)
        command = [options.python, "-m", "cdynamo.bench.worker", task_path, records_path]
        failure = None
        with open(log_path, "w") as log:
            try:
                completed = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=options.timeout_s)
                if completed.returncode != 0:
                    failure = f"worker exited with status {completed.returncode} (log: {log_path})"
            except subprocess.TimeoutExpired:
                failure = f"timeout after {options.timeout_s:.0f} s (log: {log_path})"
        records = report.load_records(records_path)
    final = {r["backend"]: r for r in records if r.get("phase") == "final"}
    compiled = {r["backend"]: r for r in records if r.get("phase") == "compiled"}
    results = []
    for backend in ["eager"] + [b for b in backends if b != "eager"]:
        if backend in final:
            results.append(final[backend])
            continue
        record = dict(compiled.get(backend) or skipped_record(spec, backend, options, "", run_id))
        reason = failure or "the worker wrote no result"
        if not failure and os.path.exists(log_path):
            with open(log_path) as log:
                tail = [line for line in log.read().splitlines() if line.strip()][-1:]
            reason += f": {tail[0][:200]}" if tail else ""
        record.update(status="error", works=f"error: {reason}", reason=reason, phase="final")
        results.append(record)
    return results


def git_commit():
    """The commit of the cdynamo checkout being measured, when there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(
            ["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_name():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def forget_results(results_path, model_names, config):
    """--fresh: drops the records of these models under this configuration, so they are measured
    again; other models' results stay. The file as it was is kept as results.jsonl.old."""
    records = report.load_records(results_path)
    os.replace(results_path, results_path + ".old")
    kept = [
        record for record in records
        if record.get("model") not in model_names
        or any(record.get(field) != value for field, value in config.items())
    ]
    report.append_records(results_path, kept)


def run_suite(options):
    """Runs what is not done yet, then writes every output. Returns the summary."""
    import torch

    os.makedirs(os.path.join(options.out, "logs"), exist_ok=True)
    results_path = os.path.join(options.out, "results.jsonl")
    history_path = options.history or os.path.join(options.out, "history.jsonl")
    run_id = time.strftime("%Y%m%d-%H%M%S")
    specs = select_models(options.models, options.quick)
    config = _config_fields(options)
    if options.fresh and os.path.exists(results_path):
        forget_results(results_path, {spec.name for spec in specs}, config)
    backends = order_backends(options.backends or default_backends())
    available, unavailable = [], {}
    for name in backends:
        is_available, reason = get_backend(name).availability()
        if is_available:
            available.append(name)
        else:
            unavailable[name] = reason

    done = {
        report.record_key(record)
        for record in report.latest_records(report.load_records(results_path))
        if report.is_done(record)
    }
    progress = Progress(len(specs), options.progress)
    measured_anything = False
    for spec in specs:
        label = spec.name if options.mode == "infer" else f"{spec.name} (train)"
        progress.start(label)

        def key(backend):
            return report.record_key({"model": spec.name, "backend": backend, **config})

        new_records = [
            skipped_record(spec, name, options, f"backend unavailable: {reason}", run_id)
            for name, reason in unavailable.items()
            if key(name) not in done
        ]
        missing = spec.missing_packages()
        todo = [name for name in available if key(name) not in done]
        if missing:
            reason = f"missing package {', '.join(missing)}"
            new_records += [skipped_record(spec, name, options, reason, run_id) for name in todo]
            message = f"skipped ({reason})"
        elif not todo:
            message = "done earlier (resumed)"
        else:
            start = time.perf_counter()
            log_path = os.path.join(options.out, "logs", f"{spec.name}-{options.mode}.log")
            # eager always runs: every speedup is against the eager time of the same process.
            results = run_worker(spec, todo, options, run_id, log_path)
            measured_anything = True
            new_records += [r for r in results if r["backend"] in todo]
            message = f"{time.perf_counter() - start:.0f} s: " + ", ".join(
                f"{r['backend']} {_short_result(r)}" for r in results
            )
        report.append_records(results_path, new_records)
        progress.finish(label, message)
    progress.close()

    selected = {spec.name for spec in specs}
    records = [
        record for record in report.load_records(results_path)
        if all(record.get(field) == value for field, value in config.items())
    ]
    # The dashboard covers every model measured under this configuration, selected now or earlier.
    summary = report.summarize(records)
    run_info = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "run_id": run_id, "git_commit": git_commit(),
        **config, "quick": options.quick, "torch_version": torch.__version__,
        "python_version": platform.python_version(), "cpu": cpu_name(), "models_selected": sorted(selected),
    }
    write_outputs(options.out, summary, run_info, history_path, append_history=measured_anything)
    return summary


def _short_result(record):
    if record.get("status") in ("error", "skipped"):
        return record.get("status")
    speedup = report.with_speedups(record).get("speedup")
    return f"{speedup:.2f}×" if speedup else record.get("status", "?")


def write_outputs(out_dir, summary, run_info, history_path, append_history=True):
    """results.csv/.json/.md, the history line and the dashboard."""
    report.write_csv(os.path.join(out_dir, "results.csv"), summary["rows"])
    report.write_json(os.path.join(out_dir, "results.json"), summary, run_info)
    with open(os.path.join(out_dir, "results.md"), "w") as markdown:
        markdown.write("## Speedup over eager (median; graph breaks noted)\n\n")
        markdown.write(report.markdown_pivot(summary, "speedup", ".2f", "×"))
        markdown.write("\n## Cold compile, seconds (first call, empty caches)\n\n")
        markdown.write(report.markdown_pivot(summary, "cold_compile_s", ".2f", ""))
        markdown.write("\n## Every measurement\n\n")
        markdown.write(report.markdown_table(summary))
    if append_history and summary["rows"]:
        report.append_history(history_path, report.history_entry(summary, run_info))
    history = [
        entry for entry in report.load_history(history_path)
        if all(entry.get("config", {}).get(key) == run_info.get(key) for key in ("device", "mode", "dtype"))
    ]
    return write_dashboard(out_dir, summary, history, run_info)
