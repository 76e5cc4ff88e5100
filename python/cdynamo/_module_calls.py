"""How a call of a torch.nn.Module is traced: one call_module node or traced through, which of torch.nn's methods
are traced like user code, the hooks Module.__call__ would run, and modules made or compiled inside a trace."""
import sys
import types

import torch


def is_leaf_module(module):
    """torch.nn's own layers run as one call_module node; containers are traced through."""
    cls = type(module)
    if isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)):
        return False
    return cls.__module__.startswith(("torch.nn.", "torch.ao.nn."))


# nn.Module's own methods traced like the user's code: train()/eval() set `training` flags (a
# detection backbone freezing its batch norms inside forward).
_TRACED_MODULE_METHODS = ("Module.train", "Module.eval")


def is_nn_layer_method(fn):
    """A method of one of torch.nn's (or torch.ao.nn's) own layer classes: forward() reached
    through super() from a subclass (a layer's forward is otherwise one call_module node), or
    another method of the layer (BatchNorm._check_input_dim, FloatFunctional.add): traced like the
    user's code. nn.Module's own methods (torch.nn.modules.module) are not."""
    module = getattr(fn, "__module__", "") or ""
    if module == "torch.nn.modules.module" and getattr(fn, "__qualname__", "") in _TRACED_MODULE_METHODS:
        return True
    if not (module.startswith("torch.nn.modules.") or module.startswith("torch.ao.nn.")) or module == "torch.nn.modules.module":
        return False
    if getattr(fn, "__name__", "") == "forward":
        return True
    owner = sys.modules.get(module)
    qualname = getattr(fn, "__qualname__", "").split(".")
    cls = getattr(owner, qualname[0], None) if owner is not None and len(qualname) == 2 else None
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def module_has_state(module, children=()):
    """Whether a module made inside a compiled function holds parameters or buffers of its own
    (state a graph would have to make on every call; one made at trace time is reused): those of
    `children`, the frame's modules it was given (nn.Sequential(*m.children())), are theirs."""
    given = {id(tensor) for child in children for tensor in (*child.parameters(), *child.buffers())}  # all alive
    return any(id(tensor) not in given for tensor in (*module.parameters(), *module.buffers()))


def is_compiled_module(module):
    """module is what cdynamo.compile(m) returned (with a backend, not disable=True): a call
    from compiled code traces m itself."""
    from .eval_frame import OptimizedModule

    return isinstance(module, OptimizedModule) and isinstance(module.__dict__["_compiled_call"]._callback, tuple)


def module_hooks(module):
    """None when calling module runs no hook (its own or torch.nn's global ones), else what
    Module._call_impl would run, in its order: pre=[(hook, with_kwargs)], forward=[(hook,
    with_kwargs)], backward (whether backward hooks wrap the call)."""
    from torch.nn.modules import module as impl

    def table(name):
        return getattr(impl, name, None) or {}

    global_pre, global_forward = table("_global_forward_pre_hooks"), table("_global_forward_hooks")
    backward = bool(module._backward_hooks or module._backward_pre_hooks or table("_global_backward_hooks")
                    or table("_global_backward_pre_hooks"))
    if not (module._forward_hooks or module._forward_pre_hooks or global_pre or global_forward or backward):
        return None
    forward_with_kwargs = set(module._forward_hooks_with_kwargs) | set(table("_global_forward_hooks_with_kwargs"))
    pre = [(hook, key in module._forward_pre_hooks_with_kwargs)
           for key, hook in (*global_pre.items(), *module._forward_pre_hooks.items())]
    forward = [(hook, key in forward_with_kwargs) for key, hook in (*global_forward.items(), *module._forward_hooks.items())]
    return types.SimpleNamespace(pre=pre, forward=forward, backward=backward)


def module_slice(cls, names, children):
    """What nn.Sequential's or nn.ModuleList's __getitem__ returns for a slice, for a slice the
    trace held as a list of the children: a new container of the class over them (a Sequential
    keeps their names), made without cdynamo (its __init__ frames are torch's, not the user's)."""
    from .eval_frame import disable

    return disable(_new_container)(cls, names, children)


def _new_container(cls, names, children):
    import collections

    if issubclass(cls, torch.nn.Sequential):
        return cls(collections.OrderedDict(zip(names, children)))
    return cls(children)


def shown_as_torch_shows_it(module, show):
    """repr(module) or str(module) (show) when torch's own code writes all of it (every module in
    it of torch's __repr__ and an extra_repr of torch.nn's: attributes set at construction, read
    now), else None (a class's own repr runs in the trace, or refuses)."""
    for part in module.modules():
        cls = type(part)
        if cls.__repr__ is not torch.nn.Module.__repr__ or cls.__str__ is not object.__str__:
            return None
        if not getattr(cls.extra_repr, "__module__", "").startswith("torch.nn"):
            return None
    return show(module)
