"""Helpers shared by the end-to-end tests."""
import inspect

import cdynamo


def line_of(fn, text):
    """The line number in fn's file of the first source line of fn that contains `text`."""
    lines, first_line = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return first_line + offset
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


def one_graph(fn, *args):
    """fn(*args) compiled from scratch: asserts one graph and no break, returns the result."""
    cdynamo.reset()
    out = cdynamo.explain(fn)(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, out.break_reasons
    return out.out


def explain(fn, *args, **kwargs):
    """cdynamo.explain of one call of fn: its result, graphs and graph-break reasons."""
    return cdynamo.explain(fn)(*args, **kwargs)
