"""The transformers zoo: 19 architectures built from small configs with random weights, each
compiled as a new user would (backend "eager" unless --backend): one graph or not, equal to eager.
Assumes transformers is importable (PYTHONPATH); prints one row per architecture and the count."""
import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import cdynamo  # noqa: E402

_SMALL = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
_KV = dict(_SMALL, num_key_value_heads=2)

# architecture -> (model class, config class, config fields)
ARCHITECTURES = {
    "GPT2": ("GPT2Model", "GPT2Config", dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4)),
    "Bert": ("BertModel", "BertConfig", _SMALL),
    "DistilBert": ("DistilBertModel", "DistilBertConfig", dict(vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128)),
    "Llama": ("LlamaModel", "LlamaConfig", _KV),
    "Mistral": ("MistralModel", "MistralConfig", _KV),
    "Roberta": ("RobertaModel", "RobertaConfig", _SMALL),
    "Bart": ("BartModel", "BartConfig", dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                                              encoder_attention_heads=4, decoder_attention_heads=4,
                                              encoder_ffn_dim=128, decoder_ffn_dim=128)),
    "OPT": ("OPTModel", "OPTConfig", dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           ffn_dim=128, word_embed_proj_dim=64)),
    "GPTNeo": ("GPTNeoModel", "GPTNeoConfig", dict(vocab_size=1000, hidden_size=64, num_layers=2, num_heads=4,
                                                    attention_types=[[["global", "local"], 1]])),
    "Falcon": ("FalconModel", "FalconConfig", dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)),
    "Phi": ("PhiModel", "PhiConfig", _SMALL),
    "Qwen2": ("Qwen2Model", "Qwen2Config", _KV),
    "Gemma": ("GemmaModel", "GemmaConfig", dict(_KV, head_dim=16)),
    "Albert": ("AlbertModel", "AlbertConfig", dict(_SMALL, embedding_size=32)),
    "Electra": ("ElectraModel", "ElectraConfig", dict(_SMALL, embedding_size=32)),
    "DebertaV2": ("DebertaV2Model", "DebertaV2Config", _SMALL),
    "XLMRoberta": ("XLMRobertaModel", "XLMRobertaConfig", _SMALL),
    "MPNet": ("MPNetModel", "MPNetConfig", _SMALL),
    "T5": ("T5EncoderModel", "T5Config", dict(vocab_size=1000, d_model=64, num_layers=2, num_heads=4, d_ff=128, d_kv=16)),
}


def check(name, backend):
    import transformers

    model_class, config_class, fields = ARCHITECTURES[name]
    config = getattr(transformers, config_class)(**fields)
    config.use_cache = False
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    ids = torch.randint(0, 1000, (2, 16))
    cdynamo.reset()
    with torch.no_grad():
        expected = model(ids)[0]
        out = cdynamo.explain(model)(ids) if backend == "eager" else None
        if out is None:
            compiled = cdynamo.optimize(backend)(model)(ids)[0]
            return 0, 0, torch.allclose(compiled, expected, atol=1e-5), ""
    reason = str(out.break_reasons[0]) if out.break_reasons else ""
    return out.graph_count, out.graph_break_count, torch.allclose(out.out[0], expected, atol=1e-5), reason


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="eager", help="eager (counts graphs and breaks) or another cdynamo backend")
    parser.add_argument("--only", default="", help="comma-separated architectures")
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    import transformers

    names = [n for n in ARCHITECTURES if not options.only or n in options.only.split(",")]
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, backend {options.backend}")
    print("| architecture | graphs | breaks | equal to eager | first break |\n|---|---|---|---|---|")
    good = 0
    for name in names:
        try:
            graphs, breaks, equal, reason = check(name, options.backend)
        except Exception as error:  # noqa: BLE001 - a row of the table, not the end of the run
            graphs, breaks, equal, reason = "-", "-", False, f"{type(error).__name__}: {error}"
        good += equal and (options.backend != "eager" or (graphs == 1 and breaks == 0))
        print(f"| {name} | {graphs} | {breaks} | {equal} | {reason[:120]} |", flush=True)
    print(f"\n{good} / {len(names)} " + ("in one graph and equal to eager" if options.backend == "eager" else "equal to eager"))


if __name__ == "__main__":
    main()
