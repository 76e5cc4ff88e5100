"""The compiled-graph cache: a second process rebuilds compiled graphs from disk and lowers or
compiles nothing, with its own parameter values; other shapes, dtypes, graphs, module attributes,
aliasing and config options miss; corrupt or stale entries are ignored and rewritten."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.fx

import cdynamo
from cdynamo import config, utils
from cdynamo._C import _testing as T
from cdynamo.inductor import graph_cache
from cdynamo.testing import reset_counters

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class MLP(torch.nn.Module):
    def __init__(self, width=8, eps=1e-5):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, 2 * width)
        self.norm = torch.nn.LayerNorm(2 * width, eps=eps)
        self.fc2 = torch.nn.Linear(2 * width, width)
        self.register_buffer("scale", torch.rand(width))

    def forward(self, x):
        # torch.tensor(...) is made while tracing: an entry stores it by value.
        return self.fc2(torch.relu(self.norm(self.fc1(x)))) * self.scale + torch.tensor(0.5)


def compile_and_run(model, x):
    with torch.no_grad():
        return cdynamo.optimize("inductor")(model)(x), model(x)


@pytest.fixture
def fresh(tmp_path):
    """A private cache folder, empty counters, and no compiled code left from earlier tests."""
    cdynamo.reset()
    reset_counters()
    with config.patch(cache_dir=str(tmp_path), async_compile=False, suppress_errors=False, graph_cache=True):
        yield tmp_path
    cdynamo.reset()


def inductor_counts():
    return {k: v for k, v in utils.counters["inductor"].items() if v}


def entries(cache):
    return sorted(p for p in (cache / "graphs").rglob("*") if p.is_file())


def recompile(model, x):
    """Compile again in this process: the code cache forgets, the graph cache does not."""
    cdynamo.reset()
    reset_counters()
    out, expected = compile_and_run(model, x)
    torch.testing.assert_close(out, expected)
    return inductor_counts()


CHILD = """
    import json, sys, torch, cdynamo
    sys.path.insert(0, {tests!r})
    from test_graph_cache import MLP
    from cdynamo import utils
    from cdynamo._C import _testing as T
    torch.manual_seed({seed})  # other parameter values in each process: nothing is baked in
    model = MLP().eval()
    x = torch.randn(4, 8)
    with torch.no_grad():
        out = cdynamo.optimize("inductor")(model)(x)
        ok = torch.allclose(out, model(x), atol=1e-5)
    print(json.dumps({{"ok": ok, "inductor": {{k: v for k, v in utils.counters["inductor"].items() if v}},
                      "kernels": T.kernel_cache_stats(), "timings": sorted(utils.timings)}}))
"""


SYMBOLIC_CHILD = """
    import json, sys, torch, cdynamo
    sys.path.insert(0, {tests!r})
    from test_graph_cache import MLP
    from cdynamo import utils
    torch.manual_seed({seed})
    model = MLP().eval()
    compiled = cdynamo.optimize("inductor", dynamic=True)(model)
    ok = True
    with torch.no_grad():
        for rows in {sizes}:
            x = torch.randn(rows, 8)
            ok = ok and torch.allclose(compiled(x), model(x), atol=1e-5)
    print(json.dumps({{"ok": ok, "inductor": {{k: v for k, v in utils.counters["inductor"].items() if v}},
                      "dynamic": dict(utils.counters["dynamic"])}}))
