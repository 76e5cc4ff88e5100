"""max_pool2d lowered as a windowed maximum, with its positions when they are read, and its
backward as a gather over windows: equal to eager over kernel sizes, strides, padding,
dilation, ceil_mode, NaN, -inf, ties, layouts and dtypes; fused with its producer."""
import pytest
import torch
import torch.nn.functional as F

import cdynamo
from cdynamo.inductor.compile_fx import aten_graph
from cpp_support import T, kernel_cache_dir  # noqa: F401


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0)),
    dict(kernel_size=3, stride=2, padding=1, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("channels_last", [False, True])
def test_equal_to_eager(case, channels_last):
    x = torch.randn(2, 5, 11, 13)
    x[0, 1, 3, 4] = float("nan")
    x[1, 2, 0, 0] = float("inf")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)

    def f(t):
        return F.max_pool2d(torch.relu(t * 2 - 1), **case)

    expected = f(x)
    actual = cdynamo.optimize("inductor")(f)(x)
    torch.testing.assert_close(actual, expected, equal_nan=True)
    assert actual.stride() == expected.stride()


def test_three_dimensional_input_and_bfloat16():
    x = torch.randn(4, 9, 9, dtype=torch.bfloat16)
    f = lambda t: F.max_pool2d(t, 3, 2, 1)  # noqa: E731
    torch.testing.assert_close(cdynamo.optimize("inductor")(f)(x), f(x))


def test_fuses_with_its_producer():
    gm = aten_graph(torch.fx.symbolic_trace(lambda t: F.max_pool2d(torch.relu(t + 1), 3, 2, 1)), [torch.randn(2, 4, 8, 8)])
    program = T.schedule(gm)
    assert "extern" not in program
    assert program.count("pointwise") == 1  # add, relu and the window maximum in one kernel


def test_window_masks_are_one_branch_per_vector():
    # Channels-last input: the vector loop runs over channels, where a window position is inside
    # or outside the input for every lane alike, so padded loads are plain vector loads.
    x = torch.randn(2, 32, 9, 9).contiguous(memory_format=torch.channels_last)
    gm = aten_graph(torch.fx.symbolic_trace(lambda t: F.max_pool2d(t, 3, 2, 1)), [x])
    from cdynamo import _C

    compiled = _C._inductor_compile(gm, gm.forward)
    torch.testing.assert_close(compiled(x)[0], F.max_pool2d(x, 3, 2, 1))
    source = "".join(open(path).read() for path in _kernel_sources())
    assert "vectorized along the innermost loop" in source
    assert "cd_l < CD_VLEN" not in source  # no lane-by-lane loads


def _kernel_sources():
    import glob
    import os

    return [p for p in glob.glob(os.path.join(cdynamo.config.cache_dir, "kernels", "*", "*", "kernel.cpp"))
            if "max" in open(p).read() and "// loops: i0<2 i2<5 i3<5 i1<32" in open(p).read()]


def _with_ties_and_specials(x):
    x = x.round()  # many equal values in a window: the first position wins, as in eager
    x[0, 1, 3, 4] = float("nan")
    x[0, 1, 5, 5] = float("nan")  # two NaNs in one window: the last one's position
    x[1, 2, :4, :4] = float("-inf")  # a window of -inf only: its first position inside the input
    return x


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("channels_last", [False, True])
def test_positions_equal_eager_and_are_computed_in_a_kernel(case, channels_last):
    def f(t):
        values, indices = F.max_pool2d(t * 2, return_indices=True, **case)
        return values + 1, indices

    x = _with_ties_and_specials(torch.randn(2, 5, 11, 13) * 2)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    expected = f(x)
    actual = cdynamo.optimize("inductor")(f)(x)
    torch.testing.assert_close(actual, expected, equal_nan=True)
    assert [t.stride() for t in actual] == [t.stride() for t in expected]
    assert "extern" not in T.schedule(aten_graph(torch.fx.symbolic_trace(f), [x]))


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("channels_last", [False, True])
def test_gradient_equal_to_eager(case, channels_last):
    weights = torch.arange(1.0, 6.0).view(1, 5, 1, 1)

    def f(t):
        return (F.max_pool2d(torch.relu(t), **case) * weights).sum()

    x = _with_ties_and_specials(torch.randn(2, 5, 11, 13) * 2).nan_to_num(nan=0.5)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    eager_x, compiled_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    f(eager_x).backward()
    cdynamo.optimize("inductor")(f)(compiled_x).backward()
    torch.testing.assert_close(compiled_x.grad, eager_x.grad)
    assert compiled_x.grad.stride() == eager_x.grad.stride()


def test_the_backward_is_a_kernel_not_an_aten_call():
    def backward(grad, x, indices):
        return torch.ops.aten.max_pool2d_with_indices_backward.default(grad, x, [3, 3], [2, 2], [1, 1], [1, 1], False,
                                                                         indices)

    x = torch.randn(2, 4, 9, 9)
    values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    grad = torch.randn_like(values)
    program = T.schedule(aten_graph(torch.fx.symbolic_trace(backward), [grad, x, indices]))
    assert "extern" not in program and program.count("pointwise") == 1
    torch.testing.assert_close(cdynamo.optimize("inductor")(backward)(grad, x, indices), backward(grad, x, indices))
