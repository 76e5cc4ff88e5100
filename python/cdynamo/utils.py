"""Counters, debug logging and warnings that the C++ core calls to report what it did.

Every function here is a stable entry point of the core: keep names and signatures.
"""
import collections
import os
import sys
import warnings

from . import config

# counters[group][key] -> count. Groups: "stats" (calls_captured, unique_graphs, frames_compiled,
# frames_fallback), "graph_break" (reason -> count), "recompiles" ("code: reason" -> count).
# Cleared in place, never rebound: `cdynamo.counters` is this same object.
counters = collections.defaultdict(collections.Counter)

# timings[phase] -> seconds spent compiling, summed over graphs: "compile_frame" (the whole
# frame compile, backend included), "backend" (both also as thread CPU time: "*_cpu"), and the inductor's "graph_cache_key",
# "graph_cache_load", "aten_graph", "lower", "schedule", "codegen", "kernels" (cache lookup,
# g++ or Triton's compiler), "executor", "triton_selfcheck" (once per GPU, inside "backend"). bench/warm_start.py reads them; testing.reset_counters() clears them too.
timings = collections.Counter()


def cache_root():
    """cdynamo's cache folder (kernels, compiled graphs, Triton builds), resolved as the C++
    kernel cache resolves it (compiled_program.cpp): config.cache_dir, else $CDYNAMO_CACHE_DIR,
    else ~/.cache/cdynamo."""
    root = config.cache_dir
    if root is not None:
        root = os.path.expanduser(os.fspath(root))
    if not root:
        root = os.environ.get("CDYNAMO_CACHE_DIR") or os.path.join(os.environ.get("HOME") or "/tmp", ".cache", "cdynamo")
    return root


def log_and_warn_once(kind, message, key, warned, stacklevel=2):
    """Logs message under kind every time and warns with it the first time key is seen in the
    set `warned` (one warning per reason, as users want; the log keeps the full history)."""
    log(kind, message)
    if key not in warned:
        warned.add(key)
        warnings.warn(message, stacklevel=stacklevel + 1)


def add_time(phase, seconds):
    timings[phase] += seconds


# fx node kinds that are calls: what a graph's op count counts (as torch.fx.symbolic_trace would).
CALL_OPS = frozenset({"call_function", "call_method", "call_module"})


def is_debug_enabled(kind):
    """Whether `kind` output is on; lets callers skip formatting costly messages."""
    return kind in config.debug


def log(kind, msg):
    """Print `msg` (a string, or a callable producing one) to stderr if `kind` is in config.debug."""
    if kind not in config.debug:
        return
    if callable(msg):
        msg = msg()
    text = str(msg).rstrip("\n")
    prefix = f"[cdynamo:{kind}] "
    sys.stderr.write(prefix + text.replace("\n", "\n" + prefix) + "\n")
    sys.stderr.flush()


def count_calls(graph_module):
    """Number of call nodes in a torch.fx.GraphModule (or Graph): one per captured torch call."""
    graph = getattr(graph_module, "graph", graph_module)
    return sum(1 for node in graph.nodes if node.op in CALL_OPS)


def record_graph(code_name, graph_module):
    """A graph was captured for `code_name` and is about to go to the backend."""
    stats = counters["stats"]
    stats["unique_graphs"] += 1
    stats["calls_captured"] += count_calls(graph_module)
    log("graphs", lambda: f"graph for {code_name}:\n{graph_module.graph}")


def record_frame_compiled(code_name):
    """A frame got a new cache entry (transformed code + guards)."""
    counters["stats"]["frames_compiled"] += 1


def record_graph_break(reason):
    """Tracing stopped at an unsupported construct; `reason` names it and the user's file:line."""
    counters["graph_break"][reason] += 1
    log("breaks", reason)


def record_frame_fallback(code_name, reason):
    """A frame runs its original bytecode (unsupported code, internal error or failing backend)."""
    counters["stats"]["frames_fallback"] += 1
    record_graph_break(reason)