"""


def run_child(cache, seed, child=CHILD, **fields):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), CDYNAMO_CACHE_DIR=str(cache))
    env.pop("CDYNAMO_GRAPH_CACHE", None)
    code = textwrap.dedent(child.format(tests=os.path.dirname(__file__), seed=seed, **fields))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_second_process_hits_and_compiles_nothing(tmp_path):
    first = run_child(tmp_path, seed=1)
    assert first["ok"]
    assert first["inductor"] == {"graph_cache_miss": 1, "graphs": 1, "graph_cache_store": 1}
    assert first["kernels"]["compiled"] > 0
    assert len(entries(tmp_path)) == 1
    second = run_child(tmp_path, seed=2)
    assert second["ok"]
    assert second["inductor"] == {"graph_cache_hit": 1}  # no aten graph made, nothing lowered
    assert second["kernels"]["compiled"] == 0 and second["kernels"]["disk_hits"] == first["kernels"]["compiled"]
    assert not {"aten_graph", "lower", "schedule", "codegen"} & set(second["timings"])
    assert not [p for p in tmp_path.rglob("*") if ".tmp." in p.name]


def test_a_symbolic_program_is_stored_and_serves_other_sizes_in_the_next_process(tmp_path):
    first = run_child(tmp_path, 1, SYMBOLIC_CHILD, sizes=[3, 5])
    assert first["ok"] and first["dynamic"] == {"symbolic programs": 1}
    assert first["inductor"] == {"graph_cache_miss": 1, "graphs": 1, "graph_cache_store": 1}
    second = run_child(tmp_path, 2, SYMBOLIC_CHILD, sizes=[7, 2, 11])
    assert second["ok"] and second["dynamic"] == {"symbolic programs": 1}
    assert second["inductor"] == {"graph_cache_hit": 1}


def test_a_stored_programs_size_guards_are_replayed_or_miss():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    fake = FakeTensorMode(shape_env=env).from_tensor(torch.randn(5, 3))  # sizes symbolic, hints 5 and 3
    symbol = fake.shape[0].node.expr
    before = len(env.guards)
    assert not graph_cache._replay_guards(graph_cache._encoded_guards([symbol > 10]), [fake])
    assert len(env.guards) == before  # nothing recorded for an entry that misses
    assert graph_cache._replay_guards(graph_cache._encoded_guards([symbol > 2, symbol < 9]), [fake])
    assert [str(g.expr) for g in list(env.guards)[before:]] == [str(symbol > 2), str(symbol < 9)]


def test_concurrent_processes_share_entries(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), CDYNAMO_CACHE_DIR=str(tmp_path))
    code = textwrap.dedent(CHILD.format(tests=os.path.dirname(__file__), seed=3))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out.splitlines()[-1])["ok"]
    assert len(entries(tmp_path)) == 1 and not [p for p in tmp_path.rglob("*") if ".tmp." in p.name]
    assert run_child(tmp_path, seed=4)["inductor"] == {"graph_cache_hit": 1}


def test_same_graph_hits_in_process_and_other_inputs_miss(fresh):
    model = MLP().eval()
    assert recompile(model, torch.randn(4, 8)) == {"graph_cache_miss": 1, "graphs": 1, "graph_cache_store": 1}
    assert recompile(model, torch.randn(4, 8)) == {"graph_cache_hit": 1}
    assert recompile(MLP().eval(), torch.randn(4, 8)) == {"graph_cache_hit": 1}  # other weights, same graph
    assert recompile(model, torch.randn(6, 8))["graph_cache_miss"] == 1  # shape
    assert recompile(model, torch.randn(8, 4).t())["graph_cache_miss"] == 1  # strides
    assert recompile(model.double(), torch.randn(4, 8, dtype=torch.float64))["graph_cache_miss"] == 1  # dtype
    assert len(entries(fresh)) == 4


def test_other_graphs_attributes_and_config_miss(fresh):
    x = torch.randn(4, 8)
    assert recompile(MLP().eval(), x)["graph_cache_miss"] == 1
    assert recompile(MLP(eps=1e-3).eval(), x)["graph_cache_miss"] == 1  # a module attribute
    assert recompile(MLP(width=8).train(), x)["graph_cache_miss"] == 1  # the training flag
    with config.patch(verify_ir=not config.verify_ir):
        assert recompile(MLP().eval(), x)["graph_cache_miss"] == 1  # a config option
    reset_counters()
    with torch.no_grad():
        fn = cdynamo.optimize("inductor")(lambda a: torch.relu(a) + 1)
        torch.testing.assert_close(fn(x), torch.relu(x) + 1)
    assert utils.counters["inductor"]["graph_cache_miss"] == 1  # another graph
    assert recompile(MLP().eval(), x) == {"graph_cache_hit": 1}


def test_corrupt_entries_are_ignored_and_rewritten(fresh):
    model, x = MLP().eval(), torch.randn(4, 8)
    recompile(model, x)
    (path,) = entries(fresh)
    good = path.read_bytes()
    for bad in (b"", good[:40], good[:-7], good.replace(b'"program"', b'"programm"'), b"garbage" * 100,
                good[:100] + bytes([good[100] ^ 1]) + good[101:]):
        path.write_bytes(bad)
        counts = recompile(model, x)  # results checked against eager inside
        assert counts["graph_cache_invalid"] == 1, counts
        assert counts["graph_cache_store"] == 1 and path.read_bytes() == good
    assert recompile(model, x) == {"graph_cache_hit": 1}


def test_a_missing_kernel_is_a_miss(fresh):
    model, x = MLP().eval(), torch.randn(4, 8)
    recompile(model, x)
    for library in (fresh / "kernels").rglob("kernel.so"):
        library.unlink()
    T.clear_kernel_memory_cache()
    counts = recompile(model, x)
    assert counts["graph_cache_miss"] == 1 and counts["graphs"] == 1


def test_off_switch(fresh):
    with config.patch(graph_cache=False):
        assert recompile(MLP().eval(), torch.randn(4, 8)) == {"graphs": 1}
    assert not (fresh / "graphs").exists()


# ---------------------------------------------------------------------------------------------
# The key itself.


def key_of(model, *inputs, mode=torch.no_grad):
    captured = []

    def backend(gm, example_inputs):
        captured.append(graph_cache.graph_key(gm, example_inputs))
        return gm.forward

    cdynamo.reset()
    with mode():
        cdynamo.optimize(backend)(model)(*inputs)
    cdynamo.reset()
    (key,) = captured
    return key


class Tied(torch.nn.Module):
    def __init__(self, tie):
        super().__init__()
        self.a = torch.nn.Linear(4, 4, bias=False)
        self.b = torch.nn.Linear(4, 4, bias=False)
        if tie:
            self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_key_sees_aliasing_and_grad_mode():
    x = torch.randn(2, 4)
    untied, tied = key_of(Tied(False), x), key_of(Tied(True), x)
    assert untied and tied and untied != tied  # one tensor read twice is not two tensors
    assert key_of(Tied(False), x) == untied
    assert key_of(Tied(False), x, mode=torch.inference_mode) != untied
    captured = []

    def backend(gm, example_inputs):
        captured.append(graph_cache.graph_key(gm, example_inputs))
        return gm.forward

    cdynamo.reset()
    with torch.enable_grad():
        cdynamo.optimize(backend)(Tied(False))(x)
    cdynamo.reset()
    assert captured[0] != untied


def test_graphs_without_an_exact_description_are_not_cached():
    graph = torch.fx.Graph()
    a = graph.placeholder("a")
    graph.output(graph.call_function(lambda t: t + 1, (a,)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    before = utils.counters["inductor"]["graph_cache_uncacheable"]
    assert graph_cache.graph_key(gm, [torch.randn(2)]) is None
    assert utils.counters["inductor"]["graph_cache_uncacheable"] == before + 1
    model = torch.nn.Linear(2, 2)
    model.register_forward_hook(lambda *args: None)
    graph = torch.fx.Graph()
    a = graph.placeholder("a")
    graph.output(graph.call_module("m", (a,)))
    root = torch.nn.Module()
    root.m = model
    assert graph_cache.graph_key(torch.fx.GraphModule(root, graph), [torch.randn(2)]) is None
