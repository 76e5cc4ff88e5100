"""torch callables: vmap, torch.func transforms and functional_call, torch.cond on a Python predicate, associative_scan, Variable, FloatTensor(...), jit.annotate, @no_grad, checkpoint.
Assumes _special_calls.transformed makes a transform one node; torch's decorators wrap with decorate_context."""
import functools
import weakref

import torch
import torch.utils.checkpoint
try:
    from torch._higher_order_ops.associative_scan import associative_scan as _associative_scan
except ImportError:  # a torch without it: nothing to stand in for
    _associative_scan = None
try:
    _hop_map = __import__("importlib").import_module("torch._higher_order_ops.map").map
except (ImportError, AttributeError):
    _hop_map = None

from .. import _special_calls
from .as_written import _as_written
from .classes import Partial, partial_

_ASSOCIATIVE_SCAN_AS_WRITTEN = _as_written(_associative_scan) if _associative_scan is not None else None


def vmap_(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    # torch.vmap(func): calling the result is one graph node running vmap of func (transform_node).
    def call(*args, **kwargs):
        options = {"in_dims": in_dims, "out_dims": out_dims, "randomness": randomness, "chunk_size": chunk_size}
        return _special_calls.transformed(torch.vmap, _as_function(func), options, *args, **kwargs)

    return call


def _function_transform(transform):
    # torch.func.grad(func, argnums=0, has_aux=False) and the like: the same, by keyword.
    def stand_in(func, **options):
        def call(*args, **kwargs):
            return _special_calls.transformed(transform, _as_function(func), options, *args, **kwargs)

        return call

    return stand_in


_COND = torch.cond


try:
    from torch._higher_order_ops.cond import cond_op as _COND_OP
except ImportError:  # a torch without it
    _COND_OP = None


def _cond_at(pick):
    # torch.cond of a tensor predicate as one graph node: the cond operator itself (eager's
    # torch.cond compiles a wrapper around it with torch._dynamo; the operator alone picks the
    # branch on real tensors, checks both on fake ones, and traces both under make_fx).
    def at(pred, operands):
        return _COND_OP(pred, pick(True), pick(False), tuple(operands))

    return at


_cond_at.__name__ = "cond"
_cond_at._cdynamo_runs_as_captured = "torch.cond with a tensor predicate (a higher-order operator)"


def cond_(pred, true_fn, false_fn, operands=()):
    """torch.cond with a Python predicate (a size comparison, a flag): the branch it picks, called
    on the operands, as torch.cond does in eager. With a tensor predicate: one node holding both
    branches (their code checked for side effects, as the transforms' functions are)."""
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    # With gradients wanted, the operator's autograd needs branches made graphs first (as
    # torch._dynamo makes them): not done here, so the original runs.
    wants_grad = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (pred, *operands))
    if isinstance(pred, torch.Tensor) and _COND_OP is not None and isinstance(operands, (tuple, list)) and not wants_grad:
        def pick(flag):  # both branches as one function, the node's
            return true_fn if flag else false_fn

        return _special_calls.transformed(_cond_at, pick, {}, pred, tuple(operands))
    _special_calls.break_graph("torch.cond with operands that need gradients" if wants_grad else
                               f"torch.cond with a predicate of type {type(pred).__name__}")
    return _COND(pred, true_fn, false_fn, operands)


def _jvp_at(func, **options):
    # torch.func.jvp as a transform of func alone: what its graph node calls on (primals, tangents).
    def at(primals, tangents):
        return torch.func.jvp(func, primals, tangents, **options)

    return at


_jvp_at.__name__ = "jvp"


def jvp_(func, primals, tangents, **options):
    # torch.func.jvp(func, primals, tangents, strict=..., has_aux=...): one graph node, as the transforms above.
    return _special_calls.transformed(_jvp_at, _as_function(func), options, primals, tangents)


def _vjp_at(func, **options):
    # torch.func.vjp as a transform of func alone: what the node of vjp_fn(cotangents) calls on
    # (primals, cotangents): the vector-Jacobian product, one tensor per primal.
    def at(primals, cotangents):
        return torch.func.vjp(func, *primals, **options)[1](cotangents)

    return at


