"""Compiled training with the inductor backend: forward and backward compiled, and what the user
sees equal to eager's: gradients (None where eager leaves None), module state after optimizer
steps, running statistics, outputs that alias inputs, dropout's forward and backward agreeing."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import cdynamo
from cdynamo.utils import counters


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False, compiled_training=True):
        yield
    cdynamo.reset()


def assert_same_grads(eager, compiled):
    for (name, a), (_, b) in zip(eager.named_parameters(), compiled.named_parameters()):
        assert (a.grad is None) == (b.grad is None), f"{name}: eager .grad {a.grad is None and 'None'}, compiled {b.grad is None and 'None'}"
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5, msg=name)


def train_both(model, inputs, steps=3, loss_of=lambda out: out.float().pow(2).mean()):
    """Runs `steps` SGD steps on model and on a copy compiled with the inductor; compares
    outputs, gradients and parameters and buffers after every step. Returns the compiled copy."""
    eager, compiled = model, copy.deepcopy(model)
    fn = cdynamo.optimize("inductor")(compiled)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, compiled)]
    for _ in range(steps):
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        expected, got = eager(*inputs), fn(*inputs)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
        loss_of(expected).backward()
        loss_of(got).backward()
        assert_same_grads(eager, compiled)
        for opt in optimizers:
            opt.step()
        for (name, a), (_, b) in zip(eager.state_dict().items(), compiled.state_dict().items()):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)
    return compiled


def test_an_mlp_trains_as_in_eager_with_both_halves_compiled():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
    train_both(model, (torch.randn(8, 16),))
    assert counters["inductor"]["training_graphs"] == 1
    assert counters["inductor"]["autograd_fallback"] == 0
    assert counters["stats"]["unique_graphs"] == 1


def test_a_convolutional_network_updates_batchnorm_statistics_in_training():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(8, 3)).train()
    compiled = train_both(model, (torch.randn(4, 3, 12, 12),))
    assert compiled[1].num_batches_tracked.item() == 3
    assert counters["inductor"]["training_graphs"] == 1


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared, self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        h = self.shared(x).tanh()
        return self.a(h).relu(), self.b(h) * 2


def test_parameters_behind_an_output_the_loss_does_not_use_keep_a_none_grad():
    torch.manual_seed(0)
    train_both(TwoHeads(), (torch.randn(3, 4),), loss_of=lambda out: out[0].sum())
    train_both(TwoHeads(), (torch.randn(3, 4),), loss_of=lambda out: out[1].sum())
    train_both(TwoHeads(), (torch.randn(3, 4),), loss_of=lambda out: out[0].sum() + out[1].mean())


def test_gradients_of_inputs_and_a_graph_break_between_two_compiled_graphs():
    w = torch.randn(5, 5, requires_grad=True)

    def fn(x):
        y = (x @ w).sigmoid()
        cdynamo.graph_break()  # a graph break: two graphs, each compiled forward and backward
        return (y * x).sum(dim=1)

    x1 = torch.randn(3, 5, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    fn(x1).pow(2).sum().backward()
    expected_w = w.grad.clone()
    w.grad = None
    cdynamo.optimize("inductor")(fn)(x2).pow(2).sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad)
    torch.testing.assert_close(w.grad, expected_w)
    assert counters["inductor"]["training_graphs"] == 2


def test_returned_inputs_views_and_clones_alias_as_in_eager():
    w = torch.randn(4, 4, requires_grad=True)

    def fn(x):
        y = x @ w
        return y, y.t(), x.clone(), x[0]

    x = torch.randn(4, 4)
    y, yt, clone, row = cdynamo.optimize("inductor")(fn)(x)
    assert yt._base is y or yt.data_ptr() == y.data_ptr()
    assert clone.data_ptr() != x.data_ptr() and row.data_ptr() == x.data_ptr()
    clone.add_(1)
    assert not torch.equal(clone, x)
    yt.sum().backward()
    torch.testing.assert_close(w.grad, x.t() @ torch.ones(4, 4))


def test_an_input_written_in_place_in_a_training_graph():
    w = torch.randn(3, requires_grad=True)

    def fn(x, counter):
        counter.add_(1)
        return (x * w).exp().sum() * counter

    counts = [torch.zeros(()), torch.zeros(())]
    x = torch.randn(3)
    results = [fn(x, counts[0]), cdynamo.optimize("inductor")(fn)(x, counts[1])]
    grads = []
    for r in results:
        w.grad = None
        r.backward()
        grads.append(w.grad)
    torch.testing.assert_close(results[1], results[0])
    torch.testing.assert_close(grads[1], grads[0])
    assert counts[1].item() == counts[0].item() == 1


def test_dropout_backward_uses_the_forwards_mask():
    x = torch.randn(64, 64, requires_grad=True)
    y = cdynamo.optimize("inductor")(lambda t: F.dropout(t * 3, p=0.5, training=True))(x)
    y.sum().backward()
    kept = (y != 0).float()
    assert 0.3 < kept.mean().item() < 0.7
    torch.testing.assert_close(x.grad, kept * 6)


def test_compiled_training_off_runs_with_eager_autograd():
    torch.manual_seed(0)
    with cdynamo.config.patch(compiled_training=False):
        train_both(nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)), (torch.randn(4, 8),), steps=1)
    assert counters["inductor"]["autograd_fallback"] == 1
    assert counters["inductor"]["training_graphs"] == 0


def test_the_same_function_without_gradients_gets_an_inference_graph():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    fn = cdynamo.optimize("inductor")(model)
    x = torch.randn(2, 8)
    fn(x).sum().backward()
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x))
    assert counters["inductor"]["training_graphs"] == 1 and counters["stats"]["unique_graphs"] == 2


def test_a_half_that_fails_to_compile_runs_with_atens_kernels(monkeypatch):
    from cdynamo import _C

    real_compile = _C._inductor_compile

    def failing_on_backward(gm, *args):
        if any(n.name.startswith("tangents") for n in gm.graph.nodes if n.op == "placeholder"):
            raise RuntimeError("a backward the lowering refuses")
        return real_compile(gm, *args)

    monkeypatch.setattr(_C, "_inductor_compile", failing_on_backward)
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="backward graph runs with aten's kernels"):
        train_both(nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2)), (torch.randn(4, 8),), steps=2)
    assert counters["inductor"]["training_graphs"] == 1 and counters["inductor"]["eager_fallback"] == 1


class CheckpointedBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.ReLU()) for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = x + torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


def test_activation_checkpointing_recomputes_what_the_forward_saved():
    torch.manual_seed(0)
    train_both(CheckpointedBlocks(), (torch.randn(2, 4, 8),), steps=2)


def run_eager_and_compiled(fn, make_inputs):
    """fn on fresh inputs eagerly and compiled; the sum of its float outputs backpropagated.
    Returns (eager inputs, eager outputs), (compiled inputs, compiled outputs)."""
    runs = []
    for f in (fn, cdynamo.optimize("inductor")(fn)):
        inputs = make_inputs()
        outputs = f(*inputs)
        sum(o.float().sum() for o in outputs if o.requires_grad).backward()
        runs.append((inputs, outputs))
    return runs


def assert_same_inputs_and_grads(eager_inputs, compiled_inputs):
    for k, (a, b) in enumerate(zip(eager_inputs, compiled_inputs)):
        torch.testing.assert_close(b.detach(), a.detach(), msg=f"input {k}")
        assert (a.grad is None) == (b.grad is None), f"input {k}: .grad None in eager: {a.grad is None}"
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, msg=f"input {k} .grad")


def inputs_of(*shapes, grad=(True,)):
    """A maker of the same fresh inputs on every call."""
    def make():
        generator = torch.Generator().manual_seed(0)
        return [torch.randn(shape, generator=generator).requires_grad_(k < len(grad) and grad[k])
                for k, shape in enumerate(shapes)]

    return make


def written_under_no_grad(a, b):
    with torch.no_grad():
        b.mul_(0.5)
    return (a.sin() * 2,)


def saved_then_written(c, a):
    t = a.clone()
    t.masked_fill_(t > 0, 1.5)
    with torch.no_grad():
        a.mul_(0.5)  # the backward must not recompute t from the written a
    return (torch.outer(t.flatten(), (t.relu() + c.sum()).flatten()),)


def written_through_detach(a, b):
    b.detach().view(-1)[1:3] = (a * 2)[:2]
    return (a.exp(),)


def view_made_under_no_grad(a, b):
    with torch.no_grad():
        first = b.select(-1, 0)
    view = first.view(first.shape)
    return a @ b.t(), view, view.pow(2), b


@pytest.mark.parametrize("fn,shapes,grad", [
    (written_under_no_grad, ((3, 4), (4, 4)), (True, True)),
    (saved_then_written, ((4,), (3, 4)), (True, False)),
    (written_through_detach, ((4,), (2, 4)), (True, True)),
    (view_made_under_no_grad, ((2, 4), (3, 4)), (True, True)),
])
def test_writes_and_no_grad_views_of_inputs_give_eagers_gradients(fn, shapes, grad):
    """AOTAutograd would give these a zero .grad (None in eager), a backward reading a written
    input, or gradients through a view eager's autograd does not follow: eager autograd."""
    (eager_in, eager_out), (compiled_in, compiled_out) = run_eager_and_compiled(fn, inputs_of(*shapes, grad=grad))
    for a, b in zip(eager_out, compiled_out):
        torch.testing.assert_close(b, a)
    assert_same_inputs_and_grads(eager_in, compiled_in)


