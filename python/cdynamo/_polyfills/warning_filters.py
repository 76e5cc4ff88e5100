"""warnings.catch_warnings in traced code: its saving and restoring of the warning filters made after the graph.
Assumes the filter calls inside the block (simplefilter, filterwarnings, warn) are deferred calls too, made in order."""
# The filters decide what the program's Python-level warnings show. Traced code issues those only as calls
# made after the graph (warnings.warn is a deferred call), so the block's entry and exit are made there too,
# in order with them: warnings the block silences in eager stay silent. A graph's operators emit no
# warnings of their own once compiled, with or without a block.
import warnings

from .. import _special_calls

_open_blocks = []  # catch_warnings objects entered by compiled code, innermost last


def _enter_block(module, keywords):
    block = warnings.catch_warnings(module=module, **keywords)
    block.__enter__()
    _open_blocks.append(block)


def _exit_block():
    _open_blocks.pop().__exit__(None, None, None)


class CatchWarnings:
    """warnings.catch_warnings(), whose methods live in the standard library (not traced)."""

    def __init__(self, *, record=False, module=None, **keywords):
        if record:
            _special_calls.refuse("warnings.catch_warnings(record=True): the list of warnings it records is filled "
                                  "after the graph; read it outside the compiled function")
        self.module = module
        self.keywords = keywords  # action, category, lineno, append (Python 3.11+)

    def __enter__(self):
        _special_calls.after_graph(_enter_block, self.module, self.keywords)

    def __exit__(self, *exc_info):
        _special_calls.after_graph(_exit_block)
        return False


def catch_warnings_(*, record=False, module=None, **keywords):
    return CatchWarnings(record=record, module=module, **keywords)
