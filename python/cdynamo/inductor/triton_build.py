# Turns the source of a @triton.jit kernel into a cubin plus the metadata a C++ launcher needs,
# cached on disk and in memory. Assumes Triton 3.6-3.9 (imported lazily) and the CUDA backend.
"""The Triton build service of the inductor backend.

The Triton code generator (C++) writes a complete Python module that defines one @triton.jit
function and describes it with a KernelDesc: the source, the function name, the signature in
parameter order ({"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}), the constexpr values, the
attributes (divisibility: {"x": [("tt.divisibility", 16)]}), Triton's options and the Target.
Kernels that call libdevice import it with LIBDEVICE_IMPORT, the line that works in 3.6 and 3.9.

    build(desc) -> BuiltKernel            compile (or load) one kernel, blocking
    build_many(descs) -> [BuiltKernel]     several, in parallel, results in input order
    submit(desc) -> Future[BuiltKernel]    asynchronous
    load_interpreted(desc) -> fn           the JIT function for TRITON_INTERPRET=1 runs
    target_of(device_index) -> Target      the Target of a CUDA device (override_target for tests)

A BuiltKernel carries the cubin, the kernel symbol, num_warps (blockDim.x = num_warps *
warp_size), num_ctas (Triton launches gridDim.x = grid_x * num_ctas and, when num_ctas > 1, a
cluster of cluster_dims), the dynamic shared memory (above 48 KiB the launcher must raise
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first), the PDL and cooperative launch flags, and
params: every kernel parameter in order, as [name, Triton type]. Constexpr arguments are not
parameters (Triton 3.6 and 3.9 drop exactly those); after the kernel's own arguments come
Triton's implicit pointers "<global_scratch>" and "<profile_scratch>", null when their size is 0,
else grid_x * grid_y * grid_z * num_ctas * size bytes aligned to their alignment. The number of
implicit parameters is checked against each kernel's PTX entry.

Caching: the key is a SHA-256 of the description (options merged over DEFAULT_OPTIONS), the
Triton version, the ptxas binaries (path, size, mtime), compiler-relevant TRITON_*/MLIR_*/LLVM_*
environment variables and the worker's code. An entry is <cache_dir>/triton/<key[:2]>/<key>/ with
kernel.py, kernel.cubin and meta.json, each written under a unique name and renamed; meta.json
comes last and records the cubin's size and digest, so a reader sees a whole entry or none.
Entries are shared by processes; a finished build is also kept in memory. Counters (in
utils.counters["inductor"]): triton_compiled (of which triton_compiled_in_workers),
triton_memory_hits, triton_disk_hits, triton_compile_errors, triton_cache_invalid, and
triton_worker_loaded_cuda (must stay 0).

Where compiles run: in this process when one kernel is missing and no worker pool runs (a cold
compile here costs about as much as starting a worker, and the caller waits either way). With
several missing, the pool starts in the background and the calling thread compiles from the same
queue until the workers, once warm, share it. Workers are fresh interpreters started with
subprocess (never forked, so none inherits a CUDA context; not multiprocessing's spawn, which
re-runs the main script: see _triton_pool) that import only _triton_worker.py and Triton, never
torch or cdynamo, and never load the CUDA driver. A worker that dies or exceeds
_triton_pool.compile_timeout_s is replaced; its kernel fails with a TritonBuildError naming the
kernel, quoting Triton's message and the saved source's path. Identical descriptions build once.

Interpreter: TRITON_INTERPRET=1 must be in the environment before triton is imported (Triton reads
it when @triton.jit decorates and while an interpreted kernel runs). load_interpreted imports the
source from the cache entry's kernel.py, because the JIT reads source text with inspect.getsource.
Triton's interpreter implements no libdevice function (3.6 and 3.9 alike): a module's libdevice is
replaced by triton_interpreter's NumPy versions.
"""
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import re
import sys
import threading
import time
from concurrent.futures import Future

from .. import utils
from . import _triton_pool as pool_module
from . import _triton_worker as worker

# The libdevice import for generated kernels: Triton 3.6 and 3.9 resolve this module's functions
# per backend (triton.language.extra.cuda.libdevice would tie a kernel to CUDA).
LIBDEVICE_IMPORT = "from triton.language.extra import libdevice"

