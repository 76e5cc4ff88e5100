"""nn.Module's named_modules/children/parameters/buffers walks, state_dict(), get_submodule/get_parameter: library code not traced.
Assumes torch's walk over _modules, _parameters and _buffers, duplicates told apart by identity as torch does."""
import collections

import torch

from .. import _special_calls
from .._class_queries import buffer_registration_hooks_state
from .as_written import _as_written


_STATE_DICT_AS_WRITTEN = _as_written(torch.nn.Module.state_dict)


# nn.Module's own iteration methods (library code, not traced): the same walk over _modules,
# _parameters and _buffers, duplicates told apart by identity as torch does.
def _module_named_modules(self, memo=None, prefix="", remove_duplicate=True):
    if memo is None:
        memo = []
    if remove_duplicate:
        if any(self is seen for seen in memo):
            return
        memo.append(self)
    yield prefix, self
    for name, child in self._modules.items():
        if child is None:
            continue
        child_prefix = prefix + ("." if prefix else "") + name
        for item in _module_named_modules(child, memo, child_prefix, remove_duplicate):
            yield item


def _module_modules(self):
    for _, module in _module_named_modules(self):
        yield module


def _module_named_children(self):
    memo = []
    for name, child in self._modules.items():
        if child is not None and not any(child is seen for seen in memo):
            memo.append(child)
            yield name, child


def _module_children(self):
    for _, child in _module_named_children(self):
        yield child


def _named_members(module, attribute, prefix, recurse, remove_duplicate):
    seen = []
    modules = _module_named_modules(module, prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, module)]
    for module_prefix, owner in modules:
        for name, value in getattr(owner, attribute).items():
            if value is None:
                continue
            if remove_duplicate:
                if any(value is other for other in seen):
                    continue
                seen.append(value)
            yield module_prefix + ("." if module_prefix else "") + name, value


def _member_walks(attribute):
    """named_parameters/parameters (or the buffers' pair) over module.<attribute>."""

    def named(self, prefix="", recurse=True, remove_duplicate=True):
        for item in _named_members(self, attribute, prefix, recurse, remove_duplicate):
            yield item

    def plain(self, recurse=True):
        for _, value in _named_members(self, attribute, "", recurse, True):
            yield value

    return named, plain


_module_named_parameters, _module_parameters = _member_walks("_parameters")
_module_named_buffers, _module_buffers = _member_walks("_buffers")


def _module_state_dict(self, *args, destination=None, prefix="", keep_vars=False):
    """nn.Module.state_dict: the same entries in the same order, its hooks run as torch runs
    them. The result lacks the `_metadata` attribute (module versions), which load_state_dict
    reads only when present. The deprecated positional arguments run the original (a graph
    break there)."""
    if args:
        return _STATE_DICT_AS_WRITTEN(self, *args, destination=destination, prefix=prefix, keep_vars=keep_vars)
    if destination is None:
        destination = collections.OrderedDict()
    return _save_state(self, destination, prefix, keep_vars)