_vjp_at.__name__ = "vjp"


def vjp_(func, *primals, has_aux=False):
    # torch.func.vjp(func, *primals): the output traced as func's call, and a vjp_fn whose call is
    # one graph node, as the transforms above (func runs again there, under the transform).
    # has_aux: func returns (output, aux); aux comes back as the third result.
    out = func(*primals)
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if has_aux is True")
        out, aux = out
    options = {"has_aux": True} if has_aux else {}

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        return _special_calls.transformed(_vjp_at, _as_function(func), options, primals, cotangents)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


_FUNCTIONAL_CALL = torch.func.functional_call


def _functional_call_at(module, **options):
    # torch.func.functional_call of one module: what its graph node calls on (tensors, args, kwargs).
    def at(tensors, args, kwargs):
        # fx hands the node's arguments over as immutable dicts; functional_call updates its own.
        tensors = [dict(d) for d in tensors] if isinstance(tensors, (list, tuple)) else dict(tensors)
        return _FUNCTIONAL_CALL(module, tensors, tuple(args), dict(kwargs), **options)

    return at


_functional_call_at.__name__ = "functional_call"


def stack_module_state_(models):
    """torch.func.stack_module_state(models): each parameter and buffer name's tensors of the
    models stacked along a new first dimension (model ensembling with vmap), checked as torch
    checks them; stacked parameters are new leaves that require grad where all of the models' do."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tables):
        out = {}
        for name in tables[0]:
            tensors = [table[name] for table in tables]
            result = torch.stack(tensors)
            if all(t.requires_grad for t in tensors):
                result = result.detach().requires_grad_()
            out[name] = result
        return out

    params = stacked([dict(m.named_parameters()) for m in models])
    buffers = stacked([dict(m.named_buffers()) for m in models])
    return params, buffers


def functional_call_(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """torch.func.functional_call(module, tensors, args): one graph node running it. The node
    gets a tensor for every parameter and buffer of the module (a graph must not hold the
    module's own tensors as constants of its code): those not given are the module's own, read
    here as eager's call would use them (with tie_weights, a name tied to a given one follows it)."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (list, tuple)) else (parameter_and_buffer_dicts,)
    own = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    given = [name for name, _ in own if any(name in d for d in dicts)]
    if not strict and len(given) < len(own):
        covered = [tensor for name, tensor in own if name in given] if tie_weights else []
        missing = {name: tensor for name, tensor in own
                   if name not in given and not any(tensor is other for other in covered)}
        if missing:
            parameter_and_buffer_dicts = (*dicts, missing)
    # Read here so that the guards fix them: a backend tracing through the node bakes in each
    # submodule's training flag (dropout, batch norm).
    for sub in module.modules():
        if sub.training:
            pass
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    options = {"tie_weights": tie_weights, "strict": strict}
    return _special_calls.transformed(_functional_call_at, module, options, parameter_and_buffer_dicts, args,
                                      {} if kwargs is None else kwargs)


def associative_scan_(combine_fn, xs, dim, reverse=False, combine_mode="pointwise"):
    # "pointwise" has torch.compile build one scan kernel from combine_fn; "generic" computes the
    # same scan from torch operators and vmap (torch's own code, traced), which a graph holds.
    if combine_mode == "pointwise" and not all(
            leaf.device.type in ("cuda", "xpu") for leaf in torch.utils._pytree.tree_leaves(xs)):
        raise ValueError("For combine_mode='pointwise', all input tensors need to be on CUDA or XPU")
    return _ASSOCIATIVE_SCAN_AS_WRITTEN(combine_fn, xs, dim, reverse=reverse, combine_mode="generic")


def hop_map_(f, xs, *args):
    """torch._higher_order_ops.map(f, xs, *args): f of each slice of xs's leading dimension (a
    pytree of tensors) and of args, the results stacked: the semantics torch documents for it,
    unrolled (each step's operations are nodes of the graph; pytree is traced)."""
    pytree = torch.utils._pytree
    flat_xs, spec = pytree.tree_flatten(xs)
    if not all(isinstance(t, torch.Tensor) for t in flat_xs):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {flat_xs}.")
    shapes = [t.shape for t in flat_xs]
    length = shapes[0][0]
    if length == 0:
        raise RuntimeError("Leading dimensions of mapped xs cannot be 0.")
    if any(shape[0] != length for shape in shapes):
        raise RuntimeError(f"Leading dimensions of mapped xs must be consistent. Got shapes {shapes}.")
    steps = [pytree.tree_flatten(f(pytree.tree_unflatten([t.select(0, i) for t in flat_xs], spec), *args))
             for i in range(length)]
    return pytree.tree_unflatten([torch.stack(list(leaves)) for leaves in zip(*(flat for flat, _ in steps))], steps[0][1])


def variable_(data, requires_grad=False, volatile=False):
    # torch.autograd.Variable(t) (PyTorch 0.3 code): a new tensor sharing t's data, without its
    # history; requires_grad=True makes it a leaf. volatile is ignored, as torch ignores it now.
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    made = data.detach()
    if requires_grad:
        made.requires_grad_()
    return made


def _legacy_constructor(original, dtype):
    # torch.FloatTensor(2, 3), torch.LongTensor([1, 2]), torch.Tensor(size) (pre-1.0 code): sizes
    # give an uninitialised tensor, a list of numbers its values; other arguments break the graph
    # and the original makes the tensor.
    def make(*given):
        args = tuple(given[0]) if len(given) == 1 and isinstance(given[0], torch.Size) else given
        if all(type(a) is int for a in args):
            return torch.empty(args, dtype=dtype)
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            return torch.tensor(args[0], dtype=dtype if dtype is not None else torch.get_default_dtype())
        _special_calls.break_graph("a legacy tensor constructor with arguments other than sizes or a list of numbers")
        return original(*given)

    return make


_LEGACY_CONSTRUCTORS = {
    getattr(torch, name): _legacy_constructor(getattr(torch, name), dtype) for name, dtype in (
        ("FloatTensor", torch.float32), ("DoubleTensor", torch.float64), ("HalfTensor", torch.float16),
        ("BFloat16Tensor", torch.bfloat16), ("LongTensor", torch.int64), ("IntTensor", torch.int32),
        ("ShortTensor", torch.int16), ("CharTensor", torch.int8), ("ByteTensor", torch.uint8),
        ("BoolTensor", torch.bool), ("Tensor", None))
}


def _as_function(func):
    # The transforms' graph node holds a function: a partial made in the trace becomes the closure
    # it calls.
    return partial_(func.func, *func.args, **func.keywords) if isinstance(func, Partial) else func


class _DeferredHookHandle:
    """What Tensor.register_hook returns in the trace (the hook is registered after the graph)."""

    def remove(self):
        _special_calls.refuse("removing a tensor hook the compiled function registered")


DEFERRED_HOOK_HANDLE = _DeferredHookHandle()


def jit_annotate_(the_type, the_value):
    # torch.jit.annotate(List[T], []): the value itself (the list stays the one the trace made).
    return the_value


class CompletedFuture:
    """What torch.jit.fork gives outside TorchScript, where eager runs the function at once:
    its result, which wait() (and torch.jit.wait) returns."""

    def __init__(self, result):
        self._result = result

    def wait(self):
        return self._result

    def value(self):
        return self._result

    def done(self):
        return True


def jit_fork_(fn, *args, **kwargs):
    # An ensemble's torch.jit.fork(model, x) per member, then torch.jit.wait on each future.
    return CompletedFuture(fn(*args, **kwargs))


def jit_wait_(future):
    return future.wait()


# torch's context decorators wrap the function in torch/utils/_contextlib.py's decorate_context,
# which enters `ctx_factory()` (a clone of the decorator's context manager) around the call.
_GRAD_MODES = (torch.no_grad, torch.enable_grad)
_DECORATE_CONTEXT_CODE = torch.no_grad()(lambda: None).__code__
_AUTOCAST_DECORATE_CODE = torch.autocast("cpu")(lambda: None).__code__  # torch.amp's own wrapper
_decorated = weakref.WeakKeyDictionary()  # decorated function -> its stand-in


def _grad_mode_call(func, mode):
    def call(*args, **kwargs):
        with mode():
            return func(*args, **kwargs)

    return call


def _grad_mode_decorator(mode):
    # torch.no_grad() / torch.enable_grad() applied as a decorator inside the compiled function.
    def decorate(func):
        return _grad_mode_call(func, mode)

    return decorate


_DECORATORS = {mode: _grad_mode_decorator(mode) for mode in _GRAD_MODES}


def _set_grad_enabled_decorator(mode, previous):
    # torch.set_grad_enabled(mode) set the mode when it was made; used as a decorator it puts the
    # previous mode back and runs the function under `mode`.
    def decorate(func):
        torch._C._set_grad_enabled(previous)

        def call(*args, **kwargs):
            with torch.set_grad_enabled(mode):
                return func(*args, **kwargs)

        return call

    return decorate


def block_decorator_for(fn):
    """The stand-in of calling a no_grad()/enable_grad()/set_grad_enabled()/inference_mode()/
    autocast() object (decorating a function inside the compiled one), or None."""
    if type(fn) is torch.set_grad_enabled:
        return _set_grad_enabled_decorator(fn.mode, fn.prev)
    if type(fn) is torch.inference_mode:
        return lambda func: _inference_mode_call(func, fn.mode)
    if isinstance(fn, torch.amp.autocast_mode.autocast):
        return lambda func: _autocast_call(func, fn.device, fn.fast_dtype, fn._enabled, fn._cache_enabled)
    return _DECORATORS.get(type(fn))


_CHECKPOINT_AS_WRITTEN = _as_written(torch.utils.checkpoint.checkpoint)


def checkpoint_(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
                **kwargs):
    """torch.utils.checkpoint.checkpoint: the forward computed once, as the checkpointed forward
    computes it (the backward's recomputation gives the same values; the compiled graph decides
    what to keep). The reentrant form under grad mode (its outputs follow only the inputs'
    requires_grad) and custom contexts run the original."""
    if context_fn is not None or debug or (use_reentrant is not False and torch.is_grad_enabled()):
        return _CHECKPOINT_AS_WRITTEN(function, *args, use_reentrant=use_reentrant, context_fn=context_fn,
                                      determinism_check=determinism_check, debug=debug, **kwargs)
    kwargs.pop("preserve_rng_state", None)
    if kwargs and use_reentrant is not False:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return function(*args, **kwargs)


_CHECKPOINT_SEQUENTIAL_AS_WRITTEN = _as_written(torch.utils.checkpoint.checkpoint_sequential)


def checkpoint_sequential_(functions, segments, input, use_reentrant=None, **kwargs):
    """torch.utils.checkpoint.checkpoint_sequential: the functions applied in turn (each segment
    checkpointed as checkpoint_ does, whose values its recomputation gives again). The reentrant
    form under grad mode runs the original, as checkpoint_'s does."""
    if use_reentrant is not False and torch.is_grad_enabled():
        return _CHECKPOINT_SEQUENTIAL_AS_WRITTEN(functions, segments, input, use_reentrant=use_reentrant, **kwargs)
    kwargs.pop("preserve_rng_state", None)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    range(0, segment_size * (segments - 1), segment_size)  # more segments than functions: the original's ValueError
    for function in functions:
        input = function(input)
    return input


def _inference_mode_call(func, mode):
    def call(*args, **kwargs):
        with torch.inference_mode(mode):
            return func(*args, **kwargs)

    return call


def _autocast_call(func, device_type, dtype, enabled, cache_enabled):
    def call(*args, **kwargs):
        with torch.autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled):
            return func(*args, **kwargs)

    return call


