"""Cyclic and very deep Python data never hang the tracer: a list or dict that contains itself is
traced (one value per object, guarded to stay the same object), data nested deeper than the
tracer follows is a graph break with a reason. Each case runs in a child process with a timeout,
so that a hang fails the test instead of the suite."""
import json
import multiprocessing
import sys
import textwrap

import pytest

import cdynamo

PRELUDE = """
import json, sys
import torch
import cdynamo
from cdynamo import config
from cdynamo.testing import CompileCounterWithBackend, same
from cdynamo.utils import counters

config.suppress_errors = False
cnt = CompileCounterWithBackend(sys.argv[1])

def report(**observed):
    observed["graphs"] = cnt.frame_count
    observed["breaks"] = dict(counters["graph_break"])
    observed["frames_compiled"] = counters["stats"]["frames_compiled"]
    observed["recompiles"] = dict(counters["recompiles"])
    print("RESULT " + json.dumps(observed))
"""


# Children fork from one server process that has imported torch and cdynamo (and what a first
# compile imports): each case still starts from a process that has traced nothing, without paying
# the imports again (about 3 s a case on 2 cores).
_PRELOAD = ["torch", "torch.fx", "cdynamo", "cdynamo.testing", "cdynamo.inductor.compile_fx",
            "torch._subclasses.fake_tensor", "torch.fx.experimental.proxy_tensor"]
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(_PRELOAD)


def _child_main(script, backend, conn):
    """In the child: runs the script as __main__ with argv [backend]; sends back what it printed."""
    import contextlib
    import io
    import traceback

    sys.argv = ["-c", backend]
    printed, rc = io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(script, "<child>", "exec"), {"__name__": "__main__"})
    except BaseException:  # noqa: B036 - whatever the case raises is the test's failure message
        printed.write(traceback.format_exc())
        rc = 1
    conn.send((rc, printed.getvalue()))
    conn.close()


def run_child(body, backend="eager", timeout=60):
    """Runs PRELUDE + body in a new process; returns what its report(...) printed."""
    script = PRELUDE + textwrap.dedent(body)
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child_main, args=(script, backend, sender))
    child.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            pytest.fail(f"the child process hung (no result within {timeout} s)")
        rc, stdout = receiver.recv()
    except EOFError:
        child.join(5)
        pytest.fail(f"the child process died (exit code {child.exitcode}) before reporting")
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert rc == 0 and lines, f"child failed (rc {rc}):\n{stdout[-4000:]}"
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_list_containing_itself_is_traced_and_cached(backend):
    out = run_child(
        """
        def f(x, xs):
            return x * 2 + xs[0] + xs[1][1][0] * len(xs[1])

        def make():
            xs = [torch.ones(4)]
            xs.append(xs)
            return xs

        x = torch.randn(4)
        xs = make()
        compiled = cdynamo.optimize(cnt)(f)
        first = compiled(x, xs)
        second = compiled(x, make())
        report(equal=bool(same(first, f(x, xs)) and same(second, f(x, make()))),
               intact=len(xs) == 2 and xs[1] is xs)
        """,
        backend,
        timeout=60 if backend == "eager" else 300,
    )
    assert out["equal"] and out["intact"], out
    assert out["graphs"] == 1 and out["breaks"] == {}, out
    assert out["frames_compiled"] == 1 and out["recompiles"] == {}, out


def test_cyclic_list_changed_in_place_as_eager_leaves_it():
    out = run_child(
        """
        def f(x, xs):
            xs.append(x * 3)
            xs[1].append(len(xs))
            return xs[0] + x

        def make():
            xs = [torch.ones(2)]
            xs.append(xs)
            return xs

        x = torch.randn(2)
        mine, theirs = make(), make()
        compiled = cdynamo.optimize(cnt)(f)
        result, expected = compiled(x, mine), f(x, theirs)
        compiled(x, make())  # same structure, new objects: the same cache entry
        report(equal=bool(same(result, expected)),
               same_shape=len(mine) == len(theirs) == 4 and mine[1] is mine and mine[3] == theirs[3],
               appended=bool(same(mine[2], theirs[2])))
        """
    )
    assert out["equal"] and out["same_shape"] and out["appended"], out
    assert out["graphs"] == 1 and out["breaks"] == {} and out["frames_compiled"] == 1, out


def test_a_different_structure_recompiles():
    # The guard that a list contains itself fails for a list that merely looks alike.
    out = run_child(
        """
        def f(x, xs):
            return x + xs[1][0]

        cyclic = [torch.ones(2)]
        cyclic.append(cyclic)
        other = [torch.ones(2), [torch.zeros(2)]]
        compiled = cdynamo.optimize(cnt)(f)
        x = torch.randn(2)
        first = compiled(x, cyclic)
        second = compiled(x, other)
        report(equal=bool(same(first, f(x, cyclic)) and same(second, f(x, other))))
        """
    )
    assert out["equal"], out
    assert out["frames_compiled"] == 2 and len(out["recompiles"]) == 1, out


def test_objects_pointing_at_each_other():
    out = run_child(
        """
        class Node:
            def __init__(self, weight):
                self.weight = weight
                self.other = None

        def f(x, a):
            return x * a.other.weight + a.other.other.weight + a.other.other.other.other.weight

        def make():
            a, b = Node(torch.full((3,), 2.0)), Node(torch.full((3,), 5.0))
            a.other, b.other = b, a
            return a

        x = torch.randn(3)
        a = make()
        compiled = cdynamo.optimize(cnt)(f)
        first, second = compiled(x, a), compiled(x, make())
        report(equal=bool(same(first, f(x, a)) and same(second, f(x, make()))),
               intact=a.other.other is a)
        """
    )
    assert out["equal"] and out["intact"], out
    assert out["graphs"] == 1 and out["breaks"] == {} and out["frames_compiled"] == 1, out


