"""Whole models through the inductor backend (random weights): outputs equal to eager. Models whose
packages are missing here (torchvision, transformers) are skipped; bench/ measures them."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import cdynamo
from cdynamo.utils import counters

pytest.importorskip("cdynamo.inductor")

from inductor_models import TinyGPT  # noqa: E402


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    counters.clear()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


def run_both(model, *inputs, rtol=1e-4, atol=1e-5):
    model.eval()
    with torch.no_grad():
        expected = model(*inputs)
        compiled = cdynamo.compile(model, backend="inductor")
        actual = compiled(*inputs)
        again = compiled(*inputs)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    torch.testing.assert_close(again, expected, rtol=rtol, atol=atol)
    return compiled


def test_mlp():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    run_both(nn.Sequential(*layers), torch.randn(32, 64))


def test_layernorm_gelu_linear():
    model = nn.Sequential(nn.LayerNorm(96), nn.GELU(), nn.Linear(96, 48))
    run_both(model, torch.randn(20, 96))


def test_small_cnn_with_batchnorm():
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = F.relu(self.bn2(self.conv2(y)) + y)
            y = F.adaptive_avg_pool2d(y, 1).flatten(1)
            return self.fc(y)

    model = CNN()
    for bn in (model.bn1, model.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    run_both(model, torch.randn(2, 3, 12, 12))


def test_tiny_gpt():
    model = TinyGPT()
    run_both(model, torch.randint(0, 100, (2, 16)), atol=1e-4)


def test_views_stay_views_in_the_aten_graph():
    # Functionalization keeps view ops (index remappings in the IR): *_copy variants would run
    # as aten copies, one per view.
    from cdynamo.inductor.compile_fx import aten_graph

    def attention_like(x, w):
        q = (x @ w).view(2, 8, 4, 4).transpose(1, 2)
        return (q * 0.5).transpose(1, 2).reshape(2, 8, 16)

    with torch.no_grad():
        gm = aten_graph(torch.fx.symbolic_trace(attention_like), [torch.randn(2, 8, 16), torch.randn(16, 16)])
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not [t for t in targets if "_copy." in t and not t.startswith("aten.copy")], targets
    assert any("view" in t or "transpose" in t for t in targets)


def test_advanced_indexing_of_a_computed_arange():
    # transformers' vmapped mask functions: positions gathered from an arange built in the graph.
    def mask(cumulative):
        batch = torch.arange(1).view(1, 1, 1, 1)
        q = (torch.arange(16) + 0).view(1, 1, 16, 1)
        k = (torch.arange(16) + 0).view(1, 1, 1, 16)
        positions = (torch.arange(16) + 0).unsqueeze(0).expand(1, -1)
        causal = positions[batch, k] <= positions[batch, q]
        same = cumulative[batch, q] == cumulative[batch, k]
        return torch.where(causal & same, 0.0, float("-inf"))

    cumulative = torch.tensor([[1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4]])
    expected = mask(cumulative)
    actual = cdynamo.optimize("inductor")(mask)(cumulative)
    torch.testing.assert_close(actual, expected)


def test_torchvision_resnet18():
    torchvision = pytest.importorskip("torchvision")
    run_both(torchvision.models.resnet18(), torch.randn(1, 3, 64, 64), atol=1e-4)


def test_transformers_gpt2_and_bert():
    transformers = pytest.importorskip("transformers")
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256)).eval()
    bert = transformers.BertModel(transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                                          intermediate_size=128, vocab_size=256)).eval()
    tokens = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        compiled_gpt2 = cdynamo.compile(gpt2, backend="inductor")
        for _ in range(2):
            torch.testing.assert_close(compiled_gpt2(tokens, use_cache=False).logits, gpt2(tokens, use_cache=False).logits,
                                       rtol=1e-4, atol=1e-4)
        compiled_bert = cdynamo.compile(bert, backend="inductor")
        for _ in range(2):
            torch.testing.assert_close(compiled_bert(tokens).last_hidden_state, bert(tokens).last_hidden_state,
                                       rtol=1e-4, atol=1e-4)


def test_backend_of_torch_compile():
    """cdynamo.inductor also serves PyTorch's own compiler (side-by-side comparisons)."""
    model = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, backend=cdynamo.inductor, dynamic=False)
        torch.testing.assert_close(compiled(x), expected)


def test_graph_needing_gradients_is_compiled_forward_and_backward():
    """Training graphs: AOTAutograd's forward and backward halves, each compiled."""
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    reference = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    reference.load_state_dict(model.state_dict())
    x = torch.randn(4, 8)
    compiled = cdynamo.compile(model, backend="inductor")
    with cdynamo.config.patch(compiled_training=True):
        compiled(x).sum().backward()
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    assert counters["inductor"]["training_graphs"] == 1 and counters["inductor"]["autograd_fallback"] == 0
