"""The kernel cache: a second process loads kernels from disk and compiles nothing, kernels of one
program compile in parallel, compile errors name the generated source, slow compiles print
progress, concurrent processes share the cache safely, and async compile falls back then switches."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import weakref

import pytest
import torch

from cpp_support import C, L, T, buffer, kernel_cache_dir, op  # noqa: F401
from cdynamo import config

f32 = torch.float32
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def program(n_kernels, tag=0.0, size=64):
    """n_kernels independent kernels; `tag` makes the sources (and so the cache keys) unique."""
    buffers = [buffer("x", [size], "input")]
    steps, outputs = [], []
    for k in range(n_kernels):
        buffers.append(buffer(f"y{k}", [size], "output"))
        outputs.append(f"y{k}")
        body = op("Add", f32, op("Mul", f32, L("x", "i0"), C(float(k + 1))), C(float(tag)))
        steps.append({"kernel": f"kernel{k}", "ranges": [size], "nodes": [{"pointwise": f"y{k}", "body": body}]})
    return {"buffers": buffers, "outputs": outputs, "steps": steps}


def check(outputs, x, tag):
    for k, y in enumerate(outputs):
        assert torch.equal(y, x * (k + 1) + tag)


def run_child(code, cache_dir, **env):
    """Runs code in a fresh interpreter; it prints one JSON line of results."""
    full_env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), CDYNAMO_CACHE_DIR=str(cache_dir), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True, text=True, timeout=300)


CHILD = """
    import json, sys, torch
    sys.path.insert(0, {tests!r})
    import test_cache
    from cdynamo._C import _testing as T
    x = torch.arange(64, dtype=torch.float32)
    outs = T.run_program(test_cache.program(3, tag={tag}), [x])
    test_cache.check(outs, x, {tag})
    print(json.dumps(T.kernel_cache_stats()))