# Options every kernel gets unless its description says otherwise. FP fusion off: eager PyTorch
# rounds a*b+c twice; passing it explicitly also silences Triton 3.9's warning about its default.
DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "enable_fp_fusion": False}

# Triton silently ignores options it does not know, so a misspelt one would be lost: accept these.
KNOWN_OPTIONS = frozenset(
    {
        "num_warps",
        "num_stages",
        "num_ctas",
        "enable_fp_fusion",
        "maxnreg",
        "launch_pdl",
        "launch_cooperative_grid",
        "enable_reflect_ftz",
        "debug",
        "sanitize_overflow",
        "default_dot_input_precision",
        "max_num_imprecise_acc_default",
    }
)

SCALAR_TYPES = frozenset({"i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64"})
_POINTER_TYPE = re.compile(r"\*[a-z0-9]+")

# Environment variables that change Triton's output and so belong in the key.
_KEYED_ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_")
_UNKEYED_ENV = frozenset({"TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_INTERPRET", "TRITON_DUMP_DIR", "TRITON_PRINT_AUTOTUNING"})


class TritonBuildError(RuntimeError):
    """A kernel could not be built; the message names it, quotes Triton and gives the source path."""

    def __init__(self, message, kernel_name=None, source_path=None):
        super().__init__(message)
        self.kernel_name = kernel_name
        self.source_path = source_path


# ---------------------------------------------------------------------------------------------
# Descriptions.


@dataclasses.dataclass(frozen=True)
class Target:
    """Triton's GPUTarget as plain data: backend, arch (90 for sm90), warp_size."""

    backend: str = "cuda"
    arch: int = 90
    warp_size: int = 32


def divisibility_attrs(names, divisor=16):
    """attrs for a KernelDesc saying that each argument in names is a multiple of divisor."""
    return {name: [("tt.divisibility", divisor)] for name in names}


def _pairs(mapping):
    return tuple(mapping.items()) if isinstance(mapping, dict) else tuple(tuple(pair) for pair in mapping)


def _check_constexpr_value(name, value):
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"constexpr {name} is a {type(value).__name__}; use an int, float, bool, str or None")


@dataclasses.dataclass(frozen=True)
class KernelDesc:
    """One kernel to build. Mappings may be given as dicts; they are kept as tuples of pairs.

    signature: every parameter of the function, in order, with its Triton type ("*fp32", "i32",
    "fp32", ..., or "constexpr"); constexprs: a value for each "constexpr" parameter; attrs:
    {parameter: [(attribute, value), ...]}; options: Triton options over DEFAULT_OPTIONS.
    """

    source: str
    name: str
    signature: tuple
    constexprs: tuple = ()
    attrs: tuple = ()
    options: tuple = ()
    target: Target = Target()

    def __post_init__(self):
        signature = _pairs(self.signature)
        constexprs = tuple(sorted(_pairs(self.constexprs)))
        attrs = tuple(sorted((name, tuple(tuple(a) for a in values)) for name, values in _pairs(self.attrs)))
        options = tuple(sorted(dict(DEFAULT_OPTIONS, **dict(_pairs(self.options))).items()))
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "constexprs", constexprs)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "options", options)
        self._validate()

    def _validate(self):
        names = [name for name, _ in self.signature]
        if len(set(names)) != len(names):
            raise ValueError(f"kernel {self.name}: repeated parameter in signature {names}")
        for name, kind in self.signature:
            if kind != "constexpr" and kind not in SCALAR_TYPES and not _POINTER_TYPE.fullmatch(kind):
                raise ValueError(f"kernel {self.name}: parameter {name} has unsupported type {kind!r}")
        constexpr_names = {name for name, kind in self.signature if kind == "constexpr"}
        given = {name for name, _ in self.constexprs}
        # A value for a non-constexpr parameter would make Triton drop it from the kernel while a
        # launcher still passes it: refuse rather than shift every later argument.
        if given != constexpr_names:
            raise ValueError(
                f"kernel {self.name}: constexprs {sorted(given)} must be exactly the parameters typed "
                f"'constexpr' in the signature, {sorted(constexpr_names)}"
            )
        for name, value in self.constexprs:
            _check_constexpr_value(name, value)
        unknown_attrs = {name for name, _ in self.attrs} - set(names)
        unknown_options = {name for name, _ in self.options} - KNOWN_OPTIONS
        if unknown_attrs or unknown_options:
            raise ValueError(f"kernel {self.name}: unknown attrs {sorted(unknown_attrs)} / options {sorted(unknown_options)}")
        if self.target.backend != "cuda":
            raise ValueError(f"kernel {self.name}: only the cuda backend is supported, not {self.target.backend!r}")

    @property
    def constexpr_values(self):
        return dict(self.constexprs)

    @functools.cached_property
    def key(self):
        """The cache key: hex SHA-256 over the description and this process's compiler identity."""
        constexprs = [[name, type(value).__name__, repr(value)] for name, value in self.constexprs]
        material = [
            _process_material(),
            self.source,
            self.name,
            self.signature,
            constexprs,
            self.attrs,
            self.options,
            dataclasses.astuple(self.target),
        ]
        return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogatepass")).hexdigest()


