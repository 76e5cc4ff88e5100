"""Control flow of traced Python as library code writes it: try/except/finally, closures, comprehensions, generators,
graph breaks inside loops, try and no_grad blocks, context managers, and print/logging/warnings made after the graph."""
import collections

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same
from cdynamo.utils import counters

from .helpers import explain


def first_positive(items):
    for i, v in enumerate(items):
        if v > 0:
            return i
    raise ValueError("no positive item")


def try_except_caller(x, items):
    try:
        index = first_positive(items)
    except ValueError as error:
        index = len(str(error))
    return x + index


@pytest.mark.parametrize("items, expected", [((-1, 2), 1), ((-1, -2), len("no positive item"))])
def test_exception_from_inlined_function_is_caught_by_caller(items, expected):
    x = torch.randn(4)
    out = explain(try_except_caller, x, items)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    assert same(out.out, x + expected)


def finally_block(x, d):
    try:
        y = x * d["scale"]
    except KeyError:
        y = x
    finally:
        y = y + 1
    return y


@pytest.mark.parametrize("d", [{"scale": 3}, {}])
def test_try_except_finally_with_dict_lookup(d):
    x = torch.randn(4)
    out = explain(finally_block, x, d)
    assert out.graph_break_count == 0, out
    assert same(out.out, finally_block(x, d))


def test_unhandled_raise_in_traced_code_raises_for_real():
    def f(x, d):
        y = x + 1
        return y * d["missing"]

    compiled = cdynamo.optimize("eager")(f)
    with pytest.raises(KeyError, match="missing"):
        compiled(torch.randn(2), {"present": 1})


def test_fullgraph_names_the_raise():
    def f(x, d):
        y = x + 1
        return y * d["missing"]

    with pytest.raises(cdynamo.exc.Unsupported, match="KeyError"):
        cdynamo.optimize("eager", nopython=True)(f)(torch.randn(2), {})


def test_a_raise_before_any_operation_is_the_programs_own_error_under_fullgraph():
    def f(x, d):
        return x * d["k"]

    counter = CompileCounter()
    compiled = cdynamo.optimize(counter, nopython=True)(f)
    x = torch.randn(2)
    for _ in range(5):  # each such call raises for real; none stops later calls from compiling
        with pytest.raises(KeyError, match="k"):
            compiled(x, {})
    assert same(compiled(x, {"k": 2}), f(x, {"k": 2}))
    assert counter.frame_count == 1


def closures_and_comprehensions(x, n):
    scale = 2

    def add_scaled(t, bias=1):
        return t * scale + bias

    counter = 0

    def bump():
        nonlocal counter
        counter += 1
        return counter

    ys = [add_scaled(x, i) for i in range(n)]
    bump()
    bump()
    doubled = tuple(y * 2 for y in ys)
    pick = (lambda t, k=3: t - k)(doubled[-1])
    return sum(doubled) + pick * counter


def test_closures_lambdas_comprehensions_and_nonlocal():
    x = torch.randn(4)
    out = explain(closures_and_comprehensions, x, 3)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    assert same(out.out, closures_and_comprehensions(x, 3))


def lazy_generator(x, seen):
    def produce():
        for i in range(4):
            seen.append(i)  # a side effect per item: only produced items may show it
            yield x + i

    total = x * 0
    for y in produce():
        total = total + y
        if len(seen) == 2:
            break
    first = next(iter([x]), None)
    missing = next(iter([]), "default")
    found = any(t.shape == (4,) for t in [x, total])
    return total + first, len(seen), missing, found


def test_generators_are_lazy_and_next_iter_any_work():
    x = torch.randn(4)
    seen_eager, seen = [], []
    expected = lazy_generator(x, seen_eager)

    def f(x):
        local = []
        result = lazy_generator(x, local)
        return result

    out = explain(f, x)
    assert out.graph_break_count == 0, out
    assert same(out.out[0], expected[0])
    assert out.out[1:] == (2, "default", True)


def pops_kwargs(x, **kwargs):
    scale = kwargs.pop("scale", 1)
    kwargs.setdefault("shift", 0)
    return x * scale + kwargs["shift"], kwargs


def test_kwargs_dict_of_the_frame_can_change_and_callers_dict_does_not():
    options = {"scale": 3}
    compiled = cdynamo.optimize("eager")(pops_kwargs)
    x = torch.randn(3)
    out, kwargs = compiled(x, **options)
    assert same(out, x * 3) and kwargs == {"shift": 0}
    assert options == {"scale": 3}
    out = explain(pops_kwargs, x, scale=2)
    assert out.graph_break_count == 0, out


def loop_with_breaks(x, items):
    out = []
    for i, t in enumerate(items):
        y = t * i
        cdynamo.graph_break()
        out.append(y + x)
    return out