"""


def test_second_process_hits_the_disk_cache_and_compiles_nothing(tmp_path):
    code = CHILD.format(tests=os.path.dirname(__file__), tag=1.25)
    first = run_child(code, tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout.splitlines()[-1]) == {"compiled": 3, "disk_hits": 0, "memory_hits": 0}
    libraries = sorted(p for p in tmp_path.rglob("*.so"))
    mtimes = [p.stat().st_mtime_ns for p in libraries]
    second = run_child(code, tmp_path)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout.splitlines()[-1]) == {"compiled": 0, "disk_hits": 3, "memory_hits": 0}
    assert [p.stat().st_mtime_ns for p in sorted(tmp_path.rglob("*.so"))] == mtimes  # nothing rewritten
    # the cache holds sources next to the prelude (and a shared one), and no temporary files
    assert len(libraries) == 3 and len(list(tmp_path.rglob("kernel.cpp"))) == 3
    assert len(list(tmp_path.rglob("cd_prelude.h"))) == 4
    assert not [p for p in tmp_path.rglob("*") if ".tmp." in p.name]


def test_memory_cache_in_process(tmp_path):
    with config.patch(cache_dir=str(tmp_path)):
        T.reset_kernel_cache_stats()
        x = torch.randn(64)
        check(T.run_program(program(2, tag=2.5), [x]), x, 2.5)
        check(T.run_program(program(2, tag=2.5), [x]), x, 2.5)
        assert T.kernel_cache_stats() == {"compiled": 2, "disk_hits": 0, "memory_hits": 2}
        T.clear_kernel_memory_cache()
        check(T.run_program(program(2, tag=2.5), [x]), x, 2.5)
        assert T.kernel_cache_stats() == {"compiled": 2, "disk_hits": 2, "memory_hits": 2}


def fake_compiler(tmp_path, body):
    """A compiler wrapper (found through $CDYNAMO_CXX) that runs `body` then the real g++."""
    path = tmp_path / "fake-gxx"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_kernels_of_one_program_compile_in_parallel(tmp_path):
    log = tmp_path / "spans.log"
    cxx = fake_compiler(tmp_path, f'case "$1" in --version) exec g++ "$@";; esac\n'
                                  f'echo "start $(date +%s.%N)" >> {log}\nsleep 0.5\ng++ "$@"; rc=$?\n'
                                  f'echo "end $(date +%s.%N)" >> {log}\nexit $rc')
    code = CHILD.format(tests=os.path.dirname(__file__), tag=3.5)
    result = run_child(code, tmp_path / "cache", CDYNAMO_CXX=cxx)
    assert result.returncode == 0, result.stderr
    events = sorted((float(t), kind) for kind, t in (line.split() for line in log.read_text().splitlines()))
    running, peak = 0, 0
    for _, kind in events:
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    cores = len(os.sched_getaffinity(0))
    assert peak == min(3, cores)  # as many g++ processes as cores, never more


def test_compile_error_names_the_generated_source(tmp_path):
    cxx = fake_compiler(tmp_path, 'case "$1" in --version) exec g++ "$@";; esac\n'
                                  'for a in "$@"; do case "$a" in *.cpp) src="$a";; esac; done\n'
                                  'echo "$src:12:3: error: something went wrong" >&2\nexit 1')
    code = """
        import sys, torch
        sys.path.insert(0, {tests!r})
        import test_cache
        from cdynamo._C import _testing as T
        try:
            T.run_program(test_cache.program(1, tag=4.5), [torch.zeros(64)])
        except RuntimeError as e:
            print(str(e))
    """.format(tests=os.path.dirname(__file__))
    result = run_child(code, tmp_path / "cache", CDYNAMO_CXX=cxx)
    assert result.returncode == 0, result.stderr
    message = result.stdout
    assert "failed to compile kernel kernel0 (generated source: " in message
    source = message.split("generated source: ")[1].split(")")[0]
    assert source.endswith("/kernel.cpp") and os.path.exists(source)
    assert f"{source}:12:3: error: something went wrong" in message


def test_slow_compiles_report_progress(tmp_path):
    cxx = fake_compiler(tmp_path, 'case "$1" in --version) exec g++ "$@";; esac\nsleep 2.6\nexec g++ "$@"')
    result = run_child(CHILD.format(tests=os.path.dirname(__file__), tag=5.5), tmp_path / "cache", CDYNAMO_CXX=cxx)
    assert result.returncode == 0, result.stderr
    assert "cdynamo: compiling 3 C++ kernels with" in result.stderr
    assert "cdynamo: compiled 3 C++ kernels in" in result.stderr


def test_concurrent_processes_share_the_cache(tmp_path):
    code = CHILD.format(tests=os.path.dirname(__file__), tag=6.5)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), CDYNAMO_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert len(list(tmp_path.rglob("*.so"))) == 3
    assert not [p for p in tmp_path.rglob("*") if ".tmp." in p.name]


def test_async_compile_runs_eagerly_then_switches(tmp_path):
    calls = []

    def eager(x):
        calls.append(1)
        return tuple(x * (k + 1) + 7.5 for k in range(2))

    with config.patch(cache_dir=str(tmp_path), async_compile=True):
        fn = T.compile_program(program(2, tag=7.5), None, eager)
    x = torch.randn(64)
    started = time.perf_counter()
    check(fn(x), x, 7.5)  # g++ takes far longer than this call: the fallback answered
    assert time.perf_counter() - started < 0.2 and calls == [1] and not fn.ready
    assert fn.wait(120) and fn.ready
    check(fn(x), x, 7.5)
    check(fn(x), x, 7.5)
    assert calls == [1]  # compiled code answered the later calls
    probe = weakref.ref(eager)
    del eager
    assert probe() is None  # the fallback (maybe a whole module) is released once compiled code runs
    # without a fallback (or with the knob off) compiling is synchronous
    with config.patch(cache_dir=str(tmp_path), async_compile=True):
        sync = T.compile_program(program(2, tag=7.5))
    assert not hasattr(sync, "wait")


def test_async_compile_failure_warns_and_keeps_the_fallback(tmp_path):
    cxx = fake_compiler(tmp_path, 'case "$1" in --version) exec g++ "$@";; esac\nexit 1')
    with config.patch(cache_dir=str(tmp_path / "cache"), async_compile=True, cxx=cxx):
        fn = T.compile_program(program(1, tag=8.5), None, lambda x: (x + 1,))
    assert not fn.wait(120)
    x = torch.randn(64)
    with pytest.warns(RuntimeWarning, match="background compile failed"):
        assert torch.equal(fn(x)[0], x + 1)
    assert torch.equal(fn(x)[0], x + 1)


def _aten_graph_of(fn, x):
    from cdynamo.inductor.compile_fx import aten_graph

    return aten_graph(torch.fx.symbolic_trace(fn), [x])


def test_kernels_built_behind_are_waited_for_by_the_first_call(tmp_path):
    # Training halves on the GPU: the compile returns while the kernels build; no call runs eagerly.
    from cdynamo import _C

    calls = []
    x = torch.randn(64)
    graph = _aten_graph_of(lambda x: (x.sin() * 3.25 + 1.5,), x)
    with config.patch(cache_dir=str(tmp_path)):
        fn = _C._inductor_compile(graph, lambda x: calls.append(1), False, "cpp", "cpu", True)
        assert not fn.ready  # g++ takes far longer than returning
        torch.testing.assert_close(fn(x)[0], x.sin() * 3.25 + 1.5)
        assert fn.ready
        torch.testing.assert_close(fn(x)[0], x.sin() * 3.25 + 1.5)
    assert calls == []


def test_kernels_built_behind_that_fail_run_the_fallback_with_a_warning(tmp_path):
    from cdynamo import _C

    cxx = fake_compiler(tmp_path, 'case "$1" in --version) exec g++ "$@";; esac\nexit 1')
    x = torch.randn(64)
    graph = _aten_graph_of(lambda x: (x.cos() * 2.75,), x)
    with config.patch(cache_dir=str(tmp_path / "cache"), cxx=cxx):
        fn = _C._inductor_compile(graph, lambda x: (x + 1,), False, "cpp", "cpu", True)
    with pytest.warns(RuntimeWarning, match="background compile failed"):
        assert torch.equal(fn(x)[0], x + 1)
    assert torch.equal(fn(x)[0], x + 1)


def test_many_kernels_precompile_the_prelude_first(tmp_path):
    with config.patch(cache_dir=str(tmp_path)):
        x = torch.randn(64)
        check(T.run_program(program(8, tag=9.5), [x]), x, 9.5)
    assert len(list(tmp_path.rglob("cd_prelude.h.gch"))) == 1
    assert not [p for p in tmp_path.rglob("*") if ".tmp." in p.name or p.suffix == ".log"]


def test_identical_kernels_compile_once(tmp_path):
    """Kernels that differ only in their buffers (the layers of a model) are one source."""
    n = 64
    buffers = [buffer("x", [n], "input")]
    steps = []
    prev = "x"
    for k in range(4):
        buffers.append(buffer(f"h{k}", [n], "output" if k == 3 else "intermediate"))
        body = op("Add", f32, op("Mul", f32, L(prev, "i0"), C(0.5)), C(1.0))
        steps.append({"kernel": f"layer{k}", "ranges": [n], "nodes": [{"pointwise": f"h{k}", "body": body}]})
        prev = f"h{k}"
    prog = {"buffers": buffers, "outputs": ["h3"], "steps": steps}
    sources = T.generate_cpp(prog)
    assert len(set(sources.values())) == 1
    with config.patch(cache_dir=str(tmp_path)):
        T.reset_kernel_cache_stats()
        x = torch.randn(n)
        (y,) = T.run_program(prog, [x])
        assert T.kernel_cache_stats()["compiled"] == 1
    ref = x
    for _ in range(4):
        ref = ref * 0.5 + 1
    assert torch.equal(y, ref)


def test_a_missing_compiler_says_how_to_choose_another(tmp_path):
    with config.patch(cache_dir=str(tmp_path), cxx=str(tmp_path / "no-such-cxx")):
        with pytest.raises(RuntimeError, match=r"cannot run the C\+\+ compiler .*no-such-cxx.*CDYNAMO_CXX / cdynamo.config.cxx"):
            T.run_program(program(1, tag=10.5), [torch.zeros(64)])


def test_each_compiler_has_its_own_kernels_and_precompiled_prelude(tmp_path):
    """g++ and clang++ in one cache: separate keys and prelude folders (.gch found by g++ itself,
    .pch named with -include-pch for clang), and clang recompiles without a stale .pch."""
    clang = shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++ (make test-clang installs it)")
    log = tmp_path / "clang-args.log"
    cxx = fake_compiler(tmp_path, f'echo "$@" >> {log}\nexec {clang} "$@"')
    x = torch.randn(64)
    for compiler in ("g++", cxx):
        with config.patch(cache_dir=str(tmp_path / "cache"), cxx=compiler):
            check(T.run_program(program(6, tag=11.5), [x]), x, 11.5)
    assert len(list((tmp_path / "cache").rglob("kernel.so"))) == 12
    assert len(list((tmp_path / "cache").rglob("cd_prelude.h.gch"))) == 1
    (pch,) = (tmp_path / "cache").rglob("cd_prelude.h.pch")
    assert "-include-pch" in log.read_text().splitlines()[-1]
    header = pch.parent / "cd_prelude.h"
    later = pch.stat().st_mtime + 100
    os.utime(header, (later, later))  # as if rewritten after the .pch: clang rejects the .pch
    with config.patch(cache_dir=str(tmp_path / "cache"), cxx=cxx):
        check(T.run_program(program(1, tag=12.5), [x]), x, 12.5)
    with_pch, without = log.read_text().splitlines()[-2:]
    assert "-include-pch" in with_pch and "-include-pch" not in without
    assert not [p for p in (tmp_path / "cache").rglob("*") if ".tmp." in p.name or p.suffix == ".log"]
