"""The suite runner with a fake worker: resumability, --fresh, skipped models and backends, and
every output file."""
import json
import os

import pytest

from cdynamo.bench import registry, report, runner

from .fake_records import fake_record


@pytest.fixture
def fake_worker(monkeypatch):
    """Replaces the subprocess: returns a record per backend and remembers what it was asked."""
    calls = []

    def run_worker(spec, backends, options, run_id, log_path):
        calls.append((spec.name, list(backends)))
        return [
            fake_record(spec.name, backend, 10.0 if backend == "eager" else 5.0, run_id=run_id)
            for backend in ["eager"] + [b for b in backends if b != "eager"]
        ]

    monkeypatch.setattr(runner, "run_worker", run_worker)
    return calls


def options(tmp_path, **overrides):
    fields = dict(models=["mlp", "pointwise_chain"], backends=["eager", "cdynamo:eager"], out=str(tmp_path),
                  progress=False)
    fields.update(overrides)
    return runner.SuiteOptions(**fields)


def test_outputs_are_written(tmp_path, fake_worker):
    summary = runner.run_suite(options(tmp_path))
    assert fake_worker == [("mlp", ["eager", "cdynamo:eager"]), ("pointwise_chain", ["eager", "cdynamo:eager"])]
    assert summary["geomeans"]["cdynamo:eager"]["speedup"] == pytest.approx(2.0)
    for name in ("results.jsonl", "results.csv", "results.json", "results.md", "history.jsonl", "index.html"):
        assert os.path.getsize(tmp_path / name) > 0, name
    assert len(report.read_csv(str(tmp_path / "results.csv"))) == 4


def test_a_rerun_resumes_and_fresh_starts_over(tmp_path, fake_worker):
    runner.run_suite(options(tmp_path))
    runner.run_suite(options(tmp_path))
    assert len(fake_worker) == 2  # the second run found everything done
    assert len(report.load_history(str(tmp_path / "history.jsonl"))) == 1  # nothing new measured
    runner.run_suite(options(tmp_path, backends=["eager", "cdynamo:eager", "cdynamo:aot_eager"]))
    # Only the new backend is asked for (eager runs in the worker anyway, as the baseline).
    assert fake_worker[2:] == [("mlp", ["cdynamo:aot_eager"]), ("pointwise_chain", ["cdynamo:aot_eager"])]
    runner.run_suite(options(tmp_path, fresh=True))
    assert len(fake_worker) == 6
    assert len(report.load_history(str(tmp_path / "history.jsonl"))) == 3


def test_fresh_forgets_only_the_selected_models(tmp_path, fake_worker):
    runner.run_suite(options(tmp_path))
    runner.run_suite(options(tmp_path, models=["mlp"], fresh=True))
    assert fake_worker[2:] == [("mlp", ["eager", "cdynamo:eager"])]
    records = report.load_records(str(tmp_path / "results.jsonl"))
    assert sorted(r["model"] for r in records) == ["mlp", "mlp", "pointwise_chain", "pointwise_chain"]
    assert os.path.exists(tmp_path / "results.jsonl.old")


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path, fake_worker):
    done_before = [fake_record("mlp", "eager", 10.0), fake_record("mlp", "cdynamo:eager", 5.0)]
    report.append_records(str(tmp_path / "results.jsonl"), done_before)
    runner.run_suite(options(tmp_path))
    assert fake_worker == [("pointwise_chain", ["eager", "cdynamo:eager"])]


def test_missing_packages_and_backends_are_reported_as_skipped(tmp_path, fake_worker):
    registry.register_model("fake_zoo_model", "fake", requires=("no_such_package_xyz",))(lambda small: None)
    try:
        summary = runner.run_suite(options(
            tmp_path, models=["mlp", "fake_zoo_model"], backends=["eager", "cdynamo:no_such_backend"]
        ))
    finally:
        registry.unregister_model("fake_zoo_model")
    assert fake_worker == [("mlp", ["eager"])]
    rows = {(r["model"], r["backend"]): r for r in summary["rows"]}
    assert rows[("fake_zoo_model", "eager")]["works"] == "skipped (missing package no_such_package_xyz)"
    assert rows[("mlp", "cdynamo:no_such_backend")]["works"].startswith("skipped (backend unavailable")
    # Skipped pairs are retried by the next run, once the package or backend exists.
    with open(tmp_path / "results.jsonl") as lines:
        assert all(not report.is_done(json.loads(line)) for line in lines if "skipped" in line)


def test_a_worker_that_dies_gives_error_records(tmp_path):
    spec = registry.get_model("mlp")
    run_options = options(tmp_path, python="/bin/false")
    records = runner.run_worker(spec, ["eager", "cdynamo:eager"], run_options, "r", str(tmp_path / "log"))
    assert [r["backend"] for r in records] == ["eager", "cdynamo:eager"]
    assert all(r["status"] == "error" and "worker exited with status 1" in r["works"] for r in records)
