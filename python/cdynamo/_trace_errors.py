"""The exceptions tracing raises to the C++ interpreter: TraceUnsupported (a graph break, with why) and TraceOpError.
Assumes graph_builder.cpp imports TraceUnsupported (through _trace_support) and turns it into a graph break."""


class TraceUnsupported(Exception):
    """Raised to the C++ interpreter: this operation cannot be captured; the message says why."""


class TraceOpError(TraceUnsupported):
    """An operation raised on fake tensors what eager raises on these shapes (a shape mismatch):
    a try/except of the traced code may handle `error`, else the graph breaks before the call."""

    def __init__(self, message, error):
        super().__init__(message)
        self.error = error


# Exceptions an operation raising on fake tensors passes to the traced code's handlers: only these
# exact classes (torch's checks raise them); fake-tensor and symbolic-shape failures are subclasses.
OP_ERRORS_RAISED_IN_TRACE = (RuntimeError, ValueError, TypeError, IndexError)