def _decorated_replacement(fn):
    """A function decorated with @torch.no_grad(), @torch.enable_grad(), @torch.inference_mode()
    or @torch.autocast(...) (torch's wrappers, which the trace does not enter): a stand-in that
    enters the same block around the call, or None."""
    code = getattr(fn, "__code__", None)
    if (code is not _DECORATE_CONTEXT_CODE and code is not _AUTOCAST_DECORATE_CODE) or not fn.__closure__:
        return None
    found = _decorated.get(fn)
    if found is not None:
        return found
    cells = dict(zip(code.co_freevars, (cell.cell_contents for cell in fn.__closure__)))
    func = cells.get("func")
    if func is None:
        return None
    if code is _AUTOCAST_DECORATE_CODE:
        block = cells.get("autocast_instance")
        if not isinstance(block, torch.amp.autocast_mode.autocast):
            return None
        found = _autocast_call(func, block.device, block.fast_dtype, block._enabled, block._cache_enabled)
    else:
        factory = cells.get("ctx_factory")
        block = getattr(factory, "__self__", None)
        if getattr(factory, "__name__", "") != "clone":
            return None  # another context manager: not replaced
        if type(block) in _GRAD_MODES:
            found = _grad_mode_call(func, type(block))
        elif type(block) is torch.inference_mode:
            found = _inference_mode_call(func, block.mode)
        else:
            return None
    _decorated[fn] = found
    return found