def record_recompile(code_name, reason):
    """A frame was compiled again because a guard of every cache entry failed; `reason` says
    which guard failed in user terms, e.g. "x: dtype changed from torch.float32 to torch.float64"."""
    counters["recompiles"][f"{code_name}: {reason}"] += 1
    log("recompiles", f"recompiling {code_name}: {reason}")


def warn_cache_size_limit(code_name, filename, lineno, failing_guard):
    """Called once per code object when it reaches config.cache_size_limit entries."""
    counters["stats"]["cache_limit_hits"] += 1
    warnings.warn(
        f"cdynamo: {code_name} ({filename}:{lineno}) reached config.cache_size_limit="
        f"{config.cache_size_limit}; it now runs eagerly. The guard that kept failing: "
        f"{failing_guard}. Make that value constant, or raise config.cache_size_limit.",
        RuntimeWarning,
        stacklevel=2,
    )


def record_loop_break_limit(code_name, filename, lineno):
    """Called once per loop whose body broke the graph in config.cache_size_limit successive
    iterations, each compiled as a resume function of its own: the rest of the loop runs eagerly
    (the functions it calls are still compiled on their own)."""
    counters["stats"]["loops_left_eager"] += 1
    log("graphs", f"{code_name} ({filename}:{lineno}): the graph broke inside a loop in "
                  f"{config.cache_size_limit} iterations; the loop's further iterations run eagerly "
                  "(remove the break to compile the whole loop, or raise config.cache_size_limit)")


def warn_fallback(code_name, filename, lineno, reason):
    """Called when config.suppress_errors turns an error into eager execution of a frame."""
    warnings.warn(
        f"cdynamo: {code_name} ({filename}:{lineno}) runs eagerly: {reason}. "
        "Set cdynamo.config.suppress_errors = False to raise instead.",
        RuntimeWarning,
        stacklevel=2,
    )


def _longest_prefix(filename, prefixes):
    return max((len(prefix) for prefix in prefixes if filename.startswith(prefix)), default=-1)


def is_skipped_file(filename):
    """Whether frames of `filename` are never traced: the longest matching prefix among
    config.skip_dirs and config.trace_dirs decides (so site-packages inside the standard library
    directory is traced, while torch inside site-packages is skipped); config.inline_only_files
    are traced only from traced code."""
    return any(_skipped_by_prefix(form) or form in config.inline_only_files for form in _path_forms(filename))


def _path_forms(filename):
    """co_filename keeps the path as imported ("bench/../python/cdynamo/utils.py", a symlink):
    decisions are made on its normalised forms (<string>, <frozen ...>: no directory, itself)."""
    if filename.startswith("<"):
        return {filename}
    return {os.path.abspath(filename), os.path.realpath(filename)}


def inline_refusal(filename):
    """Why a call from traced code into a function of `filename` is not traced (it breaks the
    graph with this reason), or None: cdynamo's and torch's own files are not (except
    config.trace_dirs); the standard library is, except config.never_traced_stdlib."""
    skipped = [form for form in _path_forms(filename) if _skipped_by_prefix(form)]
    if not skipped:
        return None
    for form in skipped:
        stdlib = max((p for p in config._stdlib_dirs if form.startswith(p)), key=len, default=None)
        if stdlib is None or _longest_prefix(form, config.skip_dirs) > len(stdlib):
            continue  # torch, cdynamo or site-packages inside the standard library's directory
        relative = form[len(stdlib):].lstrip(os.sep)
        top = relative.split(os.sep, 1)[0]
        top = top[:-3] if top.endswith(".py") else top
        why = config.never_traced_stdlib.get(top)
        return f"the standard library's {top} module is not traced ({why})" if why else None
    return "library code is not traced into; it runs eagerly"


def _skipped_by_prefix(filename):
    skip_length = _longest_prefix(filename, config.skip_dirs)
    return skip_length >= 0 and skip_length > _longest_prefix(filename, config.trace_dirs)
