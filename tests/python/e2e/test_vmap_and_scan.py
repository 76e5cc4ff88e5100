"""torch.vmap and torch.func.grad/jacrev of a Python function (one graph node that runs the
transform, traced through by AOTAutograd and the inductor), torch's associative_scan (its generic
algorithm traced, as transformers' Mamba layers call it when compiling), pytree's
flatten/unflatten/map and `yield from`: one graph, eager's results and side effects."""
import copy

import pytest
import torch
import torch.utils._pytree as pytree
from torch._higher_order_ops.associative_scan import associative_scan

import cdynamo
from cdynamo.testing import CompileCounter, same
from .helpers import one_graph


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    yield
    cdynamo.reset()


def per_row_statistics(x, y):
    scale = 3

    def combine(a, b):
        return a * b + a.sum(), b - a.mean()

    pair = torch.vmap(combine, in_dims=(0, 1))(x, y)
    scaled = torch.vmap(lambda t: t * scale)(x)  # closes over a constant
    return pair[0] + 1, pair[1], scaled


def mamba_style_scan(decay, inputs):
    def combine_fn(left, right):
        decay_left, state_left = left
        decay_right, state_right = right
        return decay_left * decay_right, decay_right * state_left + state_right

    _, states = associative_scan(combine_fn, (decay, inputs), dim=2, combine_mode="generic")
    return states.sum(-1)


def sequential_scan(decay, inputs):
    state, states = torch.zeros_like(inputs[:, :, 0]), []
    for step in range(inputs.shape[2]):
        state = decay[:, :, step] * state + inputs[:, :, step]
        states.append(state)
    return torch.stack(states, 2).sum(-1)


def assert_one_graph_equal_to_eager(fn, args, backend):
    counter = CompileCounter() if backend == "eager" else None
    compiled = cdynamo.compile(fn, backend=counter or backend, fullgraph=True)
    for got, want in zip(compiled(*args), fn(*args)):
        torch.testing.assert_close(got, want)
    if counter:
        assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_vmap_of_a_local_function_is_one_graph_on_every_backend(backend):
    assert_one_graph_equal_to_eager(per_row_statistics, (torch.randn(4, 3), torch.randn(3, 4)), backend)


def test_vmap_gradients_equal_eager():
    x = torch.randn(4, 3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)

    def f(x, w):
        return torch.vmap(torch.dot, in_dims=(0, None))(x, w).square().sum()

    f(x, w).backward()
    want = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    cdynamo.compile(f, backend="aot_eager", fullgraph=True)(x, w).backward()
    torch.testing.assert_close((x.grad, w.grad), want)


LOG = []


def test_a_vmapped_function_with_side_effects_breaks_the_graph_and_runs_as_in_eager():
    def logged(t):
        LOG.append(t.shape)  # runs once per call in eager: a fake run at trace time would add one
        return t * 2

    def f(x):
        return torch.vmap(logged)(x) + 1

    x = torch.randn(5, 2)
    explained = cdynamo.explain(f)(x)
    assert explained.graph_break_count == 1
    assert "reads the global LOG" in str(explained.break_reasons[0])
    LOG.clear()
    torch.testing.assert_close(cdynamo.compile(f, backend="eager")(x), f(x))
    assert len(LOG) == 2  # one for the compiled call, one for eager's


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_associative_scan_is_one_graph_equal_to_the_sequential_recurrence(backend):
    torch.manual_seed(0)
    decay, inputs = torch.rand(2, 3, 9, 4), torch.randn(2, 3, 9, 4)
    counter = CompileCounter() if backend == "eager" else None
    compiled = cdynamo.compile(mamba_style_scan, backend=counter or backend, fullgraph=True)
    torch.testing.assert_close(compiled(decay, inputs), sequential_scan(decay, inputs))
    torch.testing.assert_close(compiled(decay, inputs), mamba_style_scan(decay, inputs))
    if counter:
        assert counter.frame_count == 1


def test_associative_scan_pointwise_mode_on_the_cpu_does_what_eager_does():
    # torch up to 2.13 refuses pointwise mode on the CPU (ValueError), 2.14 runs it: either way,
    # the compiled call does the same.
    def f(x):
        return associative_scan(lambda a, b: a + b, x, 0, combine_mode="pointwise")

    x = torch.randn(4)
    try:
        expected = f(x)
    except ValueError as error:
        with pytest.raises(ValueError, match="CUDA or XPU"):
            cdynamo.compile(f, backend="eager")(x)
        assert "CUDA or XPU" in str(error)
    else:
        assert same(cdynamo.compile(f, backend="eager")(x), expected)


