"""Torch's global state that traced code changes (grad mode, autocast): snapshots of it, the
graph nodes that set it, and the restorers a graph break leaves on the stack for a block's exit.
Assumes the state is per thread, as torch keeps it."""
import inspect
import threading

import torch

# Devices whose autocast state compiled code may set (a with-block on torch.autocast).
AUTOCAST_DEVICES = ("cpu", "cuda")


def global_state():
    """What traced code may change of torch's global state: grad mode, autocast's cache flag, and
    per device of AUTOCAST_DEVICES whether autocast is on and its dtype."""
    return (torch.is_grad_enabled(), torch.is_autocast_cache_enabled(),
            tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES))


def set_global_state(state):
    grad, cache, autocast = state
    torch._C._set_grad_enabled(grad)
    torch.set_autocast_cache_enabled(cache)
    for device, (enabled, dtype) in zip(AUTOCAST_DEVICES, autocast):
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)


def leaving_global_state(fn, state):
    """fn, then torch's global state set as the traced code left it (a graph that ends inside a
    no_grad or autocast block, or after torch._C._set_grad_enabled): backends that compile the
    graph's state nodes away (the inductor traces them) must not leave the state as it was."""

    def run(*args):
        result = fn(*args)
        set_global_state(state)
        return result

    return run


def restoring_state_on_error(fn, state):
    """fn, which sets torch's global state (a graph holding a no_grad, autocast or mode block),
    leaving the state as it was when it raises (an operation's error, a failed check of data): the
    exception leaves the blocks, whose __exit__ restore it in eager."""

    def run(*args):
        entered = tuple(_entered())
        try:
            return fn(*args)
        except BaseException:
            set_global_state(state)
            restore_entered(entered)
            raise

    return run


def set_autocast_state(device, enabled, dtype, cache_enabled):
    """A graph node entering or leaving a torch.autocast block: absolute values, so that running
    it twice (the graph, then leaving_global_state) is running it once."""
    torch.set_autocast_enabled(device, enabled)
    torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(cache_enabled)


class AutocastRestore:
    """The __exit__ of a torch.autocast block the trace entered: restores the state from before
    it. Also what a graph break inside the block leaves on the stack, recognised by the resume
    function's trace."""

    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state

    def __call__(self, *exc_info):
        set_autocast_state(*self.state)  # returns None: an exception leaving the block goes on

    def graph_node(self):
        """(function, args) of the graph node that restores the state in traced code."""
        return set_autocast_state, self.state


# torch.inference_mode and torch.device blocks entered by graph nodes: torch keeps their state in
# context objects (RAII guards, a TorchFunctionMode), held here per thread, innermost last.
_ENTERED = threading.local()


def _entered():
    entered = getattr(_ENTERED, "contexts", None)
    if entered is None:
        entered = _ENTERED.contexts = []
    return entered


def _enter(make, argument):
    context = make(argument)
    context.__enter__()
    _entered().append((make, argument, context))


def enter_inference_mode(mode):
    """A graph node entering a torch.inference_mode(mode) block."""
    _enter(torch._C._InferenceMode, mode)


def enter_device(device):
    """A graph node entering a `with torch.device(device):` block (factory functions default to it)."""
    _enter(torch.device, device)


def _sdpa_kernel_block(entry):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names, set_priority = entry
    return sdpa_kernel([SDPBackend.__members__[name] for name in names], set_priority)


def enter_sdpa_kernel(entry):
    """A graph node entering a `with torch.nn.attention.sdpa_kernel(backends):` block (entry:
    sdpa_kernel_entry's)."""
    _enter(_sdpa_kernel_block, entry)


def sdpa_kernel_entry(manager):
    """(backend names, set_priority) of a torch.nn.attention.sdpa_kernel(...) context manager not
    entered yet, what a graph node can hold; None for other objects."""
    import contextlib

    from torch.nn import attention

    if type(manager) is not contextlib._GeneratorContextManager or manager.func is not attention.sdpa_kernel.__wrapped__:
        return None
    bound = inspect.signature(manager.func).bind(*manager.args, **manager.kwds)
    bound.apply_defaults()
    backends = bound.arguments["backends"]
    backends = [backends] if isinstance(backends, attention.SDPBackend) else list(backends)
    return tuple(dict.fromkeys(b.name for b in backends)), bool(bound.arguments["set_priority"])


def exit_context():
    """A graph node leaving the innermost block that one of the above entered."""
    _entered().pop()[2].__exit__(None, None, None)


def entered_state():
    """The blocks entered now (a trace's fake runs of the nodes above change them)."""
    return tuple(_entered())


