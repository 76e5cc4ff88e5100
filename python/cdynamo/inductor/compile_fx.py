"""From a torch.fx graph to a compiled callable: the compiled-graph cache (graph_cache.py), else
aten-level tracing (make_fx with functionalization and decompositions), then the C++ pipeline
lower -> schedule -> codegen -> runtime."""
import threading
import time

import torch
import torch.fx

from .. import config, utils
from .._graph_module import lazy_graph_modules
from . import layout, output_aliases, pad_matmuls, symbolic_floats, targets, triton_build

# make_fx and AOTAutograd keep their tracing state in module globals (torch.fx's CURRENT_PATCHER,
# the proxy mode stack): two threads tracing at once corrupt each other's trace. Aten tracing is
# serialized; the C++ compile after it (g++ without the GIL) still overlaps between threads.
_ATEN_TRACE_LOCK = threading.RLock()


def _enables_grad(gm):
    return any(n.op == "call_function" and n.target is torch._C._set_grad_enabled and n.args[0] for n in gm.graph.nodes)


def _needs_autograd(gm, example_inputs):
    """Whether autograd must see the graph: it runs with gradients (from its start, or from a
    grad-mode node: the rest of a no_grad block cut by a graph break, then the code after it)
    and a tensor it reads requires grad."""
    if not torch.is_grad_enabled() and not _enables_grad(gm):
        return False
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    tensors += list(gm.parameters()) + list(gm.buffers())
    return any(t.requires_grad for t in tensors)


def training_path(gm, example_inputs, symbolic=False):
    """Forward and backward compiled (training.py), or the graph as captured with eager autograd:
    under config.compiled_training = False, where AOTAutograd would not give eager's gradients,
    or where the joint trace fails (a write into a tensor autograd saved for backward, which
    eager reports only when backward runs). symbolic: example_inputs are the fakes of a graph
    with symbolic sizes; a failing joint trace raises (the caller compiles per sizes instead)."""
    if not config.compiled_training:
        return _with_eager_autograd(gm, "config.compiled_training is False")
    if not torch.is_grad_enabled():
        return _with_eager_autograd(gm, "the graph starts under no_grad and enables gradients inside")
    reason = targets.unsupported_reason(gm, example_inputs)
    if reason is not None:
        return targets.run_as_captured(gm, reason)
    from . import training

    reason = training.eager_autograd_reason(gm)
    if reason is not None:
        return _with_eager_autograd(gm, reason)
    target, device_type = targets.choose_target(gm, example_inputs)
    start = time.perf_counter()
    try:
        with _ATEN_TRACE_LOCK:
            compiled = training.compile_training(gm, example_inputs, target, device_type)
    except Exception as error:  # noqa: BLE001 - eager autograd is always a correct answer
        if symbolic:
            raise
        first_line = str(error).splitlines()[0] if str(error) else ""
        return _with_eager_autograd(gm, f"the joint forward/backward trace failed: {type(error).__name__}: {first_line}")
    utils.counters["inductor_targets"][f"{target} ({device_type})"] += 1
    utils.add_time("aten_graph", time.perf_counter() - start)
    return compiled


def _with_eager_autograd(gm, reason):
    utils.log("graphs", f"inductor: this graph needs gradients and runs with eager autograd ({reason})")
    utils.counters["inductor"]["autograd_fallback"] += 1
    utils.counters["inductor"][f"autograd_fallback: {reason[:200]}"] += 1
    return gm.forward


def _unique_state(gm):
    """(tensor, [names]) for each distinct parameter and buffer of gm (tied weights: one entry)."""
    by_id = {}
    named = list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False))
    for name, t in named:
        by_id.setdefault(id(t), (t, []))[1].append(name)
    return list(by_id.values())


