# Compiles one Triton kernel task (a plain dict from triton_build) into a cache entry directory.
# Assumes only the standard library and Triton: build workers load this file by path, without cdynamo or torch.
"""The compile step of cdynamo's Triton build service, run in-process or in a worker process.

A task is a plain dict (picklable, no cdynamo types) made by triton_build._task_of. compile_task
writes <entry_dir>/kernel.py, imports it from that file (Triton's JIT reads the function's source
with inspect.getsource), compiles it with triton.compile for the task's target, and writes
kernel.cubin then meta.json, each under a unique temporary name renamed into place. meta.json is
written last: an entry directory without it is an unfinished (or failed) build, never a result.

Every outcome is a reply dict, never an exception, so that a worker's reply crosses the pipe
whatever went wrong: {"ok": True, "meta": ..., "cubin": bytes} or {"ok": False, "error": text}.
serve(conn) is a worker process's loop (it warms up first); _triton_pool's bootstrap runs it.
"""
import hashlib
import importlib.util
import json
import os
import re
import sys
import traceback

# meta.json's layout. A reader rejects an entry of another format (and triton_build's cache key
# includes this file's digest, so a change here never reuses old entries anyway).
FORMAT = 1

# What Triton 3.6 and 3.9 append after the kernel's own parameters (their nvidia launchers pass
# global_scratch then profile_scratch, null when the size is 0). Older versions appended a prefix
# of this list; the count is read from the PTX entry of every compiled kernel.
IMPLICIT_PARAMS = (("<global_scratch>", "*i8"), ("<profile_scratch>", "*i8"))


def write_atomically(path, data):
    """Readers of path see the old file or the whole new one: write a unique name, then rename."""
    tmp = f"{path}.tmp.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_source(entry_dir, source):
    """<entry_dir>/kernel.py holding source; rewritten only if missing or different."""
    os.makedirs(entry_dir, exist_ok=True)
    path = os.path.join(entry_dir, "kernel.py")
    data = source.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return path
    except FileNotFoundError:
        pass
    write_atomically(path, data)
    return path


