"""HuggingFace transformers models (random weights from a config) in one graph each, equal to
eager, with the KV cache object rebuilt. Skipped where transformers is not installed."""
import pytest
import torch

import cdynamo
from cdynamo.utils import counters

transformers = pytest.importorskip("transformers")


def _models():
    return {
        "gpt2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2)),
        "bert": lambda: transformers.BertModel(transformers.BertConfig(num_hidden_layers=2)),
        "distilbert": lambda: transformers.DistilBertModel(transformers.DistilBertConfig(n_layers=2)),
    }


@pytest.mark.parametrize("name", ["gpt2", "bert", "distilbert"])
def test_model_is_one_graph_and_equal_to_eager(name):
    torch.manual_seed(0)
    model = _models()[name]().eval()
    ids = torch.randint(0, 1000, (1, 32))
    with torch.no_grad():
        expected = model(ids)
        compiled = cdynamo.compile(model, backend="eager", fullgraph=True)
        got = compiled(ids)
        again = compiled(ids)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert not counters["recompiles"]
    assert type(got) is type(expected) and list(got.keys()) == list(expected.keys())
    assert torch.allclose(got[0], expected[0], atol=1e-5) and torch.allclose(again[0], expected[0], atol=1e-5)
    if name == "gpt2":
        cache, expected_cache = got.past_key_values, expected.past_key_values
        assert type(cache) is type(expected_cache) and len(cache.layers) == len(expected_cache.layers)
        for layer, expected_layer in zip(cache.layers, expected_cache.layers):
            assert torch.equal(layer.keys, expected_layer.keys) and torch.equal(layer.values, expected_layer.values)


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_model_over_sequence_lengths_compiles_twice(name):
    torch.manual_seed(0)
    model = _models()[name]().eval()
    compiled = cdynamo.compile(model, backend="eager", fullgraph=True)
    key = "logits" if name == "gpt2" else "last_hidden_state"
    with torch.no_grad():
        for length in (16, 21, 13, 40):  # automatic dynamic: static first, then one dynamic compile
            ids = torch.randint(0, 1000, (2, length))
            assert torch.allclose(compiled(ids)[key], model(ids)[key], atol=1e-4)
    assert counters["stats"]["unique_graphs"] == 2 and not counters["graph_break"]
