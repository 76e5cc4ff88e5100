"""The joint graph's common-subexpression elimination (inductor/joint_cse.py): what it merges and
what it must keep apart, on aten graphs made by make_fx, and training through it equal to eager."""
import os
import subprocess
import sys
import textwrap

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from cdynamo.inductor.joint_cse import eliminate_common_subexpressions

aten = torch.ops.aten


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def merged(fn, *args, forward_outputs=None):
    gm = make_fx(fn)(*args)
    outputs = gm.graph.output_node().args[0]
    if forward_outputs is None:  # every output a forward one
        forward_outputs = len(outputs) if isinstance(outputs, (tuple, list)) else 1
    count = eliminate_common_subexpressions(gm, forward_outputs)
    gm.graph.lint()
    gm.recompile()
    return gm, count


def test_repeated_pure_operations_merge_and_the_results_stay_eagers():
    def fn(x):
        a, b = x.sin() * 2, x.sin() * 2
        return (a + b).sum(), torch.cat([x.cos(), x.cos()]).mean()

    x = torch.randn(4)
    gm, count = merged(fn, x)
    assert count == 3  # the second sin, its * 2, the second cos
    assert targets(gm).count(aten.sin.default) == 1 and targets(gm).count(aten.cos.default) == 1
    for got, want in zip(gm(x), fn(x)):
        torch.testing.assert_close(got, want)


def test_random_uninitialized_and_returned_values_stay_apart():
    def fn(x):
        noise = torch.rand_like(x) + torch.rand_like(x)  # two draws, as eager makes
        scratch = torch.empty(3), torch.empty(3)
        return noise, x + 1, x + 1, scratch  # two outputs: two tensors, as in eager

    gm, count = merged(fn, torch.randn(3))
    assert count == 0
    assert targets(gm).count(aten.rand_like.default) == 2 and targets(gm).count(aten.empty.memory_format) == 2
    first, second = gm(torch.zeros(3))[1:3]
    assert first is not second


def test_arguments_python_calls_equal_but_torch_does_not_stay_apart():
    def fn(x):
        return x * 0.0, x * -0.0, x.add(1), x.add(1.0), x.add(True)

    gm, count = merged(fn, torch.randn(3))
    assert count == 0
    got = gm(-torch.ones(3))
    assert torch.equal(torch.signbit(got[0]), torch.ones(3, dtype=torch.bool))
    assert torch.equal(torch.signbit(got[1]), torch.zeros(3, dtype=torch.bool))


def test_reads_on_either_side_of_a_write_stay_apart():
    def fn(x):
        before = x * 2
        x.add_(1)
        return before + x * 2

    gm, count = merged(fn, torch.randn(3))
    assert count == 0
    x = torch.randn(3)
    assert torch.equal(gm(x.clone()), fn(x.clone()))


def test_a_forward_value_is_not_merged_into_one_the_backward_needs():
    def fn(x):
        return x.exp().sum(), x.exp() * 3  # the second output stands for a backward output

    gm, count = merged(fn, torch.randn(3), forward_outputs=1)
    assert count == 0 and targets(gm).count(aten.exp.default) == 2


def test_training_compiles_never_import_torchs_inductor():
    # The partitioner's own pass would import torch._inductor's pattern matcher (about a second).
    code = textwrap.dedent("""
        import sys, torch, cdynamo
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        x = torch.randn(3, 4)
        cdynamo.compile(model, backend="inductor")(x).sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, model.parameters()))
        print(sorted(name for name in sys.modules if name.startswith("torch._inductor.")))
    """)
    python_dir = os.path.join(os.path.dirname(__file__), "..", "..", "..", "python")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(python_dir))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    imported = result.stdout.strip().splitlines()[-1]
    assert "pattern_matcher" not in imported and "lowering" not in imported
