"""Operations whose output size depends on the data (a boolean mask, nonzero, unique, bincount,
masked_select, repeat_interleave): captured in the graph with an unbacked size, as torch._dynamo
does, instead of breaking it; the inductor runs them eagerly between compiled segments. CTC loss,
whose fake needs the data for an intermediate size only, is captured with its result's sizes."""
import pytest
import torch

import cdynamo
from cdynamo import config
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters


def detection_loss_style(y, labels):
    positive = labels > 0
    picked = y[positive]
    cleared = y.clone()
    cleared[~positive] = 0.0
    index = torch.nonzero(positive).squeeze(1)
    values, counts = torch.unique(labels, return_counts=True)
    return (picked.sum(0) * 2, (picked * 3).relu(), cleared, index, values, counts,
            torch.masked_select(y, y > 0).sum())


def graph_inputs():
    torch.manual_seed(0)
    y = torch.randn(6, 4)
    return y, [torch.randint(0, 3, (6,)) for _ in range(4)]


def assert_same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b)


def assert_equal_to_eager_for_every_mask(compiled, device="cpu"):
    y, labels = graph_inputs()
    y = y.to(device)
    for mask in labels:
        mask = mask.to(device)
        assert_same(compiled(y, mask), detection_loss_style(y, mask))


def test_one_graph_for_every_mask_with_the_eager_backend():
    counter = CompileCounter()
    compiled = cdynamo.compile(detection_loss_style, backend=counter, fullgraph=True)
    assert_equal_to_eager_for_every_mask(compiled)
    assert counter.frame_count == 1  # the number of positives changes, the graph does not
    assert not counters["graph_break"]


def test_aot_autograd_retraces_the_graph_with_its_unbacked_sizes():
    compiled = cdynamo.compile(detection_loss_style, backend="aot_eager", fullgraph=True)
    assert_equal_to_eager_for_every_mask(compiled)
    assert counters["stats"]["frames_compiled"] == 1


def test_the_inductor_compiles_the_segments_around_the_data_dependent_ops():
    compiled = cdynamo.compile(detection_loss_style, backend="inductor", fullgraph=True)
    assert_equal_to_eager_for_every_mask(compiled)
    assert counters["stats"]["frames_compiled"] == 1
    assert counters["inductor"]["graphs split at data-dependent sizes"] == 1
    assert not counters["inductor"]["eager_fallback"]
    # The segment after y[positive] takes its row count as a size: compiled once for all counts.
    assert counters["dynamic"]["symbolic programs"] >= 1
    assert not any(key.startswith("compiled per sizes") for key in counters["dynamic"])


def test_message_passing_with_bincount_and_repeat_interleave():
    linear = torch.nn.Linear(10, 5)

    def message_passing(x, edges, batch_sizes):
        source, target = edges
        messages = linear(torch.cat([x[source], x[target]], dim=-1))
        summed = torch.zeros_like(x).index_add_(0, target, messages)
        degree = torch.bincount(target, minlength=x.size(0)).clamp(min=1).type_as(x)
        h = summed / degree[:, None]
        batch = torch.repeat_interleave(torch.arange(len(batch_sizes)), batch_sizes)
        return h, torch.zeros(len(batch_sizes), x.size(1)).index_add_(0, batch, h)

    x = torch.randn(5, 5)
    edges = torch.tensor([[0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 0, 2]])
    for backend in ("eager", "inductor"):
        cdynamo.reset()
        compiled = cdynamo.compile(message_passing, backend=backend, fullgraph=True)
        with torch.no_grad():
            for sizes in ([2, 3], [1, 4], [5, 0]):
                assert_same(compiled(x, edges, torch.tensor(sizes)), message_passing(x, edges, torch.tensor(sizes)))


