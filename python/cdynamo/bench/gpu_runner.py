"""Runs the GPU benchmark: each (case, system, phase) a worker process with its own caches, inside a
time budget, resumable from OUT/results.jsonl, then the report. Assumes one GPU nothing else uses."""
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import gpu_cases, gpu_report, report
from .backends import get_backend
from .runner import cpu_name, git_commit

SYSTEMS = ("eager", "cdynamo:inductor", "torch:inductor")
# What identifies one measurement: a rerun under the same configuration replaces it.
KEY_FIELDS = ("case", "system", "phase", "device", "dtype", "small")
# Statuses a rerun does not measure again (unless --fresh): a result, or a failure of the code.
FINAL_STATUSES = ("ok", "error")
# A job is not started with less of the budget left than this: it would only be killed.
MIN_JOB_S = 20.0


@dataclasses.dataclass
class GpuOptions:
    out: str = os.path.join("bench", "results", "gpu")
    device: str = "cuda"
    dtype: str = "float32"
    small: bool = False  # tiny shapes: tests the plumbing, measures nothing
    cases: list = None  # names; None: the whole table
    systems: tuple = SYSTEMS
    warm: bool = True  # also measure warm compiles (a second process on the cold run's caches)
    fresh: bool = False  # measure the selected cases again instead of resuming
    time_budget_s: float = 540.0  # the whole run; jobs that do not fit are skipped and reported
    timeout_s: float = 300.0  # one job
    warmup: int = 3
    repeats: int = 7
    min_batch_s: float = 0.02  # each timed batch of calls lasts at least this long
    max_timing_s: float = 3.0  # one job's timing: fewer repeats (at least 3) past this
    launch_repeats: int = 200  # timed calls per launch-overhead variant
    kernel_counts: bool = False  # also count the kernels of every model call (torch.profiler)
    threads: int = None  # torch threads in the workers; None: torch's default
    cache_root: str = None  # per-job cache folders; None: a folder under the system's temp dir
    python: str = sys.executable
    progress: bool = True
    # Names the run in every record it writes: ratios pair records of one run (the copy probe
    # with the memory-bound rows, above all), also when results of several runs are merged.
    run_id: str = dataclasses.field(default_factory=lambda: f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")

    def config(self):
        return {"device": self.device, "dtype": self.dtype, "small": bool(self.small)}


@dataclasses.dataclass(frozen=True)
class Job:
    case: object  # a GpuCase
    system: str
    phase: str  # "run" (eager), "cold" or "warm" (a compiler)

    @property
    def label(self):
        return f"{self.case.name} {self.system} {self.phase}"


def plan_jobs(cases, systems, warm=True):
    """Jobs in the order they run, most telling first, so a budget that runs out cuts the least:
    the copy probe, each model's eager, cold cdynamo and cold torch.compile jobs, the launch case,
    and the warm compiles last. Eager always runs: every speedup is over it."""
    compilers = [system for system in systems if system != "eager"]
    jobs = []
    for case in cases:
        if case.kind == gpu_cases.COPY:
            jobs.append(Job(case, "eager", "run"))
    for kind in (gpu_cases.MODEL, gpu_cases.LAUNCH):
        for case in (c for c in cases if c.kind == kind):
            jobs.append(Job(case, "eager", "run"))
            jobs += [Job(case, system, "cold") for system in compilers]
    if warm:
        jobs += [Job(case, system, "warm") for case in cases if case.kind == gpu_cases.MODEL for system in compilers]
    return jobs


def record_key(record):
    return tuple(record.get(field) for field in KEY_FIELDS)


def job_key(job, options):
    config = options.config()
    return (job.case.name, job.system, job.phase, config["device"], config["dtype"], config["small"])


def default_cache_root(options):
    suffix = f"{options.device}-{options.dtype}" + ("-small" if options.small else "")
    return os.path.join(tempfile.gettempdir(), f"cdynamo-gpubench-caches-{suffix}")


def cache_dir(options, job):
    """The job's cache folder: shared by the cold and warm jobs of one (case, system) only."""
    return os.path.join(options.cache_root, f"{job.case.name}--{job.system.replace(':', '-')}")


def worker_env(options, folder):
    """The environment of a worker: empty or warm caches of its own for both compilers and
    Triton, the FX-graph and AOTAutograd caches of torch.compile on (the warm start users get),
    and this checkout's package first on the path."""
    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=os.path.join(folder, "torchinductor"), TRITON_CACHE_DIR=os.path.join(folder, "triton"),
        CDYNAMO_CACHE_DIR=os.path.join(folder, "cdynamo"), TORCHINDUCTOR_FX_GRAPH_CACHE="1",
        TORCHINDUCTOR_AUTOGRAD_CACHE="1", PYTHONUNBUFFERED="1",
    )
    if options.threads:
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[variable] = str(options.threads)
    return env


