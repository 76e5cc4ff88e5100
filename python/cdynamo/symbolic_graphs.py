"""Graphs with symbolic sizes on the backend side: what a backend that compiles for fixed sizes
needs around a symbolic graph (per_shape: one static compile per sizes met) and the numbers such a
graph returns, computed from the inputs' sizes beside the compiled tensor program (NumberOutputs).
Assumes graphs made by cdynamo's frontend or by make_fx/AOTAutograd (example values in node.meta)."""
import torch

from ._graph_module import new_graph_module
from .shapes import _holds_symbolic, _is_symbolic


def expr_text(value):
    """A SymInt (or int) as text over its size symbols ("s0*s1 + (s2 // 2)"), or None when its
    expression uses an operation the kernels' index arithmetic does not have. The text is also
    Python, sizes being non-negative (ceil and floor divisions are written with //)."""
    if isinstance(value, int):
        return str(value)
    return _render(_simplified(value))


def _simplified(value):
    node = value.node
    shape_env = getattr(node, "shape_env", None)
    # with the replacements the guards made (s1 == s0, s2 == 8)
    return shape_env.simplify(node.expr) if shape_env is not None else node.expr


def _render(e):
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    kind = type(e).__name__
    if kind in ("CeilToInt", "FloorToInt") and type(e.args[0]).__name__ == "IntTrueDiv":
        # ceil(a / b), floor(a / b) of ints (attention kernels round lengths up to their blocks)
        a, b = (_render(x) for x in e.args[0].args)
        if a is None or b is None:
            return None
        return f"(0 - ((0 - {a}) // {b}))" if kind == "CeilToInt" else f"({a} // {b})"
    args = [_render(a) for a in e.args]
    if any(a is None for a in args):
        return None
    if kind == "Add":
        return "(" + " + ".join(args) + ")"
    if kind == "Mul":
        return "(" + "*".join(args) + ")"
    if kind in ("Pow", "PowByNatural") and e.args[1].is_Integer and 0 <= int(e.args[1]) <= 8:
        return "(" + "*".join([args[0]] * int(e.args[1])) + ")" if int(e.args[1]) else "1"
    if kind in ("FloorDiv", "CleanDiv"):
        return f"({args[0]} // {args[1]})"
    if kind == "CeilDiv":  # ceil(a / b) = -((-a) // b)
        return f"(0 - ((0 - {args[0]}) // {args[1]}))"

    if kind == "ModularIndexing":
        return f"(({args[0]} // {args[1]}) % {args[2]})"
    if kind in ("Mod", "PythonMod"):
        return f"({args[0]} % {args[1]})"
    if kind in ("Max", "Min") and args:
        text = args[0]
        for a in args[1:]:
            text = f"{kind.lower()}({text}, {a})"
        return text
    return None


