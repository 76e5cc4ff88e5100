"""C-implemented callables and untraced library code the interpreter replaces with Python
stand-ins (cdynamo/_polyfills/): map, functools.reduce, itertools.chain/islice,
contextlib.nullcontext, @torch.no_grad()/@torch.enable_grad() decorated functions; enum
members as constants; generators taken whole by sum/min/max/sorted. One graph, no break, and
eager's results and side effects."""
import contextlib
import copy
import typing
import enum
import functools
import itertools
import operator

import pytest
import torch

import cdynamo
from .helpers import one_graph
from cdynamo.testing import CompileCounter, same



def test_map_is_lazy_and_traced():
    calls = []

    def double(t):
        calls.append(1)
        return t * 2

    def f(x):
        doubled = map(double, [x, x + 1])
        first = next(doubled)  # only the first item has been computed here
        taken = len(calls)
        return first, sum(doubled), taken, list(map(operator.add, [x, x], [x, 2 * x]))

    x = torch.randn(4)
    calls_before = len(calls)
    out = one_graph(f, x)
    assert same(out[0], x * 2) and same(out[1], (x + 1) * 2) and out[2] == calls_before + 1
    assert same(out[3][1], 3 * x)


def test_reduce_with_and_without_an_initial_value():
    def f(x):
        return functools.reduce(operator.mul, [x, x + 1, x + 2]), functools.reduce(lambda a, b: a + b, [x], 10)

    x = torch.randn(3)
    a, b = one_graph(f, x)
    assert same(a, x * (x + 1) * (x + 2)) and same(b, x + 10)


def test_reduce_of_an_empty_list_raises_like_python():
    compiled = cdynamo.optimize("eager")(lambda x: functools.reduce(operator.add, []) + x)
    with pytest.raises(TypeError, match="empty iterable"):
        compiled(torch.randn(2))


def test_chain_from_iterable_and_islice():
    def f(x):
        parts = list(itertools.chain([x], (x + 1, x + 2), [x * 3]))
        flat = list(itertools.chain.from_iterable([[x], [x - 1]]))
        window = list(itertools.islice(parts, 1, None, 2))
        head = list(itertools.islice(parts, 2))
        return len(parts), flat[1], window, head[1]

    x = torch.randn(3)
    count, flat, window, head = one_graph(f, x)
    assert count == 4 and same(flat, x - 1) and same(head, x + 1)
    assert len(window) == 2 and same(window[0], x + 1) and same(window[1], x * 3)


def test_nullcontext_in_a_with_block():
    def f(x, debug=False):
        with contextlib.nullcontext() if not debug else torch.no_grad():
            y = x * 2
        with contextlib.nullcontext(y) as same_y:
            return same_y + 1

    x = torch.randn(3)
    assert same(one_graph(f, x), x * 2 + 1)


@torch.no_grad()
def frozen_step(x, w):
    return x @ w


@torch.enable_grad()
def tracked_step(x, w):
    return (x @ w).sum()


def test_functions_decorated_with_grad_modes_keep_their_mode():
    w = torch.randn(3, 3, requires_grad=True)

    def f(x):
        frozen = frozen_step(x, w)
        return frozen, frozen.requires_grad, torch.is_grad_enabled()

    frozen, requires_grad, enabled = one_graph(f, torch.randn(2, 3))
    assert not frozen.requires_grad and requires_grad is False and enabled is True
    with torch.no_grad():
        loss = cdynamo.optimize("eager")(lambda x: tracked_step(x, w))(torch.randn(2, 3))
    assert loss.requires_grad  # enable_grad inside no_grad, as eager
    assert torch.is_grad_enabled()


class Mode(enum.Enum):
    SUM = "sum"
    MEAN = "mean"


