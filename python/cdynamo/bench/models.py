"""The built-in models: the microbenchmarks of anchors.md, then torchvision, timm and transformers
models built from configs with random weights (no downloads). Importing registers them all."""
import torch
from torch import nn

from .registry import register_model

# Inputs and weights are seeded, so every backend of a run sees the same numbers.
SEED = 0


def _first_rows(inputs):
    """Tiny variant of a batch: its first row, so the kernels cost almost nothing."""
    return tuple(tensor[:1].clone() for tensor in inputs)


def _without_dropout(model):
    """Dropout off everywhere (modules, timm's drop_rate / drop_path attributes), so a training
    step is deterministic and its result comparable with the fp64 reference."""
    for module in model.modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            module.p = 0.0
        for attribute in ("drop_rate", "drop_prob", "drop_path_rate"):
            if isinstance(getattr(module, attribute, None), float):
                setattr(module, attribute, 0.0)
    return model


# ---------------------------------------------------------------- microbenchmarks (anchors.md)


class PointwiseChain(nn.Module):
    """sin+cos -> relu -> *2 + exp(-x): memory-bound, all of it fusable into one kernel."""

    def forward(self, x):
        return torch.relu(torch.sin(x) + torch.cos(x)) * 2 + torch.exp(-x)


@register_model(
    "pointwise_chain",
    "micro",
    quick=True,
    tiny_inputs=lambda inputs: (inputs[0].flatten()[:4].clone(),),
    description="sin+cos→relu→*2+exp(-x), 16M float32 (small: 64K)",
)
def build_pointwise_chain(small=False):
    torch.manual_seed(SEED)
    rows = 16 if small else 4096
    return PointwiseChain(), (torch.randn(rows, 4096),)


# The microbenchmarks are modules with a forward of their own rather than nn.Sequential: the
# anchors time the block, not whether a compiler traces torch's own Sequential.forward.


