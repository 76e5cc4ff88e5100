"""A --quick-style smoke run for real: two microbenchmarks at small sizes, eager and cdynamo's
eager backend, through the worker subprocess. Checks what a user reads on the dashboard."""
import os
import sys

import pytest

from cdynamo.bench import report, runner


@pytest.fixture(scope="module")
def smoke_summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-smoke")
    options = runner.SuiteOptions(
        models=["mlp", "pointwise_chain"], backends=["eager", "cdynamo:eager"], small=True, threads=1,
        out=str(out), repeats=3, warmup=2, min_repeat_s=0.01, timeout_s=120, progress=False,
        python=sys.executable,
    )
    return out, runner.run_suite(options)


def test_both_models_run_on_both_backends_in_one_worker_each(smoke_summary):
    out, summary = smoke_summary
    rows = {(row["model"], row["backend"]): row for row in summary["rows"]}
    assert set(rows) == {(m, b) for m in ("mlp", "pointwise_chain") for b in ("eager", "cdynamo:eager")}
    for (model, backend), row in rows.items():
        assert row["status"] == "ok", (model, backend, row.get("works"), row.get("reason"))
        assert row["works"] == "yes"
        assert row["time_ms"] > 0 and row["eager_time_ms"] > 0 and row["speedup"] > 0
        assert row["max_rel_err"] < 1e-5  # float32 against the fp64 reference
        assert row["cold_compile_s"] > 0 and row["warm_compile_s"] > 0
        assert row["peak_mem_mb"] is not None and row["process_max_rss_mb"] > 0
        assert row["overhead_us"] is not None  # microbenchmarks have a tiny-input variant
    cdynamo_mlp = rows[("mlp", "cdynamo:eager")]
    assert cdynamo_mlp["graphs"] == 1 and cdynamo_mlp["graph_breaks"] == 0
    # The eager baseline of every record comes from its own process: the same numbers.
    assert cdynamo_mlp["eager_time_ms"] == rows[("mlp", "eager")]["time_ms"]


def test_outputs_of_the_smoke_run(smoke_summary):
    out, summary = smoke_summary
    assert len(report.read_csv(str(out / "results.csv"))) == 4
    page = open(out / "index.html").read()
    assert "cdynamo:eager" in page and "pointwise_chain" in page
    assert os.path.exists(out / "logs" / "mlp-infer.log")
    assert summary["geomeans"]["cdynamo:eager"]["passed"] == 2
