"""Graphs with data-dependent sizes (nonzero, a boolean mask, unique, item() under
capture_scalar_outputs), checks of data (assert on a tensor) or calls only a real run can trace
(CTC loss): split at the nodes that create an unbacked size symbol, at the checks and at those calls.
Those nodes run eagerly (aten's kernels decide the size from the data); the segments between
them compile as graphs of their own, with the unbacked sizes they read as symbolic inputs.
Assumes the frontend's example values (fakes of the trace's ShapeEnv) on every node."""

import operator

import torch

from .. import utils
from .._fake_runs import traces_only_with_data
from ..symbolic_graphs import example_value, unbacked_symbols


def creating_nodes(gm):
    """The call nodes whose value has an unbacked symbol that none of their arguments has."""
    found = []
    for node in gm.graph.nodes:
        if not node.op.startswith("call_"):
            continue
        created = unbacked_symbols(example_value(node))
        if not created:
            continue
        for argument in node.all_input_nodes:
            created -= unbacked_symbols(example_value(argument))
        if created:
            found.append(node)
    return found


def compile_split(gm, example_inputs, compile_segment):
    """gm as segments compiled by compile_segment(segment_gm, its example inputs), with the nodes
    that create unbacked sizes (and checks of data) run eagerly between them; None when gm has no
    such node."""
    # Checks of tensor data (_checks.check_node) run eagerly there too: an aten trace cannot keep a
    # Python raise, and the code around them still compiles.
    checks = {n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "_cdynamo_data_check", False)}
    # So do calls whose fake needs the data for an intermediate size (CTC loss): the frontend knew
    # their results' sizes, aten tracing cannot run them.
    opaque = {n for n in gm.graph.nodes if traces_only_with_data(gm, n)}
    creators = set(creating_nodes(gm)) | checks | opaque
    if not creators:
        return None
    runs = []  # consecutive call nodes of one kind: (eager, [nodes])
    eager_nodes = set()
    for node in gm.graph.nodes:
        if not node.op.startswith("call_"):
            continue
        # Items of an eager node's tuple (unique's values, inverse, counts) are taken there too:
        # a compiled segment takes tensors and numbers, not tuples.
        eager = node in creators or (node.target is operator.getitem and node.args[0] in eager_nodes)
        if eager:
            eager_nodes.add(node)
        if runs and not eager and not runs[-1][0]:
            runs[-1][1].append(node)
        else:
            runs.append((eager, [node]))
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    order = {node: k for k, node in enumerate(gm.graph.nodes)}
    steps = []
    for k, (eager, nodes) in enumerate(runs):
        later = [n for _, rest in runs[k + 1:] for n in rest] + [output]
        segment, inputs, outputs = _segment(gm, nodes, later, order)
        steps.append([segment.forward if eager else _FirstCall(segment, compile_segment), inputs, outputs])
    utils.counters["inductor"]["graphs split at data-dependent sizes" if creators - checks else "graphs split at data checks"] += 1
    what = ", ".join(sorted({str(n.target) for n in creators}))
    eager_runs = sum(eager for eager, _ in runs)
    utils.log("graphs", f"inductor: a graph with data-dependent sizes runs as {len(runs) - eager_runs} compiled "
              f"segment(s) around {eager_runs} eager one(s) ({what[:200]})")
    return _SplitProgram(gm, steps, output)


def _segment(gm, nodes, later, order):
    """(segment graph module, the nodes it reads from outside, the nodes it gives to later ones):
    nodes copied into a graph of their own that returns a tuple, as captured graphs do."""
    inside = set(nodes)
    inputs = []
    for node in nodes:
        for argument in node.all_input_nodes:
            if argument not in inside and argument not in inputs and argument.op != "get_attr":
                inputs.append(argument)
    inputs.sort(key=order.__getitem__)
    needed_later = {a for user in later for a in user.all_input_nodes}
    outputs = [n for n in nodes if n in needed_later]
    graph = torch.fx.Graph()
    env = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    for node in nodes:
        for argument in node.all_input_nodes:
            if argument.op == "get_attr" and argument not in env:
                env[argument] = graph.node_copy(argument, env.__getitem__)
        env[node] = graph.node_copy(node, env.__getitem__)
    graph.output(tuple(env[n] for n in outputs))
    return torch.fx.GraphModule(gm, graph), inputs, outputs