def test_higher_order_map_over_rows_is_one_graph_equal_to_eager():
    from torch._higher_order_ops.map import map as hop_map

    def f(x, y):
        rows = hop_map(lambda row, scale: row * scale + y, x, 3.0)
        pairs = hop_map(lambda xs, w: {"sum": xs[0] + xs[1] @ w, "both": (xs[0].cos(), xs[1].sin())}, (x, x * 2), y)
        return rows, pairs

    x, y = torch.randn(4, 3), torch.randn(3, 3)
    want, got = f(x, y), one_graph(f, x, y)
    assert same(got[0], want[0]) and same(got[1]["sum"], want[1]["sum"])
    assert all(same(a, b) for a, b in zip(got[1]["both"], want[1]["both"]))
    with pytest.raises(RuntimeError, match="Leading dimensions"):
        cdynamo.optimize("eager")(f)(torch.randn(0, 3), y)


def test_pytree_flatten_unflatten_and_map_are_traced():
    def f(x, y):
        leaves, spec = pytree.tree_flatten({"a": (x, [y, x * 2]), "b": 5})
        rebuilt = pytree.tree_unflatten([leaf + 1 for leaf in leaves], spec)
        doubled = pytree.tree_map(lambda t: t * 2, rebuilt)
        return doubled["a"][1][0] - doubled["a"][0], len(leaves), spec.num_leaves

    x, y = torch.randn(3), torch.randn(3)
    counter = CompileCounter()
    got = cdynamo.compile(f, backend=counter, fullgraph=True)(x, y)
    want = f(x, y)
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:] and counter.frame_count == 1


def test_yield_from_delegates_to_generators_and_sequences():
    def inner(t):
        yield t + 1
        yield t * 2
        return "done"

    def outer(t):
        result = yield from inner(t)
        yield from [t - 1, t - 2]
        yield result == "done"

    def f(x):
        items = list(outer(x))
        return sum(items[:4]), items[4]

    x = torch.randn(3)
    counter = CompileCounter()
    got = cdynamo.compile(f, backend=counter, fullgraph=True)(x)
    torch.testing.assert_close(got[0], f(x)[0])
    assert got[1] is True and counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_func_grad_and_jacobians_are_graph_nodes(backend):
    def per_example(x, w):
        def loss(w, x):
            return ((x @ w).tanh() ** 2).sum()

        grads = torch.func.grad(loss)(w, x)
        grads_x, value = torch.func.grad_and_value(loss, argnums=1)(w, x)
        jacobian = torch.func.jacrev(lambda t: t.sin() * 2)(x[0])
        return grads, grads_x, value, jacobian

    assert_one_graph_equal_to_eager(per_example, (torch.randn(4, 3), torch.randn(3, 2)), backend)


def nested_vmaps(x):
    scale = 2.0
    square = torch.vmap(torch.vmap(lambda a: a * a * scale))  # the outer transforms the inner's stand-in
    pairs = torch.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))
    return square(x), pairs(x), torch.vmap(torch.vmap(torch.dot))(x.unsqueeze(0), x.unsqueeze(0))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_nested_vmap_of_a_local_function_is_one_graph(backend):
    assert_one_graph_equal_to_eager(nested_vmaps, (torch.randn(4, 3),), backend)


def test_nested_vmap_of_a_function_with_side_effects_breaks_the_graph():
    def logged(t):
        LOG.append(t.shape)
        return t * 2

    def f(x):
        return torch.vmap(torch.vmap(logged))(x) + 1

    explained = cdynamo.explain(f)(torch.randn(5, 2))
    assert explained.graph_break_count == 1 and "reads the global LOG" in str(explained.break_reasons[0])


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_grad_and_value_with_a_dict_aux_output(backend):
    def f(x):
        def loss(t):
            y = (t ** 2).sum()
            return y, {"mean": t.mean(), "parts": (t.max(), t.min())}

        g, (v, aux) = torch.func.grad_and_value(loss, has_aux=True)(x)
        return g, v, aux["mean"] * 3, aux["parts"][1], torch.tensor(len(aux))

    assert_one_graph_equal_to_eager(f, (torch.randn(4, 3),), backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_functional_call_with_every_parameter_replaced_is_one_graph(backend):
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))

    def f(x, params):
        return torch.func.functional_call(m, params, (x,)), m(x)

    params = {k: torch.randn_like(v) for k, v in m.named_parameters()}
    assert_one_graph_equal_to_eager(f, (torch.randn(5, 3), params), backend)