def _is_basic_index_part(part):
    return part is None or part is Ellipsis or isinstance(part, (slice, torch.SymInt)) or \
        (isinstance(part, int) and not isinstance(part, bool))


def is_integer_indices(tensor):
    """tensor, as an index, holds integer indices (bool and uint8 tensors are masks)."""
    return not tensor.dtype.is_floating_point and not tensor.dtype.is_complex and tensor.dtype not in (torch.bool, torch.uint8)


def is_index_tensor(tensor):
    """tensor can index: integer indices or a mask (a float or complex one cannot)."""
    return not tensor.dtype.is_floating_point and not tensor.dtype.is_complex


def is_integer_index_tensor(tensor):
    """tensor, as an index, stands for the int it holds (eager indexing reads item() of a 0-d
    tensor of an integer type, bool and uint8 masks apart)."""
    return tensor.dim() == 0 and is_integer_indices(tensor)


def needs_index_by_views(index):
    """index is a basic one (ints, slices, None, ...) holding an int only the data gives (an
    unbacked one, from item()): torch's indexing takes no such number (index_by_views_ does)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    def unbacked(number):
        return isinstance(number, torch.SymInt) and bool(free_unbacked_symbols(number))

    parts = index if isinstance(index, tuple) else (index,)
    return all(_is_basic_index_part(part) for part in parts) and any(
        unbacked(part) or isinstance(part, slice) and any(map(unbacked, (part.start, part.stop, part.step)))
        for part in parts)


def index_tensor_span(tensor):
    """How many dimensions an index tensor consumes: a mask (bool, uint8) its own, an integer
    index tensor one."""
    return tensor.dim() if tensor.dtype in (torch.bool, torch.uint8) else 1


def index_by_views_(tensor, index):
    """tensor[index] for such an index, as eager's indexing computes it: select() per int, a slice
    per slice, unsqueeze() per None (views), then the index tensors and masks, each at the
    dimension it reached, in one advanced indexing."""
    view, remaining, advanced = _basic_views(tensor, index)
    return view[tuple(remaining)] if advanced else view


def store_by_views_(tensor, index, value):
    """tensor[index] = value for such an index, as eager's assignment: into the views
    index_by_views_ takes, then by the index tensors and masks (index_put_ into the view)."""
    view, remaining, advanced = _basic_views(tensor, index)
    view[tuple(remaining) if advanced else ...] = value


def _basic_views(tensor, index):
    """(the view the index's ints, slices and None give, the key that indexes the rest of it,
    whether that key holds index tensors or masks)."""
    parts = index if isinstance(index, tuple) else (index,)
    spans = [0 if part is None or part is Ellipsis else index_tensor_span(part) if isinstance(part, torch.Tensor) else 1
             for part in parts]
    result, dim, remaining, advanced = tensor, 0, [], False
    for part, span in zip(parts, spans):
        if part is Ellipsis:
            skipped = tensor.dim() - sum(spans)
            remaining += [slice(None)] * skipped
            dim += skipped
        elif part is None:
            result = result.unsqueeze(dim)
            remaining.append(slice(None))
            dim += 1
        elif isinstance(part, slice):
            # aten's slice, not a subscript: a bound only the data gives would come back here.
            result = torch.ops.aten.slice.Tensor(result, dim, part.start, part.stop, 1 if part.step is None else part.step)
            remaining.append(slice(None))
            dim += 1
        elif isinstance(part, torch.Tensor):
            remaining.append(part)
            advanced = True
            dim += span
        else:
            result = result.select(dim, part)
    return result, remaining, advanced


def _shape_and_numbers(data, depth=0):
    """(shape, numbers in row-major order) of nested lists or tuples of numbers, as torch.tensor
    reads them; ValueError for ragged data, as eager's."""
    if not isinstance(data, (list, tuple)):
        return (), [data]
    parts = [_shape_and_numbers(item, depth + 1) for item in data]
    inner = parts[0][0] if parts else ()
    for shape, _ in parts:
        if shape != inner:
            got = shape[0] if shape else "a number"
            raise ValueError(f"expected sequence of length {inner[0] if inner else 0} at dim {depth + 1} (got {got})")
    return (len(data),) + inner, [number for _, numbers in parts for number in numbers]


