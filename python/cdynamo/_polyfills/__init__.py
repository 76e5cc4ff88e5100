"""The stand-ins' registry: replacement_for (the Python function traced in place of a callable) and STAND_IN_CLASSES.
Assumes identities and plain attributes decide (no code of fn runs); config.trace_dirs traces this whole package."""
# Python stand-ins the interpreter traces in place of C-implemented callables and of library code it does not trace;
# each behaves as its original does for the arguments it accepts. One file per concern:
#   iterators.py    map, enumerate, filter, itertools' iterators and combinatorics (lazy, pulling as the C ones do)
#   ordering.py     sorted/min/max over classes comparing in Python, heapq's and bisect's C functions,
#                   functools.cmp_to_key
#   folds.py        functools.reduce, collections._count_elements
#   operators.py    the operator module's functions, attrgetter/itemgetter/methodcaller calls
#   classes.py      Deque, Partial, NullContext (classes standing in for C ones), calls of partial objects,
#                   cached_property's __get__ (without its lock)
#   namedtuples.py  a namedtuple class's _make and _replace
#   copying.py      copy.copy and copy.deepcopy
#   torch_calls.py  vmap and torch.func's transforms, torch.cond on a Python predicate, associative_scan, map, Variable,
#                   legacy constructors, jit.annotate, jit.fork/wait, functions decorated with @torch.no_grad() /
#                   @torch.enable_grad(), tensor indexing and assignment by ints only the data gives
#                   (index_by_views_, store_by_views_), torch.tensor of such numbers
#                   (tensor_of_numbers_)
#   nn_modules.py   nn.Module's parameters()/children()/... walks and state_dict()
#   warning_filters.py  warnings.catch_warnings (its entry and exit made after the graph)
#   losses.py       loss modules made in forward from tensors (a class weight): their functional call
#   as_written.py   an original's code as a function of its own (run by the stand-ins that fall back to it)
# The names below are re-exported: the C++ core imports enumerate_, sorted_, min_, max_, STAND_IN_CLASSES,
# index_by_views_, store_by_views_, is_integer_index_tensor, is_index_tensor, needs_index_by_views, holds_unbacked_numbers, tensor_of_numbers_,
# new_tensor_of_numbers_ and replacement_for from cdynamo._polyfills, _trace_objects imports STAND_IN_CLASSES.
import collections
import contextlib
import functools
import itertools
import operator
import types

import torch

from .. import _special_calls

from .classes import Deque, Namespace, NullContext, Partial, _partial_call, cached_property_get_, nullcontext_, partial_
from .copying import _MISSING, copy_, deepcopy_
from .folds import count_elements_, format_, reduce_
from .iterators import (
    accumulate_, call_iterator_, chain_, chain_from_iterable, combinations_, combinations_with_replacement_, compress_, count_, cycle_,
    dropwhile_, enumerate_, filter_, filterfalse_, groupby_, islice_, map_, pairwise_, permutations_, product_,
    repeat_, starmap_, takewhile_, tee_, zip_longest_,
)
from .namedtuples import _namedtuple_method
from .nn_modules import (
    _module_add_module, _module_apply, _module_buffers, _module_children, _module_get_buffer, _module_get_name,
    _module_get_parameter, _module_get_submodule, _module_modules, _module_named_buffers, _module_named_children,
    _module_named_modules, _module_named_parameters, _module_parameters, _module_register_buffer,
    _module_register_forward_hook, _module_register_forward_pre_hook, _module_state_dict, _module_zero_grad,
    register_traced_hook, remove_traced_hook,
)
from .operators import (
    _OPERATOR_STAND_INS, _getter_call, _methodcaller_call, abs_, add_, and__, call_, concat_, contains_, countOf_,
    delitem_, eq_, floordiv_, ge_, getitem_, gt_, iadd_, iand_, iconcat_, ifloordiv_, ilshift_, imatmul_, imod_, imul_,
    indexOf_, invert_, ior_, ipow_, irshift_, is__, is_not_, isub_, itruediv_, ixor_, le_, lshift_, lt_, matmul_, mod_,
    mul_, ne_, neg_, not__, or__, pos_, pow_, rshift_, setitem_, sub_, truediv_, truth_, xor_,
)
from .ordering import (
    _NO_DEFAULT, _heapify_max_, _heappop_max_, _heapreplace_max_, bisect_left_, bisect_right_, heapify_, heappop_,
    heappush_, heappushpop_, heapreplace_, insort_left_, insort_right_, max_, max_by_keys_, min_, min_by_keys_, sorted_,
    sorted_by_keys_, cmp_to_key_,
)
from .warning_filters import catch_warnings_
from .losses import loss_made_from_tensors
from .torch_calls import (
    _LEGACY_CONSTRUCTORS, _associative_scan, _decorated_replacement, _function_transform, _hop_map, associative_scan_,
    checkpoint_, hop_map_, checkpoint_sequential_, cond_, functional_call_, jvp_, stack_module_state_, vjp_, block_decorator_for, jit_annotate_, variable_, vmap_,
    jit_fork_, jit_wait_,
    index_by_views_, store_by_views_, is_integer_index_tensor, is_index_tensor, needs_index_by_views, holds_unbacked_numbers, tensor_of_numbers_,
    new_tensor_of_numbers_, tensor_of_scalar_tensors_, new_tensor_of_scalar_tensors_,
)

