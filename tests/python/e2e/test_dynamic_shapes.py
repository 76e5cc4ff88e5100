"""Dynamic shapes: automatic dynamic after a size changes, mark_dynamic / mark_static /
dynamic=True and False, sizes computed in the graph, numbers that change between calls, the
shape guard's recompile reasons, and backends given symbolic graphs."""
import pytest
import torch

import cdynamo
from cdynamo import config
from cdynamo.testing import CompileCounter, CompileCounterWithBackend, EagerAndRecordGraphs, same
from cdynamo.utils import counters


@pytest.fixture(autouse=True)
def raise_errors():
    with config.patch(suppress_errors=False):
        yield


def reshape_and_reduce(x, y):
    n = x.shape[0]
    h = torch.relu(x).view(n, -1) * 2
    return h + y[:n].sum(), n * 3


def recompile_reasons():
    return list(counters["recompiles"])


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_sixteen_batch_sizes_compile_twice_and_match_eager(backend):
    counter = CompileCounterWithBackend(backend)
    compiled = cdynamo.optimize(counter)(reshape_and_reduce)
    for batch in range(2, 18):
        x, y = torch.randn(batch, 3, 4), torch.randn(batch + 2)
        assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 2
    (reason,) = recompile_reasons()
    assert "L['x'] changed size at dim 0" in reason


def test_sizes_are_graph_computations_not_constants():
    graphs = EagerAndRecordGraphs()
    compiled = cdynamo.optimize(graphs, dynamic=True)(reshape_and_reduce)
    x, y = torch.randn(5, 3, 4), torch.randn(7)
    assert same(compiled(x, y), reshape_and_reduce(x, y))
    (gm,) = graphs.graphs
    code = gm.code
    assert ".size(0)" in code and "view(size" in code, code
    placeholders = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    assert any(isinstance(s, torch.SymInt) for s in placeholders[0].shape)
    x, y = torch.randn(9, 3, 4), torch.randn(11)
    assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert len(graphs.graphs) == 1


def test_mark_dynamic_compiles_once():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(reshape_and_reduce)
    y = torch.randn(20)
    for batch in (4, 7, 12):
        x = torch.randn(batch, 3, 4)
        cdynamo.mark_dynamic(x, 0)
        assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 1


def test_mark_dynamic_bounds_recompile_outside_them():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(reshape_and_reduce)
    x, y = torch.randn(4, 3), torch.randn(20)
    cdynamo.mark_dynamic(x, 0, min=2, max=8)
    assert same(compiled(x, y), reshape_and_reduce(x, y))
    x = torch.randn(8, 3)
    assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 1
    x = torch.randn(9, 3)
    assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 2
    (reason,) = recompile_reasons()
    assert "L['x'].size()[0] <= 8" in reason and "L['x'] is [9, 3]" in reason, reason


def test_mark_static_and_dynamic_false_recompile_per_size():
    for make in (lambda fn, c: cdynamo.optimize(c, dynamic=False)(fn), None):
        counter = CompileCounter()
        compiled = (make or (lambda fn, c: cdynamo.optimize(c)(fn)))(reshape_and_reduce, counter)
        for batch in (3, 4, 5):
            x, y = torch.randn(batch, 2), torch.randn(batch)
            if make is None:
                cdynamo.mark_static(x, 0)
            assert same(compiled(x, y), reshape_and_reduce(x, y))
        assert counter.frame_count == 3
        cdynamo.reset()


def test_torch_dynamo_marks_are_read():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(reshape_and_reduce)
    y = torch.randn(20)
    for batch in (4, 6):
        x = torch.randn(batch, 3)
        x._dynamo_dynamic_indices = {0}
        assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 1


def branch_on_size(x):
    if x.shape[0] > 4:
        return x.sum(0)
    return x.mean(0)


