"""Branches on tensor data whose one side only raises (`assert (x > 0).all()`, `if not valid:
raise ValueError(...)`): one graph holding a check node that raises eager's exception class, not a
graph break; ordinary data-dependent branches, and checks a try-block would catch, still break.
PYTEST_DONT_REWRITE: the functions compiled here hold plain assert statements, as users write them."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter
from .helpers import explain, one_graph


def asserts_with_a_message(x):
    y = x * 2
    assert (y > -100).all(), "values too small"
    return y + 1


def raises_a_formatted_error(x):
    if not torch.isfinite(x).all():
        raise ValueError(f"non-finite values in {x}")
    return x.sin()


def test_an_assert_on_tensor_data_is_a_check_in_the_graph():
    x = torch.randn(4)
    assert torch.equal(one_graph(asserts_with_a_message, x), asserts_with_a_message(x))
    compiled = cdynamo.optimize("eager", nopython=True)(asserts_with_a_message)
    with pytest.raises(AssertionError, match="^values too small$"):  # eager's class and constant message
        compiled(torch.full((4,), -1000.0))


def test_a_raise_with_a_message_from_the_data_says_where_the_check_is():
    x = torch.randn(4)
    assert torch.equal(one_graph(raises_a_formatted_error, x), raises_a_formatted_error(x))
    compiled = cdynamo.optimize("eager", nopython=True)(raises_a_formatted_error)
    with pytest.raises(ValueError, match="test_data_checks.py"):
        compiled(torch.tensor([1.0, float("nan")]))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_aten_backends_run_the_check(backend):
    from cdynamo.utils import counters

    compiled = cdynamo.optimize(backend, nopython=True)(asserts_with_a_message)
    x = torch.randn(4)
    assert torch.allclose(compiled(x), asserts_with_a_message(x))
    with pytest.raises(AssertionError, match="values too small"):
        compiled(torch.full((4,), -1000.0))
    if backend == "inductor":  # the code around the check still compiles
        assert counters["inductor"]["graphs split at data checks"] == 1


def test_writes_before_a_failing_check_happen_as_in_eager():
    def f(x):
        x.add_(1)
        assert (x < 10).all()
        return x * 2

    compiled = cdynamo.optimize("eager", nopython=True)(f)
    x = torch.full((3,), 20.0)
    with pytest.raises(AssertionError):
        compiled(x)
    assert torch.equal(x, torch.full((3,), 21.0))


def test_a_check_a_try_block_catches_and_an_ordinary_branch_still_break():
    def caught(x):
        try:
            if not (x > 0).all():
                raise ValueError("negative")
            y = x.sqrt()
        except ValueError:
            y = x.abs()
        return y + 1

    def branches(x):
        if (x > 0).all():
            return x.sqrt()
        return x.abs()

    for fn in (caught, branches):
        for x in (torch.rand(3) + 0.1, -torch.rand(3) - 0.1):
            out = explain(fn, x)
            assert torch.allclose(out.out, fn(x)) and out.graph_break_count >= 1
            cdynamo.reset()


def test_a_tensor_of_several_elements_raises_as_bool_does_in_eager():
    def f(x):
        assert x > 0
        return x + 1

    compiled = cdynamo.optimize("eager")(f)
    with pytest.raises(RuntimeError, match="ambiguous"):
        compiled(torch.ones(3))


def test_a_check_inside_torch_state_blocks_is_in_the_graph_and_restores_the_state_when_it_fails():
    def f(x):
        with torch.no_grad():
            assert (x > 0).all(), "positive"
            y = x * 2
        return y + x

    x = torch.rand(3, requires_grad=True) + 0.1
    got = one_graph(f, x)
    assert torch.allclose(got, f(x)) and got.requires_grad
    compiled = cdynamo.optimize("eager", nopython=True)(f)
    with pytest.raises(AssertionError, match="positive"):
        compiled(-x)
    assert torch.is_grad_enabled()


def test_an_assert_on_an_item_under_capture_scalar_outputs_is_a_check():
    def f(x, ids):  # XLM's and Flaubert's `assert lengths.max().item() <= slen`
        lengths = (ids != 0).sum(dim=1)
        assert lengths.max().item() <= ids.shape[1]
        return x * lengths.max().item()

    x, ids = torch.randn(2, 5), torch.randint(0, 3, (2, 5))
    with cdynamo.config.patch(capture_scalar_outputs=True):
        assert torch.equal(one_graph(f, x, ids), f(x, ids))

    def g(x, limit):
        assert x.sum().item() < limit, "over the limit"
        return x + 1

    with cdynamo.config.patch(capture_scalar_outputs=True):
        compiled = cdynamo.optimize("eager", nopython=True)(g)
        assert torch.equal(compiled(torch.ones(3), torch.tensor(10)), torch.ones(3) + 1)
        with pytest.raises(AssertionError, match="over the limit"):
            compiled(torch.ones(3), torch.tensor(2))


class ShapeError(Exception):
    def __init__(self, message, tensor):
        super().__init__(message)
        self.tensor = tensor


def test_an_exception_class_of_the_program_with_computed_arguments_stays_a_break():
    def f(x):
        if (x < 0).any():
            raise ShapeError(f"negative values in {x}", x)
        return x * 2

    x = torch.rand(3)
    out = explain(f, x)
    assert torch.equal(out.out, f(x)) and out.graph_break_count >= 1
    compiled = cdynamo.optimize("eager")(f)
    with pytest.raises(ShapeError) as raised:
        compiled(-x)
    assert torch.equal(raised.value.tensor, -x)


def test_an_exception_made_from_a_traced_tensor_holds_the_real_tensor():
    def f(x):
        if (x < 0).any():
            raise ShapeError("negative values", x)
        return x * 2

    compiled = cdynamo.optimize("eager")(f)
    x = torch.rand(3)
    assert torch.equal(compiled(x), x * 2)
    with pytest.raises(ShapeError) as raised:
        compiled(-x)
    assert type(raised.value.tensor) is torch.Tensor and torch.equal(raised.value.tensor, -x)
