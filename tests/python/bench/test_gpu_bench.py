"""bench/gpu.py's plumbing on the CPU: the job plan, the report from records, failures as error rows,
and a --device cpu --small run of a subset end to end (resumed into the same folder). Needs no GPU:
the CUDA-only parts (profiler kernel counts, CUDA-graph replay) are not reached here."""
import json
import os
import subprocess
import sys

import pytest

from cdynamo.bench import gpu_cases, gpu_report, gpu_runner, gpu_worker

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_plan_runs_the_copy_probe_first_and_warm_compiles_last():
    cases = gpu_cases.select_cases(["mlp", "launch_overhead"])
    jobs = [(job.case.name, job.system, job.phase) for job in gpu_runner.plan_jobs(cases, gpu_runner.SYSTEMS)]
    assert jobs[0] == ("copy_bandwidth", "eager", "run")
    assert jobs[1:4] == [
        ("mlp", "eager", "run"), ("mlp", "cdynamo:inductor", "cold"), ("mlp", "torch:inductor", "cold")]
    assert [job for job in jobs if job[2] == "warm"] == jobs[-2:]  # launch and copy cases have none
    assert not any(name == "copy_bandwidth" and system != "eager" for name, system, _ in jobs)


def test_groups_cover_the_table_once():
    grouped = [name for group in gpu_cases.GROUPS.values() for name in group]
    assert sorted(grouped) == sorted(case.name for case in gpu_cases.CASES if case.name != "copy_bandwidth")
    assert [case.name for case in gpu_cases.select_cases(["vision", "mlp"])] == [
        "copy_bandwidth", "mlp", "resnet18", "resnet18_train", "vit_b16"]
    with pytest.raises(KeyError):
        gpu_cases.select_cases(["no_such_case"])


def _record(case, system, phase, **fields):
    return {"case": case, "system": system, "phase": phase, "device": "cuda", "dtype": "float32", "small": False,
            "run_id": "run-1", "status": "ok", "error": None, "notes": [], **fields}


def fake_records():
    records = [_record("copy_bandwidth", "eager", "run", tbps=4.0, bytes_moved=2**31)]
    for case, eager_ms, mine_ms, theirs_ms in (("pointwise_chain", 1.2, 0.15, 0.2), ("mlp", 0.5, 0.5, 0.4)):
        records.append(_record(case, "eager", "run", time_ms=eager_ms, max_rel_err=1e-7, tbps=0.5 / eager_ms))
        records.append(_record(case, "cdynamo:inductor", "cold", time_ms=mine_ms, first_call_s=0.5, max_rel_err=1e-7,
                               tbps=0.5 / mine_ms))
        records.append(_record(case, "torch:inductor", "cold", time_ms=theirs_ms, first_call_s=3.0, max_rel_err=1e-7,
                               tbps=0.5 / theirs_ms))
        records.append(_record(case, "cdynamo:inductor", "warm", first_call_s=0.05))
        records.append(_record(case, "torch:inductor", "warm", first_call_s=1.0,
                               inductor_counters={"fxgraph_cache_miss": 1 if case == "mlp" else 0}))
    records.append(_record("gpt2_reduce_overhead", "eager", "run", time_ms=11.0))
    no_graph = "mode='reduce-overhead' replayed no CUDA graph (5 kernels launched one by one)"
    records.append(_record("gpt2_reduce_overhead", "cdynamo:inductor", "cold", status="error", first_call_s=1.0,
                           time_ms=11.0, error=no_graph))
    records.append(_record("gpt2_reduce_overhead", "torch:inductor", "cold", status="skipped",
                           error="time budget (540 s) spent"))
    variants = [{"ops": 8, "kernels": 8, "cpu_us_per_call": 20.0}, {"ops": 64, "kernels": 64, "cpu_us_per_call": 132.0}]
    records.append(_record("launch_overhead", "cdynamo:inductor", "cold", us_per_launch=2.0, variants=variants))
    return records


def test_report_ratios_targets_and_error_rows():
    built = gpu_report.build_report(fake_records(), {"device": "cuda"}, gpu_runner.SYSTEMS)
    rows = {row["case"]: row for row in built["rows"]}
    assert rows["pointwise_chain"]["vs_torch"] == pytest.approx(0.2 / 0.15)
    assert rows["mlp"]["vs_torch"] == pytest.approx(0.8)
    assert rows["mlp"]["cold_ratio"] == pytest.approx(0.5 / 3.0)
    assert built["geomean"]["vs_torch"]["value"] == pytest.approx((0.2 / 0.15 * 0.8) ** 0.5)
    assert rows["gpt2_reduce_overhead"]["cdynamo_state"] == "error"
    chain = built["bandwidth"]["rows"][0]
    assert chain["cdynamo"]["fraction_of_copy"] == pytest.approx(0.5 / 0.15 / 4.0)
    met = {target["target"].split(" ")[0] + str(i): target["met"] for i, target in enumerate(built["targets"])}
    assert list(met.values()) == [False, False, False, False, True, True]  # reduce-overhead: cdynamo failed
    text = gpu_report.markdown(built)
    assert "replayed no CUDA graph" in text  # the one-line error, in the row's notes
    assert "gpt2_reduce_overhead torch:inductor cold: skipped: time budget" in text
    assert "torch:inductor (warm): 1 compiled-graph cache misses" in text
    assert "| **geomean** |" in text and "**2.00**" in text  # the launch slope