def test_branch_on_a_size_guards_the_relation():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(branch_on_size)
    for batch in (5, 6, 9):
        x = torch.randn(batch, 2)
        assert same(compiled(x), branch_on_size(x))
    assert counter.frame_count == 1
    x = torch.randn(3, 2)
    assert same(compiled(x), branch_on_size(x))
    assert counter.frame_count == 2
    (reason,) = recompile_reasons()
    assert "L['x'].size()[0] > 4" in reason and "L['x'] is [3, 2]" in reason, reason


def add(x, y):
    return x + y


def test_relation_between_inputs_is_guarded_and_mismatch_raises_like_eager():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(add)
    for batch in (3, 5):
        x, y = torch.randn(batch, 2), torch.randn(batch, 2)
        assert same(compiled(x, y), add(x, y))
    assert counter.frame_count == 1
    with pytest.raises(RuntimeError, match="must match"):
        compiled(torch.randn(3, 2), torch.randn(4, 2))
    assert any("L['x'].size()[0]" in r and "L['y'].size()[0]" in r for r in recompile_reasons()), recompile_reasons()


def scale_rows(x):
    return (x * 2).sum(0) + x.shape[0], x.reshape(-1).cumsum(0)


@cdynamo.config.patch(specialize_zero_one=False)
def test_sizes_one_and_zero_share_the_symbolic_graph():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(reshape_and_reduce)
    for batch in (4, 1, 6, 1, 9):
        x, y = torch.randn(batch, 3), torch.randn(batch)
        assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 1
    scaled = cdynamo.optimize(counter, dynamic=True)(scale_rows)
    for rows in (4, 0, 1, 5):
        x = torch.randn(rows, 3)
        assert same(scaled(x), scale_rows(x))
    assert counter.frame_count == 2, recompile_reasons()


def test_size_one_is_specialised_when_configured_and_still_correct():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(reshape_and_reduce)
    with cdynamo.config.patch(specialize_zero_one=True):
        for batch in (4, 1, 6, 1):
            x, y = torch.randn(batch, 3), torch.randn(batch)
            assert same(compiled(x, y), reshape_and_reduce(x, y))
    assert counter.frame_count == 2


def broadcast_against(x, y):
    return x + y


@cdynamo.config.patch(specialize_zero_one=False)
def test_a_decision_that_differs_at_size_one_still_recompiles():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(broadcast_against)
    for rows in (4, 5, 1, 7):
        x, y = torch.randn(rows, 3), torch.randn(rows, 3)
        assert same(compiled(x, y), broadcast_against(x, y))
    assert counter.frame_count == 1
    x, y = torch.randn(1, 3), torch.randn(6, 3)  # now 1 broadcasts against 6: another graph
    assert same(compiled(x, y), broadcast_against(x, y))
    assert counter.frame_count == 2  # traced with x's size 1 specialised: it broadcasts
    assert any("size()[0]" in reason for reason in counters["recompiles"]), dict(counters["recompiles"])


def size_across_break(x):
    batch, width = x.shape
    y = x * 2
    print("", end="")  # a graph break keeps batch and width alive across it
    return y.view(batch * width) + batch


def test_sizes_kept_across_a_graph_break():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(size_across_break)
    for batch in range(2, 10):
        x = torch.randn(batch, 3)
        assert same(compiled(x), size_across_break(x))
    # the frame and its resume function, each compiled twice (static, then dynamic)
    assert counter.frame_count <= 4, counter.frame_count


def scale(x, factor, offset):
    return x * factor + offset


