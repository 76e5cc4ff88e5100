"""Symbolic training against eager on transformers models (small configs, random weights, no
dropout): training steps at 4 sequence lengths through cdynamo's inductor (automatic dynamic: a
static compile, then one symbolic program), the loss and every gradient compared with eager's.
Prints per model the worst error relative to the largest value, the dynamic-shape counters and
the frames compiled. Usage: PYTHONPATH=python python bench/symbolic_training_check.py [gpt2,bert,...]"""
import copy
import sys

import torch
import transformers

import cdynamo
from cdynamo.utils import counters


def models():
    T = transformers
    yield "gpt2", T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    yield "bert", T.BertModel(T.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=500, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    yield "llama", T.LlamaForCausalLM(T.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128, vocab_size=500))
    yield "distilbert", T.DistilBertModel(T.DistilBertConfig(n_layers=2, dim=64, n_heads=4, hidden_dim=128, vocab_size=500, dropout=0.0, attention_dropout=0.0))
    yield "roberta", T.RobertaModel(T.RobertaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=500, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    yield "opt", T.OPTForCausalLM(T.OPTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, ffn_dim=128, vocab_size=500, word_embed_proj_dim=64, dropout=0.0, attention_dropout=0.0, layerdrop=0.0))
    yield "gpt_neo", T.GPTNeoForCausalLM(T.GPTNeoConfig(num_layers=2, hidden_size=64, num_heads=4, vocab_size=500, attention_types=[[["global", "local"], 1]], window_size=16, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0))
    yield "mistral", T.MistralForCausalLM(T.MistralConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128, vocab_size=500))
    yield "t5enc", T.T5EncoderModel(T.T5Config(num_layers=2, d_model=64, num_heads=4, d_kv=16, d_ff=128, vocab_size=500, dropout_rate=0.0))

def step(model, ids):
    """The loss (the first output against fixed random weights) and every parameter's gradient."""
    for p in model.parameters():
        p.grad = None
    out = model(input_ids=ids)
    first = out[0] if isinstance(out, tuple) else next(iter(out.values()))
    weight = torch.randn(first.shape, generator=torch.Generator().manual_seed(first.shape[1]))
    loss = (first.float() * weight).mean()
    loss.backward()
    return [loss.detach()] + [p.grad for p in model.parameters()]

def main():
    torch.manual_seed(0)
    only = sys.argv[1].split(",") if len(sys.argv) > 1 else None
    for name, model in models():
        if only and name not in only:
            continue
        counters.clear()
        cdynamo.reset()
        try:
            model.train()
            eager = copy.deepcopy(model)
            compiled = cdynamo.compile(model, backend="inductor")
            worst = 0.0
            for length in (7, 12, 19, 26):
                ids = torch.randint(0, 500, (2, length))
                expected, got = step(eager, ids), step(compiled, ids)
                for a, b in zip(expected, got):
                    if a is None or b is None:
                        assert a is None and b is None, "a gradient is None in one run only"
                        continue
                    worst = max(worst, ((a - b).abs().max() / (a.abs().max() + 1e-6)).item())
            print(f"{name}: worst relative error {worst:.2e}; dynamic {dict(counters['dynamic'])}; "
                  f"frames compiled {counters['stats']['frames_compiled']}, run eagerly "
                  f"{counters['stats'].get('frames_fallback', 0)}, graph breaks {sum(counters['graph_break'].values())}",
                  flush=True)
        except Exception as error:  # noqa: BLE001 - one row per model
            print(f"{name}: ERROR {type(error).__name__}: {str(error)[:300]}", flush=True)


if __name__ == "__main__":
    main()