class _FirstCall:
    """A segment compiled at its first call, with that call's values as its example inputs (as
    the frontend gives a backend the frame's own tensors); its place in the program is then the
    compiled callable."""

    def __init__(self, segment, compile_segment):
        self.segment = segment
        self.compile_segment = compile_segment

    def __call__(self, step, args):
        inputs = [n for n in self.segment.graph.nodes if n.op == "placeholder"]
        if any(unbacked_symbols(example_value(n)) for n in inputs):
            step[0] = _SizeGeneric(self.segment, inputs, args, self.compile_segment)
        else:
            step[0] = self.compile_segment(self.segment, list(args))
        return step[0](*args)


class _SizeGeneric:
    """A segment reading data-dependent sizes, compiled for every value of them: its inputs'
    unbacked symbols become plain size symbols of a ShapeEnv of its own, hinted by the first
    call's values, so that the backend's symbolic path takes it. Whatever that compile assumed
    about those sizes (its ShapeEnv's guards) is checked per call; a call it does not hold for
    runs the segment as captured."""

    def __init__(self, segment, inputs, args, compile_segment):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.segment = segment
        self.env = ShapeEnv()
        mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        fakes = [_fresh_fake(mode, node, value, k) for k, (node, value) in enumerate(zip(inputs, args))]
        _propagate(segment, fakes, mode)
        self.fn = compile_segment(segment, list(args))
        self.guard = self.env.produce_guards_expression(fakes, ignore_static=False)

    def __call__(self, *args):
        if self.guard is not None and not self.env.evaluate_guards_expression(self.guard, list(args)):
            utils.counters["inductor"]["data-dependent sizes outside a segment's guards: ran as captured"] += 1
            return self.segment(*args)
        return self.fn(*args)


def _fresh_fake(mode, node, value, k):
    """The fake of one segment input: symbolic where its example value (the trace's) was."""
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    from ..shapes import _trace_source_type

    example = example_value(node)
    source = _trace_source_type()(f"t{k}")
    if isinstance(value, torch.Tensor):
        dims = [DimDynamic.DYNAMIC if not isinstance(size, int) else DimDynamic.STATIC for size in example.shape]
        return mode.from_tensor(value, source=source, symbolic_context=StatelessSymbolicContext(dynamic_sizes=dims))
    if isinstance(example, (torch.SymInt, torch.SymFloat)) and isinstance(value, (int, float)):
        env = mode.shape_env
        symbol = env.create_unspecified_symbol(value, source=source, dynamic_dim=DimDynamic.DYNAMIC)
        if isinstance(value, int):
            return env.create_symintnode(symbol, hint=value, source=source)
        return env.create_symfloatnode(symbol, hint=value, source=source)
    return value


def _propagate(segment, fakes, mode):
    """Every node's example value again, computed from the fresh fakes."""

    class Propagate(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            node.meta["val"] = node.meta["example_value"] = result
            return result

    with mode, torch.set_grad_enabled(torch.is_grad_enabled()):
        Propagate(segment).run(*fakes)


class _SplitProgram:
    """Runs the segments in order, each reading its inputs from the values computed so far."""

    def __init__(self, gm, steps, output):
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.steps = steps
        self.output = output

    def __call__(self, *args):
        values = dict(zip(self.placeholders, args))
        for step in self.steps:
            fn, inputs, outputs = step
            args = [values[n] for n in inputs]
            results = fn(step, args) if isinstance(fn, _FirstCall) else fn(*args)
            del args
            for node, value in zip(outputs, results):
                values[node] = value
            del results
        return torch.fx.node.map_arg(self.output.args[0], values.__getitem__)