@dataclasses.dataclass(frozen=True)
class BuiltKernel:
    """A compiled kernel and everything its launcher needs (see the module docstring)."""

    key: str
    name: str  # the Python function's name
    symbol: str  # the kernel's symbol in the cubin (cuModuleGetFunction)
    cubin: bytes
    target: Target
    triton_version: str
    num_warps: int
    warp_size: int
    num_ctas: int
    cluster_dims: tuple
    shared_bytes: int  # dynamic shared memory per block
    tmem_bytes: int  # Blackwell tensor memory; 0 elsewhere
    global_scratch_bytes: int  # per program; the implicit <global_scratch> pointer
    global_scratch_align: int
    profile_scratch_bytes: int  # per program; the implicit <profile_scratch> pointer
    profile_scratch_align: int
    launch_pdl: bool
    launch_cooperative_grid: bool
    arg_names: tuple  # the arguments a caller passes, in order (constexprs left out)
    params: tuple  # ((name, Triton type), ...): every kernel parameter, implicit ones included
    entry_dir: str

    @property
    def threads_per_block(self):
        return self.num_warps * self.warp_size

    @property
    def implicit_params(self):
        return tuple(name for name, _ in self.params[len(self.arg_names) :])

    @property
    def source_path(self):
        return os.path.join(self.entry_dir, "kernel.py")

    @property
    def cubin_path(self):
        return os.path.join(self.entry_dir, "kernel.cubin")

    @classmethod
    def from_meta(cls, meta, cubin, entry_dir):
        implicit = {name for name, _ in worker.IMPLICIT_PARAMS}
        params = tuple((name, kind) for name, kind in meta["params"])
        return cls(
            key=meta["key"],
            name=meta["name"],
            symbol=meta["symbol"],
            cubin=cubin,
            target=Target(*meta["target"]),
            triton_version=meta["triton_version"],
            num_warps=meta["num_warps"],
            warp_size=meta["warp_size"],
            num_ctas=meta["num_ctas"],
            cluster_dims=tuple(meta["cluster_dims"]),
            shared_bytes=meta["shared_bytes"],
            tmem_bytes=meta["tmem_bytes"],
            global_scratch_bytes=meta["global_scratch_bytes"],
            global_scratch_align=meta["global_scratch_align"],
            profile_scratch_bytes=meta["profile_scratch_bytes"],
            profile_scratch_align=meta["profile_scratch_align"],
            launch_pdl=meta["launch_pdl"],
            launch_cooperative_grid=meta["launch_cooperative_grid"],
            arg_names=tuple(name for name, _ in params if name not in implicit),
            params=params,
            entry_dir=entry_dir,
        )


# ---------------------------------------------------------------------------------------------
# Targets.

_target_override = None


@contextlib.contextmanager
def override_target(target):
    """Within the block, target_of returns target for every device (tests, CPU-only machines)."""
    global _target_override
    saved, _target_override = _target_override, target
    try:
        yield target
    finally:
        _target_override = saved


