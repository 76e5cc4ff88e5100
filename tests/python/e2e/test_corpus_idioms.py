"""Capture of idioms found by the seventeenth and eighteenth sessions' corpus modules: inspect's
predicates on any value, warnings.catch_warnings blocks (YOLOv5's SPPF) and the filter calls inside
them, modules compared with strings, int() of float tensors, indexing by ints the data gives (also
beside masks, and assignments by them), ParameterLists passed to autograd.grad, tensors made from numbers the data gives,
sizes read from 0-d tensors, max/min of such numbers, calls that do not bind raising TypeError, torch.jit.fork, NumPy on tensors' arrays, modules
of their own __iter__, a namedtuple's _fields, torch.tensor of 0-d tensors,
losses made in forward from tensors, repr() of torch's layers,
sorted() of a dict of modules' items."""
import inspect
import warnings

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same


def test_inspect_predicates_answer_by_the_type_of_any_traced_value():
    # The latent-diffusion helper default(val, d): d() if inspect.isfunction(d) else d.
    def default(val, d):
        if val is not None:
            return val
        return d() if inspect.isfunction(d) else d

    def fn(x, context=None):
        context = default(context, x)
        answers = (inspect.isfunction(x), inspect.isclass(x), inspect.ismethod(x), inspect.isclass([x]),
                   inspect.isfunction(lambda: 1), inspect.isfunction({"a": x}), inspect.ismethod(x.add))
        return context * 2, default(None, lambda: x + 1), answers

    counter = CompileCounter()
    x = torch.randn(3)
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1 and counter.op_count == 2


