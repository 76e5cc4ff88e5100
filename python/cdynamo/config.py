"""cdynamo's knobs: plain module attributes read by the C++ core and the Python surface.

Change one for a block of code with `config.patch(name=value)` (a context manager and decorator).
"""
import functools
import os
import sys
import sysconfig

# How many compiled versions (cache entries) one code object may hold. Past it the frame runs its
# original bytecode and one warning names the guard that kept failing.
cache_size_limit = 8

# Backends that generate code for fixed sizes (the inductor, cudagraphs), given a graph with
# symbolic sizes, compile once per distinct input sizes (and number inputs) met; past this many
# for one graph, new ones run the captured graph as it is, with one warning.
static_compiles_per_graph = 8

# True: the inductor compiles a graph with symbolic sizes once, its kernels taking the sizes as
# arguments, where its target can (the Triton target; inference graphs). False, and elsewhere:
# once per sizes met, as above. counters["dynamic"] says which graphs took which path and why.
symbolic_kernels = True

# True: graphs that need gradients compile symbolically too (AOTAutograd on the symbolic fakes:
# one compile for every size). False: they compile per sizes met (at most
# static_compiles_per_graph, then run as captured), faster per step where few sizes occur:
# GPT-2 124M's training step measured 1.19x a static compile's on the H200 (bench/README.md).
# CDYNAMO_SYMBOLIC_TRAINING=0 turns it off.
symbolic_training = os.environ.get("CDYNAMO_SYMBOLIC_TRAINING", "1") != "0"

# False: a symbolic size stays symbolic at 0 and 1 too (one compile for a varying dimension, a
# batch of one included); the trace reasons about it as torch's unbacked sizes are reasoned about
# (a decision that would differ at 1, such as broadcasting, is still guarded). True: as
# torch._dynamo, symbolic sizes assume >= 2 and a size of 0 or 1 recompiles a specialised graph.
# The default is False from torch 2.13 on; before, torch's size-oblivious slicing gives a slice
# by a size (y[:n]) a size only the data decides, and graphs would split there (measured on
# torch 2.11). CDYNAMO_SPECIALIZE_ZERO_ONE=1 or =0 sets it.
def _specialize_zero_one_default():
    configured = os.environ.get("CDYNAMO_SPECIALIZE_ZERO_ONE")
    if configured is not None:
        return configured != "0"
    import torch

    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    return (major, minor) < (2, 13)


specialize_zero_one = _specialize_zero_one_default()

# True: Tensor.item() stays in the graph, its number an unbacked symbol (the trace becomes a
# dynamic one); branching on that number still breaks the graph. False: item() breaks the graph.
capture_scalar_outputs = False

# True: an internal tracing error or a failing backend falls back to running the frame eagerly,
# with a warning. False (what the tests use): the error is raised to the caller.
suppress_errors = True

# True: a graph break inside a function the trace inlined ends the graph there, inside that
# function: the graph keeps the caller's operations before the call, and the code after the break
# (the rest of the function, then the callers' rest) continues in resume functions. False: the
# graph ends at the caller's call instruction, and the called function compiles as a frame of its
# own (as torch._dynamo's nested_graph_breaks=False).
nested_graph_breaks = True

# True: fallback warnings and errors carry the full internal traceback, not only the reason.
verbose = False

# Kinds of debug output printed to stderr; the set is read on every log call so it can change at
# run time. Initialised from CDYNAMO_DEBUG (comma-separated, e.g. CDYNAMO_DEBUG=graphs,guards).
DEBUG_KINDS = frozenset({"graphs", "guards", "recompiles", "breaks", "bytecode", "ir", "kernels"})


def parse_debug(spec):
    """Turn "graphs,guards" (or "all") into a set of debug kinds, rejecting unknown ones."""
    kinds = {kind.strip() for kind in spec.split(",") if kind.strip()}
    if "all" in kinds:
        return set(DEBUG_KINDS)
    unknown = kinds - DEBUG_KINDS
    if unknown:
        raise ValueError(
            f"unknown cdynamo debug kind(s) {sorted(unknown)}; known: {sorted(DEBUG_KINDS)} or 'all'"
        )
    return kinds


debug = parse_debug(os.environ.get("CDYNAMO_DEBUG", ""))


