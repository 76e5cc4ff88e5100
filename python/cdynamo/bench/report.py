"""From measurement records to results: the latest record per model/backend, speedups and
geomeans, CSV and JSON files (with a lossless round trip), a Markdown table, and the history."""
import csv
import json
import math
import os
import time

from .backends import ALL_BACKENDS, order_backends

# What identifies one measurement: a rerun with the same configuration replaces it.
KEY_FIELDS = ("model", "mode", "backend", "device", "dtype", "threads", "small")

# Columns of results.csv, in order, with how to read them back.
CSV_FIELDS = {
    "model": str, "family": str, "mode": str, "backend": str, "device": str, "dtype": str,
    "threads": int, "small": "bool", "status": str, "works": str, "reason": str,
    "graphs": int, "graph_breaks": int, "max_rel_err": float,
    "eager_time_ms": float, "time_ms": float, "time_p25_ms": float, "time_p75_ms": float,
    "speedup": float, "speedup_low": float, "speedup_high": float,
    "cold_compile_s": float, "warm_compile_s": float, "overhead_us": float,
    "peak_mem_mb": float, "process_max_rss_mb": float, "repeats": int,
    "torch_version": str, "timestamp": str, "run_id": str,
}

# A backend that "works" for the geomean: it ran and gave a time (graph breaks and fallbacks
# included: they are what a user gets), as PyTorch's dashboard counts passing models.
WORKING_STATUSES = ("ok", "graph_breaks", "fallback")


def record_key(record):
    return tuple(record.get(field) for field in KEY_FIELDS)


def load_records(path):
    """Every record of a JSONL file, in file order; a torn last line (a killed run) is skipped."""
    records = []
    if not os.path.exists(path):
        return records
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def append_records(path, records):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as out:
        for record in records:
            out.write(json.dumps(record, default=str) + "\n")


def latest_records(records):
    """The last record per key: what a resumed or repeated run leaves as the current result."""
    latest = {}
    for record in records:
        latest[record_key(record)] = record
    return list(latest.values())


def is_done(record):
    """Whether a resumed run may skip this model/backend: measured, or failed for a reason a
    rerun would not change. Skipped ones (missing package or backend) are retried."""
    return record.get("phase", "final") == "final" and record.get("status") not in (None, "skipped")


def with_speedups(record):
    """A copy of `record` with speedup = eager median / this median (both from the same process),
    and a spread from the quartiles: low = eager p25 / this p75, high = eager p75 / this p25."""
    record = dict(record)
    time_ms, eager_ms = record.get("time_ms"), record.get("eager_time_ms")
    if time_ms and eager_ms:
        record["speedup"] = eager_ms / time_ms
        low_num, high_num = record.get("eager_time_p25_ms", eager_ms), record.get("eager_time_p75_ms", eager_ms)
        record["speedup_low"] = low_num / record.get("time_p75_ms", time_ms)
        record["speedup_high"] = high_num / record.get("time_p25_ms", time_ms)
    return record


def geomean(values):
    """Geometric mean of the positive finite values; None if there are none."""
    usable = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not usable:
        return None
    return math.exp(sum(math.log(v) for v in usable) / len(usable))


def summarize(records):
    """The results of the latest records: {"rows": [...], "backends": [...], "models": [...],
    "geomeans": {backend: {...}}} with rows in model order, then backend order."""
    rows = [with_speedups(record) for record in latest_records(records)]
    backends = order_backends(row["backend"] for row in rows)
    models = list(dict.fromkeys(row["model"] for row in rows))
    backend_rank = {name: i for i, name in enumerate(backends)}
    model_rank = {name: i for i, name in enumerate(models)}
    rows.sort(key=lambda row: (model_rank[row["model"]], row.get("mode", ""), backend_rank[row["backend"]]))
    geomeans = {}
    for backend in backends:
        mine = [row for row in rows if row["backend"] == backend and row.get("status") != "skipped"]
        working = [row for row in mine if row.get("status") in WORKING_STATUSES and row.get("speedup")]
        geomeans[backend] = {
            "speedup": geomean(row["speedup"] for row in working),
            "cold_compile_s": geomean(row.get("cold_compile_s") for row in working),
            "warm_compile_s": geomean(row.get("warm_compile_s") for row in working),
            "passed": len(working),
            "attempted": len(mine),
            "full_graph": sum(1 for row in mine if row.get("status") == "ok"),
        }
    return {"rows": rows, "backends": backends, "models": models, "geomeans": geomeans}


def write_json(path, summary, run_info=None):
    with open(path, "w") as out:
        json.dump({"run": run_info or {}, **summary}, out, indent=1, default=str)


def write_csv(path, rows):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(CSV_FIELDS), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({field: _csv_cell(row.get(field)) for field in CSV_FIELDS})


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # repr round-trips floats exactly
    return value


def read_csv(path):
    """Rows of a results.csv with their types back (empty cells are None)."""
    rows = []
    with open(path, newline="") as lines:
        for raw in csv.DictReader(lines):
            row = {}
            for field, kind in CSV_FIELDS.items():
                text = raw.get(field, "")
                if text == "" and kind is not str:
                    row[field] = None
                elif kind == "bool":
                    row[field] = text == "True"
                else:
                    row[field] = kind(text)
            rows.append(row)
    return rows


