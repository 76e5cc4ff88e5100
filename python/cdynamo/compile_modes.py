"""compile(mode=..., options=...): torch.compile's modes and options as config overrides for the backend.
Assumes backends read the knobs they honour while they compile (the inductor and cudagraphs do)."""
import inspect

from . import config
from .exc import InvalidCompileOption

# What each mode of torch.compile sets, in cdynamo's knob names (torch's "max-autotune" also
# turns on coordinate-descent tuning, which cdynamo has no knob for).
MODES = {
    "default": {},
    "reduce-overhead": {"cudagraphs": True},
    "max-autotune": {"max_autotune": True, "cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}

# Knobs read while a backend compiles: the only ones an options dict may set (the others, such
# as cache_size_limit, are read by the frontend and are set on cdynamo.config directly).
BACKEND_KNOBS = frozenset({
    "cudagraphs", "cudagraphs_warmup_calls", "cudagraphs_max_graphs", "cudagraphs_instances",
    "max_autotune", "cxx", "cxx_flags", "async_compile", "verify_ir", "reuse_large_buffers",
    "channels_last_convolutions", "freeze_constants", "graph_cache", "cache_dir",
})

# torch.compile's spellings of the same knobs.
TORCH_OPTION_NAMES = {"triton.cudagraphs": "cudagraphs"}

_CONFIGURED = {}  # (backend, overrides) -> the one configured backend for it


def mode_overrides(mode):
    if mode is None:
        return {}
    if mode not in MODES:
        raise InvalidCompileOption(f"unknown mode {mode!r}; valid modes: {', '.join(map(repr, MODES))}")
    return dict(MODES[mode])


def option_overrides(options):
    """{knob: value} for an options dict in cdynamo's or torch's spelling ('-' may stand for '_')."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidCompileOption(f"options must be a dict of config overrides, got {type(options).__name__}")
    overrides = {}
    for key, value in options.items():
        name = TORCH_OPTION_NAMES.get(key, str(key).replace("-", "_"))
        if name not in BACKEND_KNOBS:
            raise InvalidCompileOption(
                f"unknown option {key!r}; valid options: {', '.join(sorted(BACKEND_KNOBS))} "
                f"(also torch's {', '.join(sorted(TORCH_OPTION_NAMES))})")
        _check_type(key, name, value)
        overrides[name] = value
    return overrides


def _check_type(key, name, value):
    current = getattr(config, name)
    expected = type(current)
    # bool is an int in Python; a knob of either kind takes only its own.
    if type(value) is not expected and not (expected is float and type(value) is int):
        raise InvalidCompileOption(
            f"option {key!r} takes a {expected.__name__} (like {current!r}), got {type(value).__name__} {value!r}")


def configured_backend(compiler_fn, mode, options, is_inductor):
    """The backend compile() hands to the frontend for `mode`/`options`, as torch.compile does:
    not both at once; a mode configures the inductor, and any other backend gets it as a `mode`
    keyword, which it must accept; options are config overrides for any backend."""
    if mode is not None and options is not None:
        raise InvalidCompileOption("either mode or options can be given, not both (as torch.compile)")
    overrides = option_overrides(options)
    keywords = {}
    if mode is not None:
        mode_settings = mode_overrides(mode)
        if is_inductor:
            overrides = mode_settings
        elif mode != "default":
            keywords = _mode_keyword(compiler_fn, mode)
    if not overrides and not keywords:
        return compiler_fn
    key = (compiler_fn, tuple(sorted((k, repr(v)) for k, v in overrides.items())), tuple(keywords.items()))
    if key not in _CONFIGURED:
        _CONFIGURED[key] = ConfiguredBackend(compiler_fn, overrides, keywords)
    return _CONFIGURED[key]


def _mode_keyword(compiler_fn, mode):
    try:
        parameters = inspect.signature(compiler_fn).parameters
    except (TypeError, ValueError):
        parameters = {}
    takes_mode = "mode" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    if not takes_mode:
        name = getattr(compiler_fn, "__name__", type(compiler_fn).__name__)
        raise InvalidCompileOption(
            f"mode={mode!r} configures the inductor backend; backend {name!r} takes no mode keyword "
            "(torch.compile passes a mode to other backends as one). For CUDA graphs around the "
            "captured graph run as it is, use backend='cudagraphs'.")
    return {"mode": mode}


class ConfiguredBackend:
    """A backend called with config overrides in force (and torch's keywords, if any). One per
    (backend, settings): compiled entries are cached per backend object, so compiling twice with
    the same mode shares them."""

    def __init__(self, compiler_fn, overrides, keywords):
        self.compiler_fn, self.overrides, self.keywords = compiler_fn, overrides, keywords
        self.__name__ = getattr(compiler_fn, "__name__", type(compiler_fn).__name__)

    def __call__(self, gm, example_inputs):
        with config.patch(self.overrides):
            return self.compiler_fn(gm, example_inputs, **self.keywords)

    def __repr__(self):
        return f"ConfiguredBackend({self.__name__}, {self.overrides or self.keywords})"