def test_a_size_the_graph_assumed_is_checked_per_call():
    # bincount's length is max(index) + 1 or minlength: the division needs it to be 5, which the
    # compiled segment after it assumes; a longer count raises eager's error, never a wrong result.
    def normalise(x, index):
        return x / torch.bincount(index, minlength=x.size(0)).clamp(min=1)[:, None]

    x = torch.randn(5, 3)
    compiled = cdynamo.compile(normalise, backend="inductor")
    torch.testing.assert_close(compiled(x, torch.tensor([0, 1, 1, 4])), normalise(x, torch.tensor([0, 1, 1, 4])))
    with pytest.raises(RuntimeError, match="must match the size"):
        normalise(x, torch.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="must match the size"):
        compiled(x, torch.tensor([0, 5]))


def test_gradients_through_a_boolean_mask_match_eager():
    weight = torch.randn(4, 4, requires_grad=True)

    def masked_loss(x, labels):
        y = x @ weight
        return (y[labels > 0] ** 2).mean() + y.sum()

    compiled = cdynamo.compile(masked_loss, backend="inductor", fullgraph=True)
    x = torch.randn(6, 4)
    for labels in (torch.tensor([1, 0, 1, 1, 0, 0]), torch.tensor([0, 0, 0, 1, 1, 1]), torch.tensor([1, 1, 1, 1, 1, 0])):
        loss = compiled(x, labels)
        (got,) = torch.autograd.grad(loss, weight)
        want_loss = masked_loss(x, labels)
        (want,) = torch.autograd.grad(want_loss, weight)
        torch.testing.assert_close(loss, want_loss)
        torch.testing.assert_close(got, want)


def test_branching_on_a_data_dependent_size_breaks_the_graph_there():
    def keep_if_any(x):
        index = torch.nonzero(x > 0).squeeze(1)
        if index.numel() > 0:
            return x[index] * 2
        return x - 1

    counter = CompileCounter()
    compiled = cdynamo.compile(keep_if_any, backend=counter)
    for x in (torch.tensor([1.0, -2.0, 3.0]), torch.tensor([-1.0, -2.0])):
        torch.testing.assert_close(compiled(x), keep_if_any(x))
    assert any("data" in reason for reason in counters["graph_break"])
    with pytest.raises(cdynamo.exc.Unsupported):
        cdynamo.reset()
        cdynamo.compile(keep_if_any, backend="eager", fullgraph=True)(torch.tensor([1.0]))


