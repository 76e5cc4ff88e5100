"""globals() read and written in traced code (global loads and stores, guarded per name),
torch.manual_seed as a graph node: random draws after it, and the generator state after the call,
equal eager's; functools.singledispatch functions dispatched at trace time, their registry guarded."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounterWithBackend, same
from .helpers import explain, one_graph

_SCALE = 7


@pytest.fixture(autouse=True)
def fresh():
    global _SCALE
    cdynamo.reset()
    _SCALE = 7
    yield
    cdynamo.reset()
    _SCALE = 7


def test_globals_read_write_and_membership():
    def f(x):
        g = globals()
        g["_SCALE"] = g["_SCALE"] + 1
        return x * globals()["_SCALE"], "_SCALE" in g, _SCALE

    x = torch.randn(3)
    got = one_graph(f, x)
    assert torch.equal(got[0], x * 8) and got[1:] == (True, 8) and _SCALE == 8


def test_globals_read_is_guarded_by_name():
    def f(x):
        return x * globals()["_SCALE"]

    global _SCALE
    x = torch.randn(3)
    compiled = cdynamo.optimize("eager", nopython=True)(f)
    assert torch.equal(compiled(x), x * 7)
    _SCALE = 3
    assert torch.equal(compiled(x), x * 3)


def test_manual_seed_then_random_draws_as_eager():
    def f(x):
        torch.manual_seed(0)
        a = torch.rand(3)
        torch.manual_seed(0)
        b = torch.rand(3)
        return x + a, b, torch.rand(2)

    x = torch.randn(3)
    torch.manual_seed(123)
    want = f(x)
    want_next = torch.rand(4)
    torch.manual_seed(123)
    got = one_graph(f, x)
    got_next = torch.rand(4)  # the generator is where eager leaves it
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and torch.equal(got_next, want_next)
    assert torch.allclose(got[1], got[0] - x)  # both draws after seeding 0 are the same


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_manual_seed_graph_runs_as_captured_in_aten_backends(backend):
    def f(x):
        torch.manual_seed(5)
        return x + torch.rand(3)

    x = torch.randn(3)
    want = f(x)
    assert torch.equal(cdynamo.optimize(backend, nopython=True)(f)(x), want)


def test_singledispatch_picks_the_implementation_and_a_later_register_recompiles():
    import functools

    @functools.singledispatch
    def scale(arg):
        return 1

    @scale.register
    def _(arg: int):
        return 2

    @scale.register
    def _(arg: torch.Tensor):
        return arg * 10

    def f(x):
        return x * (scale(1) + scale("a") + scale(1.0)) + scale(x)

    x = torch.randn(3)
    compiled = cdynamo.optimize("eager", nopython=True)(f)
    assert torch.equal(compiled(x), f(x)) and torch.equal(f(x), x * 4 + x * 10)

    @scale.register
    def _(arg: float):
        return 5

    assert torch.equal(compiled(x), f(x)) and torch.equal(f(x), x * 8 + x * 10)


_generator = torch.Generator()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_random_operations_drawing_from_a_generator_of_the_program(backend):
    # The node draws from the generator itself, as eager does: its state advances the same way.
    def fn(x):
        return x + torch.randn(4, 3, generator=_generator), torch.randint(0, 5, (6,), generator=_generator)

    x = torch.randn(4, 3)
    _generator.manual_seed(7)
    expected = [fn(x), fn(x)]
    _generator.manual_seed(7)
    counter = CompileCounterWithBackend(backend)
    compiled = cdynamo.compile(fn, backend=counter, fullgraph=True)
    assert same([compiled(x), compiled(x)], expected) and counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_a_generator_made_inside_draws_as_a_fresh_one_at_every_call(backend):
    # torch.Generator() made and seeded in the function: the graph's own generator, given a
    # fresh one's state at each call, so every call draws eager's numbers; it may not leave.
    def seeded(x):
        g = torch.Generator().manual_seed(3)
        return torch.rand(3, generator=g), torch.randint(0, 10, (3,), generator=g), x + torch.randn(3, generator=g)

    def unseeded(x):
        g = torch.Generator()
        return torch.rand(2, generator=g) + x[:2]

    x = torch.randn(3)
    for fn in (seeded, unseeded):
        compiled = cdynamo.compile(fn, backend=backend, fullgraph=True)
        for _ in range(2):
            assert same(compiled(x), fn(x), tol=0)
    with pytest.raises(cdynamo.exc.Unsupported, match="leaving it"):
        cdynamo.compile(lambda x: torch.Generator(), backend="eager", fullgraph=True)(x)
    with pytest.raises(cdynamo.exc.Unsupported, match=r"Generator.seed\(\)"):
        cdynamo.compile(lambda x: torch.Generator().seed(), backend="eager", fullgraph=True)(x)
