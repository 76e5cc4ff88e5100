"""The HTML dashboard: tables always, PNG plots when matplotlib is installed."""
import os

import pytest

from cdynamo.bench import dashboard, report

from .fake_records import fake_suite_records

HISTORY = [
    {"time": "2026-01-01T00:00", "git_commit": "aaa", "models": 2,
     "geomeans": {"eager": {"speedup": 1.0}, "cdynamo:eager": {"speedup": 1.5}}},
    {"time": "2026-01-02T00:00", "git_commit": "bbb", "models": 2,
     "geomeans": {"eager": {"speedup": 1.0}, "cdynamo:eager": {"speedup": 2.0}}},
]


def test_html_has_geomeans_rows_status_and_history_without_plots():
    summary = report.summarize(fake_suite_records())
    page = dashboard.render_html(summary, HISTORY, {}, {"device": "cpu", "threads": 2})
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "device: cpu · threads: 2" in page
    assert page.count("<tr class=") == len(summary["rows"])
    assert "<tr class='bad'>" in page and "error: boom" in page  # failures are shown, in red
    assert "<tr class='warn'>" in page  # graph breaks, in yellow
    assert "2.00× (1.81–2.21)" in page
    assert "No plots: matplotlib is not installed" in page
    assert "<h2>History</h2>" in page and "bbb" in page


def test_html_escapes_error_text():
    records = fake_suite_records()
    records[-1]["works"] = "error: <script>alert(1)</script>"
    page = dashboard.render_html(report.summarize(records), [], {}, {})
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_dashboard_without_matplotlib_still_writes_the_page(tmp_path, monkeypatch):
    monkeypatch.setattr(dashboard, "_matplotlib_pyplot", lambda: None)
    path = dashboard.write_dashboard(str(tmp_path), report.summarize(fake_suite_records()), HISTORY, {})
    assert os.path.exists(path) and "<table>" in open(path).read()
    assert not os.path.exists(tmp_path / "plots" / "speedup.png")


def test_dashboard_with_matplotlib_writes_every_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = dashboard.write_dashboard(str(tmp_path), report.summarize(fake_suite_records()), HISTORY, {})
    page = open(path).read()
    for name in dashboard.PLOT_NAMES:
        png = tmp_path / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"plots/{name}.png" in page