def test_item_kept_in_the_graph_runs_eagerly_between_inductor_segments():
    def scale_by_mean(x):
        return x * x.mean().item() + 1

    compiled = cdynamo.compile(scale_by_mean, backend="inductor")
    with config.patch(capture_scalar_outputs=True):
        for _ in range(3):
            x = torch.randn(4)
            torch.testing.assert_close(compiled(x), scale_by_mean(x))
    assert counters["stats"]["frames_compiled"] == 1
    assert not counters["graph_break"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_inductor_segments_on_cuda():
    compiled = cdynamo.compile(detection_loss_style, backend="inductor", fullgraph=True)
    assert_equal_to_eager_for_every_mask(compiled, device="cuda")
    assert counters["inductor"]["graphs split at data-dependent sizes"] == 1
    assert counters["inductor_targets"]["triton (cuda)"] >= 1


def test_a_loop_over_nonzero_rows_breaks_the_graph_at_nonzero_as_before():
    # A mixture of experts visits the experts nonzero() found: the loop needs their number as
    # a Python int, so the frame compiles with nonzero breaking the graph (never a wrong count).
    def experts(x, routes):
        out = torch.zeros_like(x, dtype=torch.float64)
        with torch.no_grad():
            hit = torch.greater(routes, 0).nonzero()
        for index in hit:
            out += x[index[0]]
        return out * 2

    compiled = cdynamo.compile(experts, backend="eager")
    x = torch.randn(4, 3, dtype=torch.float64)
    for routes in (torch.tensor([1, 0, 2, 3]), torch.tensor([0, 0, 5, 0])):
        torch.testing.assert_close(compiled(x, routes), experts(x, routes))
    assert not counters["stats"]["frames_fallback"]
    assert any("nonzero" in reason for reason in counters["graph_break"])
    with pytest.raises(cdynamo.exc.Unsupported, match="data"):
        cdynamo.reset()
        cdynamo.compile(experts, backend="eager", fullgraph=True)(x, torch.tensor([1, 0, 2, 3]))


def test_slices_with_tensor_bounds_made_before_a_resume_stay_out_of_graphs():
    def paste(mask, box, height, width):  # torchvision's paste_mask_in_image: bounds are 0-d tensors
        w = max(int(box[2] - box[0] + 1), 1)
        h = max(int(box[3] - box[1] + 1), 1)
        mask = torch.nn.functional.interpolate(mask.expand((1, 1, -1, -1)), size=(h, w), mode="bilinear")[0][0]
        pasted = torch.zeros((height, width), dtype=mask.dtype)
        x_0, x_1 = max(box[0], 0), min(box[2] + 1, width)
        y_0, y_1 = max(box[1], 0), min(box[3] + 1, height)
        pasted[y_0:y_1, x_0:x_1] = mask[(y_0 - box[1]):(y_1 - box[1]), (x_0 - box[0]):(x_1 - box[0])]
        return pasted

    mask, box = torch.rand(28, 28), torch.tensor([3, 2, 20, 15])
    with config.patch(suppress_errors=False):  # the graph held the slices' tensors: NameError
        got = cdynamo.optimize("eager")(paste)(mask, box, 32, 32)
    assert torch.equal(got, paste(mask, box, 32, 32))


def test_a_size_only_the_data_decides_is_never_an_exception_the_programs_try_catches():
    def f(x):
        keep = x[x > 0]
        try:
            count = int(keep.numel())  # int() of an unbacked size: that size, still in the graph
        except Exception:
            count = -1  # never taken in eager
        return keep.sum() + count

    x = torch.tensor([1.0, -2.0, 3.0, -4.0, 5.0])
    out = cdynamo.explain(f)(x)
    assert torch.equal(out.out, f(x)) and out.out.item() == 12.0
    assert out.graph_break_count == 0


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_slices_bounded_by_tensor_values_with_fullgraph(backend):
    # Aria's grouped experts: tokens[start:end] with start and end read from a cumsum; with
    # fullgraph=True the bounds are numbers the graph reads (unbacked), as torch.compile's are.
    def grouped(tokens, counts, weights):
        offsets = torch.cat((torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)))
        out = torch.zeros(tokens.shape[0], weights.shape[2])
        for expert in range(weights.shape[0]):
            start, end = offsets[expert], offsets[expert + 1]
            out[start:end] = tokens[start:end] @ weights[expert]
        return out

    tokens, weights = torch.randn(7, 4), torch.randn(3, 4, 5)
    compiled = cdynamo.compile(grouped, backend=backend, fullgraph=True)
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 13):
        # torch before 2.13 gives each slice of data-dependent bounds a size of its own, and
        # assigning one to the other asks whether the two are equal (2.13 assumes they are and
        # checks it when the graph runs): one graph cannot hold it there, and the error says so.
        with pytest.raises(cdynamo.exc.Unsupported, match="item assignment depends on the values inside a tensor"):
            compiled(tokens, torch.tensor([3, 0, 4]), weights)
        return
    for counts in (torch.tensor([3, 0, 4]), torch.tensor([1, 5, 1])):
        assert same(compiled(tokens, counts, weights), grouped(tokens, counts, weights))


def test_int_of_a_number_read_from_a_tensor_keeps_it_symbolic():
    # TAPAS: new_shape = [int(x) for x in t.tolist()]; int() of an unbacked number is the number.
    def index_map(segments, batch):
        num_segments = torch.as_tensor(segments)
        indices = torch.arange(0, segments)
        shape = torch.cat([torch.ones_like(batch), num_segments.unsqueeze(0)])
        return indices.view([int(n) for n in shape.tolist()]) * 2

    num_segments, batch = 5, torch.tensor([2])
    counter = CompileCounter()
    assert same(cdynamo.compile(index_map, backend=counter, fullgraph=True)(num_segments, batch), index_map(num_segments, batch))
    assert counter.frame_count == 1


