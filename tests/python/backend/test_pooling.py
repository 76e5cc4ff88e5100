"""max_pool2d lowered as a windowed maximum (values only): equal to eager over kernel sizes,
strides, padding, dilation, ceil_mode, NaN, layouts and dtypes; fused with its producer; the
indices output, when read, stays an aten call."""
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


def test_indices_read_stay_an_aten_call():
    def f(t):
        values, indices = F.max_pool2d(t, 2, return_indices=True)
        return values + 1, indices

    x = torch.randn(2, 3, 8, 8)
    expected = f(x)
    actual = cdynamo.optimize("inductor")(f)(x)
    torch.testing.assert_close(actual, expected)
