"""Exceptions raised by cdynamo, each saying what to change in the user's code."""


class CdynamoError(RuntimeError):
    """Base class of every error cdynamo raises."""


class Unsupported(CdynamoError):
    """A construct cdynamo cannot capture into a graph (raised with fullgraph/nopython=True)."""


class BackendCompilerFailed(CdynamoError):
    """A backend raised while compiling a captured graph."""

    def __init__(self, backend_name, inner):
        self.backend_name = backend_name
        self.inner_exception = inner
        super().__init__(
            f"backend {backend_name!r} raised {type(inner).__name__}: {inner}\n"
            "Set cdynamo.config.suppress_errors = True to fall back to eager execution instead."
        )


class InvalidBackend(CdynamoError):
    """An unknown backend name."""

    def __init__(self, name, available):
        super().__init__(
            f"unknown backend {name!r}; available backends: {', '.join(available)}. "
            "Pass one of these names or a callable backend(gm, example_inputs) -> callable."
        )


class InternalError(CdynamoError):
    """A bug in cdynamo while tracing; please report it with the user code that triggered it."""


class InvalidCompileOption(CdynamoError):
    """An unknown compile(mode=...), an unknown or mistyped options key, or both given at once."""
