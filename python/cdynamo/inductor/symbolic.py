"""Symbolic programs: a graph with symbolic sizes compiled once for every size its guards admit
(the kernels of both targets take the sizes as arguments), instead of once per sizes met
(symbolic_graphs.per_shape).
The C++ lowering reads each SymInt as an expression in the syntax of ir::parse_expr, rendered
from its sympy expression by symbolic_graphs.expr_text; what cannot be rendered, or lowered for every size, raises
NotImplementedError and the graph is compiled per sizes met instead."""

import torch

from .. import config, utils
from ..symbolic_graphs import expr_text


def symbol_hints(graph_module):
    """{symbol name: its value at compile time} for the size symbols of graph_module's values."""
    for node in graph_module.graph.nodes:
        val = node.meta.get("val")
        for item in _symbolic_ints(val):
            return {str(symbol): int(value) for symbol, value in symbol_values(item.node.shape_env).items()}
    return {}


def symbol_values(shape_env):
    """The ShapeEnv's {symbol: value when traced} (the dict itself: torch 2.13 renamed var_to_val,
    now a deprecated alias, to backed_var_to_val)."""
    values = getattr(shape_env, "backed_var_to_val", None)
    return shape_env.var_to_val if values is None else values


def _symbolic_ints(val):
    if isinstance(val, torch.SymInt):
        yield val
    elif isinstance(val, torch.Tensor):
        for size in (*val.shape, *val.stride(), val.storage_offset()):
            if isinstance(size, torch.SymInt):
                yield size


def try_compile(gm, example_inputs):
    """The graph compiled once for all the sizes its guards admit, or None (static graphs, and
    symbolic ones this path does not take yet: the caller compiles those per sizes met). Why a
    graph was not compiled symbolically is logged and counted in counters["dynamic"]."""
    from ..symbolic_graphs import graph_is_symbolic, symbolic_example_inputs
    from . import targets

    if not config.symbolic_kernels or not graph_is_symbolic(gm):
        return None
    fakes = symbolic_example_inputs(gm)
    reason = _unsupported_reason(gm, fakes)
    if reason is None:
        try:
            compiled = targets.checked_on_device(gm, fakes, lambda: _compile(gm, fakes))
        except Exception as error:  # noqa: BLE001 - per-size compiles are always a correct answer
            text = str(error).splitlines()[0] if str(error) else ""
            reason = f"{type(error).__name__}: {text}"
        else:
            utils.counters["dynamic"]["symbolic programs"] += 1
            return compiled
    utils.counters["dynamic"][f"compiled per sizes: {reason[:200]}"] += 1
    utils.log("graphs", f"inductor: a graph with symbolic sizes is compiled per sizes met ({reason})")
    return None


def _unsupported_reason(gm, fakes):
    from . import compile_fx, targets

    if targets.unsupported_reason(gm, fakes) is not None:
        return "the inductor runs it as captured"
    return None


def _compile(gm, fakes):
    from ..symbolic_graphs import NumberOutputs
    from . import compile_fx, graph_cache, targets

    if compile_fx._needs_autograd(gm, fakes):
        if not config.symbolic_training:
            raise NotImplementedError("it needs gradients (config.symbolic_training is off)")
        return _compile_training(gm, fakes)
    split = NumberOutputs(gm, keep_examples=True)
    if not split.runs_tensor_graph:
        return split.number_fn
    fake_mode = next(t.fake_mode for t in fakes if isinstance(t, torch.Tensor))
    target, device_type = targets.choose_target(gm, fakes)
    utils.counters["inductor_targets"][f"{target} ({device_type})"] += 1
    key = graph_cache.graph_key(split.tensor_gm, fakes)
    compiled = graph_cache.load(key, split.tensor_gm, fakes) if key is not None else None
    if compiled is None:
        compiled, reason = compile_fx.compile_aten(split.tensor_gm, fakes, target, device_type, key=key,
                                                   fake_mode=fake_mode)
        if reason is not None:
            raise NotImplementedError(f"its aten graph touches {reason}")
    return split.wrap(compiled)


def _compile_training(gm, fakes):
    """AOTAutograd traces the joint graph on the fakes: both halves take the sizes (the backward
    reads those the forward saved as numbers). Its partitioner never saves a symbolic float for
    the backward, so each value of the graph's float inputs is a constant of a compile of its
    own, symbolic in the sizes (as torch.compile, which specialises floats by default). Numbers
    the graph returns are computed beside the compiled program (NumberOutputs)."""
    from ..symbolic_graphs import NumberOutputs, _next_static_compile, _with_constant_inputs
    from . import compile_fx

    split = NumberOutputs(gm, keep_examples=True)
    if not split.runs_tensor_graph:
        return split.number_fn
    tensor_gm = split.tensor_gm
    floats = [k for k, fake in enumerate(fakes) if isinstance(fake, torch.SymFloat)]
    if not floats:
        return split.wrap(compile_fx.training_path(tensor_gm, fakes, symbolic=True))
    kept = [k for k in range(len(fakes)) if k not in floats]

    def compile_for(args):
        constant_gm = _with_constant_inputs(tensor_gm, {k: args[k] for k in floats}, keep_examples=True)
        program = compile_fx.training_path(constant_gm, [fakes[k] for k in kept], symbolic=True)
        return lambda *args: program(*(args[k] for k in kept))

    compiled = {}

    def run(*args):
        key = tuple(args[k] for k in floats)
        program = compiled.get(key)
        if program is None:
            program = compiled[key] = _next_static_compile(compiled, tensor_gm, args, compile_for,
                                                           counted_as="training compiles per float value")
        return program(*args)

    return split.wrap(run)