def test_enum_members_compare_as_constants():
    def f(x, mode=Mode.MEAN):
        if mode == Mode.SUM:
            return x.sum()
        if mode is Mode.MEAN and mode.value == "mean":
            return x.mean()
        return x

    x = torch.randn(5)
    assert same(one_graph(f, x), x.mean())
    compiled = cdynamo.optimize("eager")(f)
    assert same(compiled(x, Mode.SUM), x.sum())  # another member: its own guard, a recompile


def test_sum_min_max_sorted_take_a_generator_whole():
    def f(x):
        sizes = (d * 2 for d in x.shape)
        return sum(sizes), max(d for d in x.shape), sorted(d for d in x.shape), sum(t for t in [x, x])

    x = torch.randn(3, 5)
    total, biggest, ordered, tensors = one_graph(f, x)
    assert (total, biggest, ordered) == (16, 5, [3, 5]) and same(tensors, 2 * x)


def test_partial_made_in_the_trace_and_passed_in():
    scale = functools.partial(torch.mul, other=3.0)

    def f(x):
        add_two = functools.partial(torch.add, alpha=2)
        return add_two(x, x), scale(x), functools.partial(max, 1)(2)

    x = torch.randn(4)
    added, scaled, biggest = one_graph(f, x)
    assert same(added, x + 2 * x) and same(scaled, x * 3) and biggest == 2


def test_identity_questions_about_fixed_objects_fold():
    import typing

    def f(x, kind=typing.List[int]):
        same_module = id(torch) == id(torch)
        return x + 1 if same_module and typing.get_origin(kind) is list and typing.get_args(kind) == (int,) else x

    x = torch.randn(3)
    assert same(one_graph(f, x), x + 1)
    # id() of an argument: guarded to be the same object (another tensor recompiles); of an object
    # the trace made: unique within the call (copy.deepcopy's memo keys on it).
    counter = CompileCounter()

    def g(x):
        made = [x]
        return x + (id(made) != id(x)), id(x)

    compiled = cdynamo.optimize(counter)(g)
    y = torch.randn(3)
    for t in (x, y, x):
        result, identity = compiled(t)
        assert same(result, t + 1) and identity == id(t)
    assert counter.frame_count == 2


def test_list_slice_assignment_in_traced_code():
    def f(x):
        items = [x, x + 1, x + 2, x + 3]
        items[1:3] = [x * 10]
        items[::2] = [x - 1, x - 2]
        items[len(items):] = (x * 0,)
        return items

    x = torch.randn(2)
    out = one_graph(f, x)
    expected = f(x)
    assert len(out) == len(expected) == 4 and all(same(a, b) for a, b in zip(out, expected))
    def too_few(x):
        items = [x, x, x]
        items[::2] = [x]
        return items

    with pytest.raises(ValueError, match="extended slice of size 2"):
        cdynamo.optimize("eager")(too_few)(x)


class Rotary(torch.nn.Module):
    """transformers' rotary embeddings: a forward decorated with @torch.no_grad()."""

    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.rand(4))

    @torch.no_grad()
    def forward(self, x):
        return (x[..., None] * self.inv_freq).cos()


class WithRotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = Rotary()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(self.rotary(x)), self.rotary(x).requires_grad


def test_a_no_grad_forward_reached_as_a_submodule():
    model = WithRotary()
    x = torch.randn(3, 2)
    out, inner_requires_grad = one_graph(model, x)
    assert same(out, model(x)[0]) and inner_requires_grad is False and out.requires_grad


@torch.jit.script
def scripted_bucket(x: torch.Tensor, size: int) -> torch.Tensor:
    return torch.sign(x) * torch.log1p(x.abs()) * size


def test_a_torchscript_function_is_traced_through_its_python_source():
    x = torch.randn(5)
    out = one_graph(lambda x: scripted_bucket(x, 3) + 1, x)
    assert same(out, scripted_bucket(x, 3) + 1)


CALLS = 0
SCALE = 1.0


def counts_its_calls(x):
    global CALLS, SCALE
    CALLS += 1
    SCALE = SCALE * 2
    return x * SCALE + CALLS