def test_graph_break_inside_a_loop_keeps_the_loop():
    x, items = torch.randn(2), [torch.randn(2) for _ in range(3)]
    out = explain(loop_with_breaks, x, items)
    assert out.graph_break_count == 3
    assert all(same(a, b) for a, b in zip(out.out, loop_with_breaks(x, items))) and len(out.out) == 3


def break_inside_try(x, fail):
    y = x + 1
    try:
        cdynamo.graph_break()
        if fail:
            raise ValueError("fail")
        w = y * 2
    except ValueError:
        w = y - 1
    finally:
        w = w + 10
    return w


@pytest.mark.parametrize("fail", [False, True])
def test_graph_break_inside_a_try_block_keeps_its_handlers(fail):
    x = torch.randn(2)
    out = explain(break_inside_try, x, fail)
    assert out.graph_break_count == 1 and out.graph_count == 2, out
    assert same(out.out, break_inside_try(x, fail))


def unsupported_call_raises_inside_try(x, items):
    try:
        bad = x * (x.item() * len(items))  # a graph break (.item()) that raises: x has 2 elements
    except RuntimeError:
        bad = x * 3
    return bad


def test_exception_of_the_instruction_run_at_a_break_reaches_the_handler(capsys):
    x = torch.randn(2)
    out = explain(unsupported_call_raises_inside_try, x, [1, 2])
    assert same(out.out, x * 3)
    assert out.graph_break_count >= 1


def break_inside_no_grad(x, w):
    y = x @ w
    with torch.no_grad():
        z = y * 2
        cdynamo.graph_break()
        inside = torch.is_grad_enabled()
        z = z + 1
    return y.sum() + z.sum(), inside, torch.is_grad_enabled()


def test_graph_break_inside_no_grad_block_keeps_and_restores_the_mode():
    x = torch.randn(2, 2, requires_grad=True)
    w = torch.randn(2, 2, requires_grad=True)
    out = explain(break_inside_no_grad, x, w)
    assert out.graph_break_count == 1, out
    expected = break_inside_no_grad(x, w)
    assert same(out.out[0], expected[0]) and out.out[1:] == (False, True)
    assert out.out[0].requires_grad and torch.is_grad_enabled()


def raises_inside_no_grad(x):
    with torch.no_grad():
        cdynamo.graph_break()
        raise ValueError("inside")


def test_exception_leaving_a_cut_no_grad_block_restores_grad_mode():
    with pytest.raises(ValueError, match="inside"):
        cdynamo.optimize("eager")(raises_inside_no_grad)(torch.ones(1))
    assert torch.is_grad_enabled()


class Recorder:
    """A context manager written in Python: state changes on enter and exit."""

    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, traceback):
        self.log.append("exit" if kind is None else "error")
        return kind is KeyError  # swallows KeyErrors only


def with_python_context_manager(x, d):
    rec = Recorder()
    with rec as r:
        y = x + 1
        y = y * d["scale"]
    with rec:
        cdynamo.graph_break()
        y = y - 1
    return y, rec.log, r is rec


@pytest.mark.parametrize("d", [{"scale": 2}, {}])
def test_python_context_managers_enter_exit_and_swallow(d):
    x = torch.randn(2)
    out = explain(with_python_context_manager, x, d)
    assert out.graph_break_count == 1, out
    if d:
        expected = with_python_context_manager(x, d)
        assert same(out.out[0], expected[0]) and out.out[1:] == expected[1:]
    else:
        assert out.out[1] == ["enter", "error", "enter", "exit"]


def test_exception_through_python_context_manager_in_inlined_code():
    rec = Recorder()

    def inner(d):
        with rec:
            return d["missing"]

    def f(x):
        try:
            inner({})
        except KeyError:
            pass
        return x + len(rec.log)

    rec_log_before = list(rec.log)
    out = explain(f, torch.zeros(1))
    assert out.graph_break_count == 0, out
    assert rec.log == rec_log_before + ["enter", "error"]  # one run's changes, replayed once
    assert same(out.out, torch.full((1,), 2.0))


def test_an_operation_that_raises_on_these_shapes_goes_to_the_traced_except_block():
    def f(x, extra):
        try:
            y = x @ extra  # (2, 6) @ (5, 6): eager raises RuntimeError
        except (RuntimeError, TypeError) as error:
            y = x * len(str(type(error).__name__))
        try:
            return y[10]  # an index past the end: IndexError on these shapes too
        except IndexError:
            return y.sum(0)

    x, extra = torch.randn(2, 6), torch.randn(5, 6)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x, extra)
    assert torch.equal(got, f(x, extra)) and counter.frame_count == 1


