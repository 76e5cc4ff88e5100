"""The model registry: a name per model, its family, the packages it needs, and a builder that
returns (model, example_inputs) with random weights, never downloading anything."""
import dataclasses
import importlib.util


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # "micro", "torchvision", "timm", "transformers", ...
    builder: object  # builder(small: bool) -> (nn.Module, example_inputs)
    requires: tuple = ()  # importable module names the builder needs
    quick: bool = False  # part of --quick
    # tiny_inputs(model) -> inputs so small that kernels cost nothing: the time of a compiled call
    # over the eager one is then the per-call overhead (guards, dispatch, the graph call).
    tiny_inputs: object = None
    description: str = ""

    def missing_packages(self):
        """Names of required modules that cannot be imported here, in declaration order."""
        return [name for name in self.requires if not _module_available(name)]


_MODELS = {}


def _module_available(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def register_model(name, family, requires=(), quick=False, tiny_inputs=None, description=""):
    """Decorator registering `builder(small) -> (model, example_inputs)` under `name`."""

    def decorate(builder):
        if name in _MODELS:
            raise ValueError(f"a model named {name!r} is already registered")
        _MODELS[name] = ModelSpec(name, family, builder, tuple(requires), quick, tiny_inputs, description)
        return builder

    return decorate


def unregister_model(name):
    """Removes a model (tests register fakes and take them out again)."""
    _MODELS.pop(name, None)


def all_models():
    """Every registered ModelSpec, in registration order (micro first, then by family)."""
    _load_builtin_models()
    return list(_MODELS.values())


def get_model(name):
    _load_builtin_models()
    if name not in _MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(_MODELS)}")
    return _MODELS[name]


def select_models(names=None, quick=False, families=None):
    """The specs to run: `names` (in the given order; unknown ones raise KeyError), else the
    --quick subset, else all; optionally only some families."""
    if names:
        specs = [get_model(name) for name in names]
    else:
        specs = [spec for spec in all_models() if spec.quick or not quick]
    if families:
        specs = [spec for spec in specs if spec.family in families]
    return specs


_builtins_loaded = False


def _load_builtin_models():
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        from . import models  # noqa: F401  (registers the built-in models on import)