def test_changing_numbers_become_graph_inputs():
    graphs = EagerAndRecordGraphs()
    compiled = cdynamo.optimize(graphs)(scale)
    x = torch.randn(3)
    for i in range(6):
        assert same(compiled(x, 0.5 + i, i), scale(x, 0.5 + i, i))
    assert len(graphs.graphs) == 2
    placeholders = [n for n in graphs.graphs[-1].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 3, graphs.graphs[-1].code


def test_a_changing_float_compiles_once():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(scale)
    x = torch.randn(3)
    for i in range(5):
        assert same(compiled(x, 0.25 * i, 2), scale(x, 0.25 * i, 2))
    assert counter.frame_count == 1


def test_static_backends_stop_compiling_per_size_past_the_limit():
    def double(x, n):
        return x * n

    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter)(double)
    # Compiling per size is what the inductor does where symbolic kernels are off.
    with config.patch(static_compiles_per_graph=3, symbolic_kernels=False), \
            pytest.warns(RuntimeWarning, match="static_compiles_per_graph"):
        for n in range(1, 8):
            x = torch.randn(4)
            assert same(compiled(x, n), double(x, n))
    assert counter.frame_count == 2
    assert counters["dynamic"]["static compiles of symbolic graphs"] == 2  # n = 3, 4 (n = 2 at once)
    assert counters["dynamic"]["sizes run as captured (past static_compiles_per_graph)"] == 3


def test_int_used_for_python_control_flow_stays_correct():
    def repeat(x, n):
        for _ in range(n):
            x = x + 1
        return x

    compiled = cdynamo.optimize("eager")(repeat)
    x = torch.zeros(2)
    for n in (1, 2, 3, 5):
        assert same(compiled(x, n), repeat(x, n))


def test_training_step_with_changing_batch():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    counter = CompileCounterWithBackend("inductor")
    compiled = cdynamo.optimize(counter)(model)
    for batch in (3, 5, 7):
        x = torch.randn(batch, 4)
        compiled(x).sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, p in zip(got, model.parameters()):
            assert same(g, p.grad)
        model.zero_grad()
    assert counter.frame_count == 2


def test_mark_dynamic_rejects_bad_arguments():
    with pytest.raises(IndexError, match="out of range"):
        cdynamo.mark_dynamic(torch.randn(3), 1)
    with pytest.raises(ValueError, match="larger than max"):
        cdynamo.mark_dynamic(torch.randn(3), 0, min=5, max=2)
    with pytest.raises(TypeError, match="takes a tensor"):
        cdynamo.mark_dynamic([1, 2], 0)


def test_writes_to_inputs_survive_per_size_compiles():
    def write_and_count(b, n):
        t = b.clone()
        t.sigmoid_()
        for _ in range(n):
            t = t.sin()
        b.mul_(0.5)
        return t, n + 1

    compiled = cdynamo.optimize("inductor")(write_and_count)
    for n in (1, 2, 3):
        b, expected_b = torch.randn(4), None
        expected_b = b.clone()
        expected = write_and_count(expected_b, n)
        assert same(compiled(b, n), expected)
        assert same(b, expected_b)


def test_views_with_their_own_strides_as_dynamic_inputs():
    def total(ids):
        return ids.float().cumsum(1) * ids.shape[1]

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(total)
    base = torch.arange(40).view(2, 20)
    for length in (16, 21, 13, 27):
        ids = base.repeat(1, 2)[:, :length]  # strides (40, 1): not the sizes' products
        assert same(compiled(ids), total(ids))
    assert counter.frame_count == 2


def test_pad_and_baddbmm_with_symbolic_sizes_stay_in_one_graph():
    def padded_scores(x, bias):
        pad = (4 - x.shape[1] % 4) % 4
        y = torch.nn.functional.pad(x, (0, 0, 0, pad), value=0.0)
        return bias.baddbmm(y, y.transpose(1, 2), alpha=0.5)

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(padded_scores)
    for length in (5, 9, 7, 13):  # x and bias change together
        x = torch.randn(2, length, 3)
        padded = length + (4 - length % 4) % 4
        bias = torch.randn(2, 1, padded)
        assert same(compiled(x, bias), padded_scores(x, bias))
    assert counter.frame_count == 2


