"""Fake measurement records, shaped like the worker's, for testing the harness without timing."""


def fake_record(model, backend, time_ms, eager_ms=10.0, status="ok", **fields):
    record = {
        "run_id": "test", "model": model, "family": "micro", "mode": "infer", "backend": backend,
        "device": "cpu", "dtype": "float32", "threads": 2, "small": False, "status": status,
        "works": {"ok": "yes", "error": "error: boom"}.get(status, status), "reason": "",
        "phase": "final", "graphs": 1, "graph_breaks": 0, "max_rel_err": 1e-7,
        "cold_compile_s": 1.5, "warm_compile_s": 0.2, "peak_mem_mb": 12.0, "overhead_us": 1.0,
        "torch_version": "2.x", "timestamp": "2026-01-01T00:00:00",
    }
    if time_ms is not None:
        record.update(
            time_ms=time_ms, time_p25_ms=time_ms * 0.95, time_p75_ms=time_ms * 1.05,
            eager_time_ms=eager_ms, eager_time_p25_ms=eager_ms * 0.95, eager_time_p75_ms=eager_ms * 1.05,
            repeats=9,
        )
    record.update(fields)
    return record


def fake_suite_records():
    """Two models, three backends; one backend fails on one model."""
    return [
        fake_record("mlp", "eager", 10.0),
        fake_record("mlp", "cdynamo:eager", 5.0),
        fake_record("mlp", "torch:inductor", 8.0),
        fake_record("resnet", "eager", 20.0, eager_ms=20.0),
        fake_record("resnet", "cdynamo:eager", 10.0, eager_ms=20.0, status="graph_breaks", graph_breaks=2),
        fake_record("resnet", "torch:inductor", None, status="error", reason="RuntimeError: boom"),
    ]
