"""Row reductions with several vector accumulators (unrolled r loop) and softmax's shared exp row.
Assumes the C++ generator of codegen/cpp; checks results against eager / an fp64 reference."""
import glob
import os

import pytest
import torch

import cdynamo
from cdynamo import config
from cpp_support import assert_close_to_reference, kernel_cache_dir  # noqa: F401  (autouse fixture)


@pytest.fixture
def fresh_cache(tmp_path):
    cdynamo.reset()
    with config.patch(cache_dir=str(tmp_path), async_compile=False, suppress_errors=False):
        yield tmp_path
    cdynamo.reset()


def compiled(fn):
    return cdynamo.optimize("inductor")(fn)  # each fn its own lambda: its own code object


def sources(cache):
    out = []
    for path in glob.glob(os.path.join(str(cache), "kernels", "*", "*", "kernel.cpp")):
        with open(path) as f:
            out.append(f.read())
    return out


# Lengths around the unrolled group (4 vectors of up to 16 lanes): tails of every kind.
LENGTHS = [63, 64, 65, 127, 200, 1024, 1031]


@pytest.mark.parametrize("n", LENGTHS)
def test_row_reductions_match_eager(fresh_cache, n):
    torch.manual_seed(n)
    x = torch.randn(9, n)
    for fn in (lambda x: x.sum(-1), lambda x: x.amax(-1), lambda x: x.amin(-1), lambda x: (x * 0.01 + 1).prod(-1)):
        assert_close_to_reference(compiled(fn)(x), fn(x.double()), torch.float32)
    for fn in (lambda x: x.argmax(-1), lambda x: x.argmin(-1), lambda x: (x > 2).any(-1), lambda x: (x > -3).all(-1)):
        assert torch.equal(compiled(fn)(x), fn(x))
    xi = torch.randint(-1000, 1000, (9, n), dtype=torch.int32)
    assert torch.equal(compiled(lambda x: x.sum(-1))(xi), xi.sum(-1))


@pytest.mark.parametrize("n", [200, 1024])
def test_argmax_ties_and_nans_pick_the_first_position_across_accumulators(fresh_cache, n):
    x = torch.zeros(4, n)
    # Ties in different accumulators of a group and in different groups: the first one wins.
    x[0, [n - 1, 17, 100]] = 5.0
    x[1, [70, 3]] = -5.0
    # NaN beats everything; among NaNs the first.
    x[2, [150, 90, 31]] = float("nan")
    x[2, 5] = 1e30
    x[3, [n - 1]] = float("nan")
    am, an = compiled(lambda x: x.argmax(-1))(x), compiled(lambda x: x.argmin(-1))(x)
    assert torch.equal(am, x.argmax(-1)) and torch.equal(an, x.argmin(-1))
    assert am[0] == 17 and an[1] == 3 and am[2] == 31 and an[2] == 31 and am[3] == n - 1
    mx = compiled(lambda x: x.amax(-1))(x)
    assert torch.isnan(mx[2]) and torch.isnan(mx[3])


def test_row_sums_are_deterministic_across_calls_and_thread_counts(fresh_cache):
    torch.manual_seed(0)
    x = torch.randn(512, 1024) * 100
    f = compiled(lambda x: x.sum(-1))
    first = f(x)
    assert torch.equal(first, f(x))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        single = f(x)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(first, single)


@pytest.mark.parametrize("shape", [(1 << 24,), (16, 1 << 20)])
def test_16m_float_sums_are_no_less_accurate_than_eager(fresh_cache, shape):
    torch.manual_seed(1)
    x = torch.rand(shape) + 0.5  # positive: no cancellation to hide drift behind
    ref = x.double().sum(-1)
    ours = compiled(lambda x: x.sum(-1))(x)
    eager = x.sum(-1)
    ulp = torch.finfo(torch.float32).eps * ref.abs()
    assert ((ours.double() - ref).abs() <= (eager.double() - ref).abs() + 0.5 * ulp).all()


def test_softmax_reads_its_exp_row_back_instead_of_recomputing_it(fresh_cache):
    torch.manual_seed(2)
    x = torch.randn(64, 1000) * 4
    x[3, 10:500] = float("-inf")  # masked positions: exp gives 0
    x[5, :] = float("-inf")       # a fully masked row: NaN like eager
    out = compiled(lambda x: torch.softmax(x, -1))(x)
    ref = torch.softmax(x.double(), -1)
    assert torch.isnan(out[5]).all() and torch.isnan(ref[5]).all()
    keep = torch.ones(64, dtype=torch.bool)
    keep[5] = False
    assert_close_to_reference(out[keep], ref[keep], torch.float32, rtol=1e-5, atol=1e-7)
    (src,) = sources(fresh_cache)
    # The normalizing loop loads the scratch row and calls no exp.
    at = src.index("cd_vload<cd_vf32>(cd_scratch")
    assert "cd_vexp" in src[:at] and "cd_vexp" not in src[at:] and "std::exp" not in src[at:]