def test_memory_bound_rows_are_read_against_the_copy_probe_of_their_own_run():
    records = fake_records()
    # A later run measured only the copy probe and mlp; merged, the chain keeps run-1's copy.
    later = [_record("copy_bandwidth", "eager", "run", tbps=2.0, run_id="run-2"),
             _record("mlp", "eager", "run", time_ms=0.6, run_id="run-2")]
    latest = gpu_runner.latest_records(records + later)
    built = gpu_report.build_report(latest, {}, gpu_runner.SYSTEMS)
    chain = built["bandwidth"]["rows"][0]
    assert chain["cdynamo"]["copy_tbps"] == 4.0 and built["bandwidth"]["copy_tbps"] == 2.0
    mlp = next(row for row in built["rows"] if row["case"] == "mlp")
    assert any("different runs" in note for note in mlp["notes"])


def _task(case, system, phase, tmp_path):
    return {"case": case, "system": system, "phase": phase, "device": "cpu", "dtype": "float32", "small": True,
            "warmup": 1, "repeats": 3, "min_batch_s": 0.001, "max_timing_s": 1.0, "launch_repeats": 10,
            "kernel_counts": False, "threads": 1, "cache_dir": str(tmp_path / "cache")}


@pytest.fixture
def extra_case():
    """Registers a case for one test (the table itself stays as it is)."""
    added = []

    def add(case):
        gpu_cases._BY_NAME[case.name] = case
        added.append(case.name)
        return case

    yield add
    for name in added:
        del gpu_cases._BY_NAME[name]


def test_a_failing_build_is_an_error_record_with_one_line(tmp_path, extra_case):
    def broken(small):
        raise RuntimeError("no such model\nsecond line")

    extra_case(gpu_cases.GpuCase("broken_for_test", "broken", broken))
    record = gpu_worker.run_job(_task("broken_for_test", "eager", "run", tmp_path))
    assert record["status"] == "error" and record["error"].startswith("RuntimeError: no such model")
    assert "\n" not in record["error"]


def test_reduce_overhead_on_the_cpu_is_checked_and_never_crashes(tmp_path, extra_case):
    import cdynamo

    extra_case(gpu_cases.GpuCase("mlp_modes_for_test", "mlp", gpu_cases.build_mlp, compile_mode="reduce-overhead"))
    with cdynamo.config.patch(cache_dir=str(tmp_path / "kernels")):  # this process's own kernels
        record = gpu_worker.run_job(_task("mlp_modes_for_test", "cdynamo:inductor", "cold", tmp_path))
    if gpu_worker.cdynamo_ignores_modes():
        assert record["status"] == "error" and "ignores mode=" in record["error"]
        assert record["time_ms"] > 0  # measured all the same, for the JSON
    elif record["status"] == "ok":  # CUDA graphs cannot record CPU work: the row says why
        assert any("CUDA graphs skipped" in note for note in record["notes"]), record["notes"]
    else:
        assert record["status"] == "error" and "\n" not in record["error"]


def test_a_warm_job_without_its_cold_caches_is_refused(tmp_path):
    record = gpu_worker.run_job(_task("mlp", "cdynamo:eager", "warm", tmp_path))
    assert record["status"] == "error" and "no finished cold run" in record["error"]


def _gpu_bench(out, *arguments):
    command = [sys.executable, os.path.join(REPO, "bench", "gpu.py"), "--device", "cpu", "--small", "--out", str(out),
               "--threads", "1", "--no-progress", *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=REPO)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def test_small_cpu_run_end_to_end_and_resumed(tmp_path):
    out = tmp_path / "out"
    cache_root = str(tmp_path / "caches")
    _gpu_bench(out, "--models", "pointwise_chain,launch_overhead", "--systems", "eager,cdynamo:inductor",
               "--cache-root", cache_root)
    # Resumed into the same folder: only torch.compile's job is new. Its eager backend stands in
    # for its inductor here (the same plumbing; g++ would take 15 to 30 s of this test).
    text = _gpu_bench(out, "--models", "pointwise_chain", "--systems", "eager,cdynamo:inductor,torch:eager",
                      "--no-warm", "--cache-root", cache_root)
    results = json.load(open(out / "results.json"))
    chain = next(row for row in results["rows"] if row["case"] == "pointwise_chain")
    assert chain["eager_ms"] > 0 and chain["cdynamo_ms"] > 0 and chain["cdynamo_warm_s"] > 0
    assert chain["cdynamo_err"] < 1e-5 and chain["eager_err"] < 1e-5
    assert chain["torch_ms"] > 0 and chain["vs_torch"] > 0 and chain["cold_ratio"] > 0
    assert results["bandwidth"]["copy_tbps"] > 0
    launch = {row["system"]: row for row in results["launch"]}
    assert launch["cdynamo:inductor"]["variants"][1]["kernels"] == gpu_cases.LAUNCH_COUNTS_SMALL[1]
    assert "us_per_launch" in launch["eager"]
    runs = [json.loads(line) for line in open(out / "results.jsonl")]
    assert sum(1 for r in runs if (r["case"], r["system"]) == ("pointwise_chain", "eager")) == 1  # resumed
    assert "| pointwise chain" in text and "## Targets" in text
