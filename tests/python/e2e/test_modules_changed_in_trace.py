"""nn.Module methods of library code called inside traced code: on a module the trace made, they
run at trace time on it (only the trace holds it); forward hooks registered and removed inside the
function are the trace's own, run on the module's calls in between."""
import copy

import pytest
import torch
import torch.nn as nn

import cdynamo
from cdynamo.testing import CompileCounter, same

from .helpers import explain, one_graph


class Grow(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList()

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)

    def forward(self, x):
        return self.l(x)


def test_module_list_grown_on_a_module_made_in_the_function():
    def f(x):
        m = Grow()
        m.layers.append(nn.ReLU())
        m.layers.extend([nn.Tanh()])
        m.add_module("extra", nn.Sigmoid())
        return m(x), len(m.layers), m.extra(x), m.training

    x = torch.randn(4, 3)
    got, want = one_graph(f, x), f(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2]) and got[1] == want[1] == 2 and got[3] is True


def test_forward_hooks_registered_and_removed_inside():
    def f(m, x):
        h = m.register_forward_hook(lambda mod, args, out: out * 0)
        y = m(x)
        h.remove()
        h.remove()  # a second remove does nothing
        pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        with m.register_forward_hook(lambda mod, args, kwargs, out: out + 1, with_kwargs=True, prepend=True):
            z = m(x)
        pre.remove()
        return y, z, m(x)

    m, x = Lin(), torch.randn(2, 3)
    got, want = one_graph(f, m, x), f(m, x)
    assert all(torch.allclose(a, b) for a, b in zip(got, want))
    assert not m._forward_hooks and not m._forward_pre_hooks  # as eager leaves it


def test_a_hook_left_registered_runs_eagerly():
    def f(m, x):
        m.register_forward_hook(lambda mod, args, out: out * 0)
        return m(x)

    m, x = Lin(), torch.randn(2, 3)
    out = explain(f, m, x)
    assert "not removed before the graph ends" in out.break_reasons[0]
    assert torch.equal(out.out, torch.zeros(2, 3)) and len(m._forward_hooks) == 1


class _TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)

    def forward(self, x):
        return self.b(self.a(x))


class _Holder:
    def __init__(self):
        self.h = torch.zeros(3)


def _structure_after_new_child(m, extra, x):
    m.c = extra
    y = m.a(x)
    return [n for n, _ in m.named_children()], list(m.state_dict()), y


def _dict_after_attribute_write(x, m, s):
    m.scale = 3.0
    got = m.__dict__.get("scale", 1.0)
    s.h = x + 1
    return x * got * (2 if "scale" in m.__dict__ else 5), copy.copy(s).h


@pytest.mark.parametrize("fn, make_args", [
    (_structure_after_new_child, lambda: (_TwoLayers(), nn.Linear(3, 3), torch.randn(2, 3))),
    (_dict_after_attribute_write, lambda: (torch.ones(3), nn.Module(), _Holder())),
])
def test_tables_read_after_an_attribute_write_in_the_trace_see_the_write(fn, make_args):
    # The write is made after the graph: the table it lands in (a module's _modules, an
    # instance's __dict__) is read in the trace with it.
    torch.manual_seed(0)
    expected_args = make_args()
    torch.manual_seed(0)
    args = make_args()
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(*args), fn(*expected_args))
    assert counter.frame_count == 1
    assert same(vars(args[0]).get("scale"), vars(expected_args[0]).get("scale"))


def test_module_api_methods_inside_the_function():
    # apply (children first, then the module), get_buffer, _get_name and add_module, traced.
    def fn(m, extra, x):
        names = []
        m.apply(lambda module: names.append(module._get_name()))
        m.add_module("extra", extra)
        y = m.extra(m.b(m.a(x)))
        return y, names, [n for n, _ in m.named_children()], m.get_buffer("a_scale")

    def make():
        torch.manual_seed(0)
        m = _TwoLayers()
        m.register_buffer("a_scale", torch.ones(3))
        return m, nn.Tanh(), torch.randn(2, 3)

    counter = CompileCounter()
    expected = fn(*make())
    module, extra, x = make()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(module, extra, x), expected)
    assert counter.frame_count == 1 and isinstance(module.extra, nn.Tanh)


class _WritesThroughDict(nn.Module):
    def forward(self, x):
        self.__dict__["scale"] = 3.0
        vars(self).update({"offset": 2.0})
        return x * self.scale + self.offset


def test_attributes_written_through_the_instance_dict_are_read_back():
    m, expected_module = _WritesThroughDict(), _WritesThroughDict()
    x = torch.randn(3)
    counter = CompileCounter()
    assert same(cdynamo.compile(m, backend=counter, fullgraph=True)(x), expected_module(x))
    assert counter.frame_count == 1 and (m.scale, m.offset) == (3.0, 2.0)


class _LazyCache(nn.Module):
    def forward(self, x):
        if not hasattr(self, "cos_cached"):
            steps = torch.arange(x.shape[-1], dtype=x.dtype)
            self.register_buffer("cos_cached", steps.cos(), persistent=False)
            self.register_buffer("scale", torch.ones(1))
        return x * self.cos_cached + self.scale


def test_new_buffers_registered_in_forward():
    # Persistent or not, as eager registers them (the module has them after the call).
    x = torch.randn(2, 5)
    m, expected_module = _LazyCache(), _LazyCache()
    compiled = cdynamo.compile(m, backend="eager", fullgraph=True)
    for _ in range(2):
        assert same(compiled(x), expected_module(x))
    assert list(m.state_dict()) == list(expected_module.state_dict()) == ["scale"]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in expected_module.named_buffers()]


