"""Calls the interpreter neither traces through nor folds, with what the C++ side calls for them:
torch functions of a Python function as one graph node (torch.vmap, autograd.Function.apply),
calls made after the graph (print, warnings.warn, logging), lazy modules initialised at trace
time, and what an array made from a traced tensor becomes when it leaves the trace."""
import builtins
import types
import warnings
import weakref

import torch

_INERT_GLOBAL_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, int, float, complex, str,
                       bytes, bool, type(None), torch.dtype, torch.device)


def _forward_side_effect(cls):
    """Why running cls.forward on fake tensors at trace time (for its outputs' shapes) could
    change what the program owns, or None (see _code_side_effect)."""
    codes = [getattr(getattr(cls, name, None), "__code__", None) for name in ("forward", "setup_context")]
    return _code_side_effect([c for c in codes if c is not None], getattr(getattr(cls, "forward", None), "__globals__", {}))


def _code_side_effect(codes, namespace, held=()):
    """Why running these functions' code once more than eager does (on fake tensors, at trace
    time) could change what the program owns, or None: writing a global or a variable of an
    enclosing function, printing, or reaching a global mutable object (LOG.append). A check of
    the bytecode (nested functions included), not of the functions it calls."""
    import dis

    codes = list(codes)
    while codes:
        code = codes.pop()
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for instruction in dis.get_instructions(code):
            if instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                return f"writes the global {instruction.argval}"
            if instruction.opname in ("STORE_DEREF", "DELETE_DEREF") and instruction.argval in code.co_freevars:
                return f"writes the variable {instruction.argval} of an enclosing function"
            if instruction.opname != "LOAD_GLOBAL":
                continue
            name = instruction.argval
            if name in held:
                continue  # a global module the node holds (global_modules_read)
            value = namespace.get(name, getattr(builtins, name, None))
            if value is print:
                return "prints"
            if not isinstance(value, _INERT_GLOBAL_TYPES) and not (
                    isinstance(value, tuple) and all(isinstance(v, _INERT_GLOBAL_TYPES) for v in value)):
                return f"reads the global {name} (a {type(value).__name__}), which running it at trace time could change"
    return None


def lazy_module_initializer(module):
    """For a lazy module (nn.LazyLinear) met with uninitialised parameters: a function of the
    call's fake arguments that makes the parameters now, from real tensors of those shapes, as
    the module's forward pre-hook does on eager's first call (the class becomes cls_to_become)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    def real(value):
        if isinstance(value, torch.Tensor):
            return torch.zeros([int(size) for size in value.shape], dtype=value.dtype, device=value.device)
        return value

    def initialize(*args, **kwargs):
        with unset_fake_temporarily():
            real_args, real_kwargs = torch.utils._pytree.tree_map(real, (args, kwargs))
            module._infer_parameters(module, real_args, real_kwargs)

    return initialize


def call_deferred(call):
    """A print/warnings.warn/logging call the trace met, made after the graph: (fn, args, kwargs)."""
    from . import _C

    fn, args, kwargs = call
    if fn is warnings.warn:  # attributed to the compiled function's frame, as eager's is to the caller
        kwargs = dict(zip(("message", "category", "stacklevel", "source"), args), **kwargs)
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        args = ()
    previous = _C._enter(None)  # the handlers and formatters it reaches run as written, uncompiled
    try:
        fn(*args, **kwargs)
    finally:
        _C._leave(previous)


def traced_array_to_ndarray(t):
    """What a NumPy array made from a traced tensor becomes when it leaves the trace (called by
    the code after the graph; here, in a file whose frames are never compiled)."""
    return t.numpy()


def refuse(reason):
    """Called by a stand-in (_polyfills) for arguments it does not handle: in a trace, a graph
    break with `reason` (policy 'refuse'); the original then runs eagerly."""
    from ._trace_errors import TraceUnsupported

    raise TraceUnsupported(reason)


def after_graph(fn, *args):
    """Called by a stand-in (_polyfills): in a trace, fn(*args) made after the graph (policy
    'after_graph'; each argument a constant or something read from the frame); run for real, now."""
    return fn(*args)


def break_graph(reason):
    """Called by a stand-in (_polyfills) before it runs the original for arguments it does not
    trace: in a trace, a graph break with `reason` (policy 'refuse', as refuse). Run for real, which
    is where the stand-in's frame resumes after that break (config.nested_graph_breaks), it does
    nothing, and the stand-in's next line runs the original (refuse would raise there)."""


def singledispatch_impl(wrapper, cls):
    """The implementation a functools.singledispatch function picks for cls (its dispatch(), which
    only reads its registry): folded at trace time (policy 'fold_constant')."""
    return wrapper.dispatch(cls)


