"""The cases of bench/gpu.py: anchors.md's GPU table, softmax, ViT-B/16, GPT-2 batch 1, the copy probe
and the launch case, at GPU and --small sizes. Assumes models.py's builders (random weights)."""
import dataclasses

import torch
from torch import nn

from . import models
from .registry import _module_available

# What a case measures, which decides how its worker runs it:
MODEL = "model"  # a model on every system: cold/warm compile, time, error against fp64
COPY = "copy"  # device-to-device copy bandwidth, eager only: the yardstick of memory-bound rows
LAUNCH = "launch"  # CPU time per kernel launch: many tiny independent kernels per call


@dataclasses.dataclass(frozen=True)
class GpuCase:
    name: str
    title: str  # the row label of the table
    build: object  # build(small) -> (module, inputs); LAUNCH cases: build(small, count)
    kind: str = MODEL
    train: bool = False  # a training step (forward, loss, backward) instead of inference
    compile_mode: str = None  # given to both compilers alike, e.g. "reduce-overhead"
    requires: tuple = ()  # importable modules the builder needs
    # bytes_moved(inputs) -> bytes one call must read and write at least: memory-bound rows are
    # reported as achieved TB/s against the copy bandwidth of the same run.
    bytes_moved: object = None

    def missing_packages(self):
        return [name for name in self.requires if not _module_available(name)]


def _randn(*shape):
    torch.manual_seed(models.SEED)
    return torch.randn(*shape)


def _read_and_write_once(inputs):
    """One read of the input and one write of an output of the same size."""
    return 2 * inputs[0].numel() * inputs[0].element_size()


# ---------------------------------------------------------------- microbenchmarks


def build_pointwise_chain(small):
    # 64M floats (256 MB in, 256 MB out: the 512 MB of anchors.md); small: 64K.
    return models.PointwiseChain(), (_randn(16, 4096) if small else _randn(16384, 4096),)


def build_layernorm_gelu_linear(small):
    rows, width = (16, 64) if small else (4096, 4096)
    torch.manual_seed(models.SEED)
    return models.LayerNormGeluLinear(width), (_randn(rows, width),)


def build_mlp(small):
    batch, width = (8, 64) if small else (4096, 2048)
    torch.manual_seed(models.SEED)
    return models.MLP(width, depth=4), (_randn(batch, width),)


class Softmax(nn.Module):
    """Row softmax: a reduction and a pointwise pass over the same rows, memory-bound."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def build_softmax(small):
    return Softmax(), (_randn(64, 64) if small else _randn(8192, 8192),)


class ColumnSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=0)


def build_column_sum(small):
    """An outer reduction with few outputs for the GPU's SMs: the case the split exists for."""
    return ColumnSum(), (_randn(64, 64) if small else _randn(8192, 8192),)


def _read_once(inputs):
    return inputs[0].numel() * inputs[0].element_size()


# ---------------------------------------------------------------- vision


def build_resnet18(small):
    import torchvision

    torch.manual_seed(models.SEED)
    model = models._without_dropout(torchvision.models.resnet18(weights=None))
    return model, models._images(2, 64) if small else models._images(64)


def build_vit_b16(small):
    """timm's ViT-B/16 (attention through scaled_dot_product_attention) where timm is installed,
    else torchvision's; the record says which (model.built_from)."""
    torch.manual_seed(models.SEED)
    depth, size, batch = (2, 64, 2) if small else (12, 224, 64)
    if _module_available("timm"):
        import timm

        model = timm.create_model("vit_base_patch16_224", pretrained=False, depth=depth, img_size=size)
        built_from = "timm vit_base_patch16_224"
    else:
        import torchvision

        model = torchvision.models.VisionTransformer(
            image_size=size, patch_size=16, num_layers=depth, num_heads=12, hidden_dim=768, mlp_dim=3072,
        )
        built_from = "torchvision VisionTransformer (B/16)"
    model = models._without_dropout(model)
    model.built_from = built_from
    return model, models._images(batch, size)


# ---------------------------------------------------------------- transformers


def _gpt2(small, batch, seq, small_batch=2, small_seq=32):
    layers = 2 if small else 12
    model = models._hf_model("GPT2LMHeadModel", "GPT2Config", n_layer=layers)
    shape = (small_batch, small_seq) if small else (batch, seq)
    return model, (models._token_ids(model.config.vocab_size, *shape),)


def build_gpt2(small):
    return _gpt2(small, batch=8, seq=512)


def build_gpt2_batch1(small):
    return _gpt2(small, batch=1, seq=32, small_batch=1, small_seq=8)


def build_bert(small):
    layers, batch, seq = (2, 2, 32) if small else (12, 8, 512)
    model = models._hf_model("BertModel", "BertConfig", num_hidden_layers=layers)
    return model, (models._token_ids(model.config.vocab_size, batch, seq),)


# ---------------------------------------------------------------- copy and launch overhead


