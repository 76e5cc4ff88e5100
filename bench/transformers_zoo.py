"""transformers architectures from small configs with random weights, compiled as a new user would: one graph, equal to
eager? 19 hand-picked, or (--all) every one that takes input_ids; side by side with torch.compile (--compare).
Assumes transformers is importable (PYTHONPATH)."""
import argparse
import collections
import inspect
import multiprocessing
import os
import re
import resource
import sys
import time
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


def _table_model(name):
    """(model, 2x16 token ids) of one of the 19 ARCHITECTURES, small config, random weights."""
    import transformers

    model_class, config_class, fields = ARCHITECTURES[name]
    config = getattr(transformers, config_class)(**fields)
    config.use_cache = False
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    return model, torch.randint(0, 1000, (2, 16))


def check(name, backend):
    model, ids = _table_model(name)
    cdynamo.reset()
    with torch.no_grad():
        expected = model(ids)[0]
        out = cdynamo.explain(model)(ids) if backend == "eager" else None
        if out is None:
            compiled = cdynamo.optimize(backend)(model)(ids)[0]
            return 0, 0, torch.allclose(compiled, expected, atol=1e-5), ""
    reason = str(out.break_reasons[0]) if out.break_reasons else ""
    return out.graph_count, out.graph_break_count, torch.allclose(out.out[0], expected, atol=1e-5), reason


def check_row(name, backend, report_stage):
    """check() as a row, for run_isolated."""
    report_stage("cdynamo error")
    try:
        graphs, breaks, equal, reason = check(name, backend)
    except Exception as error:  # noqa: BLE001 - a row of the table, not the end of the run
        return _row("cdynamo error", _message(error), equal=False)
    return _row("", reason, graphs, breaks, equal)


def check_torch_compile(name, report_stage):
    """check(name, "eager") through torch.compile's frontend (torch._dynamo.explain), for comparison
    only; runs in a child process of its own (see run_isolated), so cdynamo's rows are not touched."""
    model, ids = _table_model(name)
    report_stage("torch.compile error")
    cdynamo.reset()
    with torch.no_grad():
        expected = model(ids)[0]
        try:
            graphs, breaks, reason, out = torch_compile_explain(model, (ids,), {})
        except Exception as error:  # noqa: BLE001 - the row says what went wrong
            return _row("torch.compile error", _message(error))
    equal = torch.allclose(out[0], expected, atol=1e-5)
    status = "wrong" if not equal else "one graph" if graphs == 1 and breaks == 0 else "breaks"
    return _row(status, reason, graphs, breaks, equal)


def torch_compile_explain(model, args, kwargs):
    """(graphs, breaks, first break reason, output) of torch.compile's frontend on model(*args, **kwargs):
    torch._dynamo.explain, then torch.compile(backend="eager") for the output (explain drops it).
    explain counts graphs - 1 as breaks, so a break before an empty graph, or a frame torch.compile
    gives up on (it runs eagerly), does not show there; its counters see them, so breaks is the
    larger of explain's count and the counted graph breaks, plus the frames given up on."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    with torch._dynamo.config.patch(suppress_errors=False):  # an error raises, as cdynamo's does here
        torch.manual_seed(0)
        explained = torch._dynamo.explain(model)(*args, **kwargs)
        given_up = counters["frames"]["total"] - counters["frames"]["ok"]
        breaks = max(explained.graph_break_count, sum(counters["graph_break"].values())) + given_up
        reasons = [_dynamo_reason(r.reason, r.user_stack) for r in explained.break_reasons]
        reasons += [_dynamo_reason(r) for r in list(counters["graph_break"]) + list(counters["unimplemented"])]
        reasons += [f"{given_up} frames run eagerly (not compiled)"] if given_up else []
        torch._dynamo.reset()
        torch.manual_seed(0)
        out = torch.compile(model, backend="eager")(*args, **kwargs)
    torch._dynamo.reset()
    return explained.graph_count, breaks, reasons[0] if reasons else "", out


def _dynamo_reason(text, user_stack=None):
    """torch._dynamo's break reason on one line: its title and debug context, and where."""
    lines = [line.strip() for line in str(text).split("*** While handling")[0].splitlines() if line.strip()]
    context = [line[len("Developer debug context:"):].strip() for line in lines
               if line.startswith("Developer debug context:")]
    reason = lines[0] if lines else ""
    if context and context[0]:
        reason += ": " + context[0]
    if user_stack:
        reason += f" ({user_stack[-1].filename}:{user_stack[-1].lineno})"
    return " ".join(reason.split())


