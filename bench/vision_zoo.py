"""torchvision's and timm's models with random weights, compiled as a new user would: one graph, equal to
eager? Side by side with torch.compile (--compare). Assumes torchvision (and timm, for its rows) import."""
import argparse
import collections
import os
import re
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import cdynamo  # noqa: E402
from transformers_zoo import _message, _row, normalize_reason, run_isolated, same_output  # noqa: E402

# torchvision's model modules: (group, torchvision.models submodule, input builder)
IMAGE_SIZES = (64, 224, 299)  # tried in turn: the first size the model's eager forward accepts
VIDEO_SHAPE = (1, 3, 8, 64, 64)
# timm: one model per timm module, the smallest-sounding name of it (these tags first).
SMALL_TAGS = ("atto", "femto", "pico", "nano", "tiny", "xxs", "xs", "small", "_s", "b0", "18", "mobile", "lite")
STATUSES = ("one graph", "breaks", "wrong", "cdynamo error", "does not build", "skipped")


def _family(name):
    """resnet50 -> resnet, efficientnet_v2_s -> efficientnet_v, vit_b_16 -> vit."""
    return re.match(r"[a-z]+(_v)?", name).group(0)


def torchvision_models(groups, per_family):
    """[(row name, builder)] of torchvision's model registry, by group; with per_family, the
    first per_family of each family (resnet, vit, ...), shortest names first."""
    import torchvision.models as tvm

    modules = {"classification": tvm, "segmentation": tvm.segmentation, "detection": tvm.detection,
               "video": tvm.video, "optical_flow": tvm.optical_flow}
    rows = []
    for group in groups:
        if group not in modules:
            continue
        names = tvm.list_models(module=modules[group])
        if per_family:
            by_family = collections.defaultdict(list)
            for name in sorted(names, key=lambda n: (len(n), n)):
                by_family[_family(name)].append(name)
            names = sorted(n for members in by_family.values() for n in members[:per_family])
        for name in names:
            rows.append((f"tv/{group}/{name}", ("torchvision", group, name)))
    return rows


def timm_models(limit):
    """[(row name, builder)]: per timm module, its smallest-sounding model."""
    import timm

    rows = []
    for module in sorted(timm.list_modules()):
        names = timm.list_models(module=module)
        if not names:
            continue
        names.sort(key=lambda n: (not any(tag in n for tag in SMALL_TAGS), len(n), n))
        rows.append((f"timm/{module}/{names[0]}", ("timm", module, names[0])))
    return rows[:limit] if limit else rows


def _no_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout) or type(module).__name__ in ("DropPath", "StochasticDepth"):
            module.p = 0.0
    return model


def build(spec):
    """(model in eval mode, positional inputs, eager output), or raises."""
    source, group, name = spec
    torch.manual_seed(0)
    if source == "timm":
        import timm

        model = timm.create_model(name, pretrained=False).eval()
        shapes = [(1,) + tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))]
    else:
        import torchvision.models as tvm

        kwargs = {"weights": None}
        if group in ("segmentation", "detection"):
            kwargs["weights_backbone"] = None
        if group == "segmentation" and "aux_loss" in tvm.get_model_builder(name).__code__.co_varnames:
            kwargs["aux_loss"] = False
        model = tvm.get_model(name, **kwargs).eval()
        if group == "video":
            shapes = [VIDEO_SHAPE, (1, 3, 16, 224, 224)]
        elif group == "optical_flow":
            shapes = [(1, 3, 128, 128)]
        else:
            shapes = [(1, 3, s, s) for s in IMAGE_SIZES]
    _no_dropout(model)
    first_error = None
    for shape in shapes:
        torch.manual_seed(1)
        image = torch.randn(shape)
        if group == "detection":
            inputs = ([image[0]],)
        elif group == "optical_flow":
            inputs = (image, torch.randn(shape))
        else:
            inputs = (image,)
        try:
            with torch.no_grad():
                return model, inputs, model(*inputs)
        except Exception as error:  # noqa: BLE001 - the next size may suit it
            first_error = first_error or error
    raise first_error


def check_cdynamo(spec, report_stage):
    try:
        model, inputs, expected = build(spec)
    except Exception as error:  # noqa: BLE001
        return _row("does not build", _message(error))
    report_stage("cdynamo error")
    cdynamo.reset()
    try:
        with torch.no_grad(), cdynamo.config.patch(suppress_errors=False):
            explained = cdynamo.explain(model)(*inputs)
    except Exception as error:  # noqa: BLE001
        return _row("cdynamo error", _message(error))
    return _status(explained.graph_count, explained.graph_break_count, explained.out, expected,
                   explained.break_reasons[0] if explained.break_reasons else "")