def holds_unbacked_numbers(data):
    """data (nested lists or tuples of numbers) holds a number only the data gives (from item() or
    tolist()): torch.tensor cannot read it (tensor_of_numbers_ stacks it)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    if not isinstance(data, (list, tuple)):
        return False
    _, numbers = _shape_and_numbers(data)
    kinds = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)
    return all(isinstance(n, kinds) for n in numbers) and \
        any(isinstance(n, (torch.SymInt, torch.SymFloat, torch.SymBool)) and free_unbacked_symbols(n) for n in numbers)


def _inferred_dtype(numbers):
    if any(isinstance(n, (float, torch.SymFloat)) for n in numbers):
        return torch.get_default_dtype()
    if numbers and all(isinstance(n, (bool, torch.SymBool)) for n in numbers):
        return torch.bool
    return torch.int64


def tensor_of_numbers_(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor(data) for data holding such numbers: each a 0-d tensor, stacked to data's
    shape (the dtype inferred as torch.tensor infers it)."""
    shape, numbers = _shape_and_numbers(data)
    dtype = _inferred_dtype(numbers) if dtype is None else dtype
    result = torch.stack([torch.scalar_tensor(n, dtype=dtype, device=device) for n in numbers]).reshape(shape)
    return result.requires_grad_() if requires_grad else result