def _shown_warnings(fn, *args):
    """fn(*args)'s result and the messages of the warnings it showed (every warning shown once)."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in shown]


def test_a_catch_warnings_block_silences_the_warnings_eager_silences():
    def fn(x):
        with warnings.catch_warnings():  # as YOLOv5's SPPF, around its pooling
            warnings.simplefilter("ignore")
            y = torch.relu(x) + 1
            warnings.warn("silenced in the block")
        with warnings.catch_warnings(action="error", category=DeprecationWarning):
            warnings.warn("still a UserWarning")
        warnings.warn("shown after the block")
        return y * 2

    counter = CompileCounter()
    filters_before = list(warnings.filters)
    x = torch.randn(4)
    got, got_shown = _shown_warnings(cdynamo.compile(fn, backend=counter, fullgraph=True), x)
    want, want_shown = _shown_warnings(fn, x)
    assert same(got, want) and got_shown == want_shown == ["still a UserWarning", "shown after the block"]
    assert counter.frame_count == 1 and counter.op_count == 3
    assert warnings.filters == filters_before  # every block's filters restored


def test_a_graph_break_inside_a_catch_warnings_block_keeps_its_filters_until_its_end():
    def fn(x):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="silenced")
            y = x + 1
            cdynamo.graph_break()
            warnings.warn("silenced here")
            y = y * 3
        warnings.warn("silenced no more")
        return y

    counter = CompileCounter()
    filters_before = list(warnings.filters)
    compiled = cdynamo.compile(fn, backend=counter)
    x = torch.randn(2)
    for _ in range(2):
        got, got_shown = _shown_warnings(compiled, x)
        want, want_shown = _shown_warnings(fn, x)
        assert same(got, want) and got_shown == want_shown == ["silenced no more"]
    assert counter.frame_count == 2
    assert warnings.filters == filters_before


def test_catch_warnings_that_records_is_refused_with_the_reason():
    def fn(x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("recorded")
        return x + len(caught)

    with pytest.raises(cdynamo.exc.Unsupported, match=r"catch_warnings\(record=True\)"):
        cdynamo.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))
    cdynamo.reset()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert same(cdynamo.compile(fn, backend="eager")(torch.ones(2)), fn(torch.ones(2)))


def test_a_module_compared_with_a_string_is_compared_by_identity():
    # xDeepFM's CIN: `if self.activation is None or self.activation == "linear"` on a module.
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.activation = torch.nn.PReLU()

        def forward(self, x):
            if self.activation is None or self.activation == "linear":
                return x
            return self.activation(x), self.activation != "relu", self.activation == self.activation

    counter = CompileCounter()
    model, x = Layer(), torch.randn(3)
    assert same(cdynamo.compile(model, backend=counter, fullgraph=True)(x), model(x))
    assert counter.frame_count == 1


def test_int_of_a_float_tensor_is_its_truncation_in_the_graph():
    # SpeechBrain's statistics pooling: n = int(torch.round(lengths[i] * T)); x[i, 0:n].
    def fn(lengths, x):
        n = int(torch.round(lengths[1] * x.shape[1]))
        return x[1, 0:n].mean(), n, int(-lengths[2] * 3)

    counter = CompileCounter()
    compiled = cdynamo.compile(fn, backend=counter, fullgraph=True)
    x = torch.randn(3, 8)
    for lengths in (torch.tensor([1.0, 0.75, 0.5]), torch.tensor([1.0, 0.25, 0.9])):
        assert same(compiled(lengths, x), fn(lengths, x))
    assert counter.frame_count == 1
    with pytest.raises(ValueError, match="NaN"):  # int() of NaN raises, as in eager
        compiled(torch.tensor([1.0, float("nan"), 0.5]), x)


def test_indexing_by_an_int_only_the_data_gives_returns_eagers_views():
    # The BiLSTM-CRF tutorial's log_sum_exp: vec[0][argmax(vec)], with argmax's item().
    def fn(vec):
        i = vec[0].argmax().item()
        row = vec[i - 1]
        row.mul_(2)  # a view: the write reaches vec, as in eager
        return vec[0][i] + 1, vec[0, i], vec[:, i], vec[..., i:, None, i - 2]

    counter = CompileCounter()
    x = torch.randn(5, 5)
    got, want = x.clone(), x.clone()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(got), fn(want))
    assert same(got, want)
    assert counter.frame_count == 1


def test_assignment_by_ints_only_the_data_gives_writes_through_eagers_views():
    # AllenNLP's ELMo character encoder: out[i, j + 1] = token with j from lengths.tolist().
    def fn(t, mask):
        out = t.new_zeros(t.shape[0], t.shape[1] + 2)
        for i, j in enumerate(mask.sum(1).tolist()):
            out[i, j + 1] = 5
            out[i, :j] = 1.5
        k = mask.sum().item()
        out[0, k - 4, None] = torch.tensor([7.0])
        out[1, [0, 2]] = 9
        out[:, k - 5] = t[:, 0]
        return out

    counter = CompileCounter()
    args = (torch.randn(2, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]))
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(*args), fn(*args))
    assert counter.frame_count == 1


def test_a_parameter_list_passed_to_autograd_grad_is_its_parameters():
    # MAML: torch.autograd.grad(loss, self.vars) with vars an nn.ParameterList.
    class Learner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vars = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(3, 3)), torch.nn.Parameter(torch.randn(3))])

        def forward(self, x):
            with torch.enable_grad():
                loss = (x @ self.vars[0] + self.vars[1]).pow(2).sum()
                grads = torch.autograd.grad(loss, self.vars)
            fast = [p - 0.1 * g for p, g in zip(self.vars, grads)]
            return x @ fast[0] + fast[1], torch.stack(list(self.vars[1:]) * 2).sum()

    counter = CompileCounter()
    model, x = Learner(), torch.randn(2, 3)
    with torch.no_grad():
        assert same(cdynamo.compile(model, backend=counter, fullgraph=True)(x), model(x))
    assert counter.frame_count == 1


def test_zero_dim_integer_tensors_index_as_the_ints_they_hold():
    # The BiLSTM-CRF tutorial's _score_sentence: transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]].
    def fn(transitions, feats, tags):
        score = torch.zeros(1)
        for i, feat in enumerate(feats):
            score = score + transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        row = transitions[tags[0]]
        row.add_(1)  # a view, as indexing by an int gives
        beside_index_tensors = (transitions[tags[1:3], tags[0]], transitions[None, tags[:2], tags[3]])
        return score, transitions[:, tags[-1]], transitions[tags[0].to(torch.int32)], transitions[1:, tags[0]], beside_index_tensors

    counter = CompileCounter()
    feats, tags = torch.randn(3, 4), torch.tensor([0, 2, 1, 3])
    got = torch.randn(4, 4)
    want = got.clone()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(got, feats, tags), fn(want, feats, tags))
    assert same(got, want)
    assert counter.frame_count == 1


def test_zero_dim_integer_tensors_and_unbacked_ints_beside_masks():
    # A per-sample mask beside a sample index (x[i, keep]); masks of several dimensions consume
    # as many, before and after the int; a 0-d bool mask as eager takes it.
    def fn(x, i, keep4, keep5, keep2d, m):
        j = i.item()
        return (x[i, keep4], x[j, keep4] * 2, x[..., i, keep5], x[keep2d, j], x[None, i, 1:, keep5],
                m[keep2d[0], i], x[i, torch.tensor(True)])

    counter = CompileCounter()
    x, m = torch.randn(3, 4, 5), torch.randn(4, 3)
    args = (x, torch.tensor(1), torch.tensor([True, False, True, True]), torch.tensor([True, False, True, True, False]),
            torch.rand(3, 4) > 0.5, m)
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(*args), fn(*args))
    assert counter.frame_count == 1


def test_tensors_made_from_numbers_only_the_data_gives():
    # ESPnet's make_pad_mask: lengths.tolist(), then seq_range.new(lengths).
    def make_pad_mask(lengths):
        lengths = lengths.long().tolist()
        seq_range = torch.arange(0, 6, dtype=torch.int64).unsqueeze(0).expand(len(lengths), 6)
        return seq_range >= seq_range.new(lengths).unsqueeze(-1)

    def fn(x, t):
        a, b = t.tolist()
        return (torch.tensor([a, 2]), torch.tensor([[a, b], [b, a]], dtype=torch.float32), x.new_tensor([a * 1.5, b]),
                torch.as_tensor([a > 1, True]), torch.tensor([a, 2.5]) * x[0])

    counter = CompileCounter()
    x, t = torch.randn(3), torch.tensor([3, 1])
    got, want = cdynamo.compile(fn, backend=counter, fullgraph=True)(x, t), fn(x, t)
    assert same(got, want) and [g.dtype for g in got] == [w.dtype for w in want]
    lengths = torch.tensor([2, 5, 6])
    assert same(cdynamo.compile(make_pad_mask, backend=counter, fullgraph=True)(lengths), make_pad_mask(lengths))
    assert counter.frame_count == 2
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):  # ragged, as eager raises
        cdynamo.compile(lambda t: torch.tensor([t.tolist(), [1]]), backend="eager", fullgraph=True)(t)


def test_sizes_read_from_zero_dim_tensors_stay_in_the_graph():
    # VITS' torch.arange(length.max()), ESIM's torch.ones(b, torch.max(lengths)): eager reads the
    # tensor's item(); under fullgraph=True the number is an unbacked symbol of the graph.
    def fn(lengths, x):
        steps = torch.arange(lengths.max())
        mask = steps[None, :] < lengths[:, None]
        return mask, torch.ones(2, torch.max(lengths)), x.new_zeros(torch.Size(s // 2 for s in x.shape[-2:]))

    counter = CompileCounter()
    lengths, x = torch.tensor([6, 4, 5]), torch.randn(2, 6, 4)
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(lengths, x), fn(lengths, x))
    assert counter.frame_count == 1
    # Without fullgraph (item() not kept), the same function runs, breaking the graph there.
    cdynamo.reset()
    assert same(cdynamo.compile(fn, backend="eager")(lengths, x), fn(lengths, x))


def test_max_and_min_of_numbers_only_the_data_gives():
    # mmdet's loss normalisation: max(float(num_pos), 1.0), a float of the graph (torch.sym_max).
    def fn(labels):
        n = max(float((labels > 0).sum()), 1.0)
        return labels.float() / n, min(1.5, float(labels.sum()), 8.0), max(labels.sum().item(), 2)

    counter = CompileCounter()
    for labels in (torch.tensor([0, 1, 3, 0]), torch.tensor([0, 0, 0, 0])):
        cdynamo.reset()
        counter.clear()
        assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(labels), fn(labels))
        assert counter.frame_count == 1


def test_a_call_that_does_not_bind_raises_its_type_error_in_the_trace():
    # SpeechBrain: try: layer(x, lengths=lengths) except TypeError: layer(x).
    class Plain(torch.nn.Module):
        def forward(self, x):
            return x + 1

    layer = Plain()

    def fn(x):
        try:
            out = layer(x, lengths=None)
        except TypeError:
            out = layer(x) * 2

        def inner(p, q, *, r):
            return p + q + r

        try:
            inner(x)
        except TypeError as error:
            message = str(error)
        return out, message

    counter = CompileCounter()
    x = torch.randn(3)
    got, want = cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)
    assert same(got, want) and got[1].endswith("fn.<locals>.inner() missing 1 required positional argument: 'q'")
    assert counter.frame_count == 1
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        cdynamo.compile(lambda x: layer(x, x), backend=counter)(x)


def test_jit_fork_runs_the_function_at_once_as_eager_does():
    # An ensemble's futures = [torch.jit.fork(m, x) for m in members]; [torch.jit.wait(f) ...].
    members = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(3)])

    def fn(x):
        futures = [torch.jit.fork(m, x) for m in members] + [torch.jit.fork(torch.sin, x)]
        return torch.stack([torch.jit.wait(f) for f in futures]).mean(0), futures[0].wait()

    counter = CompileCounter()
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1


def test_numpy_views_of_tensors_norms_scalars_and_constant_arrays():
    import numpy as np

    thresholds = np.array([0.5, 0.4, 0.3])

    def fn(logits, emb, p):
        labels = torch.from_numpy((logits.numpy() > thresholds).astype(np.int64))  # a Kaggle head's thresholds
        shifted = logits + float(logits.numpy()[:, -1].mean())  # float() of a NumPy scalar
        e = emb.numpy()
        sims = e @ e[3] / (np.linalg.norm(e, axis=1) * np.linalg.norm(e[3]) + 1e-8)  # word2vec's nearest words
        _, top = p.topk(3)
        hits = np.logical_and(labels.numpy() == 1, logits.numpy() > 0.2).sum(axis=0)  # macro F1's counts
        ratio = np.nan_to_num(hits / (labels.numpy().sum(axis=0) * 0.0))
        return (labels, shifted, torch.from_numpy(np.argsort(-sims)[1:4]), top.numpy().squeeze().tolist(),
                torch.from_numpy(hits), torch.from_numpy(ratio))

    counter = CompileCounter()
    args = (torch.rand(4, 3), torch.randn(6, 4), torch.randn(1, 12))
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(*args), fn(*args))
    assert counter.frame_count == 1


def test_a_module_of_its_own_iter_getitem_and_contains_and_a_namedtuples_fields():
    import collections

    class LayerStack(torch.nn.Module):
        def __init__(self, layers):
            super().__init__()
            self.layers = torch.nn.ModuleList(layers)

        def __iter__(self):
            return iter(self.layers)

        def __getitem__(self, index):  # a slice is a stack of its own, as in the repositories
            return LayerStack(list(self.layers)[index]) if isinstance(index, slice) else self.layers[index]

        def __contains__(self, layer):
            return any(layer is own for own in self.layers)

        def forward(self, x):
            for layer in self:
                x = layer(x)
            return x

    Detections = collections.namedtuple("Detections", ["boxes", "scores"])
    stack = LayerStack([torch.nn.Linear(4, 4) for _ in range(3)])
    other = torch.nn.Linear(4, 4)

    def fn(x):
        for layer in stack:
            x = layer(x)
        x = stack[:2](x) + stack[-1](x)
        found = Detections(x, x * 2)
        return {k: getattr(found, k).sum() for k in found._fields}, stack[0] in stack, other in stack

    counter = CompileCounter()
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1


def test_tensors_made_from_zero_dim_tensors_copy_their_values():
    # REINFORCE's torch.cat([torch.tensor([[R]]) for R in returns]): each element's value, detached,
    # in the dtype torch.tensor infers from the tensors and numbers.
    def fn(returns, counts):
        stacked = torch.cat([torch.tensor([[r]]) for r in returns])
        mixed = torch.tensor([returns[0], 2.0, returns.sum()]), torch.tensor([counts.sum(), 3])
        return stacked, mixed, returns.new_tensor([returns[1], 1.0]), torch.tensor([[returns.max()]], dtype=torch.float64)

    counter = CompileCounter()
    args = (torch.randn(4, requires_grad=True), torch.randint(0, 5, (3,), dtype=torch.int32))
    got, want = cdynamo.compile(fn, backend=counter, fullgraph=True)(*args), fn(*args)
    assert same(got, want) and counter.frame_count == 1
    assert [t.dtype for t in (got[1][0], got[1][1], got[3])] == [torch.float32, torch.int64, torch.float64]
    assert not got[0].requires_grad


def test_losses_made_in_forward_from_tensors_are_their_functional_calls():
    # A Kaggle head's nn.BCEWithLogitsLoss(pos_weight=pw)(logits, y), class-weighted cross entropy.
    pos_weight = torch.tensor([1.0, 2.0, 3.0])

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("class_weights", torch.tensor([0.2, 0.3, 0.5]))

        def forward(self, logits, y, labels):
            a = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)(logits, y)
            criterion = torch.nn.CrossEntropyLoss(weight=self.class_weights, label_smoothing=0.1)
            b = criterion(logits, labels)
            c = torch.nn.NLLLoss(self.class_weights, reduction="sum")(logits.log_softmax(-1), labels)
            d = torch.nn.BCELoss(weight=self.class_weights, size_average=False)(logits.sigmoid(), y)
            return a, b, c, d, criterion.reduction

    counter = CompileCounter()
    head = Head()
    args = (torch.randn(4, 3), torch.rand(4, 3), torch.tensor([0, 2, 1, 1]))
    assert same(cdynamo.compile(head, backend=counter, fullgraph=True)(*args), head(*args))
    assert counter.frame_count == 1


def test_repr_of_torchs_own_layers_is_the_text_torch_writes():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.ones(1) * 3)

        def extra_repr(self):  # reads a parameter's data: the text could change after every step
            return f"p={self.p.data.tolist()}"

    body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Dropout(0.1)).eval()
    scaled = Scaled()

    def fn(x):
        return body(x), repr(body), str(body[0])

    counter = CompileCounter()
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1
    with pytest.raises(cdynamo.exc.Unsupported):
        cdynamo.compile(lambda x: (x * scaled.p, repr(scaled)), backend=counter, fullgraph=True)(x)


def test_sorted_items_of_a_dict_of_modules_compares_the_names_only():
    heads = {"box": torch.nn.Linear(4, 2), "cls": torch.nn.Linear(4, 3)}

    def fn(x):
        outputs = [(name, head(x)) for name, head in sorted(heads.items())]
        return outputs, max(heads.items())[0], (1, heads["box"]) < (1, heads["box"], 0)

    counter = CompileCounter()
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1
