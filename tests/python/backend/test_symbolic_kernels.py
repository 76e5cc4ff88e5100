"""Symbolic programs on both targets (the Triton one run here on CPU tensors by Triton's
interpreter): a graph with symbolic sizes compiled once, its kernels taking the sizes as
arguments, equal to eager at every size the guards admit; and the graphs that still compile per
size, with the reason counted."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import cdynamo
from cdynamo.testing import CompileCounterWithBackend, same
from cdynamo.utils import counters


DEVICE = {"device": "cpu"}  # where run_sizes puts the inputs: the "cuda" target's tests run on the GPU


@pytest.fixture(autouse=True, params=["cpp", "triton", "cuda"])
def target(request):
    if request.param != "cpp":
        pytest.importorskip("triton")
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cdynamo.reset()
    counters.clear()
    DEVICE["device"] = "cuda" if request.param == "cuda" else "cpu"
    backend = "cpp" if request.param == "cpp" else "triton"
    # graph_cache off: the tests count compiles, which a cache entry of an earlier run would skip
    with cdynamo.config.patch(cpu_backend=backend, suppress_errors=False, symbolic_training=True, graph_cache=False):
        yield "triton" if request.param == "cuda" else request.param
    DEVICE["device"] = "cpu"
    cdynamo.reset()


def on_device(inputs):
    return tuple(t.to(DEVICE["device"]) if isinstance(t, torch.Tensor) else t for t in inputs)


def symbolic_programs():
    return counters["dynamic"]["symbolic programs"]


def per_size_compiles():
    return counters["dynamic"]["static compiles of symbolic graphs"]


def run_sizes(fn, make_inputs, sizes, dynamic=None, atol=1e-5):
    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter, dynamic=dynamic)(fn)
    for size in sizes:
        inputs = on_device(make_inputs(size))
        expected = fn(*inputs)
        got = compiled(*inputs)
        assert same(got, expected, tol=atol), f"size {size}"
    return counter


def test_sixteen_batch_sizes_compile_one_symbolic_program():
    def fn(x, y):
        n = x.shape[0]
        h = torch.relu(x).view(n, -1) * 2
        return h + y[:n].sum(), n * 3

    counter = run_sizes(fn, lambda b: (torch.randn(b, 3, 4), torch.randn(b + 2)), range(2, 18))
    assert counter.frame_count == 2  # static first, then dynamic: automatic dynamic
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def test_odd_sizes_and_row_reductions_of_symbolic_length():
    def fn(x):
        return torch.softmax(x, -1), x.sum(0), F.layer_norm(x, x.shape[-1:]), x.amax(1, keepdim=True) - x.mean()

    # The longest rows (259) cross the 128-wide blocks; few of them keep Triton's interpreter quick.
    counter = run_sizes(fn, lambda n: (torch.randn(min(n + 2, 12), 2 * n + 1),), [3, 1, 7, 30, 5, 0, 129], dynamic=True)
    assert symbolic_programs() >= 1
    assert per_size_compiles() == 0
    assert counter.frame_count <= 3


@cdynamo.config.patch(specialize_zero_one=False)
def test_sizes_one_and_zero_run_the_program_traced_at_larger_sizes():
    def fn(x, y):
        return torch.softmax(x, -1) * y.sum(), x.sum(0), (x @ x.transpose(0, 1)).mean(1), x.shape[0] + 1

    counter = run_sizes(fn, lambda n: (torch.randn(n, 5), torch.randn(n)), [4, 6, 1, 0, 9], dynamic=True)
    assert counter.frame_count == 1, dict(counters["recompiles"])
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


@cdynamo.config.patch(specialize_zero_one=False)
def test_a_training_graph_serves_a_batch_of_one():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(DEVICE["device"])

    def fn(x):
        return model(x).logsumexp(1).mean()

    counter = train_sizes(fn, list(model.parameters()), lambda b: (torch.randn(b, 4),), [3, 5, 1, 7], dynamic=True)
    assert counter.frame_count == 1, dict(counters["recompiles"])
    assert symbolic_programs() == 1


def test_views_slices_and_expands_of_symbolic_sizes():
    def fn(x, y):
        b, s, d = x.shape
        t = x.transpose(1, 2).reshape(b, d * s)  # a permuted view flattened
        head = x[:, 1:, :] - x[:, :-1, :]
        wide = y.unsqueeze(0).expand(b, s, d)
        return t * 2, head.sum(1), (x + wide).view(b * s, d), x[:, -1], x.flatten(1)[:, ::2]

    run_sizes(fn, lambda s: (torch.randn(2, s, 6), torch.randn(s, 6)), [3, 5, 11, 4], dynamic=True)
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def test_an_int_argument_becomes_a_symbol_of_the_program():
    def fn(x, n):
        return x * n + torch.arange(x.shape[0], device=x.device).unsqueeze(1), x[: x.shape[0] // 2] + n

    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter, dynamic=True)(fn)
    for rows, n in [(4, 3), (9, -2), (6, 11)]:
        (x,) = on_device((torch.randn(rows, 5),))
        assert same(compiled(x, n), fn(x, n))
    assert counter.frame_count == 1
    assert symbolic_programs() == 1


class TinyAttention(nn.Module):
    """A causal self-attention block: every size but the model width is the sequence's."""

    def __init__(self, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.embed = nn.Embedding(64, width)

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.embed(tokens) + self.embed(torch.arange(s, device=tokens.device).unsqueeze(0))
        q, k, v = self.qkv(self.norm(x)).split(x.shape[-1], dim=-1)
        shape = (b, s, self.heads, -1)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        mask = torch.ones(s, s, dtype=torch.bool, device=tokens.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        attended = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, -1)
        return x + self.out(attended)


def test_attention_over_sequence_lengths_is_one_program():
    torch.manual_seed(0)
    model = TinyAttention().eval().to(DEVICE["device"])
    with torch.no_grad():
        counter = run_sizes(model, lambda s: (torch.randint(0, 64, (2, s)),), [5, 9, 17, 3, 40], atol=1e-4)
    assert counter.frame_count == 2
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def train_sizes(fn, params, make_inputs, sizes, dynamic=None, atol=1e-5):
    """Runs fn's forward and backward eagerly and compiled at each size: losses, the
    parameters' gradients and the float inputs' gradients equal."""
    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter, dynamic=dynamic)(fn)
    for size in sizes:
        inputs = on_device(make_inputs(size))
        results = []
        for run in (fn, compiled):
            leaves = [t.detach().clone().requires_grad_() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                      for t in inputs]
            for p in params:
                p.grad = None
            loss = run(*leaves)
            loss.backward()
            grads = [p.grad for p in params] + [t.grad for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
            results.append((loss.detach(), grads))
        assert same(results[1], results[0], tol=atol), f"size {size}"
    return counter


def test_training_graphs_compile_once_for_every_size():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(DEVICE["device"])

    def fn(x):
        return model(x).sin().sum()

    counter = train_sizes(fn, list(model.parameters()), lambda b: (torch.randn(b, 4),), [2, 3, 5, 9], dynamic=True)
    assert counter.frame_count == 1
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0
    assert counters["inductor"]["training_graphs"] == 1
    assert counters["inductor"]["autograd_fallback"] == 0


def test_a_backward_reading_sizes_the_forward_saved_as_numbers():
    # The partitioner recomputes arange(s) in the backward from the saved size s.
    torch.manual_seed(0)
    tokens, positions = nn.Embedding(50, 8).to(DEVICE["device"]), nn.Embedding(64, 8).to(DEVICE["device"])

    def fn(ids):
        h = tokens(ids) + positions(torch.arange(ids.shape[1], device=ids.device))
        return h.tanh().mean() * ids.shape[1]

    params = [tokens.weight, positions.weight]
    train_sizes(fn, params, lambda s: (torch.randint(0, 50, (2, s)),), [3, 5, 9, 17], dynamic=True)
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def test_training_takes_floats_as_constants_and_sizes_symbolic():
    # AOTAutograd's partitioner never saves a symbolic float for the backward.
    weight = nn.Parameter(torch.randn(6, 6, device=DEVICE["device"]))

    def fn(x, scale):
        return ((x @ weight) * scale).logsumexp(-1).mean()

    counter = train_sizes(fn, [weight], lambda b: (torch.randn(b, 6), 0.5 if b < 5 else 1.5), [2, 3, 4, 7, 9])
    # Floats passed in are symbolic from the first call, sizes from the second.
    assert counter.frame_count == 2
    assert symbolic_programs() == 2
    # The static sizes' graph at 0.5, then the symbolic sizes' graph at 0.5 (sizes 3, 4) and 1.5 (7, 9)
    assert counters["dynamic"]["training compiles per float value"] == 3
    assert counters["inductor"]["training_graphs"] == 3


def test_a_training_graph_returning_its_numbers_returns_them():
    weight = nn.Parameter(torch.randn(3, device=DEVICE["device"]))

    def fn(x, n, scale):
        return (x * weight * n).sum(), scale, x.shape[0] * n

    compiled = cdynamo.optimize("inductor", dynamic=True)(fn)
    for rows, n, scale in ((2, 2, 0.5), (3, 3, 0.5), (5, 2, 1.5)):
        x = torch.randn(rows, 3, device=DEVICE["device"])
        loss, got_scale, size = compiled(x, n, scale)
        assert (got_scale, size) == (scale, rows * n)
        loss.backward()
        expected = (x * n).sum(0)
        assert same(weight.grad, expected, tol=1e-5)
        weight.grad = None


def test_a_training_step_runs_its_forward_once():
    # AOTAutograd's forward returns the sizes its backward needs, read off intermediate tensors
    # (sym_size of a reshaped activation): they are computed from the inputs' sizes, not by
    # running the graph's tensor operations again beside the compiled program.
    weight = nn.Parameter(torch.randn(8, 48, device=DEVICE["device"]))
    bias = nn.Parameter(torch.randn(48, device=DEVICE["device"]))

    def fn(x):  # GPT-2's attention: Conv1D's addmm, split into q, k, v, heads
        b, s, _ = x.shape
        qkv = torch.addmm(bias, x.view(-1, 8), weight).view(b, s, 48).tanh()
        q, k, v = (t.view(b, s, 4, 4).transpose(1, 2) for t in qkv.split(16, dim=2))
        return ((q @ k.transpose(-1, -2)).softmax(-1) @ v).sum()

    train_sizes(fn, [weight, bias], lambda s: (torch.randn(2, s, 8),), [5, 7])  # the length turns symbolic
    assert symbolic_programs() == 1

    cdynamo.reset()
    compiled = cdynamo.optimize("inductor")(fn)
    for length in (5, 7):  # compiles
        compiled(on_device((torch.randn(2, length, 8),))[0])
    x = on_device((torch.randn(2, 9, 8),))[0]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        compiled(x)
    names = [event.name for event in profile.events()]
    assert names.count("aten::addmm") == 1, names  # the projection, once
    assert not any(name in ("aten::tanh", "aten::_softmax") for name in names), names  # in kernels


def test_a_saved_expand_returned_as_a_copy_is_broadcast_again():
    # BERT's token_type_ids buffer: expand(batch, seq) of a buffer, saved for the backward; the
    # forward program returns it materialised, the backward was traced on the expand.
    table = nn.Embedding(2, 4).to(DEVICE["device"])
    buffered = torch.zeros(1, 16, dtype=torch.long, device=DEVICE["device"])

    def fn(x):
        types = buffered[:, : x.shape[1]].expand(x.shape[0], x.shape[1])
        return (x.unsqueeze(-1) * table(types)).pow(2).sum()

    train_sizes(fn, [table.weight], lambda s: (torch.randn(2, s),), [5, 7, 9])
    train_sizes(fn, [table.weight], lambda s: (torch.randn(2, s),), [5, 7, 9], dynamic=False)


def test_one_kernel_serves_every_size(target):
    def fn(x):
        return x.sin() * 2, x.sum(-1)

    run_sizes(fn, lambda b: (torch.randn(b, 2 * b + 3),), [2, 3, 4, 9], dynamic=True)
    assert symbolic_programs() == 1
    assert counters["inductor"]["graphs"] == 1
    if target == "triton":
        assert counters["inductor"]["triton_kernels"] <= 2


def test_symbolic_kernels_off_compiles_per_size():
    with cdynamo.config.patch(symbolic_kernels=False):
        run_sizes(lambda x: x.cos() + 1, lambda b: (torch.randn(b, 2),), [2, 3], dynamic=True)
    assert symbolic_programs() == 0
    assert per_size_compiles() == 1


SYMBOLIC_OPS = {
    "cumsum": lambda x: torch.cumsum(x, 1) * 2,
    "topk": lambda x: torch.topk(x, 2, dim=1).values + 1,
    "sort": lambda x: torch.sort(x, dim=1).values,
    "pad": lambda x: F.pad(x, (1, 2)) * 3,
    "cat": lambda x: torch.cat([x, x * 2], 1).sum(0),
    "narrow": lambda x: x.narrow(1, 1, 2) + 1,
    "index": lambda x: x[torch.arange(x.shape[0], device=x.device) % 2],
    "gather": lambda x: torch.gather(x, 1, torch.zeros(x.shape[0], 2, dtype=torch.long, device=x.device)),
    "flip_and_select": lambda x: x.flip(1)[:, -1] + x[-1, 0],
}


@pytest.mark.parametrize("name", sorted(SYMBOLIC_OPS))
def test_extern_and_indexing_ops_over_symbolic_sizes(name):
    counter = run_sizes(SYMBOLIC_OPS[name], lambda n: (torch.randn(n, n + 3),), [3, 5, 8], dynamic=True)
    assert counter.frame_count == 1
    assert symbolic_programs() == 1


@pytest.mark.parametrize("symbolic", [True, False])
def test_a_graph_that_returns_only_numbers_still_writes_its_inputs(symbolic):
    # The graph's one output is a number; its tensor work is the in-place write of c.
    def fn(c, n):
        c.neg_()
        return c.shape[0] + n

    compiled = cdynamo.optimize("inductor")(fn)
    with cdynamo.config.patch(symbolic_kernels=symbolic):
        for n in (2, 3, 4):  # n becomes a graph input from the second call on
            c = on_device((torch.randn(5),))[0]
            before = c.clone()
            assert compiled(c, n) == 5 + n
            torch.testing.assert_close(c, -before)


def test_a_returned_view_of_an_input_stays_a_view_beside_number_inputs():
    # Eager's aliasing names inputs by their position among all arguments, numbers included.
    def fn(a, b, n):
        return b[0].relu_(), a - a, n + 1

    compiled = cdynamo.optimize("inductor")(fn)
    for n in (2, 3, 4):
        a, b = on_device((torch.randn(4, 1), torch.randn(4)))
        view, _, m = compiled(a, b, n)
        assert view._base is b and m == n + 1
        view.fill_(7.0)
        assert b[0].item() == 7.0


def test_training_graphs_compile_per_size_unless_symbolic_training_is_on():
    model = nn.Linear(4, 3).to(DEVICE["device"])
    with cdynamo.config.patch(symbolic_training=False):
        train_sizes(lambda x: model(x).relu().sum(), list(model.parameters()), lambda b: (torch.randn(b, 4),),
                    [2, 3, 5], dynamic=True)
    assert symbolic_programs() == 0 and per_size_compiles() == 2  # sizes 3 and 5; size 2 at once
    assert any("symbolic_training is off" in key for key in counters["dynamic"]), dict(counters["dynamic"])


def test_an_input_met_in_another_layout_is_copied_into_the_traced_one_at_this_calls_sizes():
    # A backward input traced contiguous and met transposed (a gradient autograd laid out
    # otherwise): the program copies it into the traced layout, whose strides are expressions of
    # the sizes, evaluated per call. Strides that are symbols of their own are read from the input.
    from torch.fx.experimental.proxy_tensor import make_fx

    from cdynamo import _C

    def times_two(x):
        return (x * 2,)

    gm = make_fx(times_two, tracing_mode="symbolic")(torch.randn(5, 7))
    program = _C._inductor_compile(gm, gm.forward)
    for rows, cols in ((5, 7), (3, 9), (8, 1)):
        met = torch.randn(cols, rows).t()
        assert torch.equal(program(met)[0], met * 2)
    strided = make_fx(times_two, tracing_mode="symbolic")(torch.randn(7, 5).t())  # strides are symbols
    program = _C._inductor_compile(strided, strided.forward)
    for met in (torch.randn(3, 9).t(), torch.randn(9, 3)):
        assert torch.equal(program(met)[0], met * 2)


def test_batch_norm_training_compiles_once_for_every_batch_size():
    # Batch norm's running variance takes the unbiased correction n / (n - 1), a float computed
    # from the batch size: computed in the graph, so one program serves every size (it was
    # compiled per size), and the running statistics stay equal to eager's.
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    eager(torch.randn(2, 3, 6, 6))
    eager = eager.to(DEVICE["device"])
    import copy

    model = copy.deepcopy(eager)
    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter)(model)
    for batch in (2, 3, 5, 8):
        x = torch.randn(batch, 3, 6, 6, device=DEVICE["device"])
        for module in (eager, model):
            module.zero_grad(set_to_none=True)
        eager(x).square().sum().backward()
        compiled(x).square().sum().backward()
        for a, b in zip(eager.parameters(), model.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5)
        for a, b in zip(eager.buffers(), model.buffers()):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert symbolic_programs() == 1
    assert counters["inductor"]["training_graphs"] == 2  # the first size static, then one symbolic
    assert not [reason for reason in counters["dynamic"] if reason.startswith("compiled per sizes")]