def check_torch_compile(spec, report_stage):
    """The same model through torch.compile's frontend (torch._dynamo.explain), for comparison only."""
    import torch._dynamo

    try:
        model, inputs, expected = build(spec)
    except Exception as error:  # noqa: BLE001
        return _row("does not build", _message(error))
    report_stage("cdynamo error")  # here: an error of torch.compile
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            explained = torch._dynamo.explain(model)(*inputs)
            out = torch.compile(model, backend="eager")(*inputs)
    except Exception as error:  # noqa: BLE001
        return _row("cdynamo error", _message(error))
    return _status(explained.graph_count, explained.graph_break_count, out, expected,
                   str(explained.break_reasons[0].reason) if explained.break_reasons else "")


def _status(graphs, breaks, out, expected, reason):
    equal = same_output(out, expected)
    status = "wrong" if not equal else "one graph" if graphs == 1 and breaks == 0 else "breaks"
    return _row(status, reason, graphs, breaks, equal)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", default="classification,segmentation,video,detection,optical_flow,timm",
                        help="torchvision groups and/or timm")
    parser.add_argument("--only", default="", help="comma-separated substrings of row names")
    parser.add_argument("--per-family", type=int, default=0,
                        help="torchvision: only the first N models of each family (0: all)")
    parser.add_argument("--timm-limit", type=int, default=0, help="at most this many timm modules")
    parser.add_argument("--timeout", type=int, default=180, help="seconds one model may take")
    parser.add_argument("--compare", action="store_true", help="also torch.compile's frontend on each model")
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    groups = options.groups.split(",")
    rows = torchvision_models(groups, options.per_family)
    if "timm" in groups:
        rows += timm_models(options.timm_limit)
    if options.only:
        rows = [r for r in rows if any(part in r[0] for part in options.only.split(","))]
    import torchvision

    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, timm {_timm_version()}, "
          f"backend eager, batch 1, {options.timeout} s per model")
    print("| model | cdynamo | graphs | breaks | first break or error |" +
          (" torch.compile | graphs | breaks | first break or error |" if options.compare else ""))
    print("|---|---|---|---|---|" + ("---|---|---|---|" if options.compare else ""))
    started = time.perf_counter()
    results, theirs = {}, {}
    for name, spec in rows:
        results[name] = row = run_isolated(check_cdynamo, (spec,), options.timeout)
        line = f"| {name} | {row['status']} | {row['graphs']} | {row['breaks']} | {row['reason'][:120]} |"
        if options.compare and row["status"] != "does not build":
            theirs[name] = other = run_isolated(check_torch_compile, (spec,), options.timeout)
            line += f" {other['status']} | {other['graphs']} | {other['breaks']} | {other['reason'][:120]} |"
        print(line, flush=True)
    summarize(results, theirs)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


def _timm_version():
    try:
        import timm

        return timm.__version__
    except ImportError:
        return "not installed"


def summarize(results, theirs):
    groups = collections.defaultdict(list)
    for name in results:
        groups[name.split("/")[0] + "/" + name.split("/")[1] if name.startswith("tv/") else "timm"].append(name)
    print("\n| group | built | cdynamo one graph | torch.compile one graph |\n|---|---|---|---|")
    for group, names in groups.items():
        built = [n for n in names if results[n]["status"] != "does not build"]
        ours = sum(results[n]["status"] == "one graph" for n in built)
        other = (f"{sum(theirs[n]['status'] == 'one graph' for n in built if n in theirs)} / {len(built)}"
                 if theirs else "-")
        print(f"| {group} | {len(built)} | {ours} / {len(built)} | {other} |")
    for status in ("wrong", "cdynamo error", "breaks", "does not build"):
        names = [n for n in results if results[n]["status"] == status]
        print(f"\n## {status}: {len(names)}")
        for n in names:
            print(f"- {n}: {results[n]['reason'][:200]}")
    reasons = collections.Counter(normalize_reason(r["reason"]) for r in results.values()
                                  if r["status"] == "breaks" and r["reason"])
    print("\n## most frequent first-break reasons")
    for reason, count in reasons.most_common(15):
        print(f"- {count}: {reason[:200]}")


if __name__ == "__main__":
    main()