def graph_is_symbolic(gm):
    """Whether a captured graph's inputs have symbolic sizes (or are symbolic numbers)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = example_value(node)  # torch.compile's frontend sets example_value only
        if _is_symbolic(val):
            return True
        if isinstance(val, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in (*val.shape, *val.stride())):
            return True
    return False


def unbacked_symbols(value):
    """The unbacked symbols (sizes only the data decides: nonzero's, a boolean mask's, item()'s)
    of a value's sizes, strides and numbers, as first created: a ShapeEnv replaces u0 by 5 once
    a broadcast needs it to be 5, which eager does not know."""
    from torch.fx.experimental.symbolic_shapes import SymT, symbol_is_type

    found = set()
    for item in _symbolic_items(value):
        expr = getattr(item.node, "_expr", item.node.expr)
        found.update(s for s in expr.free_symbols if symbol_is_type(s, (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT)))
    return found


def _symbolic_items(value):
    if _is_symbolic(value):
        yield value
    elif isinstance(value, torch.Tensor):
        for size in (*value.shape, *value.stride(), value.storage_offset()):
            if isinstance(size, torch.SymInt):
                yield size
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _symbolic_items(item)


def has_data_dependent_sizes(gm):
    """Whether a value of the graph has a size or number only the data decides."""
    return any(unbacked_symbols(example_value(node)) for node in gm.graph.nodes if node.op.startswith("call_"))


def symbolic_example_inputs(gm):
    """The fake inputs of a graph with symbolic sizes, or with sizes only the data decides (what
    a backend tracing it passes to make_fx or AOTAutograd), or None for a static graph."""
    if not graph_is_symbolic(gm) and not has_data_dependent_sizes(gm):
        return None
    return [example_value(node) for node in gm.graph.nodes if node.op == "placeholder"]


def _call_key(args):
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append((a.shape, a.stride(), a.storage_offset()))  # torch.Size: a hashable tuple
        else:
            key.append(a)
    return tuple(key)


class NumberOutputs:
    """A graph's returned numbers (sizes the frontend computed from the inputs' sizes) split off
    into a graph of their own, for backends that return tensors only: `tensor_gm` returns the
    tensors, `number_fn` (None when there are none) the numbers, and merge() puts both results
    back in the graph's order. A graph that returns only numbers still runs its tensor part when
    that part does more than compute them (an input written in place: `runs_tensor_graph`)."""

    def __init__(self, gm, keep_examples=False):
        outputs = list(_output_node(gm).args[0])
        self.count = len(outputs)
        self.numbers = [k for k, item in enumerate(outputs) if isinstance(example_value(item), _NUMBERS)]
        self.tensors = [k for k in range(len(outputs)) if k not in self.numbers]
        self.tensor_gm = _with_outputs(gm, [outputs[k] for k in self.tensors], only_needed=False,
                                       keep_examples=keep_examples)
        number_gm = _with_outputs(gm, [outputs[k] for k in self.numbers], only_needed=True) if self.numbers else None
        self.number_fn = None
        if number_gm is not None:
            # The graph may read a size off an intermediate tensor (AOTAutograd's forward returns
            # sym_size of one for its backward): running that graph would compute the tensor again.
            self.number_fn = _size_reader(gm, [outputs[k] for k in self.numbers]) or number_gm.forward
        calls = sum(node.op.startswith("call_") for node in gm.graph.nodes)
        number_calls = sum(node.op.startswith("call_") for node in number_gm.graph.nodes) if number_gm is not None else 0
        self.runs_tensor_graph = bool(self.tensors) or calls > number_calls

    def wrap(self, tensor_fn):
        """A callable returning the graph's outputs from tensor_fn (the compiled tensor_gm)."""
        if self.number_fn is None:
            return tensor_fn
        if not self.runs_tensor_graph:
            return self.number_fn
        number_fn, tensors, numbers, count = self.number_fn, self.tensors, self.numbers, self.count

        def run(*args):
            merged = [None] * count
            for k, value in zip(tensors, tensor_fn(*args)):
                merged[k] = value
            for k, value in zip(numbers, number_fn(*args)):
                merged[k] = value
            return tuple(merged)

        return run


def per_shape(compile_static, gm, example_inputs):
    """A backend that compiles for fixed sizes (the inductor's kernels, CUDA graphs) given a graph
    with symbolic sizes: compiled once per distinct input sizes, at the first call with them.
    Static graphs are compiled at once, as before."""
    if not graph_is_symbolic(gm):
        return compile_static(gm, example_inputs)
    split = NumberOutputs(gm)
    tensor_gm = split.tensor_gm
    if not split.runs_tensor_graph:
        return split.number_fn
    # Number inputs are constants of each static compile (their values are part of its key).
    number_inputs = [k for k, a in enumerate(example_inputs) if not isinstance(a, torch.Tensor)]

    def compile_for(args):
        static_gm = _with_constant_inputs(tensor_gm, {k: args[k] for k in number_inputs})
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        _propagate_static(static_gm, tensors)
        fn = compile_static(static_gm, tensors)
        if not number_inputs:
            return fn
        return lambda *args: fn(*(a for a in args if isinstance(a, torch.Tensor)))

    # torch.compile's frontend passes SymInts among the example inputs: then the first call compiles.
    concrete = not any(_holds_symbolic(a) for a in example_inputs)
    compiled = {_call_key(example_inputs): compile_for(example_inputs)} if concrete else {}

    def run(*args):
        key = _call_key(args)
        fn = compiled.get(key)
        if fn is None:
            fn = compiled[key] = _next_static_compile(compiled, gm, args, compile_for)
        return fn(*args)

    return split.wrap(run)



