"""The static HTML dashboard: summary and per-model tables, with PNG plots drawn by matplotlib
when it is installed (speedups, compile times, geomeans, history); tables alone otherwise."""
import html
import math
import os

from .report import format_speedup

PLOT_NAMES = ("speedup", "compile_time", "geomean", "history")


def _matplotlib_pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")  # files only: no display on a server or in CI
    import matplotlib.pyplot as pyplot

    return pyplot


def _label(row):
    return row["model"] if row.get("mode", "infer") == "infer" else f"{row['model']} ({row['mode']})"


def _drawable(value):
    return value is not None and value > 0 and math.isfinite(value)


def _color(backend):
    """A fixed colour per backend, the same in every plot and every run."""
    from .backends import ALL_BACKENDS

    palette = ["#777777", "#1f77b4", "#17becf", "#2ca02c", "#ff7f0e", "#d62728"]
    index = ALL_BACKENDS.index(backend) if backend in ALL_BACKENDS else len(palette) + hash(backend) % 4
    return palette[index] if index < len(palette) else None


def _plain_log_axis(axes):
    """Log scale labelled 0.5, 1, 2 rather than 5×10⁻¹; minor ticks labelled only when the axis
    spans less than a decade (otherwise their labels overlap). Call after drawing."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axes.yaxis.set_major_formatter(plain)
    low, high = axes.get_ylim()
    axes.yaxis.set_minor_formatter(plain if high / max(low, 1e-12) < 10 else NullFormatter())
    axes.tick_params(axis="y", which="minor", labelsize="x-small")


def _grouped_bars(pyplot, path, rows, backends, value_of, ylabel, title, log=True, reference_line=None):
    """Bars per (model, mode) group, one per backend; nothing drawn for missing values."""
    labels = list(dict.fromkeys(_label(row) for row in rows))
    by_key = {(_label(row), row["backend"]): value_of(row) for row in rows}
    # Backends with nothing to draw (skipped, all errors) stay out of the legend.
    backends = [b for b in backends if any(_drawable(by_key.get((label, b))) for label in labels)]
    width = 0.8 / max(1, len(backends))
    figure, axes = pyplot.subplots(figsize=(max(6, 1.1 * len(labels) + 2), 4.5))
    for i, backend in enumerate(backends):
        positions, heights = [], []
        for j, label in enumerate(labels):
            value = by_key.get((label, backend))
            if _drawable(value):
                positions.append(j + (i - (len(backends) - 1) / 2) * width)
                heights.append(value)
        axes.bar(positions, heights, width, label=backend, color=_color(backend))
    if reference_line is not None:
        axes.axhline(reference_line, color="black", linewidth=0.8)
    if log:
        _plain_log_axis(axes)
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=30, ha="right")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)


def make_plots(summary, history, plot_dir):
    """Writes the PNGs into plot_dir; returns {plot name: file name}, empty without matplotlib."""
    pyplot = _matplotlib_pyplot()
    if pyplot is None:
        return {}
    os.makedirs(plot_dir, exist_ok=True)
    rows = summary["rows"]
    compiled_backends = [b for b in summary["backends"] if b != "eager"]
    plots = {}
    if any(row.get("speedup") for row in rows if row["backend"] != "eager"):
        _grouped_bars(
            pyplot, os.path.join(plot_dir, "speedup.png"), [r for r in rows if r["backend"] != "eager"],
            compiled_backends, lambda r: r.get("speedup"), "speedup over eager (×, log)",
            "Speedup per model and backend (median)", reference_line=1.0,
        )
        plots["speedup"] = "speedup.png"
    if any(row.get("cold_compile_s") for row in rows if row["backend"] != "eager"):
        _grouped_bars(
            pyplot, os.path.join(plot_dir, "compile_time.png"), [r for r in rows if r["backend"] != "eager"],
            compiled_backends, lambda r: r.get("cold_compile_s"), "cold compile, first call (s, log)",
            "Cold compile time per model and backend",
        )
        plots["compile_time"] = "compile_time.png"
    geomeans = [(b, summary["geomeans"][b]["speedup"]) for b in compiled_backends if summary["geomeans"][b]["speedup"]]
    if geomeans:
        figure, axes = pyplot.subplots(figsize=(6, 3.5))
        axes.bar([b for b, _ in geomeans], [v for _, v in geomeans], color=[_color(b) for b, _ in geomeans])
        axes.axhline(1.0, color="black", linewidth=0.8)
        for i, (_, value) in enumerate(geomeans):
            axes.annotate(f"{value:.2f}×", (i, value), ha="center", va="bottom")
        axes.set_ylabel("geomean speedup (×)")
        axes.set_title("Geomean speedup over the models that ran")
        figure.tight_layout()
        figure.savefig(os.path.join(plot_dir, "geomean.png"), dpi=90)
        pyplot.close(figure)
        plots["geomean"] = "geomean.png"
    if history:
        figure, axes = pyplot.subplots(figsize=(7, 3.5))
        backends = list(dict.fromkeys(b for entry in history for b in entry.get("geomeans", {}) if b != "eager"))
        for backend in backends:
            points = [
                (i, entry["geomeans"][backend]["speedup"])
                for i, entry in enumerate(history)
                if (entry["geomeans"].get(backend) or {}).get("speedup")
            ]
            if points:
                axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=backend, color=_color(backend))
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xticks(range(len(history)))
        axes.set_xticklabels([entry.get("time", "")[:16] for entry in history], rotation=30, ha="right", fontsize="small")
        axes.set_ylabel("geomean speedup (×)")
        axes.set_title("Geomean speedup per backend, run after run")
        if backends:
            axes.legend(fontsize="small")
        figure.tight_layout()
        figure.savefig(os.path.join(plot_dir, "history.png"), dpi=90)
        pyplot.close(figure)
        plots["history"] = "history.png"
    return plots


def _cell(value, spec=None, suffix=""):
    if value is None:
        return "—"
    if spec and isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return html.escape(str(value))
        return html.escape(format(value, spec) + suffix)
    return html.escape(str(value))


_STATUS_CLASS = {"ok": "ok", "graph_breaks": "warn", "fallback": "warn", "error": "bad", "skipped": "skip"}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; max-width: 28em; }
.ok { background: #e6f4e6; } .warn { background: #fff4d6; } .bad { background: #fbe3e3; }
.skip { color: #888; } img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""


def render_html(summary, history, plots, run_info):
    """The dashboard page as a string; plots are file names relative to the page."""
    info = " · ".join(
        f"{key}: {html.escape(str(run_info[key]))}"
        for key in ("time", "device", "threads", "dtype", "mode", "torch_version", "python_version", "cpu", "git_commit")
        if run_info.get(key) not in (None, "")
    )
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>cdynamo benchmark dashboard</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>cdynamo benchmark dashboard</h1>",
        f"<p>{info}</p>",
        "<p>Every figure is measured side by side in one process per model: same inputs, same threads. "
        "Speedup = eager median ÷ backend median (IQR in brackets); max rel err = max |out − fp64 ref| ÷ "
        "max |fp64 ref|.</p>",
        "<h2>Geomeans</h2><table><tr><th>backend</th><th>geomean speedup</th><th>passed</th><th>full graph</th>"
        "<th>geomean cold compile s</th><th>geomean warm compile s</th></tr>",
    ]
    for backend, value in summary["geomeans"].items():
        parts.append(
            f"<tr><td class='text'>{html.escape(backend)}</td><td>{_cell(value['speedup'], '.2f', '×')}</td>"
            f"<td>{value['passed']}/{value['attempted']}</td><td>{value['full_graph']}/{value['attempted']}</td>"
            f"<td>{_cell(value['cold_compile_s'], '.2f')}</td><td>{_cell(value['warm_compile_s'], '.2f')}</td></tr>"
        )
    parts.append("</table>")
    for name in PLOT_NAMES:
        if name in plots:
            parts.append(f"<img src='plots/{html.escape(plots[name])}' alt='{name} plot'>")
    if not plots:
        parts.append("<p><em>No plots: matplotlib is not installed in this environment.</em></p>")
    parts.append(
        "<h2>Per model and backend</h2><table><tr><th>model</th><th>mode</th><th>backend</th><th>works</th>"
        "<th>graphs</th><th>max rel err</th><th>eager ms</th><th>ms</th><th>speedup (IQR)</th>"
        "<th>cold compile s</th><th>warm compile s</th><th>overhead µs</th><th>peak mem MB</th></tr>"
    )
    for row in summary["rows"]:
        status_class = _STATUS_CLASS.get(row.get("status"), "")
        reason = row.get("reason") or ""
        parts.append(
            f"<tr class='{status_class}'><td class='text'>{html.escape(row['model'])}</td>"
            f"<td class='text'>{html.escape(str(row.get('mode', '')))}</td>"
            f"<td class='text'>{html.escape(row['backend'])}</td>"
            f"<td class='text' title='{html.escape(reason)}'>{html.escape(row.get('works') or '')}</td>"
            f"<td>{_cell(row.get('graphs'))}</td><td>{_cell(row.get('max_rel_err'), '.1e')}</td>"
            f"<td>{_cell(row.get('eager_time_ms'), '.2f')}</td><td>{_cell(row.get('time_ms'), '.2f')}</td>"
            f"<td>{html.escape(format_speedup(row))}</td><td>{_cell(row.get('cold_compile_s'), '.2f')}</td>"
            f"<td>{_cell(row.get('warm_compile_s'), '.2f')}</td><td>{_cell(row.get('overhead_us'), '.1f')}</td>"
            f"<td>{_cell(row.get('peak_mem_mb'), '.0f')}</td></tr>"
        )
    parts.append("</table>")
    if history:
        parts.append(
            "<h2>History</h2><table><tr><th>time</th><th>commit</th><th>models</th>"
            + "".join(f"<th>{html.escape(b)}</th>" for b in _history_backends(history))
            + "</tr>"
        )
        for entry in history:
            cells = "".join(
                f"<td>{_cell((entry['geomeans'].get(b) or {}).get('speedup'), '.2f', '×')}</td>"
                for b in _history_backends(history)
            )
            parts.append(
                f"<tr><td class='text'>{html.escape(entry.get('time', ''))}</td>"
                f"<td class='text'>{html.escape(str(entry.get('git_commit', ''))[:10])}</td>"
                f"<td>{entry.get('models', '')}</td>{cells}</tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _history_backends(history):
    return list(dict.fromkeys(b for entry in history for b in entry.get("geomeans", {}) if b != "eager"))


def write_dashboard(out_dir, summary, history, run_info):
    """Writes out_dir/index.html and out_dir/plots/*.png; returns the page's path."""
    plots = make_plots(summary, history, os.path.join(out_dir, "plots"))
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as page:
        page.write(render_html(summary, history, plots, run_info))
    return path
