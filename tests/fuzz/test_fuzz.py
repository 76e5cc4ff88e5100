# CI differential fuzzing: a fixed seed range of generated programs, eager vs cdynamo's "eager" and "inductor" backends.
# Assumes the extension is built; findings are written as standalone repros under CDYNAMO_FUZZ_FINDINGS (default build/fuzz-findings).
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_harness  # noqa: E402
import fuzzlib  # noqa: E402

# 0..CI_SEEDS-1; measured to take under 3 minutes on 2 cores with both backends (see bench/README.md).
CI_SEEDS = int(os.environ.get("CDYNAMO_FUZZ_SEEDS", "200"))
FINDINGS_DIR = os.environ.get("CDYNAMO_FUZZ_FINDINGS",
                              os.path.join(os.path.dirname(fuzzlib.REPO_PYTHON_DIR), "build", "fuzz-findings"))


def test_generator_is_deterministic():
    assert fuzzlib.generate_source(1234) == fuzzlib.generate_source(1234)
    assert fuzzlib.generate_source(1234) != fuzzlib.generate_source(1235)


# Seeds whose programs found inductor bugs in the 10,000-program run on the GPU machine
# (bench/README.md), all fixed since: kept as regression programs while the generator is unchanged.
FOUND_IN_LONG_RUNS = (
    200, 251, 414, 416, 435, 565, 1193, 1277, 1699, 1777, 1852, 1952, 2027, 2212, 2292, 2651, 2758,
    3118, 3170, 3223, 3357, 3359, 3488, 3616, 3640, 3886, 4349, 4465, 4567, 4673, 4726, 5164, 5215,
    5454, 5482, 5989, 5993, 6082, 6174, 6355, 6416, 7094, 7119, 7791, 8164, 8347, 8427, 8773, 8938,
    9250, 9987,
)


def test_fixed_seed_range():
    seeds = sorted(set(range(CI_SEEDS)) | set(FOUND_IN_LONG_RUNS))
    programs = [(seed, fuzzlib.generate_source(seed)) for seed in seeds]
    with ThreadPoolExecutor(2) as pool:  # one child per backend at a time: the two cores
        runs = list(pool.map(lambda backend: fuzzlib.run_programs(programs, backend, batch_size=len(programs)),
                             ["eager", "inductor"]))
    sources = dict(programs)
    findings = [o for outcomes in runs for o in outcomes if o.status != "pass"]
    paths = [fuzzlib.save_finding(FINDINGS_DIR, o, sources[o.seed]) for o in findings]
    report = [f"{o.status} {o.backend} seed {o.seed}: {fuzzlib.finding_signature(o)}\n  repro: {p}\n"
              + "\n".join("    " + line for line in "\n".join(map(str, o.lines)).splitlines()[:12])
              for o, p in zip(findings, paths)]
    assert not findings, f"{len(findings)} fuzzer findings:\n" + "\n".join(report)


# The Triton target through Triton's interpreter (children run with CDYNAMO_CPU_BACKEND=triton):
# a shorter range, it interprets slowly, plus the seeds its own long runs found (all fixed).
TRITON_SEEDS = int(os.environ.get("CDYNAMO_FUZZ_TRITON_SEEDS", "120"))
FOUND_ON_THE_TRITON_TARGET = (11, 111, 126, 202, 347, 750, 1087)