def test_bool_of_a_tensor_is_an_unbacked_bool_under_fullgraph():
    # bool(t) reads t.item(): kept in the graph (a bool tensor's item too); a branch on it still
    # needs its value, and more than one element is eager's error.
    def fn(x):
        return bool((x > -100).all()), bool(x.sum()), (x > 0).any().item(), x * 2

    def branches(x):
        if bool((x > 0).all()):
            return x + 1
        return x - 1

    x = torch.tensor([0.5, -1.0, 2.0])
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)) and counter.frame_count == 1
    for value in (x, x.abs()):
        assert same(cdynamo.compile(branches, backend="eager")(value), branches(value))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        cdynamo.compile(lambda t: bool(t), backend="eager", fullgraph=True)(x)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_in_on_a_tensor_under_fullgraph(backend):
    # `item in t` is bool((item == t).any()): unbacked bools in the graph, `not in` negated there.
    def fn(x):
        table = torch.tensor([0.5, 1.0, 2.0])
        return 1.0 in table, 3.0 in table, 2 not in table, x[0] in x, x * 2

    x = torch.randn(3)
    assert same(cdynamo.compile(fn, backend=backend, fullgraph=True)(x), fn(x))
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        cdynamo.compile(lambda t: "a" in t, backend="eager", fullgraph=True)(x)


def test_min_and_max_with_a_size_only_the_data_gives():
    # torchvision's _topk_min: min(k, y.size(0)) after a boolean mask is torch.sym_min in the graph.
    def fn(x, k):
        y = x[x > 0]
        return y.topk(min(k, y.size(0))).values, max(y.shape[0], 2), min([y.shape[0], 100, k + 40])

    x = torch.randn(50)
    counter = CompileCounter()
    compiled = cdynamo.compile(fn, backend=counter, fullgraph=True)
    assert same(compiled(x, 10), fn(x, 10)) and counter.frame_count == 1
    assert same(compiled(x, 60), fn(x, 60))  # a new k: automatic dynamic makes it a symbol


class CTCHead(torch.nn.Module):
    """An OCR/ASR head: CTC loss (its kernel sizes a table by the longest target, a value of
    target_lengths; its result is one number per sample or their reduction) beside its logits."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(5, 6)
        self.ctc = torch.nn.CTCLoss(zero_infinity=True)

    def forward(self, x, targets, input_lengths, target_lengths):
        log_probs = self.proj(x).log_softmax(-1)
        per_sample = torch.nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none")
        return self.ctc(log_probs, targets, input_lengths, target_lengths), per_sample, log_probs.argmax(-1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_ctc_loss_is_one_graph_with_eagers_losses_and_gradients(backend):
    torch.manual_seed(0)
    model, reference = CTCHead(), CTCHead()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(12, 3, 5)
    targets, input_lengths, target_lengths = torch.randint(1, 6, (3, 4)), torch.full((3,), 12), torch.tensor([4, 2, 3])
    counter = CompileCounter()
    compiled = cdynamo.compile(model, backend=counter if backend == "eager" else backend, fullgraph=True)
    got, want = compiled(x, targets, input_lengths, target_lengths), reference(x, targets, input_lengths, target_lengths)
    assert all(same(a, b) for a, b in zip(got, want))
    (got[0] + got[1].sum()).backward()
    (want[0] + want[1].sum()).backward()
    assert same(model.proj.weight.grad, reference.proj.weight.grad)
    if backend == "eager":
        assert counter.frame_count == 1 and counter.op_count >= 4
    with torch.no_grad():  # inference: the inductor compiles around the losses, run eagerly
        assert all(same(a, b) for a, b in zip(compiled(x, targets, input_lengths, target_lengths),
                                                reference(x, targets, input_lengths, target_lengths)))
