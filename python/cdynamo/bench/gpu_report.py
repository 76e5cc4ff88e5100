"""The GPU benchmark's report from its records: anchors.md's table shape, geomean, bandwidth, launch
cost, targets, what was skipped; results.md and results.json. Assumes records of gpu_worker."""
import json
import os

from . import gpu_cases
from .report import format_value as _fmt
from .report import geomean

# The targets of the issue (ratios within one run; 3 µs is absolute, a CPU cost per launch).
COPY_FRACTION_TARGET = 0.85  # pointwise chain at >= 85% of the copy bandwidth
VS_TORCH_TARGET = 1.0  # every model at least as fast as torch.compile's inductor
GEOMEAN_TARGET = 1.10  # geomean >= 1.10x of it
COLD_RATIO_TARGET = 1 / 3  # cold compile at most a third of torch.compile's
LAUNCH_US_TARGET = 3.0  # CPU µs per kernel launch


def _ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0 or numerator <= 0:
        return None
    return numerator / denominator


def short_result(record):
    """One line for the progress output."""
    status = record.get("status")
    if status != "ok":
        return f"{status}: {record.get('error') or ''}"[:160]
    parts = []
    if record.get("first_call_s") is not None and record.get("phase") != "run":
        parts.append(f"first call {record['first_call_s']:.2f} s")
    if record.get("time_ms") is not None:
        parts.append(f"{record['time_ms']:.3f} ms")
    if record.get("us_per_launch") is not None:
        parts.append(f"{record['us_per_launch']:.2f} µs/launch")
    return "ok: " + ", ".join(parts)


class Results:
    """The latest record of each (case, system, phase), and which systems are cdynamo and its peer."""

    def __init__(self, records, systems):
        self.by_key = {(r["case"], r["system"], r["phase"]): r for r in records}
        # Copy probes by run: each memory-bound row is read against the copy of its own run.
        self.copies = {r.get("run_id"): r for r in records if r["case"] == "copy_bandwidth" and r["status"] == "ok"}
        # The columns: the first cdynamo and torch systems asked for, else the default ones (a
        # run of some systems into a folder that holds the others still shows all of them).
        self.cdynamo = next((s for s in systems if s.startswith("cdynamo:")), "cdynamo:inductor")
        self.torch = next((s for s in systems if s.startswith("torch:")), "torch:inductor")

    def get(self, case, system, phase=None):
        if system is None:
            return None
        if phase is None:
            phase = "run" if system == "eager" else "cold"
        return self.by_key.get((case, system, phase))

    def ok(self, case, system, phase=None):
        record = self.get(case, system, phase)
        return record if record and record.get("status") == "ok" else None

    def value(self, case, system, field, phase=None):
        record = self.ok(case, system, phase)
        return None if record is None else record.get(field)

    def measured(self, case, system, field, phase=None):
        """A field of the record whatever its status: a job that failed after its first call
        (e.g. the CUDA-graph check) still compiled in the time it says."""
        record = self.get(case, system, phase)
        return None if record is None else record.get(field)


def model_row(results, case):
    """The table's numbers for one model case: times, speedups, compile times, errors, notes."""
    name, cdynamo, torch = case.name, results.cdynamo, results.torch
    eager_ms = results.value(name, "eager", "time_ms")
    row = {"case": name, "title": case.title, "eager_ms": eager_ms}
    for label, system in (("cdynamo", cdynamo), ("torch", torch)):
        row[f"{label}_ms"] = results.value(name, system, "time_ms")
        row[f"{label}_speedup"] = _ratio(eager_ms, row[f"{label}_ms"])
        row[f"{label}_cold_s"] = results.measured(name, system, "first_call_s", "cold")
        row[f"{label}_warm_s"] = results.value(name, system, "first_call_s", "warm")
        row[f"{label}_err"] = results.measured(name, system, "max_rel_err")
        row[f"{label}_state"] = _state(results.get(name, system))
    row["eager_err"] = results.value(name, "eager", "max_rel_err")
    row["eager_state"] = _state(results.get(name, "eager"))
    row["vs_torch"] = _ratio(row["torch_ms"], row["cdynamo_ms"])
    row["cold_ratio"] = _ratio(row["cdynamo_cold_s"], row["torch_cold_s"])
    row["warm_ratio"] = _ratio(row["cdynamo_warm_s"], row["torch_warm_s"])
    row["notes"] = _notes(results, name)
    timed = [results.ok(name, system) for system in ("eager", cdynamo, torch)]
    if len({record.get("run_id") for record in timed if record}) > 1:
        row["notes"].append("its times come from different runs (resumed or merged): side by side only within a run")
    return row


def _state(record):
    """"ok", "error", "skipped", "timeout" or "missing" (never run)."""
    return "missing" if record is None else record.get("status") or "error"