def test_fixed_seed_range_on_the_triton_target(monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setenv("CDYNAMO_CPU_BACKEND", "triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seeds = sorted(set(range(TRITON_SEEDS)) | set(FOUND_ON_THE_TRITON_TARGET))
    programs = [(seed, fuzzlib.generate_source(seed)) for seed in seeds]
    outcomes = fuzzlib.run_programs(programs, "inductor", batch_size=len(programs))
    sources = dict(programs)
    findings = [o for o in outcomes if o.status != "pass"]
    paths = [fuzzlib.save_finding(FINDINGS_DIR, o, sources[o.seed]) for o in findings]
    report = [f"{o.status} triton seed {o.seed}: {fuzzlib.finding_signature(o)}\n  repro: {p}" for o, p in zip(findings, paths)]
    assert not findings, f"{len(findings)} fuzzer findings on the Triton target:\n" + "\n".join(report)


# Hand-written programs in the generator's format for bugs found before or by the fuzzer; each one
# must pass like the generated ones (they fail until the bug is fixed: they are not expected failures).
TARGETED = {
    "clone_of_input": ("[torch.randn(3, 4, generator=g)]", "def fn(y):\n    return y.clone()"),
    "view_of_mutated_input": ("[torch.randn(3, 4, generator=g)]",
                              "def fn(y):\n    v = y[0]\n    y.add_(1)\n    return v"),
    "inplace_result_is_input": ("[torch.randn(3, 4, generator=g)]", "def fn(a):\n    return a.fill_(1.5)"),
    "dead_output_after_graph_break": (
        "[torch.randn(4, generator=g, requires_grad=True), torch.randn(4, generator=g, requires_grad=True)]",
        "def fn(w, x):\n    y = x * 2\n    dead = w * 2\n    print('break', file=SINK)\n    return y * 3"),
    "conv_and_linear_1d_no_grad": (
        "[torch.randn(4, generator=g), torch.randn(1, 1, 4, 4, generator=g), torch.nn.Conv2d(1, 2, 3), "
        "torch.nn.Linear(4, 2)]",
        "def fn(x, img, conv, lin):\n    with torch.no_grad():\n        return conv(img).sum() + lin(x)"),
    "inplace_on_saved_tensor": ("[torch.randn(3, 4, generator=g, requires_grad=True)]",
                                "def fn(a):\n    t = a.sigmoid()\n    t.mul_(2)\n    return t"),
    "popped_input_list_item": ("[torch.randn(2, generator=g), [torch.ones(2), torch.zeros(2)]]",
                               "def fn(a, lst):\n    t = a.sigmoid()\n    return lst.pop()"),
    "softmax_of_0d": ("[torch.randn(3, 4, generator=g)]",
                      "def fn(a):\n    return torch.softmax(a.max(), dim=-1) + 0.5"),
    "amax_of_0d": ("[torch.randn(3, 4, generator=g)]", "def fn(a):\n    return a.norm().amax(dim=-1) + 1"),
}


def targeted_source(name):
    inputs, body = TARGETED[name]
    # torch.manual_seed: module constructors draw their weights from the global generator.
    return (fuzzlib.PRELUDE + "\n\ndef make_inputs(variant):\n    g = torch.Generator().manual_seed(variant)\n"
            "    torch.manual_seed(variant)\n"
            f"    return {inputs}\n\n\n{body}\n")


def test_targeted_programs():
    programs = [(i, targeted_source(name)) for i, name in enumerate(TARGETED)]
    names = list(TARGETED)
    findings = []
    with ThreadPoolExecutor(2) as pool:
        runs = pool.map(lambda backend: fuzzlib.run_programs(programs, backend, batch_size=len(programs)),
                        ["eager", "inductor"])
    for backend, outcomes in zip(["eager", "inductor"], runs):
        for outcome in outcomes:
            if outcome.status != "pass":
                path = fuzzlib.save_finding(FINDINGS_DIR, fuzzlib.Outcome(names[outcome.seed], backend, outcome.status,
                                                                          outcome.lines), programs[outcome.seed][1])
                findings.append(f"{names[outcome.seed]} ({backend}): {fuzzlib.finding_signature(outcome)}\n  {path}")
    assert not findings, "targeted programs with findings:\n" + "\n".join(findings)


# The harness itself must notice each kind of divergence: backends that are wrong on purpose.
def copying_backend(gm, example_inputs):
    """Returns copies of every tensor output: views and inputs returned lose their aliasing."""
    def run(*args):
        return tuple(t.clone() if hasattr(t, "clone") else t for t in gm(*args))
    return run


def input_returning_backend(gm, example_inputs):
    """Returns the first input where an output has its shape: a clone that is not one."""
    def run(*args):
        outs = gm(*args)
        return tuple(args[0] if getattr(o, "shape", None) == args[0].shape else o for o in outs)
    return run


def detached_backend(gm, example_inputs):
    def run(*args):
        return tuple(o.detach() if hasattr(o, "detach") else o for o in gm(*args))
    return run


PROGRAM = fuzzlib.PRELUDE + '''
def make_inputs(variant):
    g = torch.Generator().manual_seed(variant)
    return [torch.randn(3, 4, generator=g, requires_grad=True), torch.randn(3, 4, generator=g)]


def fn(w, y):
    BODY
'''


@pytest.mark.parametrize("body, backend, expected", [
    ("v = y[0]\n    y.add_(1)\n    return v", copying_backend, "eager shared storage, compiled separate"),
    ("return y.clone()", input_returning_backend, "eager separate, compiled same object"),
    ("return (w * y).sum()", detached_backend, "requires_grad True vs False"),
])
def test_harness_detects(body, backend, expected, monkeypatch):
    import cdynamo

    monkeypatch.setattr(fuzz_harness, "compile_with", lambda _, fn: cdynamo.optimize(backend)(fn))
    status, lines = fuzz_harness.check_program(PROGRAM.replace("BODY", body), "eager")
    assert status == "mismatch" and expected in "\n".join(lines), lines