def test_recompile_reason_names_the_line_that_relied_on_a_size():
    def loop_over_rows(x):
        total = x[0]
        for i in range(1, x.shape[0]):  # a Python loop fixes the size
            total = total + x[i]
        return total

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(loop_over_rows)
    for rows in (3, 4):
        x = torch.randn(rows, 2)
        assert same(compiled(x), loop_over_rows(x))
    (reason,) = recompile_reasons()
    assert "relied on at" in reason and f":{loop_over_rows.__code__.co_firstlineno + 2}" in reason, reason


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("backend", ["inductor", "cudagraphs"])
def test_cuda_backends_with_changing_batch(backend):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32)).cuda()
    counter = CompileCounterWithBackend(backend)
    compiled = cdynamo.optimize(counter)(model)
    with torch.no_grad():
        for batch in (3, 8, 5, 8, 21):
            x = torch.randn(batch, 16, device="cuda")
            assert same(compiled(x), model(x), tol=1e-3)
    assert counter.frame_count == 2


def test_capture_scalar_outputs_keeps_item_in_the_graph():
    def scale_by_mean(x):
        m = x.mean().item()
        return x * m + 1

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(scale_by_mean)
    with config.patch(capture_scalar_outputs=True):
        for _ in range(3):
            x = torch.randn(4)
            assert same(compiled(x), scale_by_mean(x))
    assert counter.frame_count == 1
    assert not counters["graph_break"]


def test_fullgraph_keeps_item_tolist_int_and_float_of_tensors_in_the_graph():
    # One graph was asked for: as torch.compile then does, the numbers stay in the graph as
    # unbacked symbols (without fullgraph they break it unless capture_scalar_outputs is set).
    def numbers(x):
        total = x.sum().item()
        counts = x.long().tolist()
        return x * total + float(x.mean()), [c + 1 for c in counts], int(x.long().sum()) * 2

    counter = CompileCounter()
    compiled = cdynamo.compile(numbers, backend=counter, fullgraph=True)
    for values in ([1.0, 2.0, 3.0], [4.0, -1.0, 7.0], [0.0, 5.0, 2.0]):
        x = torch.tensor(values)
        assert same(compiled(x), numbers(x))
    assert counter.frame_count == 1
    with pytest.raises(cdynamo.exc.Unsupported, match="more than 4096 elements"):  # a number each: refused
        cdynamo.compile(lambda x: x.tolist(), backend="eager", fullgraph=True)(torch.zeros(65, 64))
    compiled = cdynamo.compile(numbers, backend=CompileCounter())  # without fullgraph: item() breaks
    compiled(torch.tensor([1.0, 2.0]))
    assert any("item" in reason for reason in counters["graph_break"]), dict(counters["graph_break"])


def test_two_compiled_models_keep_their_own_sizes():
    from cdynamo.symbolic_graphs import graph_is_symbolic

    first, second = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    graphs = EagerAndRecordGraphs()
    cdynamo.compile(first, backend=graphs)(torch.randn(4, 3))
    # Another model entering through the same function: its first size, not a changed one.
    cdynamo.compile(second, backend=graphs)(torch.randn(7, 3))
    assert len(graphs.graphs) == 2
    assert not graph_is_symbolic(graphs.graphs[1])


def test_inductor_under_torch_compile_with_dynamic_shapes():
    import cdynamo.inductor

    def flatten_scale(x, y):
        return (x.view(x.shape[0], -1) * 2 + y.sum()).relu()

    compiled = torch.compile(flatten_scale, backend=cdynamo.inductor, dynamic=True)
    for batch in (3, 5, 7):
        x, y = torch.randn(batch, 2, 3), torch.randn(batch)
        assert same(compiled(x, y), flatten_scale(x, y))
    torch._dynamo.reset()


