"""Aggregation, geomean, speedups, resumability rules, the JSONL/CSV round trip and history."""
import json
import math

import pytest

from cdynamo.bench import report

from .fake_records import fake_record, fake_suite_records


def test_geomean_of_positive_finite_values_only():
    assert report.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert report.geomean([1.0, None, 0.0, -3.0, float("nan"), float("inf"), 4.0]) == pytest.approx(2.0)
    assert report.geomean([]) is None
    assert report.geomean([None]) is None


def test_speedup_is_eager_median_over_backend_median_with_quartile_spread():
    row = report.with_speedups(fake_record("m", "cdynamo:eager", 5.0, eager_ms=10.0))
    assert row["speedup"] == pytest.approx(2.0)
    assert row["speedup_low"] == pytest.approx(9.5 / 5.25)
    assert row["speedup_high"] == pytest.approx(10.5 / 4.75)
    assert "speedup" not in report.with_speedups(fake_record("m", "x", None, status="error"))


def test_summary_orders_rows_and_computes_geomeans_over_working_models():
    summary = report.summarize(fake_suite_records())
    assert summary["models"] == ["mlp", "resnet"]
    assert summary["backends"] == ["eager", "cdynamo:eager", "torch:inductor"]
    assert [(r["model"], r["backend"]) for r in summary["rows"]][:3] == [
        ("mlp", "eager"), ("mlp", "cdynamo:eager"), ("mlp", "torch:inductor")
    ]
    cdynamo = summary["geomeans"]["cdynamo:eager"]
    assert cdynamo["speedup"] == pytest.approx(2.0)  # 2× on both; graph breaks still count as passing
    assert (cdynamo["passed"], cdynamo["attempted"], cdynamo["full_graph"]) == (2, 2, 1)
    inductor = summary["geomeans"]["torch:inductor"]
    assert inductor["speedup"] == pytest.approx(1.25)  # the failed model is left out...
    assert (inductor["passed"], inductor["attempted"]) == (1, 2)  # ...and counted as not passing
    assert summary["geomeans"]["eager"]["speedup"] == pytest.approx(1.0)


def test_skipped_records_do_not_count_as_attempted():
    records = fake_suite_records() + [fake_record("vit", "cdynamo:eager", None, status="skipped")]
    assert report.summarize(records)["geomeans"]["cdynamo:eager"]["attempted"] == 2


def test_latest_record_per_key_wins():
    old = fake_record("mlp", "cdynamo:eager", 5.0)
    new = fake_record("mlp", "cdynamo:eager", 2.5)
    other_config = fake_record("mlp", "cdynamo:eager", 1.0, threads=1)
    latest = report.latest_records([old, other_config, new])
    assert len(latest) == 2
    assert {r["time_ms"] for r in latest} == {2.5, 1.0}


def test_done_means_final_and_not_skipped():
    assert report.is_done(fake_record("m", "b", 1.0))
    assert report.is_done(fake_record("m", "b", None, status="error"))  # a result, not retried
    assert not report.is_done(fake_record("m", "b", None, status="skipped"))
    assert not report.is_done(fake_record("m", "b", 1.0, phase="compiled"))


def test_jsonl_append_and_load_skip_a_torn_last_line(tmp_path):
    path = str(tmp_path / "results.jsonl")
    records = fake_suite_records()
    report.append_records(path, records[:2])
    report.append_records(path, records[2:])
    with open(path, "a") as out:
        out.write('{"model": "torn"')  # a run killed mid-write
    assert report.load_records(path) == records
    assert report.load_records(str(tmp_path / "absent.jsonl")) == []


def test_csv_round_trip_keeps_values_and_types(tmp_path):
    rows = report.summarize(fake_suite_records())["rows"]
    path = str(tmp_path / "results.csv")
    report.write_csv(path, rows)
    back = report.read_csv(path)
    assert len(back) == len(rows)
    for original, read in zip(rows, back):
        for field in report.CSV_FIELDS:
            assert read[field] == original.get(field), field


def test_json_output_holds_rows_geomeans_and_run_info(tmp_path):
    summary = report.summarize(fake_suite_records())
    path = str(tmp_path / "results.json")
    report.write_json(path, summary, {"device": "cpu"})
    data = json.loads(open(path).read())
    assert data["run"] == {"device": "cpu"}
    assert len(data["rows"]) == 6
    assert data["geomeans"]["cdynamo:eager"]["speedup"] == pytest.approx(2.0)


def test_history_entries_accumulate(tmp_path):
    path = str(tmp_path / "history.jsonl")
    summary = report.summarize(fake_suite_records())
    report.append_history(path, report.history_entry(summary, {"device": "cpu", "git_commit": "abc", "time": "t1"}))
    faster = report.summarize([fake_record("mlp", "cdynamo:eager", 2.0), fake_record("mlp", "eager", 10.0)])
    report.append_history(path, report.history_entry(faster, {"device": "cpu", "time": "t2"}))
    history = report.load_history(path)
    assert [entry["time"] for entry in history] == ["t1", "t2"]
    assert history[0]["git_commit"] == "abc" and history[0]["config"]["device"] == "cpu"
    assert history[1]["geomeans"]["cdynamo:eager"]["speedup"] == pytest.approx(5.0)


def test_markdown_table_has_a_line_per_row_and_per_backend():
    summary = report.summarize(fake_suite_records())
    text = report.markdown_table(summary)
    assert "| mlp | infer | cdynamo:eager | yes | 1.0e-07 | 10.00 | 5.00 | 2.00× (1.81–2.21) |" in text
    assert "| resnet | infer | torch:inductor | error: boom |" in text
    assert "| cdynamo:eager | 2.00× | 2/2 | 1/2 |" in text
    assert not any(math.isnan(v["passed"]) for v in summary["geomeans"].values())