def _save_state(module, destination, prefix, keep_vars):
    """One module's part of state_dict, as Module.state_dict does it: pre-hooks, its own state,
    its children's (through their own state_dict where a class overrides it), post-hooks (a
    post-hook registered privately may replace the dict this level returns)."""
    for hook in module._state_dict_pre_hooks.values():
        hook(module, prefix, keep_vars)
    if type(module)._save_to_state_dict is not torch.nn.Module._save_to_state_dict:
        module._save_to_state_dict(destination, prefix, keep_vars)
    else:
        for name, param in module._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in module._buffers.items():
            if buf is not None and name not in module._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(module).get_extra_state is not torch.nn.Module.get_extra_state:
            destination[prefix + "_extra_state"] = module.get_extra_state()
    for name, child in module._modules.items():
        if child is None:
            continue
        if type(child).state_dict is not torch.nn.Module.state_dict:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        else:
            _save_state(child, destination, prefix + name + ".", keep_vars)
    if module._state_dict_hooks:
        local_metadata = dict(version=module._version)
        for hook in module._state_dict_hooks.values():
            result = hook(module, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
    return destination


def _module_get_submodule(self, target):
    """nn.Module.get_submodule: the module at a dotted path, with torch's errors."""
    module = self
    if target == "":
        return module
    for item in target.split("."):
        if not hasattr(module, item):
            raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
        module = getattr(module, item)
        if not isinstance(module, torch.nn.Module):
            raise AttributeError("`" + item + "` is not an nn.Module")
    return module


def _module_get_parameter(self, target):
    """nn.Module.get_parameter: the parameter at a dotted path, with torch's errors."""
    module_path, _, name = target.rpartition(".")
    module = _module_get_submodule(self, module_path)
    if not hasattr(module, name):
        raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
    parameter = getattr(module, name)
    if not isinstance(parameter, torch.nn.Parameter):
        raise AttributeError("`" + name + "` is not an nn.Parameter")
    return parameter


def _module_get_buffer(self, target):
    """nn.Module.get_buffer: the buffer at a dotted path, with torch's errors."""
    module_path, _, name = target.rpartition(".")
    module = _module_get_submodule(self, module_path)
    if not hasattr(module, name):
        raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
    if name not in module._buffers:
        raise AttributeError("`" + name + "` is not a buffer")
    return getattr(module, name)


def _module_get_name(self):
    return self.__class__.__name__


def _module_apply(self, fn):
    """nn.Module.apply: fn on every submodule, children first, then on the module itself."""
    for module in self.children():
        _module_apply(module, fn)
    fn(self)
    return self


def _module_zero_grad(self, set_to_none=True):
    """nn.Module.zero_grad: every parameter's gradient dropped (a write after the graph) or
    zeroed in place and detached, as torch's does (a DataParallel replica's warning included)."""
    if getattr(self, "_is_replica", False):
        import warnings

        warnings.warn("zero_grad() of a module nn.DataParallel made has no effect: its parameters are copies of "
                      "the original's, not leaves that accumulate gradients", stacklevel=2)
    for parameter in _module_parameters(self):
        grad = parameter.grad
        if grad is None:
            continue
        if set_to_none:
            parameter.grad = None
        else:
            if grad.requires_grad:
                grad.detach_()
            grad.zero_()


_ADD_MODULE_AS_WRITTEN = _as_written(torch.nn.Module.add_module)


def _module_add_module(self, name, module):
    """nn.Module.add_module / register_module: the child set through nn.Module.__setattr__, which
    puts a module in _modules as add_module does. Anything it would refuse, or a name a
    registration hook would see, runs the original after a graph break."""
    if (type(name) is not str or not isinstance(module, torch.nn.Module) or "." in name or name == ""
            or (hasattr(self, name) and name not in self._modules)
            or getattr(torch.nn.modules.module, "_global_module_registration_hooks", None)):
        _special_calls.break_graph("nn.Module.add_module() of this child inside a compiled function")
        return _ADD_MODULE_AS_WRITTEN(self, name, module)
    setattr(self, name, module)


# Hooks registered on a module inside traced code: the trace keeps them beside the module's own
# tables (register_traced_hook and remove_traced_hook are answered by the interpreter, which runs
# them on calls of the module in the trace); a hook still registered when the graph ends is refused.
def register_traced_hook(module, kind, hook, prepend, with_kwargs):
    """The interpreter's: the id of a hook of `kind` ("pre" or "forward") now registered on module in the trace."""
    raise RuntimeError("cdynamo: register_traced_hook runs only in traced code")


def remove_traced_hook(hook_id):
    """The interpreter's: removes the hook of that id from the trace's registrations."""
    raise RuntimeError("cdynamo: remove_traced_hook runs only in traced code")


class TracedHookHandle:
    """What register_forward_hook returns in traced code: remove() removes the hook, as a
    RemovableHandle's does (also on leaving a with-block)."""

    def __init__(self, hook_id):
        self.id = hook_id

    def remove(self):
        remove_traced_hook(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


def _module_register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
    if always_call:
        from .._special_calls import refuse
        refuse("register_forward_hook(always_call=True) inside a compiled function")
    return TracedHookHandle(register_traced_hook(self, "forward", hook, prepend, with_kwargs))


def _module_register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
    return TracedHookHandle(register_traced_hook(self, "pre", hook, prepend, with_kwargs))


_REGISTER_BUFFER_AS_WRITTEN = _as_written(torch.nn.Module.register_buffer)


def _mark_non_persistent(module, name):
    module._non_persistent_buffers_set.add(name)


def _run_buffer_registration_hooks(module, name):
    for hook in list(torch.nn.modules.module._global_buffer_registration_hooks.values()):
        hook(module, name, module._buffers[name])


def _module_register_buffer(self, name, tensor, persistent=True):
    """nn.Module.register_buffer inside forward: for a buffer the module already has (a cache
    rebuilt at a longer length, as rotary embeddings do) the new tensor replaces it through
    nn.Module.__setattr__, as register_buffer's own assignment to _buffers does; a new buffer (a
    cache made on first use) goes into _buffers, which the module gets after the graph and the
    trace reads back, and a non-persistent one's name into _non_persistent_buffers_set after the
    graph. A change of persistence or a bad argument breaks the graph and runs the original."""
    # Global registration hooks may replace the tensor; ones that return None (cdynamo's own
    # cudagraphs watcher) run after the graph instead of before the registration.
    hooks, hooks_return_none = buffer_registration_hooks_state()
    if (type(name) is str and (tensor is None or type(tensor) is torch.Tensor) and hooks_return_none
            and name and "." not in name and name not in self._buffers and not hasattr(self, name)):
        self._buffers[name] = tensor
        if not persistent:
            _special_calls.after_graph(_mark_non_persistent, self, name)
        if hooks:
            _special_calls.after_graph(_run_buffer_registration_hooks, self, name)
        return
    if not (type(name) is str and (tensor is None or isinstance(tensor, torch.Tensor)) and name in self._buffers
            and (name in self._non_persistent_buffers_set) != bool(persistent)):
        _special_calls.break_graph("nn.Module.register_buffer() of a new buffer, or one changing persistence, "
                                   "inside a compiled function (register it in __init__)")
        return _REGISTER_BUFFER_AS_WRITTEN(self, name, tensor, persistent)
    setattr(self, name, tensor)