def _dir_prefixes(*paths):
    """Directory prefixes ending in a separator (so /lib/foo never matches /lib/foobar), each
    also in its symlink-resolved form because co_filename keeps whichever path was imported."""
    prefixes = []
    for path in paths:
        if not path:
            continue
        for form in (os.path.abspath(path), os.path.realpath(path)):
            prefix = os.path.join(form, "")
            if prefix not in prefixes:
                prefixes.append(prefix)
    return prefixes


def _file_forms(*paths):
    """Single files, each also in its symlink-resolved form (as _dir_prefixes does for folders):
    a file under a symlinked virtual environment is met by either path."""
    forms = []
    for path in paths:
        for form in (os.path.abspath(path), os.path.realpath(path)):
            if form not in forms:
                forms.append(form)
    return forms


def _package_dir(module_name):
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = __import__(module_name)
        except ImportError:
            return None
    return os.path.dirname(module.__file__)


_paths = sysconfig.get_paths()
_own_dir = os.path.dirname(os.path.abspath(__file__))

# Files under these prefixes are never traced: torch itself, the standard library and cdynamo.
# The decision is made by utils.is_skipped_file, where the longest matching prefix of skip_dirs
# and trace_dirs wins.
skip_dirs = _dir_prefixes(
    _package_dir("torch"),
    _package_dir("functorch"),
    _paths.get("stdlib"),
    _paths.get("platstdlib"),
    _own_dir,
)

# Exceptions inside skip_dirs that are traced (directories, or single files): site-packages
# often lies inside the standard library directory (a venv's platstdlib, a system Python's
# stdlib) and user packages live there; cdynamo's demo, verify and benchmarks compile their own
# functions and models.
trace_dirs = _dir_prefixes(_paths.get("purelib"), _paths.get("platlib"), os.path.join(_own_dir, "_polyfills")) + _file_forms(
    os.path.join(_own_dir, "demo.py"),
    os.path.join(_own_dir, "verify.py"),
    os.path.join(_own_dir, "bench"),  # the benchmarks' models are what they compile
    os.path.join(_own_dir, "_entry.py"),
    # (and, above, _polyfills: the package of stand-ins traced in place of C callables, all its files)
    os.path.join(_own_dir, "_numpy_arrays.py"),  # NumPy arrays made from traced tensors
    # nn.Sequential.forward: compiling a Sequential model captures its layers (as TorchDynamo's
    # inline list does); torch.nn's layers themselves stay single graph nodes.
    os.path.join(_package_dir("torch") or "", "nn", "modules", "container.py"),
    # The forward pre-hooks of weight_norm() and spectral_norm() (callable objects there):
    # traced with the module they reparametrize, as its forward hooks are.
    os.path.join(_package_dir("torch") or "", "nn", "utils", "weight_norm.py"),
    os.path.join(_package_dir("torch") or "", "nn", "utils", "spectral_norm.py"),
    # parametrize.cached(): a @contextmanager generator whose global counter the trace replays.
    os.path.join(_package_dir("torch") or "", "nn", "utils", "parametrize.py"),
    # Eager-mode quantization's markers before conversion: QuantStub/DeQuantStub pass their input
    # through, FloatFunctional's add/mul/cat are torch operations.
    os.path.join(_package_dir("torch") or "", "ao", "quantization", "stubs.py"),
    os.path.join(_package_dir("torch") or "", "ao", "nn", "quantized", "modules", "functional_modules.py"),
    # Probability distributions: plain Python over torch operators (Categorical(logits=...).entropy()).
    os.path.join(_package_dir("torch") or "", "distributions"),
)

# Files traced when traced code calls into them whose frames are never compiled on their own:
# torch's own code calls them everywhere (vmap's machinery flattens with pytree), and compiling
# those calls would only add graphs inside torch. pytree's flatten/unflatten/map over containers
# of tensors (its specs are constants), and associative_scan's generic algorithm (torch operators
# and vmap), which uses it.
inline_only_files = _file_forms(
    os.path.join(_package_dir("torch") or "", "utils", "_pytree.py"),
    os.path.join(_package_dir("torch") or "", "_higher_order_ops", "associative_scan.py"),
)
trace_dirs += inline_only_files