def test_a_torch_layer_put_in_eval_mode_inside_the_function():
    # eval() inside the function: the layer's forward is traced (its mode changes only after the
    # graph), and the generator expressions of TransformerEncoderLayer's fast-path checks with it.
    def fn(m, t):
        m.eval()
        return m(t)

    torch.manual_seed(0)
    m = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
    reference = copy.deepcopy(m)
    t = torch.randn(2, 3, 4)
    out = cdynamo.compile(fn, backend="eager", fullgraph=True)(m, t)
    assert same(out, fn(reference, t))
    assert not m.training and not m.self_attn.training


def test_a_parameter_assigned_to_a_parameter_slot_is_registered_as_in_eager():
    # Tying weights inside the function: a Parameter (not a computed tensor) may take a
    # parameter's place, and the trace's later reads see it.
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    def fn(m, x):
        m.b.weight = m.a.weight
        return m.b(x), [n for n, _ in m.named_parameters()]

    torch.manual_seed(0)
    m, x = Two(), torch.randn(2, 3)
    reference = copy.deepcopy(m)
    out = cdynamo.compile(fn, backend="eager", fullgraph=True)(m, x)
    assert same(out, fn(reference, x))
    assert m.b.weight is m.a.weight
    with pytest.raises(cdynamo.exc.Unsupported, match="assigning a tensor to the parameter"):
        cdynamo.compile(lambda m, x: setattr(m.a, "weight", x * 2), backend="eager", fullgraph=True)(m, x)


def test_attributes_deleted_inside_are_deleted_after_the_graph():
    # `del m.child` and `del obj.attr` on objects from the frame: the trace's reads (hasattr,
    # named_children, an AttributeError caught) see them gone; the deletion happens after the graph.
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)
            self.scale = 2.0

    def fn(m, x):
        del m.b
        del m.scale
        try:
            del m.scale
            second = "deleted twice"
        except AttributeError as error:
            second = str(error)
        return [n for n, _ in m.named_children()], hasattr(m, "b"), second, m.a(x)

    class Plain:
        pass

    def on_an_object(o, x):
        del o.v
        o.v = x.sum()
        del o.w
        return x + o.v, sorted(vars(o))

    torch.manual_seed(0)
    m, x = Two(), torch.randn(2, 3)
    reference = copy.deepcopy(m)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(m, x), fn(reference, x))
    assert counter.frame_count == 1 and list(m._modules) == ["a"] and not hasattr(m, "b") and not hasattr(m, "scale")
    objects = [Plain(), Plain()]
    for o in objects:
        o.v, o.w = 1, 2
    assert same(cdynamo.compile(on_an_object, backend="eager", fullgraph=True)(objects[0], x), on_an_object(objects[1], x))
    assert vars(objects[0]).keys() == vars(objects[1]).keys() and same(objects[0].v, objects[1].v)

    class WithFallback:
        def __getattr__(self, name):
            return "fallback " + name

    def read_after_delete(o, x):
        del o.v
        return x + 1, o.v  # the class's __getattr__ answers, as in eager

    objects = [WithFallback(), WithFallback()]
    for o in objects:
        o.v = 1
    assert cdynamo.compile(read_after_delete, backend="eager")(objects[0], x)[1] == read_after_delete(objects[1], x)[1]
    assert vars(objects[0]) == vars(objects[1]) == {}


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_on_a_module_inside_the_function(set_to_none):
    def fn(m, x):
        m.zero_grad(set_to_none)
        return [p.grad is None for p in m.parameters()], m(x)

    def made():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
        m(torch.randn(2, 3)).sum().backward()
        return m

    compiled_m, eager_m, x = made(), made(), torch.randn(2, 3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(compiled_m, x), fn(eager_m, x))
    assert counter.frame_count == 1
    for mine, theirs in zip(compiled_m.parameters(), eager_m.parameters()):
        assert (mine.grad is None) == (theirs.grad is None) and (mine.grad is None or same(mine.grad, theirs.grad))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_containers_built_from_the_frames_modules_inside(backend):
    # nn.Sequential / nn.ModuleDict of modules the frame holds: no state of their own, so made
    # once at trace time; a model with other children is guarded out, gradients reach the frame's.
    def fn(m, x):
        kids = list(m.children())
        body = nn.Sequential(*kids[:-1])
        table = nn.ModuleDict({"first": kids[0]})
        return body(x), len(kids), table["first"](x)

    torch.manual_seed(0)
    m, other = (nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)) for _ in range(2))
    x = torch.randn(2, 3)
    counter = CompileCounter()
    compiled = cdynamo.compile(fn, backend=counter, fullgraph=True)
    assert same(compiled(m, x), fn(m, x)) and counter.frame_count == 1
    assert same(compiled(other, x), fn(other, x))
    cdynamo.reset()
    out = cdynamo.compile(fn, backend=backend, fullgraph=True)(m, x)
    out[0].sum().backward()
    expected = m[0].weight.grad.clone()
    m.zero_grad()
    fn(m, x)[0].sum().backward()
    assert same(expected, m[0].weight.grad)
    # A container also holding a layer made with parameters: made for this call (test_made_modules.py).
    extended = lambda m, x: nn.Sequential(m, nn.Linear(3, 3))(x)  # noqa: E731
    torch.manual_seed(3)
    expected = extended(m, x)
    torch.manual_seed(3)
    assert same(cdynamo.compile(extended, backend="eager", fullgraph=True)(m, x), expected)