# ---------------------------------------------------------------- history


def history_entry(summary, run_info):
    """One line of history.jsonl: when, what, and the geomeans per backend of this run."""
    return {
        "time": run_info.get("time") or time.strftime("%Y-%m-%dT%H:%M:%S"),
        "run_id": run_info.get("run_id", ""),
        "git_commit": run_info.get("git_commit", ""),
        "config": {key: run_info.get(key) for key in ("device", "dtype", "threads", "mode", "quick", "small")},
        "models": len(summary["models"]),
        "geomeans": {
            backend: {key: value[key] for key in ("speedup", "cold_compile_s", "passed", "attempted")}
            for backend, value in summary["geomeans"].items()
        },
    }


def append_history(path, entry):
    append_records(path, [entry])


def load_history(path):
    return load_records(path)


# ---------------------------------------------------------------- Markdown


def format_value(value, spec, suffix=""):
    """value formatted with spec (and a suffix), "—" when missing."""
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return format(value, spec) + suffix


def format_speedup(row):
    """"1.47× (1.41–1.52)": median speedup and the quartile spread."""
    if not row.get("speedup"):
        return "—"
    return f"{row['speedup']:.2f}× ({row['speedup_low']:.2f}–{row['speedup_high']:.2f})"


def markdown_table(summary):
    """The dashboard's main table as Markdown: one line per model/mode/backend."""
    lines = [
        "| model | mode | backend | works | max rel err | eager ms | ms | speedup (IQR) | cold compile s "
        "| warm compile s | overhead µs | peak mem MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary["rows"]:
        lines.append(
            "| {model} | {mode} | {backend} | {works} | {err} | {eager} | {ms} | {speedup} | {cold} | {warm} "
            "| {overhead} | {mem} |".format(
                model=row["model"], mode=row.get("mode", ""), backend=row["backend"],
                works=(row.get("works") or "").replace("|", "/"), err=format_value(row.get("max_rel_err"), ".1e"),
                eager=format_value(row.get("eager_time_ms"), ".2f"), ms=format_value(row.get("time_ms"), ".2f"),
                speedup=format_speedup(row), cold=format_value(row.get("cold_compile_s"), ".2f"),
                warm=format_value(row.get("warm_compile_s"), ".2f"), overhead=format_value(row.get("overhead_us"), ".1f"),
                mem=format_value(row.get("peak_mem_mb"), ".0f"),
            )
        )
    lines += ["", "| backend | geomean speedup | passed | full graph | geomean cold compile s |", "|---|---|---|---|---|"]
    for backend, value in summary["geomeans"].items():
        lines.append(
            f"| {backend} | {format_value(value['speedup'], '.2f', '×')} | {value['passed']}/{value['attempted']} "
            f"| {value['full_graph']}/{value['attempted']} | {format_value(value['cold_compile_s'], '.2f')} |"
        )
    return "\n".join(lines) + "\n"


def _pivot_cell(row, value_key, spec, suffix):
    status = row.get("status")
    if status == "skipped":
        return "skipped"
    if status == "error":
        return "error"
    value = row.get(value_key)
    text = format_value(value, spec, suffix)
    if status == "graph_breaks":
        text += f" ({row.get('graph_breaks')} breaks)"
    elif status == "fallback":
        text += " (ran eagerly)"
    return text


def markdown_pivot(summary, value_key="speedup", spec=".2f", suffix="×"):
    """One line per model and mode, one column per backend: the speedup (or another value) with
    graph breaks noted; the compact table for a README."""
    backends = [b for b in summary["backends"] if b != "eager"]
    header = "| model | eager ms | " + " | ".join(backends) + " |"
    lines = [header, "|---" * (len(backends) + 2) + "|"]
    groups = {}
    for row in summary["rows"]:
        groups.setdefault((row["model"], row.get("mode", "infer")), {})[row["backend"]] = row
    for (model, mode), by_backend in groups.items():
        label = model if mode == "infer" else f"{model} ({mode})"
        eager_ms = next((r.get("eager_time_ms") for r in by_backend.values() if r.get("eager_time_ms")), None)
        cells = [_pivot_cell(by_backend[b], value_key, spec, suffix) if b in by_backend else "—" for b in backends]
        lines.append(f"| {label} | {format_value(eager_ms, '.2f')} | " + " | ".join(cells) + " |")
    geomean_cells = [
        format_value(summary["geomeans"][b][value_key], spec, suffix) if value_key in summary["geomeans"][b] else ""
        for b in backends
    ]
    if value_key in ("speedup", "cold_compile_s", "warm_compile_s"):
        lines.append("| **geomean** | | " + " | ".join(geomean_cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "ALL_BACKENDS", "CSV_FIELDS", "KEY_FIELDS", "append_history", "append_records", "geomean",
    "history_entry", "is_done", "latest_records", "load_history", "load_records", "markdown_pivot", "markdown_table",
    "read_csv", "record_key", "summarize", "with_speedups", "write_csv", "write_json",
]