@functools.cache
def _device_target(device_index):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("target_of: CUDA is not available here; build with an explicit Target or override_target")
    if getattr(torch.version, "hip", None):
        raise NotImplementedError("target_of: ROCm devices are not supported by the Triton build service")
    major, minor = torch.cuda.get_device_capability(device_index)
    return Target("cuda", major * 10 + minor, 32)


def target_of(device_index=None):
    """The Target of CUDA device device_index (the current device when None)."""
    if _target_override is not None:
        return _target_override
    if device_index is None:
        import torch

        device_index = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return _device_target(int(device_index))


# ---------------------------------------------------------------------------------------------
# What every key of this process shares: computed once, without importing Triton.


def _triton_spec():
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.origin:
        raise TritonBuildError("the Triton build service needs triton, which is not installed")
    return spec


def _triton_version():
    """triton.__version__, read from the package's __init__.py when Triton is not imported yet
    (importing it costs ~150 ms, and a process whose kernels are all cached never needs it)."""
    module = sys.modules.get("triton")
    if module is not None:
        return module.__version__
    with open(_triton_spec().origin, encoding="utf-8") as f:
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.MULTILINE)
    if match:
        return match.group(1)
    import triton

    return triton.__version__


def _file_identity(path):
    try:
        stat = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def _ptxas_identity():
    """The ptxas binaries Triton would run, by path, size and mtime: running `ptxas --version`
    would cost a process start in every process, and a different binary differs in these."""
    bin_dir = os.path.join(os.path.dirname(_triton_spec().origin), "backends", "nvidia", "bin")
    paths = [os.path.join(bin_dir, "ptxas"), os.path.join(bin_dir, "ptxas-blackwell")]
    paths += [os.environ[v] for v in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH") if os.environ.get(v)]
    return [_file_identity(path) for path in paths]


def _keyed_environment():
    return sorted(
        (name, value)
        for name, value in os.environ.items()
        if name.startswith(_KEYED_ENV_PREFIXES) and name not in _UNKEYED_ENV
    )


@functools.cache
def _process_material():
    with open(worker.__file__, "rb") as f:
        worker_digest = hashlib.sha256(f.read()).hexdigest()
    return [worker.FORMAT, worker_digest, _triton_version(), _ptxas_identity(), _keyed_environment()]


# ---------------------------------------------------------------------------------------------
# The caches.


def entry_dir_of(key):
    return os.path.join(utils.cache_root(), "triton", key[:2], key)


_lock = threading.Lock()
_memory = {}  # key -> BuiltKernel
_in_flight = {}  # key -> Future of the build under way
_interpreted = {}  # key -> interpreter function


def _read_entry(key):
    """The BuiltKernel stored under key, or None when there is no whole, valid entry."""
    entry_dir = entry_dir_of(key)
    try:
        with open(os.path.join(entry_dir, "meta.json"), "rb") as f:
            meta = json.loads(f.read())
        if meta.get("format") != worker.FORMAT or meta.get("key") != key:
            raise ValueError("entry of another format or key")
        with open(os.path.join(entry_dir, "kernel.cubin"), "rb") as f:
            cubin = f.read()
        if len(cubin) != meta["cubin_bytes"] or hashlib.sha256(cubin).hexdigest() != meta["cubin_sha256"]:
            raise ValueError("cubin does not match meta.json")
        return BuiltKernel.from_meta(meta, cubin, entry_dir)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        utils.counters["inductor"]["triton_cache_invalid"] += 1
        utils.log("kernels", f"triton: ignoring the unusable cache entry {entry_dir}: {error!r}")
        return None


def _cached(desc):
    """The finished build of desc from memory or disk, or None."""
    key = desc.key
    built = _memory.get(key)
    if built is not None:
        utils.counters["inductor"]["triton_memory_hits"] += 1
        return built
    built = _read_entry(key)
    if built is not None:
        utils.counters["inductor"]["triton_disk_hits"] += 1
        with _lock:
            built = _memory.setdefault(key, built)
    return built


def clear_memory_cache():
    """Forget the builds kept in memory (the disk cache stays): for tests."""
    with _lock:
        _memory.clear()
        _interpreted.clear()


# ---------------------------------------------------------------------------------------------
# The worker pool (one per process, started on demand).

_pool = None


def _fallback(task):
    """A task no worker can run is compiled here, unless this process runs Triton's interpreter."""
    if _interpreting():
        return pool_module.failure(task, "starting a worker", "no build worker could start (this process interprets)")
    return worker.compile_task(task)


def _running_pool():
    global _pool
    with _lock:
        if _pool is None:
            _pool = pool_module.WorkerPool(pool_module.worker_count(), _fallback)
        return _pool


def _forget_pool_after_fork():
    """A forked child has neither the parent's dispatcher threads nor its workers: start afresh."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()
    _in_flight.clear()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def start_pool():
    """Start the workers now (they warm up in the background), e.g. when a graph with many
    kernels is coming."""
    _running_pool()


def warm_up_for(target, device_type):
    """Starts the build workers when a graph about to be traced and lowered will need Triton
    kernels on the GPU: they import Triton (about a second each) while this thread traces,
    instead of after it asks for the first kernels."""
    if target == "triton" and device_type == "cuda" and not _interpreting():
        start_pool()


def pool_started():
    return _pool is not None


def shutdown_pool():
    """Stop the workers; a later build starts new ones. Builds in flight fail."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown()


# ---------------------------------------------------------------------------------------------
# Builds.


def _task_of(desc):
    target = desc.target
    return {
        "key": desc.key,
        "name": desc.name,
        "source": desc.source,
        "signature": [list(pair) for pair in desc.signature],
        "constexprs": [list(pair) for pair in desc.constexprs],
        "attrs": [[name, [list(a) for a in values]] for name, values in desc.attrs],
        "options": [list(pair) for pair in desc.options],
        "target": [target.backend, target.arch, target.warp_size],
        "entry_dir": entry_dir_of(desc.key),
    }


def _claim(desc):
    """(future, owner): the Future of desc's build, and whether the caller must run the build."""
    with _lock:
        if desc.key in _memory:
            future = Future()
            future.set_result(_memory[desc.key])
            return future, False
        if desc.key in _in_flight:
            return _in_flight[desc.key], False
        future = _in_flight[desc.key] = Future()
        return future, True


def _settle(desc, future, reply, started):
    """Turn a worker reply into desc's BuiltKernel (or TritonBuildError) and publish it."""
    built = None
    if reply.get("ok"):
        try:
            built = BuiltKernel.from_meta(reply["meta"], reply["cubin"], entry_dir_of(desc.key))
        except (KeyError, TypeError, ValueError) as error:
            reply = dict(reply, ok=False, stage="reading the metadata", error=repr(error))
    with _lock:
        _in_flight.pop(desc.key, None)
        if built is None:
            utils.counters["inductor"]["triton_compile_errors"] += 1
        else:
            _memory[desc.key] = built
            _count_compile(reply)
    if built is None:
        future.set_exception(_build_error(desc, reply))
        return
    where = "in-process" if reply.get("pid") == os.getpid() else f"in worker {reply.get('pid')}"
    utils.log("kernels", f"triton: compiled {desc.name} ({desc.key[:12]}) {where} in {time.perf_counter() - started:.2f} s")
    future.set_result(built)


def _count_compile(reply):
    counters = utils.counters["inductor"]
    counters["triton_compiled"] += 1
    if reply.get("pid") != os.getpid():
        counters["triton_compiled_in_workers"] += 1
        # Checked by the tests on a GPU machine: a worker must never load the CUDA driver.
        counters["triton_worker_loaded_cuda"] += bool(reply.get("cuda_loaded"))


def _build_error(desc, reply):
    source_path = reply.get("source_path") or os.path.join(entry_dir_of(desc.key), "kernel.py")
    message = (
        f"Triton could not build kernel {desc.name!r} ({reply.get('stage', 'compiling')}); "
        f"its source is saved at {source_path}:\n{reply.get('error')}"
    )
    return TritonBuildError(message, desc.name, source_path)


def _interpreting():
    """Whether this process's Triton is in interpreter mode (then compiles go to workers)."""
    triton = sys.modules.get("triton")
    if triton is not None and hasattr(triton, "knobs"):
        return bool(triton.knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def submit(desc):
    """Build desc in a worker; a Future of its BuiltKernel (already done when it is cached).
    Identical descriptions in flight share one build."""
    if (built := _cached(desc)) is not None:
        future = Future()
        future.set_result(built)
        return future
    return _submit_uncached(desc)


def _submit_uncached(desc):
    # For callers that just looked desc up: a second look would count an unusable entry twice.
    future, owner = _claim(desc)
    if owner:
        started = time.perf_counter()
        reply = _running_pool().submit(_task_of(desc))
        reply.add_done_callback(lambda done: _settle(desc, future, done.result(), started))
    return future


def _compile_here(desc):
    """Build desc in this process; the (finished) Future of its BuiltKernel."""
    future, owner = _claim(desc)
    if owner:
        started = time.perf_counter()
        _settle(desc, future, worker.compile_task(_task_of(desc)), started)
    return future


def _help_pool():
    """Run queued pool tasks in this thread until none is left, where the pool is small (a
    machine of a few cores): while workers are still warming up (about a second) the caller
    compiles, and once they are warm they share the queue. A large pool is left to itself: a
    first compile in this process would import Triton's code generator and hash its sources
    (seconds) to build one kernel of many, on the critical path of the graph waiting for them."""
    if _interpreting() or (pool := _pool) is None or pool.size >= pool_module.HELPED_BELOW:
        return
    while (item := pool.take()) is not None:
        task, reply = item
        try:
            reply.set_result(worker.compile_task(task))
        except BaseException:  # KeyboardInterrupt: whoever else waits for this task must not hang
            reply.set_result(pool_module.failure(task, "compiling", "interrupted"))
            raise


def build(desc):
    """desc's BuiltKernel: from the caches, else compiled here (or by a running pool)."""
    if (built := _cached(desc)) is not None:
        return built
    if not pool_started() and not _interpreting():
        return _compile_here(desc).result()
    future = _submit_uncached(desc)
    _help_pool()
    return future.result()


def build_many(descs):
    """The BuiltKernel of each description, in input order; identical ones are built once. With
    more than one to compile the pool starts and this thread compiles alongside its workers.
    Raises the first failure in input order (the other builds go on and are cached)."""
    descs = list(descs)
    results = [_cached(desc) for desc in descs]
    missing = {desc.key: desc for desc, built in zip(descs, results) if built is None}
    if len(missing) <= 1:
        return [built if built is not None else build(desc) for desc, built in zip(descs, results)]
    futures = {key: _submit_uncached(desc) for key, desc in missing.items()}
    _help_pool()
    return [built if built is not None else futures[desc.key].result() for desc, built in zip(descs, results)]


# ---------------------------------------------------------------------------------------------
# The interpreter.


def load_interpreted(desc):
    """desc's function as Triton's interpreter runs it (TRITON_INTERPRET=1 set before triton was
    imported), imported from the cache entry's kernel.py."""
    if not _interpreting():
        raise RuntimeError("load_interpreted needs TRITON_INTERPRET=1 in the environment before triton is imported")
    with _lock:
        fn = _interpreted.get(desc.key)
    if fn is not None:
        return fn
    path = worker.save_source(entry_dir_of(desc.key), desc.source)
    try:
        module = worker.import_kernel_module(path, desc.key)
    except Exception as error:
        raise TritonBuildError(f"could not import kernel {desc.name!r} from {path}: {error!r}", desc.name, path) from error
    if hasattr(module, "libdevice"):  # the interpreter has no libdevice: NumPy stands in
        from . import triton_interpreter

        triton_interpreter.patch_module(module)
    fn = getattr(module, desc.name, None)
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(fn, InterpretedFunction):
        raise TritonBuildError(
            f"{path} defines no interpreted function {desc.name!r} (was triton imported before TRITON_INTERPRET=1 was set?)",
            desc.name,
            path,
        )
    with _lock:
        return _interpreted.setdefault(desc.key, fn)


def launch_interpreted(fn, grid, args, constexprs=None):
    """Run an interpreted kernel: args are the non-constexpr arguments in order (CPU tensors and
    scalars), constexprs a mapping of the constexpr ones; grid a tuple or a callable of meta."""
    grid = grid if callable(grid) else tuple(grid)
    return fn[grid](*args, **dict(constexprs or {}))