def test_functional_call_follows_the_modules_training_flag_and_partial_replacement():
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))

    def f(x, params):
        return torch.func.functional_call(m, params, (x,))

    params = {k: v.detach() + 1 for k, v in m.named_parameters()}
    compiled = cdynamo.compile(f, backend="aot_eager")
    x = torch.ones(4, 3)
    torch.manual_seed(0)
    got = compiled(x, params)
    torch.manual_seed(0)
    torch.testing.assert_close(got, f(x, params))
    m.eval()  # the dropout a backend traced through must not stay in the graph
    torch.testing.assert_close(compiled(x, params), f(x, params))
    only_weight = {"0.weight": params["0.weight"]}  # the bias stays the module's own
    explained = cdynamo.explain(f)(x, only_weight)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch.testing.assert_close(compiled(x, only_weight), f(x, only_weight))
    with torch.no_grad():
        m[0].bias.add_(1.0)  # read from the module at each call, not a constant of the graph
    torch.testing.assert_close(compiled(x, only_weight), f(x, only_weight))


@pytest.mark.parametrize("tie_weights", [True, False])
def test_functional_call_of_one_tied_weight(tie_weights):
    m = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False))
    m[1].weight = m[0].weight

    def f(x, params):
        return torch.func.functional_call(m, params, (x,), tie_weights=tie_weights)

    x, params = torch.randn(2, 3), {"0.weight": torch.randn(3, 3)}
    explained = cdynamo.explain(f)(x, params)
    assert explained.graph_break_count == 0
    torch.testing.assert_close(explained.out, f(x, params))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_cond_with_a_tensor_predicate_is_one_node_holding_both_branches(backend):
    def f(x, y):
        scale = 3.0
        out = torch.cond(x.sum() > 0, lambda a, b: (a * scale + b,), lambda a, b: (a - b,), (x, y))
        return out[0] + 1

    counter = CompileCounter()
    compiled = cdynamo.compile(f, backend=counter if backend == "eager" else backend, fullgraph=True)
    y = torch.randn(3)
    for x in (torch.ones(3), -torch.ones(3)):  # each branch taken at run time, from one graph
        torch.testing.assert_close(compiled(x, y), f(x, y))
    if backend == "eager":
        assert counter.frame_count == 1


def test_torch_cond_breaks_the_graph_for_operands_that_need_gradients():
    # (Branches with side effects are refused by eager's torch.cond itself.)
    def g(x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))

    x = torch.ones(3, requires_grad=True)
    want = g(x)  # eager's torch.cond compiles with torch's own compiler: its imports are made first
    explained = cdynamo.explain(g)(x)
    assert explained.graph_break_count >= 1 and "need gradients" in str(explained.break_reasons[0])
    torch.testing.assert_close(explained.out, want)


@pytest.mark.parametrize("func", [torch.cos, lambda t: (t * t).sin()], ids=["builtin", "lambda"])
def test_func_vjp_output_and_vjp_fn_in_one_graph(func):
    def f(x):
        out, vjp_fn = torch.func.vjp(func, x)
        (grad,) = vjp_fn(torch.ones_like(x))
        return out, grad

    x = torch.randn(4)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x)
    want = f(x)
    assert counter.frame_count == 1
    assert all(torch.allclose(a, b) for a, b in zip(got, want))


def _and_masks(*mask_functions):
    def combined(batch, head, q, k):
        result = mask_functions[0](batch, head, q, k)
        for mask_function in mask_functions[1:]:
            result = result & mask_function(batch, head, q, k)
        return result

    return combined


def _padding_mask_function(padding_mask):
    def padded(batch, head, q, k):
        return padding_mask[batch, k]

    return padded


def _causal(batch, head, q, k):
    return q >= k


def transformers_style_vmap_mask(x, padding):
    """transformers' masking_utils: mask functions combined by closures (over a tuple of functions
    and over a tensor computed in the graph), vmapped over indices under TransformGetItemToIndex."""
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    keep = padding.bool() & (x > -100)  # a tensor the graph computes
    mask_function = _and_masks(_causal, _padding_mask_function(keep))
    batch, length = x.shape
    mask = mask_function
    for dims in ((None, None, None, 0), (None, None, 0, None), (0, None, None, None)):
        mask = torch.vmap(mask, in_dims=dims)
    with TransformGetItemToIndex():
        attention = mask(torch.arange(batch), 0, torch.arange(length), torch.arange(length))
    return x.unsqueeze(-1) * attention