def _notes(results, case_name):
    """One-line errors and compiler notes of every job of the case, labelled by system and phase."""
    notes = []
    for (case, system, phase), record in results.by_key.items():
        if case != case_name:
            continue
        label = f"{system}" + ("" if phase in ("run", "cold") else f" ({phase})")
        if record.get("status") in ("error", "timeout"):
            notes.append(f"{label}: {record.get('status')}: {record.get('error')}")
        if phase != "warm":
            notes += [f"{label}: {note}" for note in record.get("notes") or []]
        elif _cache_misses(record):  # a warm compile that compiled again is not a warm start
            notes.append(f"{label}: {_cache_misses(record)} compiled-graph cache misses")
    return notes


def _cache_misses(record):
    counters = record.get("inductor_counters") or {}
    return counters.get("graph_cache_miss", 0) + counters.get("fxgraph_cache_miss", 0)


def geomeans(rows):
    def over(key):
        values = [row[key] for row in rows if row.get(key)]
        return {"value": geomean(values), "count": len(values)}

    return {key: over(key) for key in ("cdynamo_speedup", "torch_speedup", "vs_torch", "cold_ratio", "warm_ratio")}


def _bandwidth_entry(results, case_name, system):
    """TB/s of one job and its fraction of the copy bandwidth of the same run (None without one)."""
    record = results.ok(case_name, system)
    if record is None or record.get("tbps") is None:
        return {"tbps": None, "fraction_of_copy": None}
    copy = results.copies.get(record.get("run_id"))
    copy_tbps = copy.get("tbps") if copy else None
    return {"tbps": record["tbps"], "copy_tbps": copy_tbps, "fraction_of_copy": _ratio(record["tbps"], copy_tbps)}


def bandwidth(results):
    """The copy bandwidth and, for each memory-bound case, each system's TB/s and its fraction."""
    rows = []
    measured = {case for case, _, _ in results.by_key}
    for case in gpu_cases.CASES:
        if case.kind != gpu_cases.MODEL or case.bytes_moved is None or case.name not in measured:
            continue
        row = {"case": case.name, "title": case.title}
        for label, system in (("eager", "eager"), ("cdynamo", results.cdynamo), ("torch", results.torch)):
            row[label] = _bandwidth_entry(results, case.name, system)
        rows.append(row)
    copies = {run: record["tbps"] for run, record in results.copies.items()}
    return {"copy_tbps": results.value("copy_bandwidth", "eager", "tbps"), "copy_tbps_by_run": copies,
            "copy_bytes": results.value("copy_bandwidth", "eager", "bytes_moved"), "rows": rows}


def launch_rows(results):
    rows = []
    for label, system in (("eager", "eager"), ("cdynamo", results.cdynamo), ("torch.compile", results.torch)):
        record = results.get("launch_overhead", system)
        if record is None:
            continue
        rows.append({"system": system, "label": label, "status": record.get("status"), "error": record.get("error"),
                     "us_per_launch": record.get("us_per_launch"), "variants": record.get("variants") or []})
    return rows


def _target(name, value, met, detail):
    return {"target": name, "value": value, "met": met, "detail": detail}


def _percent(fraction):
    return None if fraction is None else fraction * 100


def _cdynamo_failed(row):
    """cdynamo failed where torch.compile ran: a target that row cannot meet."""
    return row["cdynamo_state"] in ("error", "timeout") and row["torch_state"] == "ok"


def _every_row_target(name, rows, key, passes, what_fails):
    """A target every model must meet: met when all compared rows pass, listing those that fail;
    a model where cdynamo failed and torch.compile ran fails it too."""
    compared = [row for row in rows if row[key] is not None]
    failing = [f"{row['case']} {row[key]:.2f}" for row in compared if not passes(row[key])]
    failed = [row["case"] for row in rows if row[key] is None and _cdynamo_failed(row)]
    detail = f"{len(compared) - len(failing)}/{len(compared) + len(failed)} compared"
    if failing:
        detail += f"; {what_fails}: {', '.join(failing)}"
    if failed:
        detail += f"; cdynamo failed: {', '.join(failed)}"
    met = not (failing or failed) if compared or failed else None
    return _target(name, len(compared) - len(failing), met, detail)


