"""Helpers shared by the end-to-end tests."""
import inspect


def line_of(fn, text):
    """The line number in fn's file of the first source line of fn that contains `text`."""
    lines, first_line = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return first_line + offset
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")
