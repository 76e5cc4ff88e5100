"""torch.nn modules with parameters made inside compiled code (a head built on the first call, a
layer made per call): made at trace time for the one call whose trace made them, with eager's
results, eager's global generator state afterwards, what the program stores, and the reasons it
recompiles or refuses."""
import pytest
import torch
import torch.nn as nn

import cdynamo
from cdynamo.testing import same
from cdynamo.utils import counters


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    counters.clear()
    yield
    cdynamo.reset()


class LazyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 3)
        self.head = None

    def forward(self, x):
        h = torch.relu(self.body(x))
        if self.head is None:
            self.head = nn.Sequential(nn.Linear(h.shape[-1], 2), nn.Tanh())
        return self.head(h)


def run_seeded(fn, x, calls):
    """Each call after its own seed, as a training loop's steps: results and generator states."""
    results = []
    for k in range(calls):
        torch.manual_seed(100 + k)
        results.append((fn(x), torch.get_rng_state()))
    return results


def assert_same_runs(got, want):
    for (out, state), (expected, expected_state) in zip(got, want):
        assert same(out, expected)
        assert torch.equal(state, expected_state)  # the construction drew from the generator where eager did


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("fullgraph", [False, True])
def test_a_head_built_on_the_first_call_is_one_graph_and_stored_as_in_eager(backend, fullgraph):
    torch.manual_seed(0)
    eager_model = LazyHead()
    torch.manual_seed(0)
    model = LazyHead()
    x = torch.randn(5, 4)
    want = run_seeded(eager_model, x, 3)
    got = run_seeded(cdynamo.optimize(backend, nopython=fullgraph)(model), x, 3)
    assert_same_runs(got, want)
    assert isinstance(model.head, nn.Sequential)
    for name, tensor in eager_model.state_dict().items():
        assert same(model.state_dict()[name], tensor)
    # The first call's trace built the head; the second traces the stored head's branch; the
    # third runs that compile.
    assert counters["stats"]["frames_compiled"] == 2 and not counters["graph_break"]
    assert any("head" in reason for reason in counters["recompiles"])


def test_a_layer_made_on_every_call_gets_eagers_fresh_weights_each_call():
    def f(x):
        return nn.Linear(3, 3)(x) + nn.LayerNorm(3)(x)

    x = torch.randn(2, 3)
    want = run_seeded(f, x, 3)
    got = run_seeded(cdynamo.optimize("eager", nopython=True)(f), x, 3)
    assert_same_runs(got, want)
    # Each compile serves the call whose trace made the layer: every call traces again.
    assert counters["stats"]["frames_compiled"] == 3
    assert any("serves one call" in reason for reason in counters["recompiles"])


def test_a_made_module_beside_a_random_operation_is_refused_with_the_reason():
    def f(x):
        return torch.nn.functional.dropout(nn.Linear(3, 3)(x), 0.5)

    x = torch.randn(2, 3)
    with pytest.raises(cdynamo.exc.Unsupported, match="random operation"):
        cdynamo.optimize("eager", nopython=True)(f)(x)
    cdynamo.reset()
    want = run_seeded(f, x, 2)
    got = run_seeded(cdynamo.optimize("eager")(f), x, 2)  # runs as eager does, generator included
    assert_same_runs(got, want)


def test_a_module_class_of_the_programs_own_with_parameters_is_refused():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * self.weight

    def f(x):
        return Scale()(x)

    with pytest.raises(cdynamo.exc.Unsupported, match="a module class of the program's own"):
        cdynamo.optimize("eager", nopython=True)(f)(torch.randn(3))



def test_two_layers_made_in_one_call_draw_one_after_the_other():
    def f(x):
        return nn.Linear(3, 3)(x) - nn.Linear(3, 3)(x)  # eager: different weights, not zero

    x = torch.randn(2, 3)
    want = run_seeded(f, x, 2)
    got = run_seeded(cdynamo.optimize("eager", nopython=True)(f), x, 2)
    assert_same_runs(got, want)
    assert not same(got[0][0], torch.zeros(2, 3))


def test_nn_module_methods_on_a_made_module_before_the_graph_calls_it():
    def init(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight)  # draws, between the constructions' draws
            nn.init.zeros_(module.bias)

    def f(x):
        head = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)).double()
        head.apply(init)
        return head(x.double()), head[0].weight.dtype

    x = torch.randn(4, 3)
    want = run_seeded(f, x, 2)
    got = run_seeded(cdynamo.optimize("eager", nopython=True)(f), x, 2)
    for (out, state), (expected, expected_state) in zip(got, want):
        assert same(out[0], expected[0]) and out[1] == expected[1] == torch.float64
        assert torch.equal(state, expected_state)


def test_a_method_changing_a_made_module_after_the_graph_called_it_is_refused():
    def f(x):
        layer = nn.Linear(3, 3)
        y = layer(x)
        layer.double()  # eager's y used the float weights; the graph would read the doubled ones
        return y

    with pytest.raises(cdynamo.exc.Unsupported, match="after the graph called it"):
        cdynamo.optimize("eager", nopython=True)(f)(torch.randn(2, 3))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_layer_made_on_the_gpu_is_refused_and_runs_as_eager_does():
    def f(x):
        return nn.Linear(3, 3, device="cuda")(x)

    x = torch.randn(2, 3, device="cuda")
    f(x)  # CUDA initialised before the compiled call, as in a program that already ran on it
    with pytest.raises(cdynamo.exc.Unsupported, match="parameters on cuda"):
        cdynamo.optimize("eager", nopython=True)(f)(x)
    results = []
    for fn in (f, cdynamo.optimize("eager")(f)):
        torch.manual_seed(7)
        results.append((fn(x), torch.cuda.get_rng_state()))
    assert same(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_a_layer_sized_by_a_symbolic_dimension_specialises_it():
    # dynamic=True: x.shape[-1] is symbolic; the layer's size is its value, guarded (a new
    # width traces again), and the call is compiled, not left to eager.
    def f(x):
        return nn.Linear(x.shape[-1], 2)(x)

    compiled = cdynamo.optimize("eager", nopython=True, dynamic=True)(f)
    for width in (4, 4, 6):
        x = torch.ones(3, width)
        torch.manual_seed(width)
        want, want_state = f(x), torch.get_rng_state()
        torch.manual_seed(width)
        assert same(compiled(x), want) and torch.equal(torch.get_rng_state(), want_state)
    assert counters["stats"]["frames_compiled"] == 3