# The standard library is traced into when user code calls it (copy.deepcopy, typing, enum,
# contextlib, functools, dataclasses, ...), except these modules (top-level names): they act on
# the process (threads, imports, logging, files, subprocesses, profilers, warnings) or keep state
# a graph cannot (the random module's generator). A call into one of them breaks the graph with
# this reason. Frames of standard-library code are still never compiled on their own.
never_traced_stdlib = {
    "logging": "logging writes to handlers",
    "threading": "threads and locks",
    "_threading_local": "thread-local state",
    "multiprocessing": "processes",
    "concurrent": "threads and processes",
    "asyncio": "an event loop",
    "subprocess": "processes",
    "socket": "the network",
    "selectors": "I/O",
    "signal": "signal handlers",
    "importlib": "the import system",
    "pkgutil": "the import system",
    "runpy": "the import system",
    "tempfile": "files",
    "shutil": "files",
    "traceback": "stack inspection",
    "linecache": "files",
    "tokenize": "files",
    "warnings": "warnings go through filters and the console",
    "inspect": "stack and source inspection",
    "pdb": "the debugger",
    "bdb": "the debugger",
    "cProfile": "the profiler",
    "profile": "the profiler",
    "pstats": "the profiler",
    "random": "the random module's global generator",
    "weakref": "weak references and finalizers",
    "unittest": "test machinery",
    "abc": "class registration",
    "_py_abc": "class registration",
    "gc": "the garbage collector",
    "atexit": "exit handlers",
    "site": "the interpreter's setup",
    "sysconfig": "the interpreter's setup",
}
_stdlib_dirs = _dir_prefixes(_paths.get("stdlib"), _paths.get("platstdlib"))

del _paths, _own_dir

