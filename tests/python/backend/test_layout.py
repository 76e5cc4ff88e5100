"""Layouts: CPU convolutions run channels-last where it pays and the values between them stay
channels-last; kernels writing such buffers nest their loops in memory order (and vectorize); what the graph
returns keeps eager's strides."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import cdynamo
from cdynamo.inductor import compile_fx, layout
from cpp_support import C, L, T, kernel_cache_dir, op, pointwise_program, run  # noqa: F401

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")
f32 = torch.float32


class ConvBlock(nn.Module):
    def __init__(self, returns_feature_map=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.down = nn.Conv2d(3, 16, 1)
        self.fc = nn.Linear(16, 5)
        self.returns_feature_map = returns_feature_map
        for buffer_name in ("running_mean", "running_var"):
            getattr(self.bn1, buffer_name).uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.max_pool2d(F.relu(self.conv2(y) + self.down(x)), 2)
        if self.returns_feature_map:
            return y
        return self.fc(y.mean((2, 3)))


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


def test_conversions_only_where_a_value_is_not_channels_last_yet():
    model = ConvBlock().eval()
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        gm = compile_fx.aten_graph(torch.fx.symbolic_trace(model), [x])
        assert layout.prefer_channels_last(gm)
    clones = [n for n in gm.graph.nodes if n.target is torch.ops.aten.clone.default]
    # The graph input, once for both convolutions reading it (conv1 and down); conv2 reads
    # conv1's result, which is channels-last already; weights stay as they are.
    assert len(clones) == 1
    convolutions = [n for n in gm.graph.nodes if "convolution" in str(n.target)]
    assert len(convolutions) == 3
    for n in convolutions:
        assert n.meta["val"].is_contiguous(memory_format=torch.channels_last)
    scheduled = T.schedule(gm)
    assert "strides [2304, 1, 192, 16]" in scheduled  # [2, 16, 12, 12] channels-last buffers


def test_frozen_constants_also_convert_weights_once():
    model = ConvBlock().eval()
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad(), cdynamo.config.patch(freeze_constants=True):
        gm = compile_fx.aten_graph(torch.fx.symbolic_trace(model), [x])
        assert layout.prefer_channels_last(gm)
        clones = [n for n in gm.graph.nodes if n.target is torch.ops.aten.clone.default]
        assert len(clones) == 1 + 3  # the input and the three weights
        assert sum(line.endswith(" cached") for line in T.schedule(gm, {"cache_constant_kernels": True}).splitlines()) == 3
        expected = model(x)
        torch.testing.assert_close(cdynamo.optimize("inductor")(model)(x), expected, rtol=1e-4, atol=1e-5)


def test_graphs_without_convolutions_are_left_alone():
    gm = compile_fx.aten_graph(torch.fx.symbolic_trace(nn.Sequential(nn.Linear(4, 4), nn.ReLU())), [torch.randn(3, 4)])
    before = gm.code
    assert not layout.prefer_channels_last(gm)
    assert gm.code == before


@pytest.mark.parametrize("returns_feature_map", [False, True])
@pytest.mark.parametrize("channels_last_input", [False, True])
@pytest.mark.parametrize("enabled", [True, False])
def test_results_and_strides_equal_eager(returns_feature_map, channels_last_input, enabled):
    model = ConvBlock(returns_feature_map).eval()
    x = torch.randn(2, 3, 12, 12)
    if channels_last_input:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad(), cdynamo.config.patch(channels_last_convolutions=enabled):
        expected = model(x)
        actual = cdynamo.optimize("inductor")(model)(x)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    assert actual.stride() == expected.stride()


@pytest.mark.parametrize(
    "conv",
    [
        dict(in_channels=8, out_channels=16, kernel_size=3, stride=2, padding=1),
        dict(in_channels=8, out_channels=8, kernel_size=3, padding=2, dilation=2, groups=8, bias=False),
        dict(in_channels=8, out_channels=12, kernel_size=(1, 3), padding=(0, 1), groups=4),
        dict(in_channels=8, out_channels=4, kernel_size=5, padding=2, padding_mode="zeros"),
    ],
    ids=["strided", "depthwise-dilated", "grouped-rect", "5x5"],
)
def test_convolution_variants(conv):
    model = nn.Sequential(nn.Conv2d(**conv), nn.ReLU(), nn.Conv2d(conv["out_channels"], 4, 1)).eval()
    x = torch.randn(2, 8, 11, 11)
    with torch.no_grad():
        expected = model(x)
        gm = compile_fx.aten_graph(torch.fx.symbolic_trace(model), [x])
        layout.prefer_channels_last(gm)
        targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
        assert "mkldnn._convolution_pointwise.default" in targets  # oneDNN's op: no per-call weight copy
        actual = cdynamo.optimize("inductor")(model)(x)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    assert actual.stride() == expected.stride()


def test_bfloat16_convolutions():
    model = ConvBlock().eval().to(torch.bfloat16)
    x = torch.randn(2, 3, 12, 12, dtype=torch.bfloat16)
    with torch.no_grad():
        expected = model(x)
        actual = cdynamo.optimize("inductor")(model)(x)
    torch.testing.assert_close(actual, expected, rtol=2e-2, atol=2e-2)


def test_channels_last_kernel_walks_memory_order_and_vectorizes():
    sizes, strides = (2, 16, 6, 6), (576, 1, 96, 16)
    x = torch.randn(sizes).contiguous(memory_format=torch.channels_last)
    index = " + ".join(f"i{k}*{s}" for k, s in enumerate(strides))
    body = op("Add", f32, op("Mul", f32, L("x", index), C(2.0)), C(1.0))
    prog = pointwise_program([("x", x)], f32, body, sizes, out_strides=strides)
    source = T.generate_cpp(prog)["kernel0"]
    assert "vectorized along the innermost loop" in source
    assert "// loops: i1<1152" in source  # N, H, W merged outside, C innermost: one contiguous loop
    (out,) = run(prog, x)
    assert out.stride() == strides
    torch.testing.assert_close(out, x * 2 + 1)


def test_in_place_view_ops_keep_their_producers_shapes():
    # A Linear on a 1-D input decomposes to unsqueeze -> mm -> squeeze_: re-propagating the
    # fakes after the layout change must not squeeze mm's own value.
    conv, lin = nn.Conv2d(3, 4, 3), nn.Linear(8, 8)
    fn = lambda img, v: (conv(img), lin(v))  # noqa: E731
    img, v = torch.randn(1, 3, 6, 6), torch.randn(8)
    with torch.no_grad():
        expected, got = fn(img, v), cdynamo.optimize("inductor")(fn)(img, v)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride()


@pytest.mark.parametrize("flatten", [
    lambda y: y.view(y.size(0), -1),           # the classic LeNet/VGG classifier input
    lambda y: torch.flatten(y, 1),
    lambda y: y.reshape(-1, y.shape[1] * y.shape[2] * y.shape[3]),
])
def test_a_view_of_a_channels_last_value_reads_a_contiguous_copy(flatten):
    from cdynamo.utils import counters

    torch.manual_seed(0)
    conv, fc = nn.Conv2d(3, 4, 3), nn.Linear(4 * 6 * 6, 2)
    fn = lambda x: fc(flatten(F.relu(conv(x))))  # noqa: E731
    x = torch.randn(2, 3, 8, 8)
    fallbacks, graphs = counters["inductor"]["eager_fallback"], counters["inductor"]["graphs"]
    with torch.no_grad():
        expected = fn(x)
        got = cdynamo.optimize("inductor")(fn)(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert counters["inductor"]["eager_fallback"] == fallbacks and counters["inductor"]["graphs"] == graphs + 1


class ConvAndBackward(nn.Module):
    """A convolution and its backward as one graph, as a joint training graph holds them."""

    def forward(self, x, weight, grad):
        y = torch.ops.aten.convolution.default(x, weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        grads = torch.ops.aten.convolution_backward.default(grad, x, weight, [0], [1, 1], [1, 1], [1, 1], False,
                                                            [0, 0], 1, [True, True, False])
        return y, grads[0], grads[1]


@pytest.mark.parametrize("freeze", [False, True])
def test_a_convolution_and_its_backward_share_one_channels_last_copy(freeze, monkeypatch):
    # The backward reads the channels-last copy the forward made (a joint graph's partition then
    # saves or recomputes that copy); weights join in where they are relaid (CUDA, or frozen).
    # The CPU relays no training graph (below): the mechanics, which CUDA's training graphs use,
    # are asked for here.
    monkeypatch.setattr(layout, "_relayout_pays", lambda convs: True)
    inputs = [torch.randn(2, 3, 10, 10), torch.randn(4, 3, 3, 3), torch.randn(2, 4, 10, 10)]
    with torch.no_grad(), cdynamo.config.patch(freeze_constants=freeze):
        gm = compile_fx.aten_graph(torch.fx.symbolic_trace(ConvAndBackward()), inputs)
        assert layout.prefer_channels_last(gm)
        expected = ConvAndBackward()(*inputs)
    forward = next(n for n in gm.graph.nodes if "convolution" in str(n.target) and "backward" not in str(n.target))
    backward = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.convolution_backward.default)
    clones = [n for n in gm.graph.nodes if n.target is torch.ops.aten.clone.default and n.args[0].op == "placeholder"]
    assert backward.args[1] is forward.args[0] and forward.args[0] in clones
    assert backward.args[0] in clones  # the incoming gradient, contiguous here
    assert (backward.args[2] is forward.args[1] and forward.args[1] in clones) == freeze
    for actual, wanted in zip(gm(*inputs), expected):
        assert actual.stride() == wanted.stride()
        torch.testing.assert_close(actual, wanted, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["training", "small activations", "large activations", "frozen"])
def test_the_cpu_relays_only_where_activations_outweigh_weight_reorders(case):
    # A CPU convolution on channels-last input reorders its contiguous weight on every call (and,
    # in training, the weight's gradient back): the pass relays inference graphs whose
    # activations outweigh their weights, frozen ones, and no training graph.
    model = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1))
    side = 4 if case == "small activations" else 32
    x = torch.randn(2, 64, side, side)
    graph_module = ConvAndBackward() if case == "training" else model.eval()
    inputs = [x, torch.randn(64, 64, 3, 3), torch.randn(2, 64, side, side)] if case == "training" else [x]
    with torch.no_grad(), cdynamo.config.patch(freeze_constants=case == "frozen"):
        gm = compile_fx.aten_graph(torch.fx.symbolic_trace(graph_module), inputs)
        relaid = layout.prefer_channels_last(gm)
        expected = graph_module(*inputs)
        actual = cdynamo.optimize("inductor")(graph_module)(*inputs)
    assert relaid == (case in ("large activations", "frozen"))
    for got, wanted in zip(actual if isinstance(actual, tuple) else [actual], expected if isinstance(expected, tuple) else [expected]):
        torch.testing.assert_close(got, wanted, rtol=1e-4, atol=1e-4)
        assert got.stride() == wanted.stride()