def targets(rows, means, bandwidths, launches):
    """Each target of the issue: met (True), not met (False) or not measured (None)."""
    chain = next((r for r in bandwidths["rows"] if r["case"] == "pointwise_chain"), None)
    fraction = chain["cdynamo"]["fraction_of_copy"] if chain else None
    mean = means["vs_torch"]["value"]
    cost = next((r["us_per_launch"] for r in launches if r["label"] == "cdynamo"), None)
    return [
        _target(f"pointwise chain at >= {COPY_FRACTION_TARGET:.0%} of the copy bandwidth", fraction,
                None if fraction is None else fraction >= COPY_FRACTION_TARGET,
                _fmt(_percent(fraction), ".0f", "% of copy")),
        _every_row_target("every model at least as fast as torch.compile", rows, "vs_torch",
                          lambda ratio: ratio >= VS_TORCH_TARGET, "behind (×)"),
        _target(f"geomean >= {GEOMEAN_TARGET:.2f}× torch.compile", mean,
                None if mean is None else mean >= GEOMEAN_TARGET, _fmt(mean, ".2f", "×")),
        _reduce_overhead_target(rows),
        _every_row_target("cold compile at most 1/3 of torch.compile's on every model", rows, "cold_ratio",
                          lambda ratio: ratio <= COLD_RATIO_TARGET, "over (ratio)"),
        _target(f"at most {LAUNCH_US_TARGET:g} µs CPU per kernel launch", cost,
                None if cost is None else cost <= LAUNCH_US_TARGET, _fmt(cost, ".2f", " µs")),
    ]


def _reduce_overhead_target(rows):
    row = next((r for r in rows if r["case"] == "gpt2_reduce_overhead"), None)
    mine, theirs = (row["cdynamo_speedup"], row["torch_speedup"]) if row else (None, None)
    met = None if mine is None or theirs is None else mine >= theirs
    detail = f"cdynamo {_fmt(mine, '.2f', '×')} vs torch.compile {_fmt(theirs, '.2f', '×')} over eager"
    if row and row["cdynamo_state"] in ("error", "timeout"):
        met = False
        detail = f"cdynamo: {row['cdynamo_state']} (see the row's notes); torch.compile {_fmt(theirs, '.2f', '×')}"
    return _target('GPT-2 mode="reduce-overhead" at least torch.compile\'s speedup over eager', mine, met, detail)


def skipped_jobs(records):
    return [f"{r['case']} {r['system']} {r['phase']}: {r.get('status')}: {r.get('error')}"
            for r in records if r.get("status") in ("skipped", "timeout")]


def build_report(records, info, systems):
    results = Results(records, systems)
    rows = [model_row(results, case) for case in gpu_cases.CASES if case.kind == gpu_cases.MODEL
            and any(key[0] == case.name for key in results.by_key)]
    means = geomeans(rows)
    bandwidths = bandwidth(results)
    launches = launch_rows(results)
    return {"run": info, "rows": rows, "geomean": means, "bandwidth": bandwidths, "launch": launches,
            "targets": targets(rows, means, bandwidths, launches), "skipped": skipped_jobs(records),
            "records": records}


# ---------------------------------------------------------------- Markdown


def _time_cell(row, label):
    state = row[f"{label}_state"]
    if state != "ok":
        return state
    return f"{_fmt(row[f'{label}_ms'], '.3f')} ({_fmt(row[f'{label}_speedup'], '.2f', '×')})"


def _pair(first, second, ratio):
    if first is None and second is None:
        return "—"
    text = f"{_fmt(first, '.2f')} / {_fmt(second, '.2f')}"
    return text + (f" ({ratio:.2f}×)" if ratio is not None else "")