# Where the inductor backend keeps compiled C++ kernels (shared by processes; safe to delete).
cache_dir = os.environ.get("CDYNAMO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "cdynamo")

# The C++ compiler of the inductor backend's kernels: a program name searched in PATH, or a path.
# g++ 12+ and clang++ 14+ work (clang needs libomp, e.g. Debian's libomp-dev, for OpenMP). The
# kernel cache keys each kernel by the compiler's path and `--version`, so switching compilers
# never reuses the other's kernels. Initialised from CDYNAMO_CXX.
cxx = os.environ.get("CDYNAMO_CXX") or "g++"

# Extra flags appended to every kernel's compile command (part of the cache key), e.g. CI's
# ["-Wall", "-Wextra", "-Werror"]. Initialised from CDYNAMO_CXXFLAGS (split on whitespace).
cxx_flags = os.environ.get("CDYNAMO_CXXFLAGS", "").split()

# True: a graph compiled by the inductor backend runs eagerly while its C++ kernels compile in a
# background thread, and switches to the compiled kernels once they are ready.
async_compile = False

# Run the IR verifier on every program the inductor backend schedules (tests turn it on).
verify_ir = os.environ.get("CDYNAMO_VERIFY_IR", "0") == "1"

# True: a compiled graph keeps the storage of its large buffers (16 MB and more) between calls and
# reuses it once nobody else holds it (an output the caller dropped, an intermediate). Fresh large
# allocations are page-faulted on first touch, which can cost more than the kernels themselves.
reuse_large_buffers = True

# True: graphs with 2-D convolutions (CPU or CUDA) compute them and the ops between them in the
# channels-last layout (oneDNN's native one; cuDNN's fastest); returned tensors keep eager's strides.
channels_last_convolutions = True

# True: CUDA matmuls whose sizes break cuBLAS's 16-byte alignment (a 50257-word LM head) run on
# zero-padded operands when the cost model says the copies pay off; returned tensors keep eager's
# strides (torch.compile returns the padded, non-contiguous result instead).
pad_matmuls = True

# True (the default): graphs that need gradients are compiled forward and backward (AOTAutograd's
# joint graph, split by its min-cut partitioner, each half through the inductor). False, or
# CDYNAMO_COMPILED_TRAINING=0: they run as captured with eager autograd (bench/training.py and
# the GPU table's training rows measure both).
compiled_training = os.environ.get("CDYNAMO_COMPILED_TRAINING", "1") != "0"

# True: what the inductor backend computes from parameters and buffers alone (a weight's
# transposed or re-laid-out copy) is kept between calls and recomputed only when one of them gets
# new storage or is changed in place by torch (its version counter moves). Changes made through
# `tensor.data` bypass the version counter and are NOT seen: like torch.compile's freezing, this
# assumes such weights stay fixed.
freeze_constants = False

# True: the inductor backend keeps each compiled graph under cache_dir/graphs/, keyed by a hash of
# the fx graph, its example inputs' metadata, the module attributes it reads, and the versions
# of cdynamo, torch and the compiler. A later process that traces the same graph then rebuilds
# the compiled program from that entry (kernels from the kernel cache) without aten tracing,
# lowering or code generation. Parameters are never stored: they are bound by attribute path.
# Initialised from CDYNAMO_GRAPH_CACHE (0 turns it off).
graph_cache = os.environ.get("CDYNAMO_GRAPH_CACHE", "1") != "0"

# The inductor backend's code generator for CPU tensors: "cpp" (C++/OpenMP kernels) or "triton"
# (the GPU target's Triton kernels, run by Triton's interpreter: slow, for testing that target
# without a GPU). CUDA tensors always use Triton. Initialised from CDYNAMO_CPU_BACKEND.
cpu_backend = os.environ.get("CDYNAMO_CPU_BACKEND", "cpp")
if cpu_backend == "triton":  # the interpreter must be on before anything imports triton
    os.environ.setdefault("TRITON_INTERPRET", "1")

# True: the inductor backend hands back its compiled callable wrapped in CUDA graphs (see
# cdynamo/cudagraphs): what compile(mode="reduce-overhead") and torch's option spelling
# {"triton.cudagraphs": True} turn on. Graphs that cannot be recorded run without, saying why.
cudagraphs = False

# Calls of a new input signature (shapes, strides, dtypes, non-tensor values) that run plainly,
# on a side stream, before the signature is recorded into a CUDA graph: lazy initialisation
# (cuBLAS workspaces, autotuning, a runtime's first-call work) must not happen during capture.
cudagraphs_warmup_calls = 1

# How many input signatures one compiled function records CUDA graphs for; calls with further
# signatures run without CUDA graphs, with one warning (each recording keeps its inputs' memory
# and a memory pool of its own: its results and its peak of intermediates).
cudagraphs_max_graphs = 8

# How many recordings of one signature may hand out their outputs at once (results are handed
# out where the graph wrote them, never copied): a call that finds the outputs of every recording
# still referenced (a kept result, `h = f(h)`) records another one, up to this number; past it the
# outputs are copied out of one more recording.
cudagraphs_instances = 2

# True: each Triton kernel of the inductor backend is compiled with a few block-size/warp
# candidates, each timed on the GPU once, and the fastest kept (compile(mode="max-autotune")).
max_autotune = False

_KNOB_NAMES = frozenset(
    {
        "cache_size_limit",
        "static_compiles_per_graph",
        "symbolic_training",
        "symbolic_kernels",
        "capture_scalar_outputs",
        "specialize_zero_one",
        "nested_graph_breaks",
        "suppress_errors",
        "verbose",
        "debug",
        "skip_dirs",
        "trace_dirs",
        "inline_only_files",
        "never_traced_stdlib",
        "cache_dir",
        "cxx",
        "cxx_flags",
        "async_compile",
        "verify_ir",
        "reuse_large_buffers",
        "channels_last_convolutions",
        "pad_matmuls",
        "compiled_training",
        "freeze_constants",
        "graph_cache",
        "cpu_backend",
        "cudagraphs",
        "cudagraphs_warmup_calls",
        "cudagraphs_max_graphs",
        "cudagraphs_instances",
        "max_autotune",
    }
)


class patch:
    """Set knobs for a `with` block or a decorated function, restoring the previous values after.

    `config.patch(suppress_errors=False)` or `config.patch({"cache_size_limit": 2})`; re-entrant,
    so one patch object may decorate a recursive function or be nested in itself.
    """

    def __init__(self, changes=None, **more_changes):
        self.changes = dict(changes or {}, **more_changes)
        unknown = set(self.changes) - _KNOB_NAMES
        if unknown:
            raise AttributeError(
                f"cdynamo.config has no knob(s) {sorted(unknown)}; knobs: {sorted(_KNOB_NAMES)}"
            )
        self._saved = []

    def __enter__(self):
        module = sys.modules[__name__]
        self._saved.append({name: getattr(module, name) for name in self.changes})
        for name, value in self.changes.items():
            if name == "debug" and isinstance(value, str):
                value = parse_debug(value)
            setattr(module, name, value)
        return self

    def __exit__(self, *exc_info):
        module = sys.modules[__name__]
        for name, value in self._saved.pop().items():
            setattr(module, name, value)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def patched(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return patched
