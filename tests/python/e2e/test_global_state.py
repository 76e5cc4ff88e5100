"""Torch's global state that compiled code changes (grad mode, autocast): what the graph computes
under it and what it leaves after a graph break or a return, on every backend, as eager does."""
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

BACKENDS = ["eager", "inductor"]


def no_grad_block_cut_by_a_break(x):
    with torch.no_grad():
        y = x * 2
        cdynamo.graph_break()
        z = y * x
    return z + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_no_grad_block_cut_by_a_break_keeps_no_grad_after_the_graph(backend, capsys):
    x = torch.randn(3, requires_grad=True)
    got = cdynamo.compile(no_grad_block_cut_by_a_break, backend=backend)(x)
    want = no_grad_block_cut_by_a_break(x)
    assert same(got, want) and got.requires_grad == want.requires_grad
    (got_grad,) = torch.autograd.grad(got.sum(), x)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    assert same(got_grad, want_grad)
    assert torch.is_grad_enabled()
    assert sum(counters["graph_break"].values()) == 1


def switches_grad_off_and_on(x):
    torch._C._set_grad_enabled(False)
    y = x * 2
    torch._C._set_grad_enabled(True)
    return y, x * 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_grad_enabled_called_directly_is_a_node_of_the_graph(backend):
    x = torch.randn(3, requires_grad=True)
    counter = CompileCounter()
    compiled = cdynamo.compile(switches_grad_off_and_on, backend=backend if backend != "eager" else counter)
    got, want = compiled(x), switches_grad_off_and_on(x)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [False, True]
    assert torch.is_grad_enabled()


def leaves_grad_off(x):
    torch._C._set_grad_enabled(False)
    return x * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_mode_a_function_leaves_off_stays_off_after_it(backend):
    x = torch.randn(3, requires_grad=True)
    try:
        got = cdynamo.compile(leaves_grad_off, backend=backend)(x)
        assert not torch.is_grad_enabled() and not got.requires_grad
    finally:
        torch._C._set_grad_enabled(True)


class MixedPrecisionBlock(torch.nn.Module):
    """A bfloat16 autocast block with a float32 island inside (transformers' rotary embeddings
    turn autocast off so), then a float32 head."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.fc1(x)
            with torch.autocast("cpu", enabled=False):
                island = self.fc2(h.float())
            inside = torch.is_autocast_enabled("cpu")
        return self.fc2(h.float()), h, island, inside, torch.is_autocast_enabled("cpu")


def assert_same_outputs(got, want):
    for a, b in zip(got, want):
        if isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype
            torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
        else:
            assert a == b


@pytest.mark.parametrize("backend", BACKENDS + ["aot_eager"])
def test_an_autocast_block_is_one_graph_with_eagers_dtypes(backend):
    model = MixedPrecisionBlock()
    counter = CompileCounter()
    compiled = cdynamo.compile(model, backend=counter if backend == "eager" else backend, fullgraph=True)
    x = torch.randn(3, 8)
    assert_same_outputs(compiled(x), model(x))
    assert not torch.is_autocast_enabled("cpu")
    if backend == "eager":
        assert counter.frame_count == 1


def autocast_cut_by_a_break(fc, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = fc(x)
        cdynamo.graph_break()
        k = fc(h)
    return k.float() + 1, h, k


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_autocast_block_cut_by_a_break_continues_under_autocast(backend):
    fc = torch.nn.Linear(8, 8)
    x = torch.randn(3, 8)
    compiled = cdynamo.compile(autocast_cut_by_a_break, backend=backend)
    for _ in range(2):
        assert_same_outputs(compiled(fc, x), autocast_cut_by_a_break(fc, x))
        assert not torch.is_autocast_enabled("cpu") and torch.is_autocast_cache_enabled()
    assert sum(counters["graph_break"].values()) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_weights_updated_between_calls_are_cast_again(backend):
    # Eager empties autocast's cache of cast weights when its block exits; a compiled block must
    # never hand out a cast of the weight from before an optimizer step.
    model = MixedPrecisionBlock()
    compiled = cdynamo.compile(model, backend=backend)
    x = torch.randn(3, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        got, want = compiled(x), model(x)
        assert_same_outputs(got, want)
        optimizer.zero_grad()
        got[0].sum().backward()
        optimizer.step()


def test_gradients_through_an_autocast_block_match_eager():
    model = MixedPrecisionBlock()
    reference = MixedPrecisionBlock()
    reference.load_state_dict(model.state_dict())
    compiled = cdynamo.compile(model, backend="inductor")
    x = torch.randn(3, 8)
    compiled(x)[0].sum().backward()
    reference(x)[0].sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-2, rtol=1e-2, msg=name)


def set_grad_enabled_block_and_call(x):
    with torch.set_grad_enabled(False):
        y = x * 2
    z = x * 3
    torch.set_grad_enabled(False)
    w = x * 4
    torch.set_grad_enabled(True)
    return y, z, w


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_set_grad_enabled_as_a_block_and_as_a_call(backend):
    x = torch.randn(3, requires_grad=True)
    counter = CompileCounter()
    compiled = cdynamo.compile(set_grad_enabled_block_and_call, backend=counter if backend == "eager" else backend,
                               fullgraph=True)
    got, want = compiled(x), set_grad_enabled_block_and_call(x)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [False, True, False]
    assert torch.is_grad_enabled()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cuda_autocast_block_cut_by_a_break(backend):
    fc = torch.nn.Linear(8, 8).cuda()
    x = torch.randn(3, 8, device="cuda")

    def cuda_block(fc, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = fc(x).relu()
            cdynamo.graph_break()
            k = fc(h) * 2
        return k.float() + 1, h, k

    compiled = cdynamo.compile(cuda_block, backend=backend)
    for _ in range(2):
        assert_same_outputs(compiled(fc, x), cuda_block(fc, x))
        assert not torch.is_autocast_enabled("cuda")


def test_an_operation_failing_inside_a_no_grad_block_leaves_grad_mode_as_eager_does():
    def f(x, index):
        with torch.no_grad():
            y = x * 2
            picked = y[index]  # out of range: raises when the graph runs
        return picked + x.sum()

    compiled = cdynamo.optimize("eager")(f)
    x = torch.randn(4, requires_grad=True)
    assert torch.allclose(compiled(x, torch.tensor([1])), f(x, torch.tensor([1])))
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([7]))
    assert torch.is_grad_enabled()
