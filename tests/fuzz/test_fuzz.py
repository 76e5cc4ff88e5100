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
CI_SEEDS = int(os.environ.get("CDYNAMO_FUZZ_SEEDS", "250"))
FINDINGS_DIR = os.environ.get("CDYNAMO_FUZZ_FINDINGS",
                              os.path.join(os.path.dirname(fuzzlib.REPO_PYTHON_DIR), "build", "fuzz-findings"))


def test_generator_is_deterministic():
    assert fuzzlib.generate_source(1234) == fuzzlib.generate_source(1234)
    assert fuzzlib.generate_source(1234) != fuzzlib.generate_source(1235)


def test_fixed_seed_range():
    programs = [(seed, fuzzlib.generate_source(seed)) for seed in range(CI_SEEDS)]
    with ThreadPoolExecutor(2) as pool:  # one child per backend at a time: the two cores
        runs = list(pool.map(lambda backend: fuzzlib.run_programs(programs, backend, batch_size=CI_SEEDS),
                             ["eager", "inductor"]))
    sources = dict(programs)
    findings = [o for outcomes in runs for o in outcomes if o.status != "pass"]
    paths = [fuzzlib.save_finding(FINDINGS_DIR, o, sources[o.seed]) for o in findings]
    report = [f"{o.status} {o.backend} seed {o.seed}: {fuzzlib.finding_signature(o)}\n  repro: {p}\n"
              + "\n".join("    " + line for line in "\n".join(map(str, o.lines)).splitlines()[:12])
              for o, p in zip(findings, paths)]
    assert not findings, f"{len(findings)} fuzzer findings:\n" + "\n".join(report)


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