def test_a_float_default_left_as_it_is_stays_a_constant():
    def normalize(x, eps=1e-5):
        return x / (x.abs().sum() + eps)

    graphs = EagerAndRecordGraphs()
    compiled = cdynamo.optimize(graphs)(normalize)
    x = torch.randn(4)
    assert same(compiled(x), normalize(x))
    placeholders = [n for n in graphs.graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 1  # eps is not a graph input
    assert same(compiled(x, eps=0.5), normalize(x, eps=0.5))
    assert same(compiled(x, eps=0.25), normalize(x, eps=0.25))
    assert len(graphs.graphs) == 2  # changed once: an input from then on


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_mark_unbacked_compiles_once_for_sizes_zero_one_and_more(backend):
    def fn(x):
        return (x * 2).sum(0), x.shape[0] * 3

    counter = CompileCounterWithBackend(backend)
    compiled = cdynamo.optimize(counter)(fn)
    for rows in [5, 0, 1, 7, 1]:
        x = torch.randn(rows, 3)
        cdynamo.mark_unbacked(x, 0)
        got, want = compiled(x), fn(x)
        assert torch.allclose(got[0], want[0]) and got[1] == want[1]
    assert counter.frame_count == 1  # 0 and 1 are not specialised
    assert not counters["recompiles"]


def test_a_branch_on_an_unbacked_size_breaks_the_graph_and_stays_correct():
    def fn(x):
        y = x * 2
        if x.shape[0] > 2:
            return y + 1
        return y - 1

    compiled = cdynamo.optimize(CompileCounter())(fn)
    for rows in [5, 0, 1, 7]:
        x = torch.randn(rows, 3)
        cdynamo.mark_unbacked(x, 0)
        assert torch.equal(compiled(x), fn(x))
    assert any("u0 > 2" in reason for reason in counters["graph_break"])


def test_symbolic_numbers_are_ints_and_floats_to_python_code():
    # type(), isinstance(), text and hashing see the number (as eager does), not a symbol.
    def f(x, n, scale):
        size = x.shape[0]
        return (x * n * scale, type(n).__name__, isinstance(n, int), isinstance(scale, float), type(size) is int,
                str(size), f"{x.shape}", f"{n:03d}", "%d" % n, "{}-{}".format(size, n), [0] * n, {size, 4},
                {n: "v"}, divmod(n, 2), n.bit_length(), scale.is_integer(), repr(scale))

    compiled = cdynamo.optimize("eager")(f)
    for rows, n, scale in ((4, 2, 0.5), (6, 3, 1.5), (8, 5, 2.0)):
        x = torch.randn(rows, 3)
        got, want = compiled(x, n, scale), f(x, n, scale)
        assert same(got[0], want[0]) and got[1:] == want[1:], (got[1:], want[1:])


GLOBAL_WEIGHT = torch.nn.Parameter(torch.randn(8, 6))
GLOBAL_LEAF = torch.randn(8, 6, requires_grad=True)


def test_dynamic_true_leaves_parameters_static():
    # As torch._dynamo: dynamic=True makes inputs' sizes symbolic, not the parameters'.
    def fn(x):
        return (x @ GLOBAL_WEIGHT).relu().sum(0)

    seen = []

    def backend(gm, example_inputs):
        seen.extend(n.meta["example_value"] for n in gm.graph.nodes if n.op == "placeholder")
        return gm.forward

    x = torch.randn(5, 8)
    assert same(cdynamo.optimize(backend, dynamic=True)(fn)(x), fn(x))
    weight = next(t for t in seen if isinstance(t, torch.Tensor) and t.shape[-1] == 6)
    data = next(t for t in seen if isinstance(t, torch.Tensor) and t is not weight)
    assert all(isinstance(s, int) for s in weight.shape)
    assert isinstance(data.shape[0], torch.SymInt)  # its width meets the weight's: 8


def test_a_tensor_with_a_gradient_traces_with_symbolic_sizes():
    # A leaf that went through a backward has a .grad: its fake's gradient has sizes of its own,
    # equal to the tensor's. That fact once made the frame run eagerly.
    (torch.randn(3, 8) @ GLOBAL_LEAF).sum().backward()

    def fn(x):
        return (x @ GLOBAL_LEAF).tanh().sum() + GLOBAL_LEAF.grad.sum()

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, dynamic=True)(fn)
    for rows in (4, 7):
        x = torch.randn(rows, 8)
        assert same(compiled(x), fn(x))
    assert counter.frame_count == 1 and not counters["graph_break"]
    assert counters["stats"]["frames_fallback"] == 0
