"""torch constructs captured in one graph that used to break it: operator objects
(torch.ops.aten.add), torch.autograd.Function subclasses (one node, backward as in eager) and
Tensor.data (a detached alias with its own version counter). Results, gradients, version
counters and graph counts against eager."""
import copy

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, CompileCounterWithBackend, same
from cdynamo.utils import counters

LOG = []


@pytest.fixture(autouse=True)
def empty_log():
    LOG.clear()  # caches and counters: conftest's fresh_cdynamo


class ScaleBy(torch.autograd.Function):
    """Non-tensor argument, two outputs (one not differentiable), a hand-written backward that is
    not the true derivative: a trace of forward alone would get the gradients wrong."""

    @staticmethod
    def forward(ctx, x, k, w):
        ctx.save_for_backward(x, w)
        ctx.k = k
        mask = x > 0
        ctx.mark_non_differentiable(mask)
        return x * w * k, mask

    @staticmethod
    def backward(ctx, grad, _):
        x, w = ctx.saved_tensors
        return grad * w * ctx.k * 3, None, (grad * x * ctx.k).sum(0)


class ScaledLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5))
        self.linear = torch.nn.Linear(5, 5)

    def forward(self, x):
        y, mask = ScaleBy.apply(self.linear(x), 2.0, self.w)
        return (y * mask).relu().sum(1)