# --all: every architecture of transformers' auto mapping that takes input_ids -------------------

SEQUENCE = (2, 16)  # batch, tokens of the input_ids every architecture gets
VOCAB = 1000
BREAK_REASONS_SHOWN = 15

# (small value, config fields that get it wherever the default config or one of its sub-configs
# has them, as an int or unset). The values are consistent with each other: 4 heads of 16 make the
# width 64, kv heads divide heads, 8 mamba heads of 16 are 2 x the width, 2 of 4 experts per token.
_KV_HEADS = ("num_key_value_heads num_kv_heads n_kv_heads cross_num_key_value_heads swa_num_key_value_heads "
             "num_query_groups linear_num_key_heads")
_SMALL_FIELDS = [
    (64, "hidden_size d_model n_embd dim embed_dim emb_dim embedding_size embedding_dim word_embed_proj_dim "
         "projection_dim out_hidden_size text_hidden_size projector_hidden_size encoder_hidden_size "
         "cross_attention_hidden_size cross_hidden_size backbone_hidden_size true_hidden_size "
         "intra_bottleneck_size lru_width attention_hidden_size entity_emb_size input_embedding_size "
         "hidden_size_global projection_size project_dim"),
    (2, "num_hidden_layers n_layer n_layers num_layers encoder_layers decoder_layers num_encoder_layers "
        "num_decoder_layers depth layers speech_encoder_layers conf_num_hidden_layers"),
    (4, "num_attention_heads n_head n_heads num_heads encoder_attention_heads decoder_attention_heads "
        "num_encoder_attention_heads num_decoder_attention_heads attention_heads cross_num_attention_heads "
        "swa_num_attention_heads num_sliding_attention_heads conf_num_attention_heads linear_num_value_heads"),
    (2, _KV_HEADS),
    (16, "head_dim d_kv kv_channels d_head dim_head attention_head_size attention_head_dim swa_head_dim "
         "cross_head_dim v_head_dim qk_nope_head_dim qk_rope_head_dim linear_key_head_dim linear_value_head_dim "
         "mamba_d_head mamba_head_dim mamba_headdim index_head_dim rotary_dim"),
    (32, "qk_head_dim kv_lora_rank q_lora_rank o_lora_rank"),  # qk_head_dim = nope + rope
    (128, "intermediate_size ffn_dim encoder_ffn_dim decoder_ffn_dim d_ff dff d_inner n_inner dim_ff "
          "ffn_hidden_size hidden_dim mlp_dim feed_forward_size intermediate_size_mlp dense_intermediate_size "
          "encoder_linear_units decoder_linear_units speech_encoder_intermediate_size"),
    (64, "moe_intermediate_size shared_expert_intermediate_size shared_intermediate_size "
         "shared_experts_intermediate_size moe_shared_expert_intermediate_size expert_ffn_hidden_size "
         "moe_hidden_size share_expert_dim"),
    (4, "num_experts num_local_experts n_routed_experts moe_num_experts"),
    (2, "num_experts_per_tok num_experts_per_token moe_topk moe_k top_k_experts"),
    (1, "n_shared_experts"),
    (1, "n_group num_expert_group topk_group n_groups mamba_n_groups expand"),  # mamba2: 1 x 64 = 4 x 16
    (8, "mamba_n_heads mamba_num_heads"),
    (128, "mamba_d_ssm"),  # = mamba heads x mamba head dim
    (16, "mamba_d_state ssm_state_size state_size hidden_size_per_layer_input"),
    (0, "num_kv_shared_layers"),  # gemma3n: the layers that share a cache must exist
    (12, "coordinate_size"),  # LayoutLM's 2-D position embedding: 4 x 12 + 2 x 8 = the width
    (8, "shape_size"),
    (VOCAB, "vocab_size vocab_size_per_layer_input"),
    (128, "max_position_embeddings n_positions n_ctx max_seq_len"),  # must stay >= SEQUENCE[1]
]
SMALL_FIELDS = {name: value for value, names in _SMALL_FIELDS for name in names.split()}
SMALL_HEAD_DIM = SMALL_FIELDS["head_dim"]
# Tried in turn while the model does not build: multi-head latent attention and a few others
# want as many kv heads as heads; multimodal rope whose sections (they split the rotary half of
# a head) come from the model's code, not its config, needs them in the config.
FALLBACKS = [
    {},
    dict.fromkeys(_KV_HEADS.split(), SMALL_FIELDS["num_attention_heads"]),
    dict(mrope_section=[2, 3, 3]),
    dict(mrope_section=[1, 2, 1]),  # partial rotary: half a head turns
]
# Architectures whose layer pattern is a list tied to the default depth.
MODEL_FIELDS = {
    "gpt_neo": dict(attention_types=[[["global", "local"], 1]]),
    "reformer": dict(axial_pos_embds_dim=[32, 32], axial_pos_shape=[4, 4]),
    "esm": dict(pad_token_id=1, mask_token_id=2),  # its embedding reads both, unset by default
}
# Ids the tokenizer reserves (image, audio, bos, pad ...): moved into the vocabulary when the
# default lies outside it, and never drawn as input, so no image placeholder shows up in text.
_TOKEN_ID = re.compile(r"(_token_id|_token_index|_id)$")