def tensor_of_scalar_tensors_(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor(data) for data of numbers and 0-d tensors: each element's value copied
    (detached), in the dtype torch.tensor infers (tensors give theirs, numbers the default
    ones, promoted together), on the default device unless one is given."""
    shape, items = _shape_and_numbers(data)
    if dtype is None:
        dtype = functools.reduce(torch.promote_types, [
            item.dtype if isinstance(item, torch.Tensor) else _inferred_dtype([item]) for item in items])
    device = torch.get_default_device() if device is None else device
    parts = [item.detach().to(dtype=dtype, device=device) if isinstance(item, torch.Tensor)
             else torch.scalar_tensor(item, dtype=dtype, device=device) for item in items]
    result = torch.stack(parts).reshape(shape)
    return result.requires_grad_() if requires_grad else result


def new_tensor_of_scalar_tensors_(self, data, dtype=None, device=None, requires_grad=False):
    return tensor_of_scalar_tensors_(data, dtype=self.dtype if dtype is None else dtype,
                                     device=self.device if device is None else device, requires_grad=requires_grad)


def new_tensor_of_numbers_(self, data, dtype=None, device=None, requires_grad=False):
    """self.new_tensor(data) / self.new(data) for such data: in self's dtype and on its device."""
    return tensor_of_numbers_(data, dtype=self.dtype if dtype is None else dtype,
                              device=self.device if device is None else device, requires_grad=requires_grad)