class NeedsData(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x.sum().item()

    @staticmethod
    def backward(ctx, grad):
        return grad


class Logs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        LOG.append("forward")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_an_autograd_function_is_one_node_and_keeps_its_backward(backend):
    torch.manual_seed(0)
    model = ScaledLayer()
    compiled_model = copy.deepcopy(model)
    counter = CompileCounter()
    compiled = cdynamo.compile(compiled_model, backend=counter if backend == "eager" else backend, fullgraph=True)
    x = torch.randn(4, 5)
    for _ in range(2):
        expected, got = model(x), compiled(x)
        expected.sum().backward()
        got.sum().backward()
        assert same(got, expected)
    for p, q in zip(model.parameters(), compiled_model.parameters()):
        assert same(q.grad, p.grad)
    if backend == "eager":
        assert counter.frame_count == 1
    assert not counters["graph_break"]


def test_an_autograd_function_whose_forward_needs_data_breaks_the_graph_with_its_name():
    fn = lambda x: NeedsData.apply(x + 1) * 2  # noqa: E731
    x = torch.randn(3, requires_grad=True)
    assert same(cdynamo.optimize("eager")(fn)(x), fn(x))
    assert any(reason.startswith("NeedsData.apply()") for reason in counters["graph_break"]), counters["graph_break"]


def test_an_autograd_function_with_python_side_effects_in_forward_runs_them_once():
    fn = lambda x: Logs.apply(x) + 1  # noqa: E731
    x = torch.randn(3)
    assert same(cdynamo.optimize("eager")(fn)(x), x * 2 + 1)
    assert LOG == ["forward"]
    assert any("Logs.apply: its forward reads the global LOG" in reason for reason in counters["graph_break"])


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_aten_operator_objects_are_graph_nodes(backend):
    aten = torch.ops.aten
    fn = lambda x: aten.add(x, x) * aten.mul.Tensor(x, 3) + aten.sum.dim_IntList(x, [0])  # noqa: E731
    counter = CompileCounter()
    x = torch.randn(4, 4)
    assert same(cdynamo.compile(fn, backend=counter if backend == "eager" else backend, fullgraph=True)(x), fn(x))
    if backend == "eager":
        assert counter.frame_count == 1 and counter.op_count == 5


def write_through_data(x, w):
    w.data.add_(1)
    return (x * w).sum() + w.data.mean()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_tensor_data_is_captured_and_writes_through_it_skip_the_version_counter(backend):
    x = torch.randn(3)
    w_eager = torch.randn(3, requires_grad=True)
    w = w_eager.detach().clone().requires_grad_()
    counter = CompileCounter()
    compiled = cdynamo.compile(write_through_data, backend=counter if backend == "eager" else backend, fullgraph=True)
    expected, got = write_through_data(x, w_eager), compiled(x, w)
    # x * w saved w; the later write through .data is invisible to autograd, so no error here.
    expected.backward()
    got.backward()
    assert same(got, expected) and same(w, w_eager) and same(w.grad, w_eager.grad)
    assert w._version == w_eager._version == 0
    with torch.no_grad():
        assert same(compiled(x, w), write_through_data(x, w_eager)) and same(w, w_eager)
    if backend == "eager":
        assert counter.frame_count >= 1 and not counters["graph_break"]


def placeholder_attention(q, w):
    placeholder = torch.zeros_like(q).requires_grad_()  # transformers' MRA without its kernel
    return placeholder + q @ w, placeholder


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_requires_grad_on_a_tensor_the_graph_makes_is_a_new_leaf_as_in_eager(backend):
    q, w = torch.randn(3, 3), torch.randn(3, 3, requires_grad=True)
    counter = CompileCounterWithBackend(backend)
    with torch.no_grad():
        out, leaf = cdynamo.compile(placeholder_attention, backend=counter, fullgraph=True)(q, w)
        want, want_leaf = placeholder_attention(q, w)
    assert counter.frame_count == 1
    torch.testing.assert_close(out, want)
    assert (leaf.requires_grad, leaf.is_leaf, out.requires_grad) == (True, True, False)


def test_with_gradients_on_a_new_leaf_ends_the_graph_and_gradients_equal_eager():
    q, w = torch.randn(3, 3), torch.randn(3, 3, requires_grad=True)
    explained = cdynamo.explain(placeholder_attention)(q, w)
    assert explained.graph_break_count == 1 and "new autograd leaf" in str(explained.break_reasons[0])
    out, leaf = cdynamo.compile(placeholder_attention, backend="inductor")(q, w)
    want, want_leaf = placeholder_attention(q, w)
    (out * 2).sum().backward()
    got_grads = (w.grad.clone(), leaf.grad.clone())
    w.grad = None
    (want * 2).sum().backward()
    torch.testing.assert_close(got_grads, (w.grad, want_leaf.grad))


def test_requires_grad_on_an_input_breaks_the_graph_and_changes_it_as_eager_does():
    def f(x):
        x.requires_grad_()
        return x * 2

    x = torch.randn(3)
    explained = cdynamo.explain(f)(x)
    assert explained.graph_break_count == 1 and "requires_grad_" in str(explained.break_reasons[0])
    assert x.requires_grad


def test_pytorch_0_3_style_code_is_one_graph():
    from torch.autograd import Variable

    def old_style(x, weight):
        hidden = Variable(weight.data.new(2, 3).zero_())
        mask = torch.FloatTensor(x.size()[0], 3).fill_(1.0)
        mask[0, :2] = 0
        ids = torch.LongTensor([0, 2])
        leaf = Variable(x[:, :3].clone(), requires_grad=True)
        y = torch.sigmoid(x[:, :3] * Variable(mask) + hidden.sum()).type(torch.DoubleTensor)
        return y, y.type(), ids * 2, leaf.requires_grad

    x, weight = torch.randn(4, 5), torch.randn(2, 2)
    counter = CompileCounter()
    with torch.no_grad():  # with gradients on, Variable(..., requires_grad=True) ends a graph
        got = cdynamo.compile(old_style, backend=counter, fullgraph=True)(x, weight)
        want = old_style(x, weight)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1] == "torch.DoubleTensor" and torch.equal(got[2], want[2]) and got[3] is want[3] is True
    assert counter.frame_count == 1


def test_torch_distributions_are_traced_python():
    def entropy_and_sample(logits, mu, sigma, x):
        categorical = torch.distributions.Categorical(logits=logits, validate_args=False)
        normal = torch.distributions.Normal(mu, sigma, validate_args=False)
        return categorical.entropy(), normal.log_prob(x), normal.stddev, normal.rsample()

    args = (torch.randn(2, 5, 7), torch.randn(3), torch.rand(3) + 0.5, torch.randn(3))
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(entropy_and_sample)
    torch.manual_seed(0)
    got = compiled(*args)
    torch.manual_seed(0)
    want = entropy_and_sample(*args)
    assert all(torch.allclose(a, b) for a, b in zip(got, want)) and counter.frame_count == 1


