"""The backend registry: names to compiler callables, and the one place backends are called.

A backend is `backend(gm: torch.fx.GraphModule, example_inputs: list) -> callable`; the callable
runs the graph. The frontend never calls a backend directly, only through call_backend.
"""
import importlib
import time

from .. import _fake_runs, utils
from ..exc import BackendCompilerFailed, CdynamoError, InvalidBackend

_BACKENDS = {}  # name -> compiler callable
_TAGS = {}  # name -> tuple of tags ("debug", "experimental", ...)

# Built-in backends living in modules that may not exist yet (or need optional dependencies):
# imported the first time the registry is asked for the full list or an unknown name.
_LAZY_BACKEND_MODULES = ("cdynamo.inductor", "cdynamo.cudagraphs")
_lazy_modules_loaded = False


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register a backend under `name` (default: the callable's __name__).

    Usable as `@register_backend`, `@register_backend(name="x", tags=("debug",))` or
    `register_backend(fn, name="x")`; returns the callable unchanged.
    """
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"a backend must be callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS:
        raise ValueError(f"a backend named {name!r} is already registered")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def _load_lazy_backends():
    global _lazy_modules_loaded
    if _lazy_modules_loaded:
        return
    _lazy_modules_loaded = True
    for module_name in _LAZY_BACKEND_MODULES:
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            # Only "this module does not exist yet" is quiet; its own import errors are real.
            if error.name != module_name:
                raise


def lookup_backend(name_or_callable):
    """The backend callable for a name (or the callable itself); InvalidBackend for unknown names."""
    if callable(name_or_callable):
        return name_or_callable
    if not isinstance(name_or_callable, str):
        raise TypeError(
            "backend must be a name or a callable backend(gm, example_inputs) -> callable, "
            f"got {type(name_or_callable).__name__}"
        )
    if name_or_callable not in _BACKENDS:
        _load_lazy_backends()
    if name_or_callable not in _BACKENDS:
        raise InvalidBackend(name_or_callable, list_backends(exclude_tags=()))
    return _BACKENDS[name_or_callable]


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted names of registered backends, leaving out those with any tag in exclude_tags."""
    _load_lazy_backends()
    excluded = set(exclude_tags or ())
    return sorted(name for name in _BACKENDS if not excluded.intersection(_TAGS[name]))


def backend_name(backend):
    """A readable name for a backend given by name or as a callable (a function, a bound
    method, a functools.partial or a callable object such as testing.CompileCounter)."""
    if isinstance(backend, str):
        return backend
    for registered, fn in _BACKENDS.items():
        if fn is backend:
            return registered
    inner = getattr(backend, "func", backend)  # functools.partial
    return getattr(inner, "__name__", None) or type(inner).__name__


def call_backend(backend, gm, example_inputs):
    """Compile `gm` with `backend` (name or callable) and return the callable that runs it.

    Any failure, including a result that is not callable, becomes BackendCompilerFailed naming
    the backend; cdynamo's own errors (e.g. a nested backend's) pass through unchanged.
    """
    compiler_fn = lookup_backend(backend)
    start, start_cpu = time.perf_counter(), time.thread_time()
    try:
        # A backend's own tracing (AOTAutograd's joint graph, aten tracing) is not the forward a
        # torch.utils.checkpoint around this call counts saved tensors of.
        with _fake_runs.outside_saved_tensor_hooks():
            compiled = compiler_fn(gm, example_inputs)
    except CdynamoError:
        raise
    except Exception as error:
        raise BackendCompilerFailed(backend_name(backend), error) from error
    finally:
        utils.add_time("backend", time.perf_counter() - start)
        utils.add_time("backend_cpu", time.thread_time() - start_cpu)
    if not callable(compiled):
        raise BackendCompilerFailed(
            backend_name(backend),
            TypeError(
                f"returned {type(compiled).__name__}, not a callable; a backend must return "
                "something to call with the graph's inputs, e.g. gm.forward"
            ),
        )
    return _without_lazy_stub(compiled)


def _without_lazy_stub(compiled):
    """`gm.forward` of a lazy GraphModule whose code is not made yet is a stub that makes it and
    then re-enters through nn.Module.__call__ on every call (about 1.5 µs a call): the generated
    forward itself is returned instead."""
    owner = getattr(compiled, "__self__", None)
    stub = getattr(type(owner), "_lazy_forward", None)
    if stub is not None and getattr(compiled, "__func__", None) is stub:
        owner.real_recompile()
        return owner.forward
    return compiled


def _register_builtins():
    from . import eager  # noqa: F401  (registers "eager" and "aot_eager" on import)


_register_builtins()
