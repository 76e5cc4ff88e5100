"""optimize / run / disable / reset / compile: the user-facing switches of the C++ frame hook.

A wrapped function runs with a thread-local hook mode: compile (a (backend, options) tuple),
run-only (False: cached code only) or off (None). The hook itself lives in cdynamo._C.
"""
import functools
import sys
import threading

import torch

from . import _C, _call_policy, _entry
# Loaded with the hook, as before the split: compile_frame.cpp reaches it as an attribute of the package.
from . import _trace_support  # noqa: F401
from .backends.registry import list_backends, lookup_backend
from .compile_modes import configured_backend


class CompileOptions:
    """What the C++ compiler reads about one optimize() context."""

    __slots__ = ("backend_name", "nopython", "dynamic")

    def __init__(self, backend_name, nopython, dynamic):
        self.backend_name = backend_name
        self.nopython = bool(nopython)
        self.dynamic = dynamic

    def __repr__(self):
        return f"CompileOptions(backend={self.backend_name!r}, nopython={self.nopython}, dynamic={self.dynamic})"


_context_stack = threading.local()


class _HookContext:
    """A hook mode usable as a decorator and as a context manager."""

    def __init__(self, callback):
        self.callback = callback

    def __call__(self, fn):
        if isinstance(fn, torch.nn.Module):
            return OptimizedModule(fn, self)
        if not callable(fn):
            raise TypeError(f"cdynamo can only optimize functions and nn.Modules, got {type(fn).__name__}")
        wrapper = _C.OptimizedCallable(fn, self.callback)
        try:
            functools.update_wrapper(wrapper, fn)
        except (AttributeError, TypeError):
            pass
        return wrapper

    def __enter__(self):
        stack = getattr(_context_stack, "previous", None)
        if stack is None:
            stack = _context_stack.previous = []
        stack.append(_C._enter(self.callback))
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._leave(_context_stack.previous.pop())
        return False


def _default_backend():
    return "inductor" if "inductor" in list_backends() else "eager"


def _backend_name(backend, compiler_fn):
    if isinstance(backend, str):
        return backend
    return getattr(compiler_fn, "__name__", type(compiler_fn).__name__)


def optimize(backend=None, *, nopython=False, dynamic=None):
    """Like torch._dynamo.optimize: a decorator and context manager that compiles the frames run
    inside it with `backend` (a name from list_backends() or a callable backend(gm, example_inputs)).
    The default backend is "inductor" once it is registered, else "eager"."""
    if backend is None:
        backend = _default_backend()
    compiler_fn = lookup_backend(backend)
    options = CompileOptions(_backend_name(backend, compiler_fn), nopython, dynamic)
    return _HookContext((compiler_fn, options))


def run(fn=None):
    """Runs already compiled code for fn's frames, never compiling anything new."""
    context = _HookContext(False)
    return context(fn) if fn is not None else context


def disable(fn=None, recursive=True):
    """Runs fn (and, if recursive, everything it calls) without cdynamo."""
    if not recursive:
        if fn is None:
            raise TypeError("disable(recursive=False) needs the function to disable")
        _C.skip_code(fn)
        return fn
    context = _HookContext(None)
    return context(fn) if fn is not None else context


def reset():
    """Forgets every compiled entry: the next call of each function compiles again."""
    from . import _fake_mode

    from . import shapes

    _C.reset()
    _fake_mode.reset_fake_mode()
    shapes.reset()


def _mark(fn, into, out_of, api):
    if isinstance(fn, (list, tuple)):
        return type(fn)(_mark(f, into, out_of, api) for f in fn)
    if not callable(fn):
        raise TypeError(f"cdynamo.{api}() takes a function (or a list of them), not {type(fn).__name__}")
    into[id(fn)] = fn
    out_of.pop(id(fn), None)
    return fn


def allow_in_graph(fn):
    """Calls of fn become one node of the graph instead of being traced through: while tracing,
    fn runs on fake tensors, so it must only compute on its tensor arguments (as
    torch._dynamo.allow_in_graph). Affects frames compiled from now on (cdynamo.reset() recompiles)."""
    return _mark(fn, _call_policy.ALLOWED_IN_GRAPH, _call_policy.DISALLOWED_IN_GRAPH, "allow_in_graph")


def disallow_in_graph(fn):
    """Calls of fn end the graph and run eagerly, the graph resuming after them (a torch function
    included). Affects frames compiled from now on (cdynamo.reset() recompiles)."""
    return _mark(fn, _call_policy.DISALLOWED_IN_GRAPH, _call_policy.ALLOWED_IN_GRAPH, "disallow_in_graph")


def graph_break():
    """Ends the graph here when traced (the code after it runs in a resume function); no-op otherwise."""


class OptimizedModule(torch.nn.Module):
    """What compile(module) returns: calls the original module with cdynamo's hook on.

    It shares the original's parameters, buffers, submodules, hooks and training flag, so
    state_dict() keys, parameters(), train()/eval() and load_state_dict() behave exactly as on
    the original (no "_orig_mod." prefix)."""

    _SHARED_STATE = (
        "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
        "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
        "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
        "_backward_pre_hooks", "_is_full_backward_hook", "_state_dict_hooks",
        "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
    )

    def __init__(self, module, context):
        super().__init__()
        # Plain attributes, outside nn.Module's registries: neither is a submodule of the wrapper.
        self.__dict__["_orig_mod"] = module
        self.__dict__["_compiled_call"] = _C.OptimizedCallable(
            functools.partial(_entry.call_module, module), context.callback
        )
        for name in self._SHARED_STATE:
            if name in module.__dict__:
                self.__dict__[name] = module.__dict__[name]

    @property
    def training(self):
        original = self.__dict__.get("_orig_mod")
        return True if original is None else original.training

    @training.setter
    def training(self, mode):
        original = self.__dict__.get("_orig_mod")
        if original is not None:
            original.training = mode

    def __call__(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_orig_mod"], name)


def compile(model=None, *, backend=None, fullgraph=False, dynamic=None, mode=None, options=None, disable=False):
    """Like torch.compile: compile(fn_or_module, backend=...), or @compile / @compile(...).

    mode: "default", "reduce-overhead" (CUDA graphs), "max-autotune" (kernel autotuning and CUDA
    graphs) or "max-autotune-no-cudagraphs"; it configures the inductor backend, and any other
    backend gets it as a `mode` keyword, as torch.compile does. options: a dict of config
    overrides held while the backend compiles (cdynamo's knob names, or torch's such as
    "triton.cudagraphs"); not together with mode."""
    if model is None:
        return lambda m: compile(
            m, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options, disable=disable
        )
    if backend is None:
        backend = _default_backend()
    compiler_fn = lookup_backend(backend)
    configured = configured_backend(compiler_fn, mode, options, _is_inductor(compiler_fn))
    if disable:
        return model
    context = optimize(configured, nopython=fullgraph, dynamic=dynamic)
    context.callback[1].backend_name = _backend_name(backend, compiler_fn)
    return context(model)


def _is_inductor(compiler_fn):
    inductor_module = sys.modules.get("cdynamo.inductor")
    return inductor_module is not None and compiler_fn in (inductor_module, getattr(inductor_module, "inductor", None))