def test_dict_containing_itself():
    out = run_child(
        """
        def f(x, d):
            d["seen"] = d["self"]["n"] + 1
            return x * d["self"]["self"]["w"] + d["n"]

        def make():
            d = {"w": torch.full((2,), 3.0), "n": 2}
            d["self"] = d
            return d

        x = torch.randn(2)
        mine, theirs = make(), make()
        compiled = cdynamo.optimize(cnt)(f)
        result, expected = compiled(x, mine), f(x, theirs)
        compiled(x, make())
        report(equal=bool(same(result, expected)), keys=sorted(mine) == sorted(theirs),
               intact=mine["self"] is mine and mine["seen"] == theirs["seen"])
        """
    )
    assert out["equal"] and out["keys"] and out["intact"], out
    assert out["graphs"] == 1 and out["breaks"] == {} and out["frames_compiled"] == 1, out


def test_tuples_and_dicts_inside_a_cyclic_list():
    out = run_child(
        """
        def f(x, xs):
            pair = xs[0]
            return x + pair[0] * pair[1]["k"] + xs[1][0][1]["back"][0][0]

        def make():
            xs = [(torch.ones(2), {"k": torch.full((2,), 4.0)})]
            xs.append(xs)
            xs[0][1]["back"] = xs
            return xs

        x = torch.randn(2)
        xs = make()
        compiled = cdynamo.optimize(cnt)(f)
        first, second = compiled(x, xs), compiled(x, make())
        report(equal=bool(same(first, f(x, xs)) and same(second, f(x, make()))),
               intact=xs[1] is xs and xs[0][1]["back"] is xs)
        """
    )
    assert out["equal"] and out["intact"], out
    assert out["graphs"] == 1 and out["breaks"] == {} and out["frames_compiled"] == 1, out


def test_very_deep_list_is_a_graph_break():
    out = run_child(
        """
        def f(x, deep):
            y = torch.sin(x)
            return y + len(deep)

        def make():
            deep = [1]
            for _ in range(10000):
                deep = [deep]
            return deep

        x = torch.randn(3)
        deep = make()
        compiled = cdynamo.optimize(cnt)(f)
        first, second = compiled(x, deep), compiled(x, deep)
        depth, inner = 0, deep
        while isinstance(inner, list):
            inner, depth = inner[0], depth + 1
        report(equal=bool(same(first, f(x, deep)) and same(second, f(x, deep))), intact=depth == 10001)
        """
    )
    assert out["equal"] and out["intact"], out
    reasons = list(out["breaks"])
    assert len(reasons) == 1 and "data nested deeper than 200 levels" in reasons[0], out
    # The frame runs eagerly (once reported, not retraced on the second call).
    assert out["graphs"] == 0 and out["frames_compiled"] == 0 and out["recompiles"] == {}, out


def test_self_containing_list_made_by_the_trace_is_returned():
    out = run_child(
        """
        def f(x):
            xs = [x + 1]
            xs.append(xs)
            d = {"t": x * 2}
            d["d"] = d
            return xs, d

        x = torch.randn(2)
        compiled = cdynamo.optimize(cnt)(f)
        (xs, d), (ys, e) = compiled(x), f(x)
        report(equal=bool(same(xs[0], ys[0]) and same(d["t"], e["t"])), cyclic=xs[1] is xs and d["d"] is d)
        """
    )
    assert out["equal"] and out["cyclic"], out
    assert out["graphs"] == 1 and out["breaks"] == {}, out


def test_deep_data_built_by_the_trace_falls_back():
    out = run_child(
        """
        def f(x):
            y = [x + 1]
            for _ in range(5000):
                y = [y]
            return y

        x = torch.randn(2)
        compiled = cdynamo.optimize(cnt)(f)
        out = compiled(x)
        depth = 0
        while isinstance(out, list):
            out, depth = out[0], depth + 1
        report(equal=bool(same(out, x + 1)), depth=depth)
        """
    )
    assert out["equal"] and out["depth"] == 5001, out
    reasons = list(out["breaks"])
    assert len(reasons) == 1 and "nested deeper than 200 levels" in reasons[0], out


def test_iterator_object_returning_itself_from_iter():
    out = run_child(
        """
        class Countdown:
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return self

            def __next__(self):
                if self.n == 0:
                    raise StopIteration
                self.n -= 1
                return self.n

        def f(x, it):
            for v in it:
                x = x + v
            return x

        x = torch.randn(2)
        compiled = cdynamo.optimize(cnt)(f)
        mine, theirs = Countdown(3), Countdown(3)
        result, expected = compiled(x, mine), f(x, theirs)
        report(equal=bool(same(result, expected)), left=mine.n == theirs.n == 0)
        """
    )
    assert out["equal"] and out["left"], out
    assert out["graphs"] == 1 and not out["breaks"], out  # one __next__ per step, its writes replayed


def test_long_chain_of_views_on_inductor_does_not_crash():
    # A view of a view of ... is an index remapping per view; past the backend's recursion limit
    # the graph runs eagerly (a clean error inside, never a C stack overflow).
    out = run_child(
        """
        config.suppress_errors = True
        def f(x):
            for _ in range(1500):
                x = x.t()
            return x + 1

        x = torch.randn(3, 2)
        compiled = cdynamo.optimize(cnt)(f)
        report(equal=bool(same(compiled(x), f(x))), fallback=counters["stats"]["frames_fallback"])
        """,
        "inductor",
        timeout=300,
    )
    assert out["equal"] and out["fallback"] == 1 and out["breaks"], out