def test_vmap_of_functions_closing_over_a_tuple_of_functions_and_a_tensor():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(transformers_style_vmap_mask)
    x = torch.randn(2, 5)
    for padding in (torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]]), torch.tensor([[1, 0, 1, 1, 1], [1, 1, 1, 1, 1]])):
        assert torch.equal(compiled(x, padding), transformers_style_vmap_mask(x, padding))  # the tensor is read per call
    assert counter.frame_count == 1 and counter.op_count > 0


class _Energy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(3, 8), torch.nn.Linear(8, 1)

    def energy(self, q):
        return self.l2(self.l1(q).tanh()).sum()

    def forward(self, x):
        # vmap(grad(self.energy)): a method of the module the transform runs.
        return torch.vmap(torch.func.grad(self.energy))(x)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_transforms_of_functions_that_use_a_module(backend):
    # Per-sample gradients, an input jacobian and a method of self: the module's parameters are
    # the graph's inputs (the node runs the function with the module holding them), so training
    # reaches them, and a compiler sees them as inputs.
    torch.manual_seed(0)
    model = _Energy()

    def per_sample_and_jacobian(x):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, row):
            return torch.func.functional_call(model, p, (row[None],)).sum()

        grads = torch.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)["l2.bias"]
        return grads, torch.func.jacrev(lambda t: model.l1(t))(x[0]), model(x)

    x = torch.randn(4, 3)
    counter = cdynamo.testing.CompileCounterWithBackend(backend)
    compiled = cdynamo.compile(per_sample_and_jacobian, backend=counter, fullgraph=True)
    for result, expected in zip(compiled(x), per_sample_and_jacobian(x)):
        torch.testing.assert_close(result, expected)
    assert counter.frame_count == 1
    # Gradients reach the module's parameters through the transformed method.
    model.zero_grad()
    compiled(x)[2].pow(2).sum().backward()
    compiled_grads = [p.grad for p in model.parameters()]
    model.zero_grad()
    per_sample_and_jacobian(x)[2].pow(2).sum().backward()
    eager_grads = [p.grad for p in model.parameters()]
    assert [g is None for g in compiled_grads] == [g is None for g in eager_grads] != [True] * 4
    for got, expected in zip(compiled_grads, eager_grads):
        if expected is not None:
            torch.testing.assert_close(got, expected)


_GLOBAL_MODEL = torch.nn.Linear(3, 2)


def _jacobian_of_global_model(x):
    return torch.func.jacrev(lambda t: _GLOBAL_MODEL(t).tanh())(x[0]), _GLOBAL_MODEL(x)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_transforms_of_functions_that_read_a_global_module(backend):
    # A script's model read as a global inside the transformed function: held by the node like a
    # closed-over module, read through the globals dict (guarded there: a new model recompiles).
    global _GLOBAL_MODEL
    counter = cdynamo.testing.CompileCounterWithBackend(backend)
    compiled = cdynamo.compile(_jacobian_of_global_model, backend=counter, fullgraph=True)
    x = torch.randn(4, 3)
    for result, expected in zip(compiled(x), _jacobian_of_global_model(x)):
        torch.testing.assert_close(result, expected)
    saved = _GLOBAL_MODEL
    try:
        _GLOBAL_MODEL = torch.nn.Linear(3, 2)
        for result, expected in zip(compiled(x), _jacobian_of_global_model(x)):
            torch.testing.assert_close(result, expected)
    finally:
        _GLOBAL_MODEL = saved
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_model_ensembling_with_stack_module_state(backend):
    # PyTorch's ensembling recipe: stack_module_state over the members, vmap over functional_call
    # of a meta-device copy; stacked parameters are new leaves (requires_grad as eager's).
    members = torch.nn.ModuleList([torch.nn.Linear(4, 2) for _ in range(3)])
    base = copy.deepcopy(members[0]).to("meta")

    def fn(x):
        params, buffers = torch.func.stack_module_state(list(members))

        def one_model(p, b, x):
            return torch.func.functional_call(base, (p, b), (x,))

        return torch.vmap(one_model, in_dims=(0, 0, None))(params, buffers, x), params["weight"].requires_grad

    x = torch.randn(5, 4)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)) and counter.frame_count == 1
    cdynamo.reset()
    assert same(cdynamo.compile(fn, backend=backend, fullgraph=True)(x), fn(x))
    with pytest.raises(RuntimeError, match="same class"):
        cdynamo.compile(lambda: torch.func.stack_module_state([members[0], torch.nn.ReLU()]), backend="eager")()