def test_global_writes_are_replayed_and_read_back_in_the_trace():
    global CALLS, SCALE
    CALLS, SCALE = 0, 1.0
    compiled = cdynamo.optimize("eager")(counts_its_calls)
    x = torch.randn(3)
    first = one_graph(counts_its_calls, x)  # explain's own run: CALLS 1, SCALE 2
    assert same(first, x * 2 + 1) and (CALLS, SCALE) == (1, 2.0)
    for expected_calls in (2, 3, 4):  # each call sees the last one's writes (guards retrace on them)
        out = compiled(x)
        assert (CALLS, SCALE) == (expected_calls, 2.0 ** expected_calls)
        assert same(out, x * SCALE + CALLS)


class Tied(torch.nn.Module):
    """A tied weight (one Parameter in two layers), a buffer, a None child, nesting."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight
        self.block = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
        self.missing = None

    def forward(self, x):
        dtype = next(self.parameters()).dtype
        names = [name for name, _ in self.named_parameters()]
        total = sum(p.sum() for p in self.parameters())
        buffers = [name for name, _ in self.named_buffers()]
        children = [type(m).__name__ for m in self.children()]
        modules = [name for name, _ in self.named_modules()]
        return x.to(dtype) + total, names, buffers, children, modules, len(list(self.block.parameters(recurse=False)))


def test_module_walks_like_torchs():
    model = Tied().eval()
    x = torch.randn(2, 3)
    out = one_graph(model, x)
    expected = model(x)
    assert same(out[0], expected[0]) and out[1:] == expected[1:]
    assert out[1] == ["embed.weight", "block.0.weight", "block.0.bias", "block.1.weight", "block.1.bias"]  # tied once


class PlainConfig:
    def __init__(self):
        self.scale = 2.0
        self.sizes = [1, 2]
        self.inner = {"shift": 1}


PLAIN_CONFIG = PlainConfig()


def test_deepcopy_of_a_plain_object_is_traced():
    import contextvars
    import copy

    flag = contextvars.ContextVar("flag", default=1)

    def f(x):
        local = copy.deepcopy(PLAIN_CONFIG)
        local.scale = 3.0
        local.sizes.append(3)
        token = flag.set(5)
        factor = flag.get()
        flag.reset(token)
        three = (3).__eq__(len(local.sizes))  # a method-wrapper of a constant
        return x * local.scale + len(local.sizes) + local.inner["shift"] + factor * flag.get() + three

    x = torch.randn(3)
    expected = f(x)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x)
    assert same(got, expected) and counter.frame_count == 1
    # The copy is the trace's own: the original is untouched, and so is the context.
    assert PLAIN_CONFIG.scale == 2.0 and PLAIN_CONFIG.sizes == [1, 2] and flag.get() == 1


def test_defaultdict_made_in_the_function():
    import collections

    def f(x, out):
        groups = collections.defaultdict(list)
        groups["a"].append(x)
        groups["a"].append(x * 2)
        groups["b"].append(x + 1)
        counts = collections.defaultdict(int)
        for key in ["p", "q", "p"]:
            counts[key] += 1
        out.append(counts)
        return sum(groups["a"]) + groups["b"][0] * counts["p"], groups, [groups, groups]

    x = torch.randn(3)
    eager_out, compiled_out = [], []
    expected = f(x, eager_out)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x, compiled_out)
    assert counter.frame_count == 1 and same(got[0], expected[0])
    # What leaves the function is a defaultdict with its factory, one object where eager has one.
    for made in (got[1], compiled_out[0], got[2][0]):
        assert type(made) is collections.defaultdict
    assert got[1].default_factory is list and compiled_out[0] == {"p": 2, "q": 1} and got[2][0] is got[2][1]
    assert got[1]["new"] == [] and "new" in got[1]


def test_ordered_dict_counter_and_sorted_with_a_key():
    import collections

    def f(x):
        feats = collections.OrderedDict()
        feats["p3"] = x * 3
        feats["p2"] = x * 2
        pairs = collections.OrderedDict([("a", 1), ("b", 2)])
        counter = collections.Counter(name[0] for name in feats)
        order = sorted(feats.keys(), key=lambda name: -int(name[1]), reverse=True)
        return feats[order[0]] + counter["p"] + pairs["b"], feats, order

    x = torch.randn(3)
    expected = f(x)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x)
    assert counter.frame_count == 1 and same(got[0], expected[0]) and got[2] == expected[2]
    assert type(got[1]) is collections.OrderedDict and list(got[1]) == ["p3", "p2"]


class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = torch.nn.ModuleDict({"age": torch.nn.Linear(4, 1), "mood": torch.nn.Linear(4, 3)})
        self.scales = torch.nn.ParameterDict({"age": torch.nn.Parameter(torch.ones(1) * 2)})
        self.weights = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(1) * k) for k in (1.0, 3.0)])

    def forward(self, x):
        outs = {name: self.heads[name](x) for name in self.heads}
        if "age" in self.heads and "size" not in self.heads:
            outs["age"] = outs["age"] * self.scales["age"]
        total = sum(w.sum() for w in self.weights) + sum(key == "age" for key in self.scales)
        return outs, total + self.weights[1]


def test_module_and_parameter_containers_index_iterate_and_answer_in():
    model = Heads()
    x = torch.randn(2, 4)
    expected = model(x)
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(model)(x)
    assert counter.frame_count == 1
    assert same(got[0]["age"], expected[0]["age"]) and same(got[0]["mood"], expected[0]["mood"])
    assert same(got[1], expected[1])


class ScaledNorm(torch.nn.LayerNorm):
    def forward(self, x):
        return torch.nn.LayerNorm.forward(self, x) * 2  # the base's forward, called by name


class CachedHelper:
    @functools.lru_cache(maxsize=None)
    def width(self, n):
        return n * 2


def test_library_call_shapes_seen_in_transformers_models():
    import collections
    import copy

    Output = collections.namedtuple("Output", ["hidden", "probs"])
    norm = ScaledNorm(4)
    helper = CachedHelper()

    def f(x, sizes):
        out = Output(hidden=x, probs=None)
        has_buckets = hasattr(out, "buckets")  # not a field, not the class's: False
        pairs = list(zip([1, 2], ["a", "b"], strict=True))
        shallow = copy.copy(PLAIN_CONFIG)
        shallow.scale = 5.0
        assert list(x.shape) == [sizes[0], 4]
        return norm(out.hidden) * helper.width(len(pairs)) + shallow.scale, has_buckets

    x = torch.randn(2, 4)
    expected = f(x, [2])
    counter = CompileCounter()
    got = cdynamo.optimize(counter, nopython=True)(f)(x, [2])
    assert counter.frame_count == 1 and same(got[0], expected[0]) and got[1] is False
    assert PLAIN_CONFIG.scale == 2.0


depth = 0


@contextlib.contextmanager
def counted(scale):
    global depth
    depth += 1
    try:
        yield scale * 2
    finally:
        depth -= 1


def test_a_contextmanager_generator_runs_its_enter_and_exit_in_the_graph():
    # contextlib's __enter__ deletes the helper's arguments (`del self.args, ...`): an attribute
    # deletion on an object the trace made.
    def scaled(x):
        with counted(3) as factor:
            y = x * factor + depth
        return y + depth

    counter = CompileCounter()
    compiled = cdynamo.compile(scaled, backend=counter, fullgraph=True)
    x = torch.randn(4)
    assert same(compiled(x), scaled(x))
    assert counter.frame_count == 1 and depth == 0


def test_parametrizations_under_parametrize_cached_are_one_graph():
    from torch.nn.utils import parametrize

    class Symmetric(torch.nn.Module):
        def forward(self, weight):
            return weight.triu() + weight.triu(1).transpose(-1, -2)

    layer = torch.nn.Linear(5, 5)
    parametrize.register_parametrization(layer, "weight", Symmetric())

    def twice(x):
        with parametrize.cached():
            return layer(x) + layer(x * 2)

    counter = CompileCounter()
    compiled = cdynamo.compile(twice, backend=counter, fullgraph=True)
    x = torch.randn(3, 5)
    assert same(compiled(x), twice(x))
    assert counter.frame_count == 1
    assert parametrize._cache_enabled == 0 and not parametrize._cache


def doubled(n):
    for i in range(n):
        yield i * 2


def test_a_list_display_unpacks_generators_and_iterators():
    def f(x):
        items = [x, *doubled(3), *iter([x + 1])]
        return x * len(items) + items[2], items[-1]

    counter = CompileCounter()
    compiled = cdynamo.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(2)
    assert all(same(a, b) for a, b in zip(compiled(x), f(x)))
    assert counter.frame_count == 1


def test_dict_fromkeys_orders_names_without_repeats():
    def f(x, names=("b", "a", "b", "c")):
        unique = list(dict.fromkeys(names))
        ordered = list(dict.fromkeys(n.upper() for n in names))
        return x * len(unique), unique, ordered

    counter = CompileCounter()
    compiled = cdynamo.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(2)
    got, want = compiled(x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    assert counter.frame_count == 1


class Validated:
    """A strict dataclass's shape (huggingface_hub): __setattr__ runs the class's validators."""

    validators = {"scale": [lambda v: v > 0]}

    def __init__(self, scale):
        self.scale = scale

    def __setattr__(self, name, value):
        for check in self.validators.get(name, []):
            if not check(value):
                raise ValueError(name)
        object.__setattr__(self, name, value)


TYPE_CHECKERS = {typing.Union: "union", list: "list", typing.Literal: "literal"}


def test_a_copy_reads_its_class_level_tables_and_typing_keyed_dicts():
    config = Validated(2.0)

    def f(x):
        clone = copy.copy(config)
        clone.scale = 3.0
        kind = TYPE_CHECKERS.get(typing.get_origin(typing.Optional[int]))
        return x * clone.scale, kind

    counter = CompileCounter()
    compiled = cdynamo.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(2)
    got, want = compiled(x), f(x)
    assert same(got[0], want[0]) and got[1] == want[1] == "union"
    assert config.scale == 2.0 and counter.frame_count == 1


def test_jit_annotate_gives_back_the_list_the_trace_made():
    def f(x):  # timm's CrossVit builds its outputs this way
        out = torch.jit.annotate(typing.List[torch.Tensor], [])
        for i in range(3):
            out.append(x * i)
        return torch.stack(out)

    x = torch.randn(3)
    explained = cdynamo.explain(f)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons
    assert torch.equal(explained.out, f(x))


def test_zip_enumerate_and_islice_pull_only_the_items_eager_pulls():
    # heapq.nlargest's idiom: zip(range(n), it) takes n items from `it` and leaves the rest,
    # as does a loop over enumerate(it) that breaks, and islice(it, k).
    def f(x):
        it = iter([3, 1, 4, 1, 5, 9, 2])
        head = list(zip(range(2), it))
        after_zip = next(it)
        for i, v in enumerate(it):
            if v == 5:
                break
        sliced = list(itertools.islice(it, 1))
        return x + i, head, after_zip, sliced, list(it)

    def gen():
        yield from range(4)

    def g(x):
        items = gen()
        first = list(zip(items, range(1)))  # the generator gives 0, then 1 is lost when range ends
        try:
            list(zip([1, 2], [3], strict=True))
        except ValueError as e:
            message = str(e)
        return x + 1, first, list(items), message

    x = torch.randn(3)
    for fn in (f, g):
        want = fn(x)
        got = one_graph(fn, x)
        assert same(got[0], want[0]) and got[1:] == want[1:]


def test_heapq_and_object_sentinels():
    import heapq

    def f(x):
        values = [3, 1, 4, 1, 5, 9, 2, 6]
        heap = []
        for v in values:
            heapq.heappush(heap, v)
        popped = [heapq.heappop(heap) for _ in range(3)]
        marker = object()
        return (x * sum(heapq.nlargest(3, values)), heapq.nsmallest(2, values, key=lambda v: -v), popped,
                heapq.nsmallest(1, []), min([], default=marker) is marker, heapq.heappushpop(heap, 0))

    x = torch.randn(2)
    want, got = f(x), one_graph(f, x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_state_dict_in_forward_has_eagers_entries_and_tensors():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    model.register_buffer("scratch", torch.ones(1), persistent=False)

    def f(x):
        state = model.state_dict()
        kept = model.state_dict(keep_vars=True)
        by_walk = dict(model.named_parameters())
        return (x + state["0.weight"].sum(), list(state), type(state), kept["0.weight"] is model[0].weight,
                by_walk["1.bias"] is model[1].bias, state["0.weight"].requires_grad)

    x = torch.randn(3)
    want, got = f(x), one_graph(f, x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_state_dict_hooks_run_in_the_trace_as_torch_runs_them():
    # Pre-hooks, a public post-hook (which must return None), a private post-hook whose result
    # replaces its level's dict, a child class's own state_dict: one graph, eager's dict.
    class Scaled(torch.nn.Linear):
        def state_dict(self, *, destination=None, prefix="", keep_vars=False):
            out = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
            out[prefix + "scale"] = 2.0
            return out

    calls = []
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), Scaled(2, 2))
    model._register_state_dict_hook(
        lambda module, state, prefix, local: {**state, prefix + "extra": torch.ones(1) * local["version"]})
    model[0].register_state_dict_post_hook(lambda module, state, prefix, local: calls.append(("post", prefix)))
    model[0].register_state_dict_pre_hook(lambda module, prefix, keep_vars: calls.append(("pre", prefix)))

    def f(x):
        state = model.state_dict()
        return sorted(state), x @ state["0.weight"].T + state["extra"], state["1.scale"]

    x = torch.randn(3)
    want = f(x)
    eager_calls = list(calls)
    got = one_graph(f, x)
    assert same(got[1], want[1]) and got[0] == want[0] and got[2] == want[2]
    assert calls == eager_calls * 2 == [("pre", "0."), ("post", "0.")] * 2


def test_a_deque_made_in_the_function_is_traced_and_returned_as_a_deque():
    from collections import deque

    def f(x):
        q = deque([x, x + 1], maxlen=3)
        q.append(x * 2)
        q.appendleft(x - 1)  # drops x * 2 on the right: maxlen
        q.extend([x * 3])
        q.rotate(1)
        first, last = q.popleft(), q.pop()
        return sum(q) + first + last, len(q), q.maxlen, isinstance(q, deque), type(q) is deque, q

    def breadth_first(x):
        queue, seen = deque([(x, 0)]), []
        while queue:
            t, depth = queue.popleft()
            seen.append(t * depth)
            if depth < 3:
                queue.append((t + 1, depth + 1))
        try:
            queue.pop()
        except IndexError as e:
            message = str(e)
        return seen, message, 3 in deque([1, 2, 3]), deque([1, 2]) == deque([1, 2])

    x = torch.randn(2)
    want, got = f(x), one_graph(f, x)
    assert same(got[0], want[0]) and got[1:5] == want[1:5]
    assert type(got[5]) is deque and got[5].maxlen == 3 and all(same(a, b) for a, b in zip(got[5], want[5]))
    want, got = breadth_first(x), one_graph(breadth_first, x)
    assert all(same(a, b) for a, b in zip(got[0], want[0])) and got[1:] == want[1:]