def job_task(options, job, folder):
    return {
        "case": job.case.name, "system": job.system, "phase": job.phase, **options.config(),
        "warmup": options.warmup, "repeats": options.repeats, "min_batch_s": options.min_batch_s,
        "max_timing_s": options.max_timing_s, "launch_repeats": options.launch_repeats,
        "kernel_counts": options.kernel_counts, "threads": options.threads, "cache_dir": folder,
        "run_id": options.run_id,
    }


def base_record(options, job, status, reason):
    return {"case": job.case.name, "system": job.system, "phase": job.phase, **options.config(),
            "run_id": options.run_id, "status": status, "error": reason, "notes": [],
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}


def last_log_line(log_path):
    try:
        with open(log_path) as log:
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def run_job(options, job, timeout_s, log_path):
    """Runs one worker process; returns its record, or one saying how it failed."""
    folder = cache_dir(options, job)
    if job.phase in ("cold", "run"):
        shutil.rmtree(folder, ignore_errors=True)  # a cold start means empty caches
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cdynamo-gpubench-job-") as scratch:
        task_path, record_path = os.path.join(scratch, "task.json"), os.path.join(scratch, "record.json")
        with open(task_path, "w") as task_file:
            json.dump(job_task(options, job, folder), task_file)
        command = [options.python, "-m", "cdynamo.bench.gpu_worker", task_path, record_path]
        with open(log_path, "w") as log:
            # A session of its own: on a timeout the worker goes together with the compile
            # workers torch.compile started (they would hold CPU cores through the next jobs).
            worker = subprocess.Popen(command, env=worker_env(options, folder), stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
            try:
                returncode = worker.wait(timeout=max(1.0, timeout_s))
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
                return base_record(options, job, "timeout", f"killed after {timeout_s:.0f} s (log: {log_path})")
        if os.path.exists(record_path):
            with open(record_path) as record_file:
                return json.load(record_file)
    reason = f"worker exited with status {returncode}: {last_log_line(log_path)}"
    return base_record(options, job, "error", reason)


def skip_reasons(options, cases):
    """{(case name or system): reason} for what cannot run here at all."""
    reasons = {}
    for system in options.systems:
        available, why = get_backend(system).availability()
        if not available:
            reasons[system] = f"system unavailable: {why}"
    for case in cases:
        missing = case.missing_packages()
        if missing:
            reasons[case.name] = f"missing package {', '.join(missing)}"
    return reasons


class Budget:
    """The run's wall-clock budget: how long a job may take, and whether one may start at all."""

    def __init__(self, seconds):
        self.seconds, self.start = seconds, time.perf_counter()

    def left(self):
        return self.seconds - (time.perf_counter() - self.start)

    def job_timeout(self, timeout_s):
        return min(timeout_s, self.left())


def forget_selected(results_path, options, cases):
    """--fresh: drops this configuration's records of the selected cases and their caches."""
    names = {case.name for case in cases}
    config = options.config()
    records = report.load_records(results_path)
    kept = [r for r in records if r.get("case") not in names or any(r.get(k) != v for k, v in config.items())]
    if os.path.exists(results_path):
        os.replace(results_path, results_path + ".old")
    report.append_records(results_path, kept)
    for case in cases:
        for system in options.systems:
            shutil.rmtree(cache_dir(options, Job(case, system, "cold")), ignore_errors=True)


def _say(options, text):
    if options.progress:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def execute(options, jobs, results_path, log_dir):
    """Runs the jobs not done yet, appending each record (or why it was skipped) as it comes."""
    latest = {record_key(r): r for r in report.load_records(results_path)}
    unavailable = skip_reasons(options, [job.case for job in jobs])
    budget = Budget(options.time_budget_s)
    for index, job in enumerate(jobs, 1):
        key = job_key(job, options)
        if latest.get(key, {}).get("status") in FINAL_STATUSES and job.case.kind != gpu_cases.COPY:
            continue  # measured by an earlier run into the same folder (the copy probe: every run)
        reason = unavailable.get(job.system) or unavailable.get(job.case.name) or warm_blocker(options, job, latest)
        if reason is None and budget.left() < MIN_JOB_S:
            reason = f"time budget ({options.time_budget_s:.0f} s) spent"
        if reason is not None:
            latest[key] = base_record(options, job, "skipped", reason)
            report.append_records(results_path, [latest[key]])
            _say(options, f"[{index}/{len(jobs)}] {job.label}: skipped: {reason}")
            continue
        if job.phase == "warm" and not os.path.exists(marker_path(options, job)):
            # Resumed on another machine (or after the temp folder was cleaned): the warm job
            # needs the cold job's caches, so the cold job is measured again first.
            _say(options, f"{job.label}: the cold run's caches are gone; running it again first")
            cold = Job(job.case, job.system, "cold")
            latest[job_key(cold, options)] = run_and_record(options, cold, budget, results_path, log_dir)
        latest[key] = run_and_record(options, job, budget, results_path, log_dir, f"[{index}/{len(jobs)}] ")


def marker_path(options, job):
    from .gpu_worker import COLD_MARKER

    return os.path.join(cache_dir(options, job), COLD_MARKER)


def warm_blocker(options, job, latest):
    """Why a warm job cannot run: its cold job did not compile (nothing to be warm from)."""
    if job.phase != "warm":
        return None
    cold = latest.get(job_key(Job(job.case, job.system, "cold"), options), {})
    if cold.get("first_call_s") is None:
        return f"no cold compile to start warm from ({cold.get('status') or 'not run'})"
    return None


def run_and_record(options, job, budget, results_path, log_dir, position=""):
    log_path = os.path.join(log_dir, f"{job.case.name}-{job.system.replace(':', '-')}-{job.phase}.log")
    start = time.perf_counter()
    record = run_job(options, job, budget.job_timeout(options.timeout_s), log_path)
    record["job_wall_s"] = time.perf_counter() - start
    report.append_records(results_path, [record])
    _say(options, f"{position}{job.label}: {gpu_report.short_result(record)} ({record['job_wall_s']:.0f} s)")
    return record


def run_info(options, records, wall_s):
    """What the report says about the run: when, where, with what."""
    environment = next((r for r in records if r.get("device_name")), None) or next(iter(records), {})
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "git_commit": git_commit(), "cpu": cpu_name(), **options.config(),
        "tf32": True, "systems": list(options.systems), "time_budget_s": options.time_budget_s, "wall_s": wall_s,
        **{key: environment.get(key) for key in ("device_name", "torch_version", "triton_version", "python_version")},
    }


