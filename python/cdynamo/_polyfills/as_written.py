"""An original's code as a function object of its own: a stand-in runs it without the call coming back to itself.
Assumes a plain Python function (its code, globals, defaults, keyword defaults and closure are reused)."""
import types


def _as_written(original):
    # A function object of its own: calls of the original (its recursion included) come back to
    # the stand-in, this one runs the original's code as written.
    function = types.FunctionType(original.__code__, original.__globals__, original.__name__, original.__defaults__,
                                  original.__closure__)
    function.__kwdefaults__ = original.__kwdefaults__
    return function