FULLGRAPH = False  # --fullgraph
STATUSES = ("one graph", "dynamic recompiles", "dynamic wrong", "dynamic error", "breaks", "wrong",
            "transformers differs when compiling", "cdynamo error", "error", "does not build", "skipped")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _split(total, sections):
    """`total` split in proportion to `sections` (largest remainders), e.g. 8, [16, 24, 24] -> [2, 3, 3]."""
    exact = [total * s / sum(sections) for s in sections]
    parts = [int(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: parts[i] - exact[i])[: total - sum(parts)]:
        parts[i] += 1
    return parts


def small_config_fields(config, sizes, token_ids):
    """Constructor arguments that shrink `config` (a default config): the fields of `sizes` it
    has, its sub-configs rebuilt small, multimodal rope sections scaled to the small head, token
    ids moved into the vocabulary (token_ids: default id -> small id). The class is built again
    from these rather than patched, so derived fields (layer_types, ...) follow the new sizes."""
    import transformers

    fields = {}
    for name, value in vars(config).items():
        if isinstance(value, transformers.PretrainedConfig):
            fields[name] = type(value)(**small_config_fields(value, sizes, token_ids))
        elif name in sizes and (value is None or _is_int(value)):
            fields[name] = sizes[name]
        elif _is_int(value) and _TOKEN_ID.search(name) and not name.startswith("_"):
            if value not in token_ids:
                moved = sum(1 for old, new in token_ids.items() if old != new)
                token_ids[value] = value if 0 <= value < VOCAB else VOCAB - 1 - moved
            fields[name] = token_ids[value]
        elif name == "rope_parameters" and isinstance(value, dict) and "mrope_section" in value:
            head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
            total = sum(value["mrope_section"]) * SMALL_HEAD_DIM // head_dim
            fields[name] = dict(value, mrope_section=_split(total, value["mrope_section"]))
        elif name == "rope_parameters" and isinstance(value, dict) and "mrope_section" in sizes:
            fields[name] = dict(value, mrope_section=sizes["mrope_section"])
    return fields


def small_config(model_type, sizes, token_ids):
    """The default config of `model_type` shrunk to `sizes`, without a cache (a plain forward)."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config_class = CONFIG_MAPPING[model_type]
    fields = small_config_fields(config_class(), sizes, token_ids)
    config = config_class(**fields, **MODEL_FIELDS.get(model_type, {}))
    for part in [config] + [v for v in vars(config).values() if isinstance(v, transformers.PretrainedConfig)]:
        if hasattr(part, "use_cache"):
            part.use_cache = False
    return config


def small_model(model_type, class_name):
    """The architecture with a small config, random weights (seed 0), eval mode; its inputs, and the
    eager output. Raises the first attempt's error where no one of the FALLBACKS builds and runs."""
    import transformers

    first_error = None
    for fallback in FALLBACKS:
        token_ids = {}
        try:
            config = small_config(model_type, {**SMALL_FIELDS, **fallback}, token_ids)
            torch.manual_seed(0)
            model = getattr(transformers, class_name)(config).eval()
            allowed = torch.tensor(sorted(set(range(VOCAB)) - set(token_ids.values())))
            ids = allowed[torch.randint(0, len(allowed), SEQUENCE)]
            inputs = {"input_ids": ids}
            # Encoder-decoder models whose forward takes decoder inputs get the same tokens.
            if config.is_encoder_decoder and "decoder_input_ids" in inspect.signature(model.forward).parameters:
                inputs["decoder_input_ids"] = ids
            with torch.no_grad():
                torch.manual_seed(0)  # a forward that draws random numbers draws the same ones each run
                return model, inputs, model(**inputs)
        except Exception as error:  # noqa: BLE001 - the next fallback may build
            first_error = first_error or error
    raise first_error


def _tensors(output):
    from torch.utils import _pytree as pytree

    return [leaf for leaf in pytree.tree_leaves(output) if isinstance(leaf, torch.Tensor)]


def same_output(actual, expected):
    """Every tensor of the output equal (atol 1e-5; NaN equal to NaN, as eager may produce them)."""
    actual, expected = _tensors(actual), _tensors(expected)
    if len(actual) != len(expected) or not expected:
        return False
    for a, e in zip(actual, expected):
        if a.shape != e.shape or a.dtype != e.dtype:
            return False
        if e.is_floating_point() or e.is_complex():
            if not torch.allclose(a, e, atol=1e-5, equal_nan=True):
                return False
        elif not torch.equal(a, e):
            return False
    return True


def eager_as_if_compiling(model, inputs):
    """The eager output with torch.compiler.is_compiling() answering True, as it does in traced code."""
    original = torch.compiler.is_compiling
    torch.compiler.is_compiling = lambda: True
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            return model(**inputs)
    finally:
        torch.compiler.is_compiling = original


def _row(status, reason, graphs="-", breaks="-", equal="-"):
    return dict(status=status, reason=reason, graphs=graphs, breaks=breaks, equal=equal)


def _message(error):
    """The exception on one line (a table cell)."""
    return " ".join(f"{type(error).__name__}: {error}".split())


def _fullgraph_row(model, inputs, expected, compile_fullgraph, unsupported):
    """--fullgraph: one row from compiling model with fullgraph=True (the issue's zoo test): one
    graph equal to eager, or the error that says why not ("breaks" for a graph break)."""
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            out = compile_fullgraph(model)(**inputs)
    except Exception as error:  # noqa: BLE001 - the row says what went wrong
        try:
            eager_as_if_compiling(model, inputs)
        except Exception as library_error:  # noqa: BLE001 - transformers' own compile path fails alike
            return _row("transformers differs when compiling", "eager with is_compiling() raises too: " + _message(library_error))
        if isinstance(error, unsupported):
            return _row("breaks", _message(error).splitlines()[0], "-", ">=1", "-")
        return _row("error", _message(error))
    equal = same_output(out, expected)
    if not equal and same_output(out, eager_as_if_compiling(model, inputs)):
        return _row("transformers differs when compiling", "", 1, 0, equal)
    return _row("one graph" if equal else "wrong", "", 1, 0, equal)


def check_architecture(model_type, class_name, report_stage):
    """One row of the --all table; runs in its own child process (see run_isolated)."""
    try:
        model, inputs, expected = small_model(model_type, class_name)
    except Exception as error:  # noqa: BLE001 - our small config or inputs do not suit this model
        return _row("does not build", _message(error))
    report_stage("cdynamo error")  # what a crash or a hang from here on is
    cdynamo.reset()
    if FULLGRAPH:
        return _fullgraph_row(model, inputs, expected, lambda m: cdynamo.compile(m, backend="eager", fullgraph=True),
                              cdynamo.exc.Unsupported)
    try:
        # Raised, not a silent eager fallback: a bug of cdynamo must not pass as "breaks".
        with torch.no_grad(), cdynamo.config.patch(suppress_errors=False):
            torch.manual_seed(0)
            explained = cdynamo.explain(model)(**inputs)
    except Exception as error:  # noqa: BLE001 - the row says what went wrong
        try:
            eager_as_if_compiling(model, inputs)
        except Exception as library_error:  # noqa: BLE001 - transformers' own compile path fails alike
            return _row("transformers differs when compiling", "eager with is_compiling() raises too: " + _message(library_error))
        return _row("cdynamo error", _message(error))
    graphs, breaks = explained.graph_count, explained.graph_break_count
    equal = same_output(explained.out, expected)
    status = "wrong" if not equal else "one graph" if graphs == 1 and breaks == 0 else "breaks"
    if not equal and same_output(explained.out, eager_as_if_compiling(model, inputs)):
        # transformers takes other paths when torch.compiler.is_compiling() (masks, caches); where
        # eager on those paths gives cdynamo's result, the difference is the library's own.
        status = "transformers differs when compiling"
    row = _row(status, explained.break_reasons[0] if explained.break_reasons else "", graphs, breaks, equal)
    if DYNAMIC_LENGTHS and status == "one graph":
        report_stage("dynamic error")
        row.update(check_dynamic(model, inputs))
    return row


def check_architecture_torch_compile(model_type, class_name, report_stage):
    """The --compare columns of one --all row: the same small model and inputs, built again in a
    child process of its own, through torch.compile's frontend. cdynamo never runs in that process."""
    try:
        model, inputs, expected = small_model(model_type, class_name)
    except Exception as error:  # noqa: BLE001
        return _row("does not build", _message(error))
    report_stage("torch.compile error")
    cdynamo.reset()
    if FULLGRAPH:
        import torch._dynamo

        torch._dynamo.reset()
        return _fullgraph_row(model, inputs, expected, lambda m: torch.compile(m, backend="eager", fullgraph=True),
                              torch._dynamo.exc.Unsupported)
    try:
        with torch.no_grad():
            graphs, breaks, reason, out = torch_compile_explain(model, (), inputs)
    except Exception as error:  # noqa: BLE001 - the row says what went wrong
        try:
            eager_as_if_compiling(model, inputs)
        except Exception as library_error:  # noqa: BLE001
            return _row("transformers differs when compiling", "eager with is_compiling() raises too: " + _message(library_error))
        return _row("torch.compile error", _message(error))
    equal = same_output(out, expected)
    status = "wrong" if not equal else "one graph" if graphs == 1 and breaks == 0 else "breaks"
    if not equal and same_output(out, eager_as_if_compiling(model, inputs)):
        status = "transformers differs when compiling"
    return _row(status, reason, graphs, breaks, equal)


# --dynamic: sequence lengths each "one graph" architecture is then called with, compiled once
# with fullgraph=True and automatic dynamic shapes (the first call static, a later one dynamic).
DYNAMIC_LENGTHS = ()


def _with_length(inputs, length):
    """The inputs with `length` tokens (the tokens repeated, so no special ids appear)."""
    def resize(t):
        repeats = -(-length // t.shape[1])
        return t.repeat(1, repeats)[:, :length]

    return {name: resize(t) for name, t in inputs.items()}


def check_dynamic(model, inputs):
    """Row fields for the --dynamic columns: compiles over DYNAMIC_LENGTHS, equal at each length."""
    from cdynamo.testing import CompileCounter

    cdynamo.reset()
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(model)
    try:
        with torch.no_grad(), cdynamo.config.patch(suppress_errors=False):
            for length in DYNAMIC_LENGTHS:
                sized = _with_length(inputs, length)
                torch.manual_seed(0)
                expected = model(**sized)
                torch.manual_seed(0)
                if not same_output(compiled(**sized), expected):
                    return dict(status="dynamic wrong", reason=f"differs from eager at length {length}")
    except Exception as error:  # noqa: BLE001 - the row says what went wrong
        return dict(status="dynamic error", reason=_message(error))
    if counter.frame_count > 2:
        reasons = list(cdynamo.utils.counters["recompiles"])
        return dict(status="dynamic recompiles", reason=f"{counter.frame_count} compiles; {reasons[-1] if reasons else ''}")
    return dict(status="one graph", graphs=f"{counter.frame_count} compiles over {len(DYNAMIC_LENGTHS)} lengths")


def _child(connection, function, args):
    # Quiet: the table is the parent's output. A hard limit on memory so that a config we failed
    # to shrink raises MemoryError here instead of waking the machine's OOM killer.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    with open("/proc/self/statm") as statm:
        virtual = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (virtual + (8 << 30), resource.RLIM_INFINITY))
    try:
        connection.send(function(*args, report_stage=connection.send))
    except BaseException as error:  # noqa: BLE001 - reported by the parent
        connection.send(_row("does not build", _message(error)))


def run_isolated(function, args, timeout):
    """function(*args, report_stage) in a forked child: a fresh cdynamo and torch state each, and a
    crash or a hang costs one row, not the run. The parent imported everything, so a fork is cheap.
    report_stage(status) names the status a crash or a hang gets from then on (at first: "does not build")."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args), daemon=True)
    process.start()
    sender.close()
    deadline = time.monotonic() + timeout
    status = "does not build"
    try:
        while receiver.poll(max(0.0, deadline - time.monotonic())):
            message = receiver.recv()
            if isinstance(message, dict):
                return message
            status = message
        failure = f"timed out after {timeout} s"
    except EOFError:
        process.join()
        failure = f"child process died (exit code {process.exitcode})"
    finally:
        if process.is_alive():
            process.kill()
        process.join()
    return _row(status, failure)


def text_architectures(only):
    """[(model type, base model class name, why skipped or "")] over transformers' auto mapping."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    rows = []
    for model_type, class_name in MODEL_MAPPING_NAMES.items():
        if only and model_type not in only:
            continue
        class_name = class_name[0] if isinstance(class_name, tuple) else class_name
        try:
            main_input = getattr(transformers, class_name).main_input_name
        except Exception as error:  # noqa: BLE001 - e.g. an optional dependency is missing
            rows.append((model_type, class_name, "cannot import: " + _message(error)))
            continue
        rows.append((model_type, class_name, "" if main_input == "input_ids" else "not a text model"))
    return rows


def normalize_reason(reason):
    """A break reason without the user's file:line and addresses, so that equal causes group."""
    reason = re.sub(r"\s*\([^()]*:\d+\)$", "", reason)
    reason = re.sub(r"(/[\w.+-]+)+\.py(:\d+)?", "<file>", reason)
    return re.sub(r"0x[0-9a-f]+", "0x...", reason)


def check_all(options):
    started = time.perf_counter()
    results, theirs = {}, {}
    for model_type, class_name, skip in text_architectures(options.only.split(",") if options.only else []):
        if skip == "not a text model":
            results[model_type] = _row("skipped", skip)
            continue
        if skip:
            row = _row("does not build", skip)
        else:
            row = run_isolated(check_architecture, (model_type, class_name), options.timeout)
        results[model_type] = row
        line = (f"| {model_type} | {class_name} | {row['status']} | {row['graphs']} | {row['breaks']} | "
                f"{row['equal']} | {row['reason'][:150]} |")
        if options.compare and row["status"] != "does not build":
            # A second child: its own timeout and memory limit, and no state of cdynamo's run.
            theirs[model_type] = other = run_isolated(check_architecture_torch_compile, (model_type, class_name),
                                                      options.timeout)
            line += (f" {other['status']} | {other['graphs']} | {other['breaks']} | {other['equal']} | "
                     f"{other['reason'][:150]} |")
        elif options.compare:
            line += " - | - | - | - | |"
        print(line, flush=True)
    print_summary(results)
    if options.compare:
        print_comparison(results, theirs)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


def print_summary(results):
    """The failures listed, the count, and the most frequent first-break reasons."""
    by_status = {status: [name for name, row in results.items() if row["status"] == status]
                 for status in STATUSES}
    for status, title in (("wrong", "WRONG: not equal to eager"), ("cdynamo error", "cdynamo errors"),
                          ("dynamic wrong", "--dynamic: WRONG at another length"), ("dynamic error", "--dynamic: errors"),
                          ("dynamic recompiles", "--dynamic: more than 2 compiles"),
                          ("transformers differs when compiling", "equal to eager as transformers runs it when compiling"),
                          ("does not build", "do not build from a small config (not counted)")):
        print(f"\n## {title}: {len(by_status[status])}")
        for name in by_status[status]:
            print(f"- {name}: {results[name]['reason'][:200]}")

    library = by_status["transformers differs when compiling"]
    counted = len(results) - len(by_status["does not build"]) - len(by_status["skipped"]) - len(library)
    print(f"\n{len(by_status['one graph'])} / {counted} architectures in one graph and equal to eager "
          f"({len(by_status['does not build'])} do not build from a small config, "
          f"{len(library)} differ or fail in transformers itself when compiling, "
          f"{len(by_status['skipped'])} skipped: not a text model)")
    print("  " + ", ".join(f"{status}: {len(names)}" for status, names in by_status.items()))

    reasons = collections.Counter()
    examples = {}
    for name, row in results.items():
        if row["status"] in ("breaks", "wrong", "transformers differs when compiling") and row["reason"]:
            reason = normalize_reason(row["reason"])
            reasons[reason] += 1
            examples.setdefault(reason, name)
    print("\n## most frequent first-break reasons\n| count | reason | e.g. |\n|---|---|---|")
    for reason, count in reasons.most_common(BREAK_REASONS_SHOWN):
        print(f"| {count} | {reason[:200]} | {examples[reason]} |")


def _one_graph(status):
    """One graph and equal to eager at the first length (--dynamic's statuses come after that)."""
    return status == "one graph" or status.startswith("dynamic")


def print_comparison(results, theirs):
    """--compare: torch.compile's count over the same rows as cdynamo's, and the rows where only one
    of the two captures in one graph. Rows cdynamo's summary leaves out (do not build, transformers
    differs when compiling, skipped) are left out here too."""
    excluded = ("does not build", "skipped", "transformers differs when compiling")
    counted = [name for name, row in results.items() if row["status"] not in excluded]
    ours = [name for name in counted if _one_graph(results[name]["status"])]
    other = [name for name in counted if name in theirs and theirs[name]["status"] == "one graph"]
    print(f"\n## torch.compile (torch._dynamo.explain, then backend eager for the output)")
    print(f"cdynamo: {len(ours)} / {len(counted)} in one graph and equal to eager")
    print(f"torch.compile: {len(other)} / {len(counted)} in one graph and equal to eager")
    only_ours = [name for name in ours if name not in other]
    only_other = [name for name in other if name not in ours]
    print(f"one graph in exactly one of the two: {len(only_ours) + len(only_other)}")
    print(f"\n### cdynamo only: {len(only_ours)} (torch.compile's status and first break or error)")
    for name in only_ours:
        row = theirs.get(name, _row("not run", ""))
        print(f"- {name}: {row['status']}, {row['graphs']} graphs, {row['breaks']} breaks: {row['reason'][:300]}")
    print(f"\n### torch.compile only: {len(only_other)} (cdynamo's status and first break or error)")
    for name in only_other:
        row = results[name]
        print(f"- {name}: {row['status']}, {row['graphs']} graphs, {row['breaks']} breaks: {row['reason'][:300]}")
    statuses = collections.Counter(theirs[name]["status"] for name in counted if name in theirs)
    print("\n  torch.compile " + ", ".join(f"{status}: {count}" for status, count in statuses.most_common()))
    reasons = collections.Counter()
    examples = {}
    for name in counted:
        if name in theirs and theirs[name]["status"] != "one graph" and theirs[name]["reason"]:
            reason = normalize_reason(theirs[name]["reason"])[:200]
            reasons[reason] += 1
            examples.setdefault(reason, name)
    print("\n## torch.compile: most frequent first-break reasons or errors\n| count | reason | e.g. |\n|---|---|---|")
    for reason, count in reasons.most_common(BREAK_REASONS_SHOWN):
        print(f"| {count} | {reason} | {examples[reason]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="eager", help="eager (counts graphs and breaks) or another cdynamo backend")
    parser.add_argument("--only", default="", help="comma-separated architectures (--all: model types)")
    parser.add_argument("--all", action="store_true", help="every auto-mapping architecture that takes input_ids")
    parser.add_argument("--timeout", type=int, default=120, help="seconds one architecture may take (--all, and --compare's torch.compile runs)")
    parser.add_argument("--dynamic", action="store_true",
                        help="--all: call each one-graph architecture at 3 more sequence lengths (automatic dynamic)")
    parser.add_argument("--fullgraph", action="store_true",
                        help="--all: compile each model with fullgraph=True (one graph or an error) instead of explain")
    parser.add_argument("--compare", action="store_true",
                        help="also torch.compile's frontend (torch._dynamo.explain) on each model, in a child process")
    options = parser.parse_args()
    if options.compare and options.backend != "eager":
        parser.error("--compare counts graphs and breaks: backend eager only")
    if options.fullgraph:
        global FULLGRAPH
        FULLGRAPH = True
    if options.dynamic:
        global DYNAMIC_LENGTHS
        DYNAMIC_LENGTHS = (SEQUENCE[1], SEQUENCE[1] + 5, SEQUENCE[1] - 3, SEQUENCE[1] + 11)
    if options.all and options.backend != "eager":
        parser.error("--all counts graphs and breaks with cdynamo.explain: backend eager only")
    warnings.filterwarnings("ignore")
    import transformers

    if options.all:
        transformers.logging.set_verbosity_error()
        print(f"transformers {transformers.__version__}, torch {torch.__version__}, backend eager, "
              f"input_ids {SEQUENCE[0]}x{SEQUENCE[1]}, {options.timeout} s per architecture")
        print("| model type | class | status | graphs | breaks | equal to eager | first break or error |" +
              (" torch.compile | graphs | breaks | equal to eager | first break or error |" if options.compare else ""))
        print("|---|---|---|---|---|---|---|" + ("---|---|---|---|---|" if options.compare else ""))
        return check_all(options)
    names = [n for n in ARCHITECTURES if not options.only or n in options.only.split(",")]
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, backend {options.backend}")
    print("| architecture | graphs | breaks | equal to eager | first break |" +
          (" torch.compile | graphs | breaks | equal to eager | first break or error |" if options.compare else ""))
    print("|---|---|---|---|---|" + ("---|---|---|---|---|" if options.compare else ""))
    good = theirs = 0
    for name in names:
        if options.compare:
            # Both in forked children: a child forked after the parent ran a model hangs in its
            # first parallel kernel (OpenMP's thread pool does not survive a fork).
            row = run_isolated(check_row, (name, options.backend), options.timeout)
            graphs, breaks, equal, reason = row["graphs"], row["breaks"], row["equal"] is True, row["reason"]
        else:
            try:
                graphs, breaks, equal, reason = check(name, options.backend)
            except Exception as error:  # noqa: BLE001 - a row of the table, not the end of the run
                graphs, breaks, equal, reason = "-", "-", False, f"{type(error).__name__}: {error}"
        good += equal and (options.backend != "eager" or (graphs == 1 and breaks == 0))
        line = f"| {name} | {graphs} | {breaks} | {equal} | {reason[:120]} |"
        if options.compare:
            other = run_isolated(check_torch_compile, (name,), options.timeout)
            theirs += other["status"] == "one graph"
            line += f" {other['status']} | {other['graphs']} | {other['breaks']} | {other['equal']} | {other['reason'][:120]} |"
        print(line, flush=True)
    print(f"\n{good} / {len(names)} " + ("in one graph and equal to eager" if options.backend == "eager" else "equal to eager"))
    if options.compare:
        print(f"torch.compile: {theirs} / {len(names)} in one graph and equal to eager")


if __name__ == "__main__":
    main()