class CopyInto(nn.Module):
    """dst.copy_(src): what the device's memory system moves at best through PyTorch."""

    def forward(self, src, dst):
        return dst.copy_(src)


def build_copy(small):
    # 1 GiB each way (2 GiB moved per call), far above the H200's 60 MB of L2; small: 4 MiB.
    count = 2**20 if small else 2**28
    source = _randn(count)
    return CopyInto(), (source, torch.empty_like(source))


def _copy_bytes(inputs):
    return 2 * inputs[0].numel() * inputs[0].element_size()


class IndependentSines(nn.Module):
    """sin of each input on its own: no two outputs share a buffer, and each input has its own
    size, so no fusion can merge their kernels (torch.compile's inductor fuses only nodes that
    share memory; cdynamo's horizontal fusion only same-size loops). One kernel per input, on
    tensors too small for the GPU to notice: the CPU cost of a call is launching."""

    def forward(self, *inputs):
        outputs = []
        for tensor in inputs:
            outputs.append(torch.sin(tensor))
        return tuple(outputs)


# Kernels per call of the two launch-overhead variants: the per-launch cost is the slope between
# them, so what a call costs once (guards, the Python call) cancels out.
LAUNCH_COUNTS = (8, 64)
LAUNCH_COUNTS_SMALL = (4, 16)


def build_launch(small, count):
    torch.manual_seed(models.SEED)
    return IndependentSines(), tuple(torch.randn(32 + k) for k in range(count))


# ---------------------------------------------------------------- the table


CASES = (
    GpuCase("copy_bandwidth", "device-to-device copy, 1 GiB f32", build_copy, kind=COPY, bytes_moved=_copy_bytes),
    GpuCase("pointwise_chain", "pointwise chain sin+cos→relu→*2+exp(-x), 64M", build_pointwise_chain,
            bytes_moved=_read_and_write_once),
    GpuCase("layernorm_gelu_linear", "LayerNorm→GELU→Linear, 4096×4096", build_layernorm_gelu_linear),
    GpuCase("mlp", "MLP 4×(Linear 2048 + ReLU), batch 4096", build_mlp),
    GpuCase("resnet18", "ResNet-18, batch 64", build_resnet18, requires=("torchvision",)),
    GpuCase("resnet18_train", "ResNet-18 training step (fwd+bwd), batch 64", build_resnet18, train=True,
            requires=("torchvision",)),
    GpuCase("gpt2", "GPT-2 124M, batch 8, seq 512", build_gpt2, requires=("transformers",)),
    GpuCase("bert", "BERT-base, batch 8, seq 512", build_bert, requires=("transformers",)),
    GpuCase("gpt2_train", "GPT-2 124M training step (fwd+bwd), batch 8, seq 512", build_gpt2, train=True,
            requires=("transformers",)),
    GpuCase("gpt2_reduce_overhead", 'GPT-2 inference, mode="reduce-overhead"', build_gpt2,
            compile_mode="reduce-overhead", requires=("transformers",)),
    GpuCase("softmax", "softmax 8192×8192", build_softmax, bytes_moved=_read_and_write_once),
    GpuCase("column_sum", "sum over dim 0 of 8192×8192", build_column_sum, bytes_moved=_read_once),
    GpuCase("vit_b16", "ViT-B/16, batch 64", build_vit_b16, requires=("torchvision",)),
    GpuCase("gpt2_batch1", "GPT-2 124M, batch 1, seq 32", build_gpt2_batch1, requires=("transformers",)),
    GpuCase("launch_overhead", "launch overhead: independent sin kernels on 32 to 95 floats", build_launch, kind=LAUNCH),
)

_BY_NAME = {case.name: case for case in CASES}

# Names for parts of the table in --models: one device call of at most 10 minutes may not hold
# the whole table with a build before it, and these two halves each fit.
GROUPS = {
    "micro": ("pointwise_chain", "layernorm_gelu_linear", "mlp", "softmax", "column_sum", "launch_overhead"),
    "vision": ("resnet18", "resnet18_train", "vit_b16"),
    "transformers": ("gpt2", "bert", "gpt2_train", "gpt2_reduce_overhead", "gpt2_batch1"),
}


def get_case(name):
    if name not in _BY_NAME:
        raise KeyError(f"unknown GPU case {name!r}; known: {', '.join(_BY_NAME)}, or the groups {', '.join(GROUPS)}")
    return _BY_NAME[name]


def select_cases(names=None):
    """The cases to run, in table order; `names` picks cases or GROUPS (unknown ones raise
    KeyError). The copy probe always runs: the memory-bound rows are read against it."""
    if not names:
        return list(CASES)
    expanded = [member for name in names for member in GROUPS.get(name, (name,))]
    wanted = {get_case(name).name for name in expanded} | {"copy_bandwidth"}
    return [case for case in CASES if case.name in wanted]