def test_an_operation_that_raises_outside_a_try_block_breaks_before_it_and_eager_raises():
    def f(x, extra):
        y = x.relu()
        return y @ extra

    x, extra = torch.randn(2, 6), torch.randn(5, 6)
    cdynamo.reset()
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        cdynamo.optimize("eager")(f)(x, extra)
    assert any("raised RuntimeError while tracing" in reason for reason in counters["graph_break"])


def test_print_logging_and_warnings_of_known_values_are_made_after_the_graph(capsys, caplog):
    import logging
    import warnings

    logger = logging.getLogger("cdynamo.test.deferred")

    def f(x):
        print(f"input shape: {x.shape}", x.dtype)
        logger.warning("forward with %d samples", x.size(0))
        y = x.softmax(-1)
        if y.shape[1] != 4:
            warnings.warn("output dim is not 4", UserWarning)
        print("output", y.shape, sep=" | ")
        return y

    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match="output dim is not 4"):
        want = f(x)
    eager_out = capsys.readouterr().out
    caplog.clear()
    counter = CompileCounter()
    with pytest.warns(UserWarning, match="output dim is not 4") as caught:
        got = cdynamo.optimize(counter, nopython=True)(f)(x)
    assert torch.equal(got, want) and counter.frame_count == 1
    assert capsys.readouterr().out == eager_out
    assert [r.getMessage() for r in caplog.records] == ["forward with 2 samples"]
    assert caught[0].filename == __file__  # the warning points at the compiled function's file


def test_print_of_a_tensor_breaks_the_graph_and_prints_eagers_values(capsys):
    def f(x):
        y = x + 1
        print(y)
        return y * 2

    x = torch.ones(2)
    f(x)
    eager_out = capsys.readouterr().out
    explained = cdynamo.explain(f)(x)
    assert explained.graph_break_count >= 1 and "print() of a value the graph computes" in str(explained.break_reasons[0])
    capsys.readouterr()
    cdynamo.optimize("eager")(f)(x)
    assert capsys.readouterr().out == eager_out


def test_exceptions_raised_while_handling_one_carry_it_as_context_and_popitem():
    import collections

    def inner():
        try:
            raise KeyError("a")
        except KeyError:
            raise RuntimeError("b")

    def f(x):
        try:
            inner()
        except RuntimeError as e:
            context = type(e.__context__).__name__
        ordered = collections.OrderedDict([("a", 1), ("b", 2)])
        first = ordered.popitem(last=False)
        plain = {"a": 1, "b": 2}
        return (x + 1, context, first, plain.popitem(), ordered == collections.OrderedDict([("b", 2)]),
                collections.OrderedDict(a=1, b=2) == collections.OrderedDict(b=2, a=1))

    x = torch.randn(2)
    got, want = cdynamo.optimize("eager", nopython=True)(f)(x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_a_wrong_unpack_raises_valueerror_in_the_trace():
    # CPython's ValueError, raised where eager raises it: a handler takes it.
    def fn(x):
        try:
            a, b = x.shape
        except ValueError as error:
            a, b = x.shape[0], str(error)
        try:
            first, *rest, last = [x]
        except ValueError:
            first = last = x
        return x * a, b, first + last

    x = torch.randn(2, 3, 4)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1


def test_defaults_that_are_tensors_the_function_computes():
    # A def or lambda made inside with a default the graph computes: calls bind the trace's value
    # (evaluated once, at the def); returning such a function is refused with the reason.
    def fn(x):
        def shifted(t, b=torch.ones(3) * x[0], *, c=x.sum()):
            return t + b + c

        scaled = [lambda t, k=k: t * k for k in (x[1], x[2])]
        return shifted(x), shifted(x, x[0]), shifted(x, c=1.0), [f(x) for f in scaled]

    def returns_it(x):
        def shifted(t, b=x * 2):
            return t + b

        return shifted

    x = torch.randn(3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1
    with pytest.raises(cdynamo.exc.Unsupported, match="default arguments are values the compiled graph computes"):
        cdynamo.compile(returns_it, backend="eager", fullgraph=True)(x)
    assert same(cdynamo.compile(returns_it, backend="eager")(x)(x), returns_it(x)(x))  # eagerly, with the break


def test_reading_an_unbound_name_raises_eagers_error_in_the_trace():
    # `except E as e` deletes e; a closure's variable not yet assigned: UnboundLocalError and
    # NameError, which the program catches, inside one graph.
    def fn(x):
        e = 5
        try:
            raise ValueError
        except ValueError as e:  # noqa: F841 - deleted at the handler's end, as in eager
            pass
        try:
            e  # noqa: B018
            after_handler = "bound"
        except UnboundLocalError:
            after_handler = "unbound"

        def reads_later():
            return late

        try:
            reads_later()
            free = "bound"
        except NameError as error:
            free = type(error).__name__
        late = 1
        return x + reads_later(), after_handler, free

    x = torch.randn(3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)) and counter.frame_count == 1