def restore_entered(state):
    """Back to the blocks of entered_state()'s `state`: the ones entered since are left, the ones
    left since (by a trace running a block's exit that an earlier graph entered) entered again."""
    entered = _entered()
    kept = 0
    while kept < min(len(entered), len(state)) and entered[kept] is state[kept]:
        kept += 1
    while len(entered) > kept:
        exit_context()
    for make, argument, _ in state[kept:]:
        _enter(make, argument)


def function_mode_node(mode):
    """The graph node entering a `with mode:` block on a TorchFunctionMode (fx cannot write the mode
    as an argument: a function of its own holds it): torch's functions in the block go through
    mode.__torch_function__ when the graph runs, as in eager (the trace's fake runs go through it
    too, which gives the results' shapes and dtypes)."""

    def the_mode(_):
        return mode

    def enter_function_mode():
        _enter(the_mode, None)

    enter_function_mode.__qualname__ = f"enter_{type(mode).__name__}"
    enter_function_mode._cdynamo_runs_as_captured = _RUNS_AS_CAPTURED
    return enter_function_mode


def function_mode_refusal(cls):
    """Why a TorchFunctionMode of class cls cannot be entered by a graph, or None. The graph holds
    one mode object for every call (eager makes one per call, or holds the user's), and the trace's
    fake runs call its __torch_function__ once more than eager: it must keep no state on itself and
    change nothing the program owns."""
    import dis
    import types

    from ._special_calls import _code_side_effect

    functions = [getattr(cls, name, None) for name in ("__init__", "__torch_function__")]
    functions = [getattr(f, "__func__", f) for f in functions]
    functions = [f for f in functions if isinstance(f, types.FunctionType)]
    handler = getattr(cls, "__torch_function__", None)
    handler = getattr(handler, "__func__", handler)
    if isinstance(handler, types.FunctionType):
        codes = [handler.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            if any(i.opname in ("STORE_ATTR", "DELETE_ATTR") for i in dis.get_instructions(code)):
                return f"{cls.__name__}.__torch_function__ writes attributes (state the graph's one mode object would carry across calls)"
    for function in functions:
        # torch's own callables among its globals (an autograd Function's apply) compute values:
        # read as inert as torch's functions are.
        namespace = {name: (len if callable(value) and (getattr(value, "__module__", None) or "").startswith("torch")
                            else value) for name, value in function.__globals__.items()}
        why = _code_side_effect([function.__code__], namespace)
        if why:
            return f"{cls.__name__}.{function.__name__} {why}"
    return None


# AOTAutograd and the inductor trace to aten, which keeps no such state: these graphs run as captured.
_RUNS_AS_CAPTURED = "a torch.inference_mode, torch.device or TorchFunctionMode block (an aten trace drops its state)"
for _node in (enter_inference_mode, enter_device, exit_context):
    _node._cdynamo_runs_as_captured = _RUNS_AS_CAPTURED


class ContextExit:
    """The __exit__ of a block entered by one of the nodes above (also what a graph break inside
    the block leaves on the stack, recognised by the resume function's trace)."""

    __slots__ = ()

    def __call__(self, *exc_info):
        exit_context()  # returns None: an exception leaving the block goes on

    def graph_node(self):
        return exit_context, ()


STATE_RESTORERS = (AutocastRestore, ContextExit)


def autocast_entry(manager):
    """(state the block sets, AutocastRestore of the state before it) for a with-block on the
    torch.autocast `manager`, or the reason the trace cannot enter it. Autocast's cache of cast
    weights is off inside: eager empties it when the outermost block exits (a nesting count the
    graph does not keep), and a weight updated in place must never be read from it stale."""
    device = manager.device
    if device not in AUTOCAST_DEVICES:
        return f"autocast on {device!r} (the trace enters autocast on {', '.join(AUTOCAST_DEVICES)})"
    before = (device, torch.is_autocast_enabled(device), torch.get_autocast_dtype(device), torch.is_autocast_cache_enabled())
    return (device, bool(manager._enabled), manager.fast_dtype, False), AutocastRestore(before)


def _grad_mode_restorer(enabled):
    def restore_grad_mode(*exc_info):
        torch._C._set_grad_enabled(enabled)  # returns None: an exception leaving the block goes on

    return restore_grad_mode


# The __exit__ of a torch.no_grad()/enable_grad() block that a graph break cuts: restores the mode
# from before the block ([0]: disabled, [1]: enabled). Fixed objects, so that the resume
# function's trace recognises them (and its guards stay valid).
RESTORE_GRAD_MODE = (_grad_mode_restorer(False), _grad_mode_restorer(True))


def manual_seed(seed):
    """A graph node seeding torch's generators (torch.manual_seed in traced code): the random
    operations after it in the graph draw what eager's draw."""
    torch.manual_seed(seed)


manual_seed._cdynamo_runs_as_captured = "torch.manual_seed (an aten trace keeps no generator state)"
