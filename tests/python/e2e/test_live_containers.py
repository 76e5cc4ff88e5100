"""Identity and liveness as CPython has them: an in-place method returns its receiver itself, a
list iterator reads the list as it is at each step, a dict view shows the dict's later writes.
Each was a silent wrong result (bench/idiom_probes pm, pn, po); one graph, eager's results."""
import torch

from cdynamo.testing import same

from .helpers import one_graph


def check(fn, *args):
    expected = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    got = one_graph(fn, *args)
    assert same(got, expected), (got, expected)
    return got


def test_an_in_place_method_returns_the_tensor_it_was_called_on():
    def fn(x):
        y = x.clone()
        z = y.add_(1).mul_(2)
        return y * 1, z is y, y.relu_() is y, y.contiguous() is y, y.detach() is y, (y + 0) is y

    assert check(fn, torch.randn(3, 2))[1:] == (True, True, True, False, False)


def test_a_for_loop_sees_items_appended_to_the_list_it_walks():
    def fn(x):
        queue, seen = [1], []
        for n in queue:  # a worklist: the loop runs over what the body adds
            seen.append(n)
            if n < 4:
                queue.append(n + 1)
        return x * sum(seen), seen

    assert check(fn, torch.randn(2))[1] == [1, 2, 3, 4]


def test_an_iterator_over_a_list_reads_it_at_each_step_and_stays_exhausted():
    def fn(x):
        items = [x, x + 1]
        it = iter(items)
        first = next(it)
        items.pop()
        items.append(x * 3)
        rest = list(it)
        items.append(x * 4)  # an exhausted list iterator stays exhausted
        return first, rest, list(it)

    check(fn, torch.randn(2))


def test_dict_views_show_later_writes():
    def fn(x):
        d = {"a": x}
        keys, values, items = d.keys(), d.values(), d.items()
        d["b"] = x * 2
        d["c"] = x * 3
        total = sum(values)
        return total, list(keys), len(items), "b" in keys, [k for k, _ in items]

    check(fn, torch.randn(2))


def test_enumerate_over_a_list_changed_in_the_loop():
    def fn(x):
        values, out = [1, 2, 3], []
        for i, v in enumerate(values, start=1):
            if i == 1:
                values.append(4)
            out.append(v * i)
        return x * sum(out), out

    check(fn, torch.randn(2))