STAND_IN_CLASSES = {collections.deque: Deque, functools.partial: Partial, types.SimpleNamespace: Namespace}

# Callables replaced wherever they are called.
_BY_OBJECT = {
    map: map_,
    torch.utils.checkpoint.checkpoint: checkpoint_,
    torch.utils.checkpoint.checkpoint_sequential: checkpoint_sequential_,
    functools.reduce: reduce_,
    format: format_,
    functools.cmp_to_key: cmp_to_key_,
    itertools.chain: chain_,
    itertools.islice: islice_,
    itertools.product: product_,
    itertools.accumulate: accumulate_,
    itertools.combinations: combinations_,
    itertools.permutations: permutations_,
    itertools.combinations_with_replacement: combinations_with_replacement_,
    filter: filter_,
    itertools.filterfalse: filterfalse_,
    itertools.zip_longest: zip_longest_,
    itertools.groupby: groupby_,
    itertools.count: count_,
    itertools.repeat: repeat_,
    itertools.cycle: cycle_,
    itertools.pairwise: pairwise_,
    itertools.starmap: starmap_,
    itertools.takewhile: takewhile_,
    itertools.dropwhile: dropwhile_,
    itertools.compress: compress_,
    itertools.tee: tee_,
    contextlib.nullcontext: nullcontext_,
    __import__("warnings").catch_warnings: catch_warnings_,
    functools.cached_property.__get__: cached_property_get_,
    __import__("copy").deepcopy: deepcopy_,
    __import__("copy").copy: copy_,
    __import__("collections")._count_elements: count_elements_,
    torch.vmap: vmap_,
    torch.cond: cond_,
    torch.func.jvp: jvp_,
    torch.func.vjp: vjp_,
    torch.func.functional_call: functional_call_,
    torch.func.stack_module_state: stack_module_state_,
    **{transform: _function_transform(transform) for transform in (
        torch.func.grad, torch.func.grad_and_value, torch.func.jacrev, torch.func.jacfwd, torch.func.hessian)},
    torch.autograd.Variable: variable_,
    torch.jit.annotate: jit_annotate_,
    torch.jit.fork: jit_fork_,
    torch.jit.wait: jit_wait_,
    **{getattr(__import__("heapq"), name): stand_in for name, stand_in in (
        ("heapify", heapify_), ("heappop", heappop_), ("heapreplace", heapreplace_), ("heappush", heappush_),
        ("heappushpop", heappushpop_), ("_heapify_max", _heapify_max_), ("_heappop_max", _heappop_max_),
        ("_heapreplace_max", _heapreplace_max_)) if hasattr(__import__("heapq"), name)},
    **{getattr(__import__("bisect"), name): stand_in for name, stand_in in (
        ("bisect_left", bisect_left_), ("bisect_right", bisect_right_), ("insort_left", insort_left_),
        ("insort_right", insort_right_))},
    **_LEGACY_CONSTRUCTORS,
    torch.nn.Module.named_modules: _module_named_modules,
    torch.nn.Module.modules: _module_modules,
    torch.nn.Module.named_children: _module_named_children,
    torch.nn.Module.children: _module_children,
    torch.nn.Module.named_parameters: _module_named_parameters,
    torch.nn.Module.parameters: _module_parameters,
    torch.nn.Module.named_buffers: _module_named_buffers,
    torch.nn.Module.buffers: _module_buffers,
    torch.nn.Module.state_dict: _module_state_dict,
    torch.nn.Module.get_submodule: _module_get_submodule,
    torch.nn.Module.get_parameter: _module_get_parameter,
    torch.nn.Module.get_buffer: _module_get_buffer,
    torch.nn.Module._get_name: _module_get_name,
    torch.nn.Module.apply: _module_apply,
    torch.nn.Module.zero_grad: _module_zero_grad,
    torch.nn.Module.add_module: _module_add_module,
    torch.nn.Module.register_module: _module_add_module,
    torch.nn.Module.register_forward_hook: _module_register_forward_hook,
    torch.nn.Module.register_forward_pre_hook: _module_register_forward_pre_hook,
    torch.nn.Module.register_buffer: _module_register_buffer,
    **_OPERATOR_STAND_INS,
}
if _associative_scan is not None:
    _BY_OBJECT[_associative_scan] = associative_scan_