def run_gpu_bench(options):
    """Runs what is not done yet, then writes results.md and results.json under options.out.
    Returns the report (a dict)."""
    start = time.perf_counter()
    options.cache_root = options.cache_root or default_cache_root(options)
    log_dir = os.path.join(options.out, "logs")
    os.makedirs(log_dir, exist_ok=True)
    results_path = os.path.join(options.out, "results.jsonl")
    cases = gpu_cases.select_cases(options.cases)
    if options.fresh:
        forget_selected(results_path, options, cases)
    execute(options, plan_jobs(cases, options.systems, options.warm), results_path, log_dir)
    # The report covers every case measured into this folder under this configuration, so runs
    # of parts of the table (--models) into one folder add up to the whole table.
    config = options.config()
    records = [r for r in report.load_records(results_path) if all(r.get(k) == v for k, v in config.items())]
    latest = latest_records(records)
    info = run_info(options, latest, time.perf_counter() - start)
    return gpu_report.write_report(options.out, latest, info, options.systems)


def latest_records(records):
    """The last record of each job, plus the copy probes of earlier runs: a row measured by an
    earlier run is read against that run's copy bandwidth."""
    latest = {record_key(r): r for r in records}
    kept = set(map(id, latest.values()))
    older_copies = [r for r in records if r.get("case") == "copy_bandwidth" and id(r) not in kept]
    return older_copies + list(latest.values())


def merge_results(paths, out, systems=SYSTEMS):
    """One report from the results.jsonl of several runs (e.g. two device calls of part of the
    table each); every ratio in it still compares jobs of one run."""
    records = [record for path in paths for record in report.load_records(path)]
    latest = latest_records(records)
    os.makedirs(out, exist_ok=True)
    info = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "merged_from": list(paths)}
    environment = next((r for r in latest if r.get("device_name")), {})
    info.update({key: environment.get(key) for key in ("device_name", "torch_version", "triton_version")})
    info.update({key: next((r.get(key) for r in latest), None) for key in ("device", "dtype", "small")})
    return gpu_report.write_report(out, latest, info, systems)