def aten_graph(gm, example_inputs, fake_mode=None):
    """The functional, decomposed aten-level graph of gm (input mutations become trailing copy_).

    Traced on fake tensors of a fake mode of our own, with static shapes: a caller's ambient
    fake mode (torch.compile's, with its symbolic shape environment) is not used. Parameters and
    buffers are traced as fake inputs too, so that a write to one (a running statistic, a step
    counter) is functionalized like an input's and never made to the real tensor while tracing.
    Those the graph only reads become constants of the aten graph again (the runtime binds the
    very same tensor objects); those it writes stay leading inputs, listed (as the real tensors)
    in aten_gm.meta["written_state"].

    With fake_mode (a symbolic graph's, whose ShapeEnv holds its size symbols), example_inputs
    are that mode's fakes and the trace keeps their symbolic sizes (size arithmetic becomes
    SymInt nodes); the parameters stay static."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from .decompositions import table

    symbolic = fake_mode is not None
    if not symbolic:
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    state = _unique_state(gm)
    fake_state = [fake_mode.from_tensor(t, static_shapes=True) for t, _ in state]
    fake_inputs = list(example_inputs) if symbolic else [
        fake_mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t for t in example_inputs
    ]

    def with_state(*args):
        tensors = {name: args[k] for k, (_, names) in enumerate(state) for name in names}
        return torch.func.functional_call(gm, tensors, tuple(args[len(state):]), tie_weights=False, strict=False)

    functional = torch.func.functionalize(with_state, remove="mutations")
    with fake_mode, torch.no_grad(), _python_dispatcher(symbolic):
        if symbolic:
            # functorch's functionalize runs composite ops (linear, matmul) in C++, reading
            # symbolic sizes as ints (a guard per size): decompose them first, functionalize after.
            decomposed = make_fx(with_state, decomposition_table=table(), tracing_mode="real", _allow_non_fake_inputs=True)(
                *fake_state, *fake_inputs)
            functional = torch.func.functionalize(decomposed, remove="mutations")
        aten_gm = make_fx(functional, decomposition_table=table(), tracing_mode="real", _allow_non_fake_inputs=True)(
            *fake_state, *fake_inputs
        )
    written = _state_back_to_constants(aten_gm, [t for t, _ in state])
    if _writes_intermediates(aten_gm):
        # Decompositions run below functionalization (GRU's cell writes its gates in place):
        # the lowering takes functional graphs, so this one is functionalized once more.
        placeholders = [n.meta["val"] for n in aten_gm.graph.nodes if n.op == "placeholder"]
        with fake_mode, torch.no_grad(), _python_dispatcher(symbolic):
            aten_gm = make_fx(torch.func.functionalize(aten_gm, remove="mutations"), tracing_mode="real",
                              _allow_non_fake_inputs=True)(*placeholders)
    aten_gm.meta["written_state"] = written
    return aten_gm


def _python_dispatcher(enabled):
    """Symbolic traces run under the Python dispatcher, whose meta kernels compute with SymInts
    (torch 2.11's C++ matmul would read symbolic sizes as ints)."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext()
    from torch._dispatch.python import enable_python_dispatcher

    return enable_python_dispatcher()


def _writes_intermediates(aten_gm):
    """Whether an op other than the trailing copy_ into an input writes a tensor in place."""
    for node in aten_gm.graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is None or not schema.is_mutable:
            continue
        if node.target is torch.ops.aten.copy_.default and node.args[0].op == "placeholder":
            continue
        return True
    return False


def _state_back_to_constants(aten_gm, state):
    """Turns the placeholders of parameters and buffers the graph only reads into get_attr
    constants bound to the real tensors; returns the real tensors of those it writes (kept as
    leading inputs: the functionalized graph ends with a copy_ into each)."""
    graph = aten_gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"][: len(state)]
    written = {n.args[0] for n in graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten.copy_.default and n.args[0] in placeholders}
    first = next(n for n in graph.nodes if n.op != "placeholder")
    kept = []
    for k, (node, tensor) in enumerate(zip(placeholders, state)):
        if node in written:
            kept.append(tensor)
            continue
        name = f"_state_constant{k}"
        aten_gm.register_buffer(name, tensor, persistent=False)  # the very tensor, registered for fx
        with graph.inserting_before(first):
            constant = graph.get_attr(name)
        constant.meta.update(node.meta)
        node.replace_all_uses_with(constant)
        graph.erase_node(node)
    graph.lint()
    aten_gm.recompile()
    return kept


def compile_fx(gm, example_inputs):
    if not torch.is_grad_enabled() and not _enables_grad(gm) and targets.autograd_state_reason(gm):
        return _with_new_leaves_outside(gm, example_inputs)
    return _compile_fx(gm, example_inputs)


def _with_new_leaves_outside(gm, example_inputs):
    """A graph without gradients that makes tensors require grad (transformers' placeholder
    outputs): compiled without those requires_grad_() calls, made on its outputs after each
    call. Without grad mode nothing else observes them (later results never require grad)."""
    graph = gm.graph
    output = graph.output_node()
    results = output.args[0]
    flat = list(results) if isinstance(results, (tuple, list)) else [results]
    new_leaves = [i for i, node in enumerate(flat) if isinstance(node, torch.fx.Node)
                  and node.op == "call_method" and node.target == "requires_grad_"]
    for node in [n for n in graph.nodes if n.op == "call_method" and n.target == "requires_grad_"]:
        if len(node.args) > 1 and node.args[1] is False or node.kwargs.get("requires_grad", True) is False:
            return targets.run_as_captured(gm, targets.autograd_state_reason(gm))
        node.replace_all_uses_with(node.args[0])
        graph.erase_node(node)
    gm.recompile()
    compiled = _compile_fx(gm, example_inputs)
    single = not isinstance(results, (tuple, list))

    def run(*args):
        outputs = compiled(*args)
        for i in new_leaves:
            (outputs if single else outputs[i]).requires_grad_()
        return outputs

    return run


def _compile_fx(gm, example_inputs):
    reason = targets.unsupported_reason(gm, example_inputs)
    if reason is not None:
        return targets.run_as_captured(gm, reason)
    return targets.checked_on_device(gm, example_inputs, lambda: _compile_supported(gm, example_inputs))


def _compile_supported(gm, example_inputs):
    if _needs_autograd(gm, example_inputs):
        return training_path(gm, example_inputs)
    from . import graph_cache

    target, device_type = targets.choose_target(gm, example_inputs)
    utils.counters["inductor_targets"][f"{target} ({device_type})"] += 1
    key = graph_cache.graph_key(gm, example_inputs)
    if key is not None:
        compiled = graph_cache.load(key, gm)
        if compiled is not None:
            return compiled
    compiled, reason = compile_aten(gm, example_inputs, target, device_type, key=key)
    return compiled if reason is None else targets.run_as_captured(gm, reason)


def compile_aten(gm, example_inputs, target, device_type, key=None, fake_mode=None):
    """(callable, None) for a graph a target accepted: aten tracing, the graph passes, then the
    C++ pipeline (stored under `key` in the compiled-graph cache when given); or (None, reason)
    when the aten graph touches what no target compiles. With fake_mode (a symbolic graph's,
    example_inputs its fakes) the graph's sizes stay symbolic through every pass."""
    from .. import _C
    from . import graph_cache

    triton_build.warm_up_for(target, device_type)  # the build workers start while this thread traces
    symbolic = fake_mode is not None
    guards_before = graph_cache.guard_count(example_inputs)
    start = time.perf_counter()
    with _ATEN_TRACE_LOCK, lazy_graph_modules():
        aten_gm = aten_graph(gm, example_inputs, fake_mode=fake_mode)
        reason = targets.unsupported_reason(aten_gm, ())  # a value made inside the graph, e.g. .to("cuda")
        reason = reason or targets.written_aliased_input_reason(aten_gm, [*aten_gm.meta["written_state"], *example_inputs])
        if reason is not None:
            return None, reason
        written_state = aten_gm.meta["written_state"]
        aliases = output_aliases.eager_aliases(gm, example_inputs)
        output_aliases.annotate(aten_gm, output_aliases.shifted(aliases, len(written_state)))
        if config.channels_last_convolutions:
            layout.prefer_channels_last(aten_gm)
        if config.pad_matmuls:  # pads static K and N only: serves every size
            pad_matmuls.pad_misaligned_matmuls(aten_gm)
        if symbolic:
            symbolic_floats.tensorify_size_floats(aten_gm)
    utils.add_time("aten_graph", time.perf_counter() - start)
    utils.log("graphs", lambda: f"inductor aten graph{' (symbolic sizes)' if symbolic else ''}:\n{aten_gm.code}")
    utils.counters["inductor"]["graphs"] += 1
    if written_state:
        # The parameters and buffers it writes are leading inputs of the program: passed on each
        # call (the very tensors the module holds), never cached (the entry binds constants only).
        skip = len(written_state)  # the eager fallback (async_compile) takes the graph's own arguments
        program = _C._inductor_compile(aten_gm, lambda *args: gm.forward(*args[skip:]), False, target, device_type)
        return (lambda *args: program(*written_state, *args)), None
    if key is None:
        return _C._inductor_compile(aten_gm, gm.forward, False, target, device_type), None
    compiled, blob = _C._inductor_compile(aten_gm, gm.forward, True, target, device_type)
    if blob is not None:
        # Facts about sizes this compile relied on: a later process loading the entry guards them too.
        relied_on = graph_cache.guards_since(example_inputs, guards_before)
        graph_cache.store(key, gm, aten_gm, blob, relied_on)
    return compiled, None