def test_a_float_computed_from_sizes_is_computed_in_the_program():
    def fn(x):
        return x * (x.shape[0] / (x.shape[0] - 1)) - 0.5 * (x.shape[1] * 2.0)

    run_sizes(fn, lambda n: (torch.randn(n, n + 1),), [3, 4, 7, 9], dynamic=True)
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def test_convolutions_run_channels_last_in_a_program_of_symbolic_batch():
    # The layout pass compares symbolic layouts as expressions (no guard on the batch size), and
    # a channels-last result keeps eager's strides at every batch size.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
                          nn.Conv2d(8, 4, 3)).eval().to(DEVICE["device"])
    inputs = lambda n: (torch.randn(n, 3, 12, 12).contiguous(memory_format=torch.channels_last),)  # noqa: E731
    with torch.no_grad():
        counter = run_sizes(model, inputs, [2, 3, 5, 7], atol=1e-4)
        compiled = cdynamo.optimize(counter)(model)
        x = on_device(inputs(6))[0]
        assert compiled(x).stride() == model(x).stride()
    assert symbolic_programs() == 1
    assert per_size_compiles() == 0


def test_graphs_compiled_per_size_leave_module_state_as_eager_does():
    # Each per-size compile propagates example values through the graph on fakes: a submodule
    # run there (batch norm updating num_batches_tracked, which reads no input) once updated
    # the real buffer too, one extra step per compile.
    import copy

    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).to(DEVICE["device"])
    model = copy.deepcopy(eager)
    compiled = cdynamo.optimize("inductor")(model)
    with cdynamo.config.patch(symbolic_kernels=False):
        for batch in (2, 3, 5, 3):
            x = torch.randn(batch, 3, 6, 6, device=DEVICE["device"])
            torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
            for a, b in zip(eager.buffers(), model.buffers()):
                torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert per_size_compiles() == 1  # size 5 (the symbolic graph compiled for size 3 at once)