if _hop_map is not None:
    _BY_OBJECT[_hop_map] = hop_map_
_BY_ID = {id(original): stand_in for original, stand_in in _BY_OBJECT.items()}  # _BY_OBJECT keeps them alive


def _recursive_repr_wrapper_codes():
    import dataclasses
    import reprlib

    def shown(self):
        return ""

    made = [reprlib.recursive_repr()(shown)]
    if hasattr(dataclasses, "_recursive_repr"):  # 3.11's own copy, which dataclasses' __repr__ uses
        made.append(dataclasses._recursive_repr(shown))
    return tuple(wrapper.__code__ for wrapper in made)


# reprlib.recursive_repr's wrapper (and dataclasses' copy of it, around their __repr__): its guard
# against recursion is a set the wrapper's closure holds, shared by every call; the trace calls the
# wrapped function itself (a repr that would recurse forever stops the trace at its depth limit).
_RECURSIVE_REPR_WRAPPERS = _recursive_repr_wrapper_codes()


def _singledispatch_wrapper_code():
    @functools.singledispatch
    def made(arg):
        return arg

    return made.__code__


_SINGLEDISPATCH_WRAPPER = _singledispatch_wrapper_code()


def _singledispatch_call(fn):
    # A functools.singledispatch function: its dispatch() for the first argument's class, folded
    # now, then the implementation traced. Its registry (a dict in dispatch's closure) is read in
    # the trace, so a guard fixes its keys: register() afterwards recompiles.
    dispatch = fn.dispatch
    registry = dispatch.__closure__[dispatch.__code__.co_freevars.index("registry")].cell_contents

    def call(*args, **kwargs):
        len(registry)
        if not args:
            _special_calls.refuse(f"{fn.__name__} requires at least 1 positional argument")
        return _special_calls.singledispatch_impl(fn, type(args[0]))(*args, **kwargs)  # dispatch reads __class__: type() where it is not overridden

    return call


def replacement_for(fn):
    """The function the interpreter traces in place of a call of fn, or None. Looks only at
    identities and plain attributes of functions and builtins: no code of the callable runs."""
    found = _BY_ID.get(id(fn))
    if found is not None:
        return found
    if type(fn) is types.BuiltinFunctionType:
        if fn.__self__ is itertools.chain and fn.__name__ == "from_iterable":
            return chain_from_iterable
        return None
    if type(fn) is types.FunctionType:
        if any(fn.__code__ is code for code in _RECURSIVE_REPR_WRAPPERS) and type(getattr(fn, "__wrapped__", None)) is types.FunctionType:
            return fn.__wrapped__
        if fn.__code__ is _SINGLEDISPATCH_WRAPPER and callable(getattr(fn, "dispatch", None)):
            return _singledispatch_call(fn)
        return _namedtuple_method(fn) or _decorated_replacement(fn)
    if type(fn) is functools._lru_cache_wrapper and type(getattr(fn, "__wrapped__", None)) is types.FunctionType:
        return fn.__wrapped__  # @functools.lru_cache / cache: the function itself (same answers, no cache)
    if type(fn) is functools.partial:
        return _partial_call(fn)
    if type(fn) in (operator.attrgetter, operator.itemgetter):
        return _getter_call(fn)
    if type(fn) is operator.methodcaller:
        return _methodcaller_call(fn)
    if type(fn).__name__ == "OptimizedCallable" and type(fn).__module__ == "cdynamo._C" and isinstance(fn._callback, tuple):
        # A compiled function called from compiled code: its function is traced in place (the
        # outer compile's backend applies, as under torch._dynamo's nested optimize). Not so
        # for disable()'d or run()-only functions: their calls stay outside the graphs.
        return fn._fn if type(fn._fn) is types.FunctionType else None
    if (decorate := block_decorator_for(fn)) is not None:
        return decorate  # @torch.no_grad() on a function defined in the compiled one
    if type(fn) is torch.jit.ScriptFunction:  # @torch.jit.script: its Python source, kept by torch
        original = getattr(fn, "_torchdynamo_inline", None)
        return original if type(original) is types.FunctionType else None
    return None