def test_one_object_returned_twice_stays_one_object():
    def fn(a):
        diagonal = a.diagonal()
        return diagonal.float(), diagonal, (a * 2).relu()  # float() of a float tensor is itself

    (_, eager_out), (_, compiled_out) = run_eager_and_compiled(fn, inputs_of((3, 3)))
    assert eager_out[0] is eager_out[1] and compiled_out[0] is compiled_out[1]
    assert counters["inductor"]["training_graphs"] == 1


@cdynamo.disable
def _penalty_gradients(scores, mixed):
    # Outside the graphs (torch.autograd.grad would be a node of one): the backward with
    # create_graph=True runs through the compiled graphs' own backward.
    return torch.autograd.grad(scores, mixed, torch.ones_like(scores), create_graph=True)[0]


class GradientPenaltyCritic(nn.Module):
    """WGAN-GP: the loss holds a gradient taken with create_graph=True, so the backward runs
    through a backward (double backward) of the compiled graphs."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 1))

    def forward(self, real, fake, alpha):
        mixed = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(True)
        scores = self.critic(mixed)
        grads = _penalty_gradients(scores, mixed)
        penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        return self.critic(fake).mean() - self.critic(real).mean() + 10 * penalty


def test_a_backward_with_create_graph_is_differentiable_and_matches_eager():
    torch.manual_seed(0)
    inputs = (torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 1))
    compiled = train_both(GradientPenaltyCritic(), inputs, loss_of=lambda out: out)
    assert counters["inductor"]["training_graphs"] >= 1
    assert counters["inductor"]["create_graph_reruns"] >= 1


def test_a_plain_backward_never_reruns_the_graph():
    train_both(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)), (torch.randn(5, 4),))
    assert counters["inductor"]["training_graphs"] >= 1 and counters["inductor"]["create_graph_reruns"] == 0


def test_create_graph_through_a_graph_that_draws_random_numbers_says_what_to_change():
    torch.manual_seed(0)
    model = cdynamo.optimize("inductor")(GradientPenaltyCritic(dropout=0.5).train())
    with pytest.raises(RuntimeError, match="draws random numbers.*compiled_training = False"):
        model(torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 1)).backward()


def test_a_view_made_under_no_grad_of_a_tensor_computed_with_gradients_gets_none():
    """Eager's view, made under no_grad and returned, carries no gradient back (found by fuzzing:
    AOTAutograd replayed it from its base with gradients)."""
    def fn(c, w):
        hidden = (c * w).sigmoid()
        with torch.no_grad():
            window = hidden[:, 1:3]
        return {"window": window, "hidden": hidden}

    c, w = torch.randn(2, 4, requires_grad=True), torch.randn(4, requires_grad=True)
    c2, w2 = c.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    expected, got = fn(c, w), cdynamo.optimize("inductor")(fn)(c2, w2)
    sum(t.sum() for t in expected.values()).backward()
    sum(t.sum() for t in got.values()).backward()
    torch.testing.assert_close(c2.grad, c.grad)
    torch.testing.assert_close(w2.grad, w.grad)


def test_none_grads_stay_none_when_the_graph_also_returns_an_input_unchanged():
    """A graph returning one of its inputs as it is: the autograd node's outputs are then fewer
    than the call's (found by fuzzing: an unused output's zero gradient reached an input)."""
    def fn(first, scale, total):
        return first, total + scale.sum(), torch.exp(scale)

    a = torch.randn(4, 1, requires_grad=True)
    scale = (a * 2).detach().requires_grad_()
    total = a.sum()  # a's gradient would come only through the unused second output
    compiled = cdynamo.optimize("inductor")(fn)
    out = compiled(a, scale, total)
    out[2].sum().backward()
    assert a.grad is None
    assert torch.allclose(scale.grad, torch.exp(scale.detach()))  # the compiled exp may round otherwise


def test_an_output_written_in_place_after_a_graph_break_is_not_a_view():
    # The forward program placed norm's result in a dead intermediate's memory; returned as a
    # view of it, autograd refused the in-place add_ after the break.
    def fn(a, b):
        a.add_(0.5)
        norm = b.norm()
        scale = norm.sum().item()  # a graph break: norm is an output of the first graph
        norm.add_(0.5)
        return norm * scale

    b = torch.randn(4, requires_grad=True)
    b_eager = b.detach().clone().requires_grad_()
    a = torch.randn(4)
    a_eager = a.clone()
    got = cdynamo.optimize("inductor")(fn)(a, b)
    expected = fn(a_eager, b_eager)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(a, a_eager)
    # norm's backward reads the result that add_ overwrote: eager refuses, and so does cdynamo.
    for out in (expected, got):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