def import_kernel_module(path, key):
    """The module defined by the file at path, under a name unique to its cache key. It is not
    put in sys.modules: nothing imports it by name, and kernels are never unloaded otherwise."""
    spec = importlib.util.spec_from_file_location(f"cdynamo_triton_kernel_{key[:20]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _format_exception(error):
    """Triton's own message (CompilationError quotes the offending source line) and its causes."""
    parts = []
    while error is not None and len(parts) < 4:
        parts.append("".join(traceback.format_exception_only(type(error), error)).rstrip())
        error = error.__cause__
    return "\n  caused by: ".join(parts)


def _ptx_param_count(ptx, symbol):
    """How many parameters the PTX entry `symbol` takes."""
    match = re.search(r"\.entry\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)", ptx)
    if match is None:
        raise RuntimeError(f"no .entry {symbol} in the PTX Triton produced")
    return len(re.findall(r"\.param\s", match.group(1)))


def launch_params(task, ptx, symbol):
    """[name, type] of every kernel parameter in launch order: the non-constexpr arguments, then
    Triton's implicit trailing pointers. Checked against the PTX, so that a Triton that drops or
    adds parameters differently fails here instead of in a launch with shifted arguments."""
    own = [[name, kind] for name, kind in task["signature"] if kind != "constexpr"]
    extra = _ptx_param_count(ptx, symbol) - len(own)
    if not 0 <= extra <= len(IMPLICIT_PARAMS):
        raise RuntimeError(
            f"the compiled kernel takes {len(own) + extra} parameters but its signature has "
            f"{len(own)} non-constexpr arguments; this Triton passes parameters in an unknown way"
        )
    return own + [list(param) for param in IMPLICIT_PARAMS[:extra]]


def launch_metadata(task, compiled):
    """What a launcher needs, read with defaults where a Triton version lacks the field."""
    from triton import __version__ as triton_version

    md = compiled.metadata
    num_ctas = int(getattr(md, "num_ctas", 1) or 1)
    cluster_dims = getattr(md, "cluster_dims", None) or (num_ctas, 1, 1)
    return {
        "format": FORMAT,
        "key": task["key"],
        "name": task["name"],
        "symbol": md.name,
        "target": list(task["target"]),
        "triton_version": triton_version,
        "num_warps": int(md.num_warps),
        "warp_size": int(getattr(md, "warp_size", task["target"][2]) or task["target"][2]),
        "num_ctas": num_ctas,
        "cluster_dims": [int(d) for d in cluster_dims],
        "shared_bytes": int(getattr(md, "shared", 0) or 0),
        "tmem_bytes": int(getattr(md, "tmem_size", 0) or 0),
        "global_scratch_bytes": int(getattr(md, "global_scratch_size", 0) or 0),
        "global_scratch_align": int(getattr(md, "global_scratch_align", 1) or 1),
        "profile_scratch_bytes": int(getattr(md, "profile_scratch_size", 0) or 0),
        "profile_scratch_align": int(getattr(md, "profile_scratch_align", 1) or 1),
        "launch_pdl": bool(getattr(md, "launch_pdl", False)),
        "launch_cooperative_grid": bool(getattr(md, "launch_cooperative_grid", False)),
        "params": launch_params(task, compiled.asm["ptx"], md.name),
    }


def _jit_function(task, module):
    """The task's @triton.jit function in module, checked against the task's signature."""
    fn = getattr(module, task["name"], None)
    if fn is None or not hasattr(fn, "arg_names"):
        raise TypeError(f"the source defines no @triton.jit function named {task['name']!r}")
    names = [name for name, _ in task["signature"]]
    if list(fn.arg_names) != names:
        raise TypeError(f"the signature lists {names} but the function's parameters are {list(fn.arg_names)}")
    return fn


def _compile(task, fn):
    from triton import compile as triton_compile
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    index = {name: i for i, (name, _) in enumerate(task["signature"])}
    attrs = {(index[name],): [list(a) for a in values] for name, values in task["attrs"]}
    source = ASTSource(fn, dict(task["signature"]), dict(task["constexprs"]), attrs)
    return triton_compile(source, target=GPUTarget(*task["target"]), options=dict(task["options"]))


def _cuda_library_loaded():
    """Whether libcuda is mapped into this process: a build worker must never touch the driver."""
    try:
        with open("/proc/self/maps") as f:
            return "libcuda.so" in f.read()
    except OSError:
        return None


def compile_task(task):
    """Compile one task into its entry directory; a reply dict (see the module docstring)."""
    entry_dir = task["entry_dir"]
    source_path = os.path.join(entry_dir, "kernel.py")
    stage = "saving the source"
    try:
        source_path = save_source(entry_dir, task["source"])
        stage = "importing the source"
        module = import_kernel_module(source_path, task["key"])
        stage = "finding the function"
        fn = _jit_function(task, module)
        stage = "compiling"
        compiled = _compile(task, fn)
        meta = launch_metadata(task, compiled)
        cubin = bytes(compiled.asm["cubin"])
        meta["cubin_bytes"] = len(cubin)
        meta["cubin_sha256"] = hashlib.sha256(cubin).hexdigest()
        stage = "writing the cache entry"
        write_atomically(os.path.join(entry_dir, "kernel.cubin"), cubin)
        write_atomically(os.path.join(entry_dir, "meta.json"), json.dumps(meta, indent=1).encode())
    except BaseException as error:  # noqa: BLE001 - every failure becomes the reply's message
        if isinstance(error, KeyboardInterrupt):
            raise
        return {"ok": False, "stage": stage, "source_path": source_path, "error": _format_exception(error)}
    return {"ok": True, "meta": meta, "cubin": cubin, "pid": os.getpid(), "cuda_loaded": _cuda_library_loaded()}


# A kernel compiled by every worker before it takes tasks: a process's first compile also hashes
# Triton's installation and imports its code generator (about 0.5 s of 0.6 s on a small kernel),
# and a worker should only take work once it compiles as fast as a warm process.
_WARMUP_SOURCE = """import triton
import triton.language as tl


@triton.jit
def cdynamo_warmup(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1.0, mask=offsets < n)
"""


def warm_up():
    """Compile _WARMUP_SOURCE into a temporary entry; failures are left to the real tasks."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cdynamo-triton-warmup-") as entry_dir:
        compile_task(
            {
                "key": "warmup",
                "name": "cdynamo_warmup",
                "source": _WARMUP_SOURCE,
                "signature": [["x_ptr", "*fp32"], ["n", "i32"], ["BLOCK", "constexpr"]],
                "constexprs": [["BLOCK", 128]],
                "attrs": [],
                "options": [["num_warps", 4], ["enable_fp_fusion", False]],
                "target": ["cuda", 90, 32],
                "entry_dir": entry_dir,
            }
        )


def serve(conn):
    """A worker's loop: one task in, one reply out, until the parent closes its end."""
    # A worker compiles to cubins; under TRITON_INTERPRET=1 (inherited from an interpreting parent)
    # @triton.jit would make interpreter functions that triton.compile cannot take.
    os.environ.pop("TRITON_INTERPRET", None)
    warm_up()
    conn.send({"ready": True, "pid": os.getpid()})
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(compile_task(task))


if __name__ == "__main__":
    sys.exit("this module is run by cdynamo.inductor._triton_pool's workers, not directly")
