"""The module corpus with fullgraph=True: which of bench/module_corpus/models compile to one graph,
side by side with torch.compile. Assumes cdynamo importable (PYTHONPATH=python).

python bench/module_corpus_fullgraph.py [--compare] [--only name,name]

Each model in eval under torch.no_grad(), its first inputs, backend "eager", one call, in a forked
child of its own (120 s), compiled with fullgraph=True and a backend that counts the graphs it is
given: a model counts when the call raises nothing, the backend got exactly one graph, and the
output equals eager's; a model whose eager call fails under no_grad (it takes gradients) is not
counted. --compare also runs torch.compile the same way, in another child.
"""
import argparse
import copy
import glob
import multiprocessing
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "module_corpus"))


def _build(path):
    import harness

    module = harness.load(path)
    torch.manual_seed(0)
    model = module.Model(*getattr(module, "INIT_ARGS", ()))
    model.eval()
    torch.manual_seed(1)
    made = module.make_inputs_seq()[0] if hasattr(module, "make_inputs_seq") else module.make_inputs()
    args, kwargs = harness.norm_inputs(made)
    if hasattr(module, "reset_globals"):
        module.reset_globals()
    return harness, model, args, kwargs


def _equal(harness, got, want):
    got_leaves, want_leaves = harness.flatten(got), harness.flatten(want)
    if len(got_leaves) != len(want_leaves):
        return False
    for (_, a), (_, b) in zip(got_leaves, want_leaves):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return False
        if isinstance(a, torch.Tensor):
            if a.shape != b.shape or not torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-5, equal_nan=True):
                return False
        elif a != b:
            return False
    return True


def _one(path, system):
    """(one graph and equal, first break or error) for one model under one system."""
    harness, model, args, kwargs = _build(path)
    try:
        with torch.no_grad():  # on copies: a model may change its inputs in place
            want = model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as error:  # noqa: BLE001 - the model needs gradients (a gradient penalty): not counted
        return None, f"eager raises under no_grad: {type(error).__name__}"
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    harness_model = _build(path)[1]  # a fresh model: the eager call may have changed buffers
    try:
        with torch.no_grad():
            if system == "cdynamo":
                import cdynamo

                compiled = cdynamo.compile(harness_model, backend=counting_backend, fullgraph=True)
            else:
                compiled = torch.compile(harness_model, backend=counting_backend, fullgraph=True)
            out = compiled(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as error:  # noqa: BLE001 - the row says what went wrong
        first = str(error).strip().splitlines()[0][:150] if str(error).strip() else ""
        return False, f"{type(error).__name__}: {first}"
    if len(graphs) != 1:
        return False, f"{len(graphs)} graphs"
    return (True, "") if _equal(harness, out, want) else (False, "wrong result")


def _child(path, system, queue):
    queue.put(_one(path, system))


def run_isolated(path, system):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_child, args=(path, system, queue))
    process.start()
    process.join(120)
    if process.is_alive():
        process.kill()
        return False, "timeout"
    try:
        return queue.get(timeout=5)
    except Exception:  # noqa: BLE001 - queue.Empty: the child died before answering
        return False, f"crashed (exit code {process.exitcode})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true", help="torch.compile's frontend too")
    parser.add_argument("--only", default="", help="comma-separated model file names")
    options = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(HERE, "module_corpus", "models", "*.py")))
    if options.only:
        wanted = set(options.only.split(","))
        paths = [p for p in paths if os.path.basename(p)[:-3] in wanted]
    systems = ["cdynamo"] + (["torch.compile"] if options.compare else [])
    results = {system: {} for system in systems}
    print("| model | " + " | ".join(systems) + " |")
    print("|---|" + "---|" * len(systems))
    for path in paths:
        name = os.path.basename(path)[:-3]
        cells = []
        for system in systems:
            results[system][name] = run_isolated(path, system)
            ok, why = results[system][name]
            cells.append("one graph" if ok else why.replace("|", "/"))
            if ok is None:
                break  # eager itself fails: the row is not counted
        if results[systems[0]][name][0] is None:
            for system in systems:
                results[system].pop(name, None)
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print()
    for system in systems:
        counted = results[system]
        print(f"{system}: {sum(bool(ok) for ok, _ in counted.values())} / {len(counted)} in one graph, equal to eager "
              f"({len(paths) - len(counted)} not counted: eager fails)")


if __name__ == "__main__":
    main()