def _size_reader(gm, returned):
    """A function of gm's inputs returning the numbers `returned` (nodes of gm) computed from the
    inputs' sizes and numbers alone, as Python made from their expressions; None when one is not
    an int expression over symbols the inputs hold (a float, a size only the data decides)."""
    sources = {}  # symbol name: where a call's arguments hold its value
    for k, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = example_value(node)
        if isinstance(val, torch.SymInt) and val.node.expr.is_Symbol:
            sources.setdefault(str(val.node.expr), f"args[{k}]")
        elif isinstance(val, torch.Tensor):
            for d, size in enumerate(val.shape):
                if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                    sources.setdefault(str(size.node.expr), f"args[{k}].shape[{d}]")
    texts, used = [], set()
    for item in returned:
        val = example_value(item)
        if isinstance(val, (bool, int)) and not isinstance(val, torch.SymInt):
            texts.append(repr(val))
            continue
        if not isinstance(val, torch.SymInt):
            return None
        names = {str(s) for s in _simplified(val).free_symbols}
        text = expr_text(val)
        if text is None or not names <= sources.keys():
            return None
        texts.append(text)
        used |= names
    lines = ["def read_sizes(*args):"] + [f"    {name} = {sources[name]}" for name in sorted(used)]
    lines.append(f"    return ({', '.join(texts)},)")
    namespace = {"min": min, "max": max}
    exec(compile("\n".join(lines), "<cdynamo size reader>", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["read_sizes"]


_NUMBERS = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def _next_static_compile(compiled, gm, args, compile_for, counted_as="static compiles of symbolic graphs"):
    from . import config, utils

    if len(compiled) < config.static_compiles_per_graph:
        utils.counters["dynamic"][counted_as] += 1
        return compile_for(args)
    utils.counters["dynamic"]["sizes run as captured (past static_compiles_per_graph)"] += 1
    if len(compiled) == config.static_compiles_per_graph:
        import warnings

        warnings.warn(
            f"cdynamo: a graph with symbolic sizes met {len(compiled) + 1} different input sizes or numbers; "
            "the backend compiles for fixed ones, so new ones run the captured graph as it is "
            "(raise cdynamo.config.static_compiles_per_graph, or mark the changing dimension static)",
            RuntimeWarning, stacklevel=2)
    return gm.forward


def _propagate_static(gm, args):
    """Sets every node's example value for these inputs, as a static capture has them (the
    backend reads requires_grad and aliasing from them): fakes of one mode, parameters included,
    not detached (FakeTensorProp detaches what it stores)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)

    class Propagate(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            node.meta["val"] = node.meta["example_value"] = result
            return result

        def get_attr(self, target, args, kwargs):
            value = super().get_attr(target, args, kwargs)
            return mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor) else value

        def call_module(self, target, args, kwargs):
            from ._fake_mode import call_on_fake_state

            return call_on_fake_state(mode, self.fetch_attr(target), args, kwargs)[0]

    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    def propagate():
        fakes = [mode.from_tensor(a, static_shapes=True) for a in args]
        with mode, torch.set_grad_enabled(torch.is_grad_enabled()):  # the graph's own grad-mode nodes run too
            Propagate(gm).run(*fakes)

    try:
        propagate()
    except DynamicOutputShapeException:
        # nonzero and co.: their output sizes need a ShapeEnv (unbacked symbols)
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
        propagate()


def _with_constant_inputs(gm, values, keep_examples=False):
    """gm with the placeholders at the given positions replaced by constants (a copy, when any)."""
    if not values:
        return gm
    copy = _with_outputs(gm, list(_output_node(gm).args[0]), only_needed=False, keep_examples=keep_examples)
    placeholders = [n for n in copy.graph.nodes if n.op == "placeholder"]
    for k, value in values.items():
        node = placeholders[k]
        for user in list(node.users):
            user.args = torch.fx.node.map_arg(user.args, lambda n: value if n is node else n)
            user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda n: value if n is node else n)
        copy.graph.erase_node(node)
    copy.recompile()
    return copy


def _output_node(gm):
    return next(n for n in reversed(gm.graph.nodes) if n.op == "output")


def example_value(item):
    """A graph node's example value (torch.compile's frontend sets example_value, make_fx val)."""
    if isinstance(item, torch.fx.Node):
        return item.meta.get("example_value", item.meta.get("val"))
    return item


def _with_outputs(gm, returned, only_needed, keep_examples=False):
    """A copy of gm returning the tuple `returned` (nodes of gm) without symbolic example values
    (a static compile reads its sizes from its inputs) unless keep_examples. only_needed: just the
    nodes the outputs read; else every node (fx's dead-code elimination would drop in-place
    method calls)."""
    needed = set()
    stack = [r for r in returned if isinstance(r, torch.fx.Node)]
    while stack:
        node = stack.pop()
        if node not in needed:
            needed.add(node)
            stack.extend(node.all_input_nodes)
    graph = torch.fx.Graph()
    copies = {}
    for node in gm.graph.nodes:
        if node.op == "output" or (only_needed and node.op != "placeholder" and node not in needed):
            continue
        copies[node] = graph.node_copy(node, lambda n: copies[n])
        copies[node].meta = {k: v for k, v in node.meta.items() if keep_examples or k not in ("val", "example_value")}
    graph.output(tuple(copies[r] if isinstance(r, torch.fx.Node) else r for r in returned))
    return new_graph_module(gm, graph)