def transformed(transform, func, options, *args, **kwargs):
    """What a call of torch.vmap(func, ...)(...) or torch.func.grad(func, ...)(...) is traced as
    (_polyfills' stand-ins): the interpreter makes it one node of transform_node's (policy
    'graph_transform'); called outside a trace, it is that call."""
    return transform(func, **options)(*args, **kwargs)


def _classify_callable(fn):
    from ._call_policy import classify_callable

    return classify_callable(fn)


def global_modules_read(function):
    """The nn.Modules a transformed function (or a function its closure holds) reads as globals:
    ((globals dict, name, module), ...). The node holds each one's tensors as a closed-over
    module's (the trace reads them through the globals dict, guarded there)."""
    import dis

    if isinstance(function, types.MethodType):
        function = function.__func__
    if not isinstance(function, types.FunctionType):
        return ()
    found = []
    for reached in _functions_reached(function):
        codes = [reached.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            for instruction in dis.get_instructions(code):
                if instruction.opname != "LOAD_GLOBAL":
                    continue
                value = reached.__globals__.get(instruction.argval)
                if isinstance(value, torch.nn.Module) and all(
                        not (g is reached.__globals__ and n == instruction.argval) for g, n, _ in found):
                    found.append((reached.__globals__, instruction.argval, value))
    return tuple(found)


def _functions_reached(function):
    """function and the functions its closure holds, theirs too (a transform of a transform's
    stand-in closes over the function it transforms): each runs when the node does."""
    found, pending = [], [function]
    while pending:
        fn = pending.pop()
        if any(fn is seen for seen in found):
            continue
        found.append(fn)
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            for item in contents if isinstance(contents, tuple) else (contents,):  # and_masks(*fns)'s tuple
                if isinstance(item, types.MethodType):
                    item = item.__func__
                if isinstance(item, types.FunctionType):
                    pending.append(item)
    return found


class ClosedOverTensor:
    """Where a transformed function's closure holds a tensor the trace computed: the node receives
    the tensor as an argument and closes over it at each call (_with_closed_over_tensors)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class ClosedOverModule:
    """Where a transformed function's closure holds a module: the node receives the module's
    parameters and buffers (module_tensor_names, from argument `start` on) and runs the function
    with the module holding them (_holding), so compilers see them as the graph's inputs."""

    __slots__ = ("module", "names", "start")

    def __init__(self, module, names, start):
        self.module, self.names, self.start = module, names, start


class ClosedOverMethod:
    """A module's method a transformed function closes over (or is): the function, bound at each
    call to the module its ClosedOverModule stands for."""

    __slots__ = ("function", "owner")

    def __init__(self, function, owner):
        self.function, self.owner = function, owner


def module_tensor_names(module):
    """The module's parameters' and buffers' qualified names, each tensor once."""
    names = [name for name, _ in module.named_parameters()]
    return tuple(names + [name for name, _ in module.named_buffers()])


_STAND_INS = (ClosedOverTensor, ClosedOverModule, ClosedOverMethod)


def _holds_closed_over_tensor(obj):
    if isinstance(obj, _STAND_INS):
        return True
    if isinstance(obj, tuple):
        return any(_holds_closed_over_tensor(item) for item in obj)
    if isinstance(obj, types.FunctionType):
        return any(_holds_closed_over_tensor(_cell_contents(cell)) for cell in obj.__closure__ or ())
    return False


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell (a variable the function's maker had not bound yet)
        return None


def _with_closed_over_tensors(obj, tensors):
    """obj with each stand-in in it (in tuples, in closures) replaced by what it stands for (a
    tensor, a module, a bound method): functions holding one are made again with new cells."""
    if isinstance(obj, ClosedOverTensor):
        return tensors[obj.index]
    if isinstance(obj, ClosedOverModule):
        return obj.module
    if isinstance(obj, ClosedOverMethod):
        return types.MethodType(obj.function, obj.owner.module)
    if isinstance(obj, tuple):
        return tuple(_with_closed_over_tensors(item, tensors) for item in obj)
    if isinstance(obj, types.FunctionType) and _holds_closed_over_tensor(obj):
        cells = tuple(types.CellType(_with_closed_over_tensors(cell.cell_contents, tensors)) for cell in obj.__closure__)
        made = types.FunctionType(obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__, cells)
        made.__kwdefaults__ = obj.__kwdefaults__
        return made
    return obj


def _mutable(value):
    """value with the dicts and lists in it plain ones (torch.fx's immutable_dict and
    immutable_list, which a function the node runs may change, as eager's could)."""
    if isinstance(value, tuple):
        return type(value)(_mutable(v) for v in value) if type(value) is tuple else value
    if isinstance(value, list):
        return [_mutable(v) for v in value]
    if isinstance(value, dict):
        return {k: _mutable(v) for k, v in value.items()}
    return value


def closes_over_module(function):
    """Whether a function transformed_function made holds a module (its tensors are the node's
    arguments only while a transform's node runs)."""
    return bool(_closed_over_modules(function, []))


def _closed_over_modules(obj, found):
    """The ClosedOverModules in obj (in tuples, closures and bound methods), each once."""
    if isinstance(obj, ClosedOverModule):
        if all(m is not obj for m in found):
            found.append(obj)
    elif isinstance(obj, ClosedOverMethod):
        _closed_over_modules(obj.owner, found)
    elif isinstance(obj, tuple):
        for item in obj:
            _closed_over_modules(item, found)
    elif isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            _closed_over_modules(_cell_contents(cell), found)
    return found


class _Holding:
    """While entered, each closed-over module holds the node's tensors in place of its own
    parameters and buffers (the same objects when the node runs the real ones); restored after."""

    def __init__(self, modules, tensors):
        self.modules, self.tensors, self.saved = modules, tensors, []

    def __enter__(self):
        for closed in self.modules:
            for k, name in enumerate(closed.names):
                path, _, leaf = name.rpartition(".")
                owner = closed.module.get_submodule(path)
                table = owner._parameters if leaf in owner._parameters else owner._buffers
                self.saved.append((table, leaf, table[leaf]))
                table[leaf] = self.tensors[closed.start + k]

    def __exit__(self, *exc):
        for table, leaf, tensor in reversed(self.saved):
            table[leaf] = tensor
        self.saved.clear()


def _module_refusal(name, module):
    """Why transforming a function that runs module cannot be traced, or None: every forward in
    it runs once more at trace time, so none may change the program's state, and no hooks."""
    for sub in module.modules():
        forward = getattr(type(sub).forward, "__func__", type(sub).forward)
        if isinstance(forward, types.FunctionType) and not type(sub).__module__.startswith("torch.nn.modules"):
            refusal = _code_side_effect([forward.__code__], forward.__globals__)
            if refusal:
                return f"torch.{name} of {type(sub).__qualname__}: its forward {refusal}"
        if sub._forward_hooks or sub._forward_pre_hooks:
            return f"torch.{name} of a module with hooks"
    return None


def transform_node(transform, func, options, closed_over=0, held=()):
    """(the graph's target for transform(func, **options)(*args), None), or (None, why not) (its
    last `closed_over` arguments: tensors func's closure holds, after args). The
    node applies the functorch transform (vmap, grad, jacrev, ...) to func as eager does, and the
    fake run at trace time runs func once more than eager: a function whose code could change the
    program's state that way is refused. AOTAutograd and the inductor trace through the node into
    the transform's operators."""
    name = getattr(transform, "__name__", "transform")
    checked = func.module if isinstance(func, ClosedOverModule) else func
    function = checked.__func__ if isinstance(checked, types.MethodType) else checked
    if isinstance(function, ClosedOverMethod):
        function = function.function
    held_names = {global_name for global_name, _ in held}
    for closed in _closed_over_modules(func, []) + [closed for _, closed in held]:
        refusal = _module_refusal(name, closed.module)
        if refusal:
            return None, refusal
    if isinstance(checked, torch.nn.Module):
        refusal = _module_refusal(name, checked)
        if refusal:
            return None, refusal
    elif isinstance(function, types.FunctionType):
        for reached in _functions_reached(function):
            refusal = _code_side_effect([reached.__code__], reached.__globals__, held_names)
            if refusal:
                return None, f"torch.{name} of {reached.__qualname__}: it {refusal}"
    elif _classify_callable(func) != "graph":  # torch.dot, Tensor.sum: operators, free of side effects
        return None, f"torch.{name} of a {type(func).__name__} (cdynamo transforms Python functions and torch operators)"

    if closed_over or _holds_closed_over_tensor(func):
        # The last `closed_over` arguments are the tensors func's closure holds (ClosedOverTensor)
        # and the parameters and buffers of the modules it holds (ClosedOverModule) or reads as
        # globals (held).
        modules = _closed_over_modules(func, []) + [closed for _, closed in held]

        def node(*args, **kwargs):
            operands, tensors = args[:len(args) - closed_over], args[len(args) - closed_over:]
            operands = _mutable(operands)  # an interpreter of the graph passes fx's immutable containers
            with _Holding(modules, tensors):
                return transform(_with_closed_over_tensors(func, tensors), **options)(*operands, **kwargs)
    else:
        def node(*args, **kwargs):
            return transform(func, **options)(*_mutable(args), **kwargs)

    node.__name__ = node.__qualname__ = f"{name}_{getattr(function, '__name__', 'function')}"
    # A transform whose graphs a compiler cannot lower (a higher-order operator) says why.
    node._cdynamo_runs_as_captured = getattr(transform, "_cdynamo_runs_as_captured", None)
    return node, None


_AUTOGRAD_FUNCTION_NODES = weakref.WeakKeyDictionary()


def generator_node(fn, generator):
    """The graph's target for fn(..., generator=g) with a torch.Generator from the frame: fn
    drawing from g (which the node holds; the guards fix which generator it is), as eager draws.
    The graph runs as captured under compiling backends (their random numbers are their own)."""

    def node(*args, **kwargs):
        return fn(*args, generator=generator, **kwargs)

    node.__name__ = node.__qualname__ = f"{getattr(fn, '__name__', 'random')}_with_generator"
    node._cdynamo_runs_as_captured = "a random operation drawing from a torch.Generator"
    return node


# torch.Generators made inside compiled functions (made_generator), by id: they never leave a
# graph. Held here (torch before 2.14 makes no weak reference to a Generator), one per compile.
_TRACE_MADE_GENERATORS = {}


def made_generator(*args, **kwargs):
    """torch.Generator(*args, **kwargs) made inside a compiled function: one generator for the
    compiled graph, made now, and the target of the node that gives it a fresh generator's state
    at each call (eager makes a new one per call). Its seeding and draws are nodes as well."""
    generator = torch.Generator(*args, **kwargs)
    _TRACE_MADE_GENERATORS[id(generator)] = generator
    fresh = generator.get_state()

    def node():
        generator.set_state(fresh)

    node.__name__ = node.__qualname__ = "fresh_generator"
    node._cdynamo_runs_as_captured = "a torch.Generator made in the compiled function"
    return generator, node


def is_trace_made_generator(obj):
    return isinstance(obj, torch.Generator) and _TRACE_MADE_GENERATORS.get(id(obj)) is obj


def seed_generator_node(generator):
    """The graph's target for g.manual_seed(seed) of a generator made inside the function."""

    def node(seed):
        generator.manual_seed(seed)

    node.__name__ = node.__qualname__ = "seed_generator"
    node._cdynamo_runs_as_captured = "a torch.Generator made in the compiled function"
    return node


def tensor_hook_node(hook, closed_over=0):
    """The graph's target for t.register_hook(hook) on a tensor the graph computes: an identity
    whose backward hands the gradient to each of its hooks in turn (a result that is not None goes
    on instead), as autograd runs a tensor's hooks; node.hooks takes later ones. A hook closing
    over `closed_over` tensors the graph computes (ClosedOverTensor) takes them as the node's
    further arguments. The graph runs as captured under compiling backends (the hooks run when
    backward runs)."""
    hooks = [hook]

    class TensorHook(torch.autograd.Function):
        @staticmethod
        def forward(ctx, tensor, *tensors):
            ctx.closed_over = tensors  # what the hook's closure holds when backward runs, as eager's
            return tensor.view_as(tensor)

        @staticmethod
        def backward(ctx, grad):
            for each in hooks:
                result = _with_closed_over_tensors(each, ctx.closed_over)(grad)
                grad = grad if result is None else result
            return (grad,) + (None,) * len(ctx.closed_over)

    def node(tensor, *tensors):
        return TensorHook.apply(tensor, *tensors)

    node.__name__ = node.__qualname__ = "tensor_hook"
    node.hooks = hooks
    node.closed_over = closed_over
    node._cdynamo_runs_as_captured = "a tensor hook registered in the compiled function (it runs when backward runs)"
    return node


def autograd_function_node(apply):
    """The graph's target for Cls.apply: a function of cdynamo's (torch.fx would write a bound
    method of a torch class as the unimportable path torch.autograd.function.apply), one per
    class, holding the class weakly."""
    cls = apply.__self__
    node = _AUTOGRAD_FUNCTION_NODES.get(cls)
    if node is None:
        owner = weakref.ref(cls)

        def node(*args, **kwargs):
            return owner().apply(*args, **kwargs)

        node.__name__, node.__qualname__ = f"{cls.__name__}_apply", f"{cls.__qualname__}.apply"
        _AUTOGRAD_FUNCTION_NODES[cls] = node
    return node