def markdown_table(rows, means):
    lines = [
        "| model | cold compile s: cdynamo / torch.compile | warm compile s: cdynamo / torch.compile | eager ms "
        "| cdynamo ms (vs eager) | torch.compile ms (vs eager) | cdynamo vs torch.compile "
        "| max error: eager / cdynamo / torch.compile | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        errors = " / ".join(_fmt(row[f"{label}_err"], ".1e") for label in ("eager", "cdynamo", "torch"))
        notes = "; ".join(row["notes"]).replace("|", "/")
        lines.append(
            f"| {row['title']} | {_pair(row['cdynamo_cold_s'], row['torch_cold_s'], row['cold_ratio'])} "
            f"| {_pair(row['cdynamo_warm_s'], row['torch_warm_s'], row['warm_ratio'])} "
            f"| {_fmt(row['eager_ms'], '.3f') if row['eager_state'] == 'ok' else row['eager_state']} "
            f"| {_time_cell(row, 'cdynamo')} | {_time_cell(row, 'torch')} | {_fmt(row['vs_torch'], '.2f', '×')} "
            f"| {errors} | {notes} |"
        )

    def mean(key):
        entry = means[key]
        return f"{_fmt(entry['value'], '.2f', '×')} (of {entry['count']})" if entry["count"] else "—"

    lines.append(f"| **geomean** | {mean('cold_ratio')} | {mean('warm_ratio')} | | {mean('cdynamo_speedup')} "
                 f"| {mean('torch_speedup')} | **{mean('vs_torch')}** | | |")
    return "\n".join(lines) + "\n"


def markdown_bandwidth(bandwidths):
    copy_tbps = bandwidths["copy_tbps"]
    mib = (bandwidths["copy_bytes"] or 0) / 2 / 2**20
    size = f"{mib / 1024:g} GiB" if mib >= 1024 else f"{mib:g} MiB"
    lines = [f"Device-to-device copy (`dst.copy_(src)`, {size} each way, bytes read + written): "
             f"**{_fmt(copy_tbps, '.3g', ' TB/s')}**"]
    if len(bandwidths["copy_tbps_by_run"]) > 1:  # merged or resumed: each row against its own run's
        runs = ", ".join(f"{tbps:.3g} ({run})" for run, tbps in bandwidths["copy_tbps_by_run"].items())
        lines.append(f"(this is the last run's; by run: {runs}; each row below is read against its own run's copy)")
    lines.append("")
    if bandwidths["rows"]:
        lines += ["| case (bytes read + written once) | eager | cdynamo | torch.compile |", "|---|---|---|---|"]
        for row in bandwidths["rows"]:
            cells = [f"{_fmt(row[label]['tbps'], '.3g', ' TB/s')} "
                     f"({_fmt(_percent(row[label]['fraction_of_copy']), '.0f', '% of copy')})"
                     for label in ("eager", "cdynamo", "torch")]
            lines.append(f"| {row['title']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_launch(launches):
    if not launches:
        return "not measured\n"
    lines = ["| system | CPU µs per launch (slope) | CPU µs per call | kernels per call | kernels counted by |",
             "|---|---|---|---|---|"]
    for row in launches:
        if row["status"] != "ok":
            lines.append(f"| {row['label']} | {row['status']}: {row['error']} | | | |")
            continue
        variants = row["variants"]
        calls = " / ".join(f"{v['cpu_us_per_call']:.1f}" for v in variants)
        kernels = " / ".join(str(v["kernels"]) for v in variants)
        ops = " / ".join(str(v["ops"]) for v in variants)
        counted_by = variants[0].get("counted_by", "") if variants else ""
        lines.append(f"| {row['label']} | **{_fmt(row['us_per_launch'], '.2f')}** | {calls} ({ops} ops) | {kernels} "
                     f"| {counted_by} |")
    return "\n".join(lines) + "\n"


def markdown_targets(found):
    words = {True: "met", False: "NOT met", None: "not measured"}
    return "\n".join(f"- **{words[t['met']]}**: {t['target']}: {t['detail']}" for t in found) + "\n"


def markdown(built):
    info = built["run"]
    header = (f"# GPU benchmark: eager, cdynamo, torch.compile\n\n"
              f"{info.get('device_name') or info.get('device')}, torch {info.get('torch_version')}, "
              f"Triton {info.get('triton_version')}, {info.get('dtype')}"
              f"{' (TF32 matmuls and convolutions on)' if info.get('dtype') == 'float32' else ''}, "
              f"{'--small shapes (plumbing only, not a benchmark), ' if info.get('small') else ''}"
              f"commit {info.get('git_commit') or '?'}, {info.get('time')}"
              + (f", {info['wall_s']:.0f} s" if info.get("wall_s") else "") + ".\n\n"
              "Each (model, system) in its own process; cold compile: first call in a fresh process with "
              "empty caches; warm compile: first call in a second fresh process on those caches; times: "
              "median per call over batches of calls between device synchronizations; max error: "
              "max|out − fp64| / max|fp64| against the model in float64, eagerly, same weights and inputs.\n\n")
    return (header + markdown_table(built["rows"], built["geomean"])
            + "\n## Bandwidth\n\n" + markdown_bandwidth(built["bandwidth"])
            + "\n## Launch overhead\n\nIndependent `sin` kernels on 32 to 95 floats (each input its own size) per call, timed on the CPU side "
              "(the device is synchronized after the timer stops); the per-launch cost is the slope between "
              "the two variants, so what a call costs once (guards, the call) cancels out.\n\n"
            + markdown_launch(built["launch"])
            + "\n## Targets\n\n" + markdown_targets(built["targets"])
            + "\n## Skipped or not finished\n\n"
            + ("\n".join(f"- {line}" for line in built["skipped"]) or "nothing") + "\n")


def write_report(out_dir, records, info, systems):
    """results.md and results.json under out_dir; returns the report with its "markdown"."""
    built = build_report(records, info, systems)
    built["markdown"] = markdown(built)
    with open(os.path.join(out_dir, "results.md"), "w") as out:
        out.write(built["markdown"])
    with open(os.path.join(out_dir, "results.json"), "w") as out:
        json.dump({key: value for key, value in built.items() if key != "markdown"}, out, indent=1, default=str)
    return built