class LayerNormGeluLinear(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return self.linear(nn.functional.gelu(self.norm(x)))


class MLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


@register_model(
    "layernorm_gelu_linear",
    "micro",
    quick=True,
    tiny_inputs=_first_rows,
    description="LayerNorm→GELU→Linear, 512×1024 (small: 16×64)",
)
def build_layernorm_gelu_linear(small=False):
    torch.manual_seed(SEED)
    rows, width = (16, 64) if small else (512, 1024)
    return LayerNormGeluLinear(width), (torch.randn(rows, width),)


@register_model(
    "mlp",
    "micro",
    quick=True,
    tiny_inputs=_first_rows,
    description="4×(Linear 1024 + ReLU), batch 256 (small: 4×(Linear 64 + ReLU), batch 8)",
)
def build_mlp(small=False):
    torch.manual_seed(SEED)
    batch, width = (8, 64) if small else (256, 1024)
    return MLP(width, depth=4), (torch.randn(batch, width),)


# ---------------------------------------------------------------- torchvision


def _images(batch, size=224):
    return (torch.randn(batch, 3, size, size),)


@register_model(
    "tv_resnet18", "torchvision", requires=("torchvision",), quick=True,
    description="torchvision ResNet-18, batch 8, 224² (small: batch 2, 64²)",
)
def build_tv_resnet18(small=False):
    import torchvision

    torch.manual_seed(SEED)
    model = torchvision.models.resnet18(weights=None)
    return _without_dropout(model), _images(2, 64) if small else _images(8)


@register_model(
    "tv_mobilenet_v3", "torchvision", requires=("torchvision",),
    description="torchvision MobileNetV3-Large, batch 8, 224² (small: batch 2, 64²)",
)
def build_tv_mobilenet_v3(small=False):
    import torchvision

    torch.manual_seed(SEED)
    model = torchvision.models.mobilenet_v3_large(weights=None)
    return _without_dropout(model), _images(2, 64) if small else _images(8)


# ---------------------------------------------------------------- timm


def _timm_model(name, **kwargs):
    import timm

    torch.manual_seed(SEED)
    return _without_dropout(timm.create_model(name, pretrained=False, **kwargs))


@register_model(
    "timm_resnet50", "timm", requires=("timm",),
    description="timm ResNet-50, batch 8, 224² (small: batch 2, 64²)",
)
def build_timm_resnet50(small=False):
    return _timm_model("resnet50"), _images(2, 64) if small else _images(8)


@register_model(
    "timm_efficientnet_b0", "timm", requires=("timm",),
    description="timm EfficientNet-B0, batch 8, 224² (small: batch 2, 64²)",
)
def build_timm_efficientnet_b0(small=False):
    return _timm_model("efficientnet_b0"), _images(2, 64) if small else _images(8)


@register_model(
    "timm_vit_base", "timm", requires=("timm",),
    description="timm ViT-B/16, batch 1, 224² (small: depth 2, 64²)",
)
def build_timm_vit_base(small=False):
    if small:
        return _timm_model("vit_base_patch16_224", depth=2, img_size=64), _images(1, 64)
    return _timm_model("vit_base_patch16_224"), _images(1)


# ---------------------------------------------------------------- transformers


def _hf_model(model_class_name, config_class_name, **config_fields):
    """A transformers model from a config with random weights, without a KV cache or dropout, so
    every backend computes the same thing. Outputs stay ModelOutput (a dict): transformers 5's
    heads read their base model's output by attribute, so return_dict=False breaks them."""
    import transformers

    config = getattr(transformers, config_class_name)(**config_fields)
    for key, value in config.to_dict().items():
        if "drop" in key and isinstance(value, float):
            setattr(config, key, 0.0)
    config.use_cache = False
    torch.manual_seed(SEED)
    model = getattr(transformers, model_class_name)(config)
    return _without_dropout(model)


def _token_ids(vocab_size, batch, seq):
    generator = torch.Generator().manual_seed(SEED)
    return torch.randint(0, vocab_size, (batch, seq), generator=generator)


@register_model(
    "hf_gpt2", "transformers", requires=("transformers",),
    description="GPT-2 124M LM head, batch 1, seq 128 (small: 2 layers, seq 32)",
)
def build_hf_gpt2(small=False):
    layers, seq = (2, 32) if small else (12, 128)
    model = _hf_model("GPT2LMHeadModel", "GPT2Config", n_layer=layers)
    return model, (_token_ids(model.config.vocab_size, 1, seq),)


@register_model(
    "hf_bert", "transformers", requires=("transformers",),
    description="BERT-base, batch 1, seq 128 (small: 2 layers, seq 32)",
)
def build_hf_bert(small=False):
    layers, seq = (2, 32) if small else (12, 128)
    model = _hf_model("BertModel", "BertConfig", num_hidden_layers=layers)
    return model, (_token_ids(model.config.vocab_size, 1, seq),)


@register_model(
    "hf_t5", "transformers", requires=("transformers",),
    description="T5-small encoder-decoder, batch 1, seq 128 (small: 1+1 layers, seq 32)",
)
def build_hf_t5(small=False):
    layers, seq = (1, 32) if small else (6, 128)
    model = _hf_model(
        "T5Model", "T5Config", d_model=512, d_ff=2048, d_kv=64, num_heads=8,
        num_layers=layers, num_decoder_layers=layers,
    )
    ids = _token_ids(model.config.vocab_size, 1, seq)
    return model, {"input_ids": ids, "decoder_input_ids": ids.flip(-1).contiguous()}


@register_model(
    "hf_distilbert", "transformers", requires=("transformers",), quick=True,
    description="DistilBERT-base, batch 1, seq 128 (small: 2 layers, seq 32)",
)
def build_hf_distilbert(small=False):
    layers, seq = (2, 32) if small else (6, 128)
    model = _hf_model("DistilBertModel", "DistilBertConfig", n_layers=layers)
    return model, (_token_ids(model.config.vocab_size, 1, seq),)


@register_model(
    "hf_llama_small", "transformers", requires=("transformers",),
    description="Llama-style decoder (8 layers, d 512, GQA 8/4 heads, 32K vocab), batch 1, seq 128 "
    "(small: 2 layers, seq 32)",
)
def build_hf_llama_small(small=False):
    layers, seq = (2, 32) if small else (8, 128)
    model = _hf_model(
        "LlamaForCausalLM", "LlamaConfig", vocab_size=32000, hidden_size=512,
        intermediate_size=1376, num_hidden_layers=layers, num_attention_heads=8,
        num_key_value_heads=4, max_position_embeddings=1024,
    )
    return model, (_token_ids(model.config.vocab_size, 1, seq),)


@register_model(
    "hf_vit", "transformers", requires=("transformers",),
    description="ViT-base (transformers), batch 1, 224² (small: 2 layers, 64²)",
)
def build_hf_vit(small=False):
    if small:
        model = _hf_model("ViTModel", "ViTConfig", num_hidden_layers=2, image_size=64)
        return model, _images(1, 64)
    return _hf_model("ViTModel", "ViTConfig"), _images(1)