def test_a_validating_distribution_checks_its_arguments_in_the_graph():
    def entropy(logits):
        # (validate_args: the default, unless torch._dynamo was imported, which turns it off globally)
        return torch.distributions.Categorical(logits=logits, validate_args=True).entropy() * 2

    logits = torch.randn(2, 7)
    out = cdynamo.explain(entropy)(logits)
    assert torch.allclose(out.out, entropy(logits)) and out.graph_count == 1 and out.graph_break_count == 0

    def mean(mu, scale):
        return torch.distributions.Normal(mu, scale, validate_args=True).mean * 2

    compiled = cdynamo.optimize("eager", nopython=True)(mean)
    assert torch.equal(compiled(torch.zeros(3), torch.ones(3)), torch.zeros(3))
    with pytest.raises(ValueError, match="tensor data"):  # a negative scale: eager raises ValueError too
        compiled(torch.zeros(3), -torch.ones(3))


def test_kl_divergence_looks_up_torchs_registry_in_the_trace():
    # kl_divergence reads a global dict keyed by (class, class) tuples and takes min() of a
    # generator of objects comparing in Python.
    def kl(mu, log_std):
        policy = torch.distributions.Normal(mu, log_std.exp(), validate_args=False)
        prior = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu), validate_args=False)
        return torch.distributions.kl_divergence(policy, prior).sum(-1)

    mu, log_std = torch.randn(4, 3), torch.randn(4, 3) * 0.1
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(kl)
    assert torch.allclose(compiled(mu, log_std), kl(mu, log_std)) and counter.frame_count == 1


def test_min_and_max_of_a_generator_of_objects_compare_in_python():
    class Version:
        def __init__(self, number):
            self.number = number

        def __lt__(self, other):
            return self.number < other.number

        def __gt__(self, other):
            return self.number > other.number

    def f(x, numbers):
        low = min(Version(n) for n in numbers)
        high = max((Version(n) for n in numbers))
        return x * low.number + high.number, sorted(n for n in numbers)

    counter = CompileCounter()
    x = torch.randn(3)
    got = cdynamo.optimize(counter, nopython=True)(f)(x, [3, 1, 2])
    want = f(x, [3, 1, 2])
    assert torch.equal(got[0], want[0]) and got[1] == want[1] and counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_with_gradients_on_and_fullgraph_a_new_leaf_stays_in_one_graph(backend):
    # fullgraph=True asks for one graph: the leaf is made in it (which then runs as captured).
    q, w = torch.randn(3, 3), torch.randn(3, 3, requires_grad=True)
    counter = CompileCounterWithBackend(backend)
    out, leaf = cdynamo.compile(placeholder_attention, backend=counter, fullgraph=True)(q, w)
    want, want_leaf = placeholder_attention(q, w)
    assert counter.frame_count == 1 and leaf.is_leaf and leaf.requires_grad
    (out * 2).sum().backward()
    got_grads = (w.grad.clone(), leaf.grad.clone())
    w.grad = None
    (want * 2).sum().backward()
    torch.testing.assert_close(got_grads, (w.grad, want_leaf.grad))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autograd_grad_of_what_the_graph_computes(backend):
    # MAML's inner step: torch.autograd.grad(loss, params, create_graph=True) is a node; the
    # outer backward reaches the parameters through it as in eager (second-order terms included).
    def inner_step(x, w):
        loss = ((x * w) ** 3).sum()
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        return (x * (w - 0.1 * g)).sum()

    def run(fn):
        torch.manual_seed(0)
        x, w = torch.randn(3), torch.randn(3, requires_grad=True)
        out = fn(x, w)
        out.backward()
        return out, w.grad

    counter = CompileCounter()
    assert same(run(cdynamo.compile(inner_step, backend=backend, fullgraph=True)), run(inner_step))
    cdynamo.reset()
    assert same(run(cdynamo.compile(inner_step, backend=counter, fullgraph=True)), run(inner_step)) and counter.frame_count == 1

    def of_an_input(loss, w):
        return torch.autograd.grad(loss, w)[0] * 2

    w = torch.randn(3, requires_grad=True)
    with pytest.raises(cdynamo.exc.Unsupported, match="computed before the compiled function"):
        cdynamo.compile(of_an_input, backend="eager", fullgraph=True)((w * w).sum(), w)
