"""Capture of idioms found by the seventeenth session's corpus modules: inspect's predicates on
any value, warnings.catch_warnings blocks (YOLOv5's SPPF) and the filter calls inside them."""
import inspect
import warnings

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same


def test_inspect_predicates_answer_by_the_type_of_any_traced_value():
    # The latent-diffusion helper default(val, d): d() if inspect.isfunction(d) else d.
    def default(val, d):
        if val is not None:
            return val
        return d() if inspect.isfunction(d) else d

    def fn(x, context=None):
        context = default(context, x)
        answers = (inspect.isfunction(x), inspect.isclass(x), inspect.ismethod(x), inspect.isclass([x]),
                   inspect.isfunction(lambda: 1), inspect.isfunction({"a": x}), inspect.ismethod(x.add))
        return context * 2, default(None, lambda: x + 1), answers

    counter = CompileCounter()
    x = torch.randn(3)
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1 and counter.op_count == 2


def _shown_warnings(fn, *args):
    """fn(*args)'s result and the messages of the warnings it showed (every warning shown once)."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in shown]


def test_a_catch_warnings_block_silences_the_warnings_eager_silences():
    def fn(x):
        with warnings.catch_warnings():  # as YOLOv5's SPPF, around its pooling
            warnings.simplefilter("ignore")
            y = torch.relu(x) + 1
            warnings.warn("silenced in the block")
        with warnings.catch_warnings(action="error", category=DeprecationWarning):
            warnings.warn("still a UserWarning")
        warnings.warn("shown after the block")
        return y * 2

    counter = CompileCounter()
    filters_before = list(warnings.filters)
    x = torch.randn(4)
    got, got_shown = _shown_warnings(cdynamo.compile(fn, backend=counter, fullgraph=True), x)
    want, want_shown = _shown_warnings(fn, x)
    assert same(got, want) and got_shown == want_shown == ["still a UserWarning", "shown after the block"]
    assert counter.frame_count == 1 and counter.op_count == 3
    assert warnings.filters == filters_before  # every block's filters restored


def test_a_graph_break_inside_a_catch_warnings_block_keeps_its_filters_until_its_end():
    def fn(x):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="silenced")
            y = x + 1
            cdynamo.graph_break()
            warnings.warn("silenced here")
            y = y * 3
        warnings.warn("silenced no more")
        return y

    counter = CompileCounter()
    filters_before = list(warnings.filters)
    compiled = cdynamo.compile(fn, backend=counter)
    x = torch.randn(2)
    for _ in range(2):
        got, got_shown = _shown_warnings(compiled, x)
        want, want_shown = _shown_warnings(fn, x)
        assert same(got, want) and got_shown == want_shown == ["silenced no more"]
    assert counter.frame_count == 2
    assert warnings.filters == filters_before


def test_catch_warnings_that_records_is_refused_with_the_reason():
    def fn(x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("recorded")
        return x + len(caught)

    with pytest.raises(cdynamo.exc.Unsupported, match=r"catch_warnings\(record=True\)"):
        cdynamo.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))
    cdynamo.reset()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert same(cdynamo.compile(fn, backend="eager")(torch.ones(2)), fn(torch.ones(2)))
