"""Floats computed from symbolic sizes (batch norm's unbiased correction n / (n - 1)) become 0-d
float64 tensors computed in the graph, so that the C++ pipeline, whose sizes are integer
expressions, compiles such a graph once for every size instead of once per sizes met.

Assumes a functional aten graph with meta["val"] on its nodes. Python computes these floats in
double precision and the aten op reading one converts it to the reading tensor's dtype; the
tensors here are computed in double and converted the same way. Graphs reading such a float
otherwise raise NotImplementedError (the caller compiles them per sizes met, as before)."""
import operator

import torch
import torch.fx

from .layout import fake_mode_of

aten = torch.ops.aten

# Python arithmetic on sizes and floats -> the aten op computing it on 0-d float64 tensors.
_ARITHMETIC = {
    operator.truediv: aten.div.Tensor,
    operator.mul: aten.mul.Tensor,
    operator.add: aten.add.Tensor,
    operator.sub: aten.sub.Tensor,
}
# A size as a float: float(n).
_CONVERSIONS = (torch.sym_float, float)
# Ops that may read such a float as their second operand beside a float32/float64 tensor: their
# compute type is the tensor's, so converting the float to that dtype first is what eager does.
_READERS = (aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor)
_READER_DTYPES = (torch.float32, torch.float64)


def _is_float_from_sizes(node):
    # Float inputs (a changing Python float argument) are program arguments already.
    return node.op == "call_function" and isinstance(node.meta.get("val"), torch.SymFloat)


def tensorify_size_floats(gm):
    """Rewrites gm in place; returns whether it changed. Raises NotImplementedError for a float
    from sizes that this pass cannot move into the graph's tensors."""
    floats = [n for n in gm.graph.nodes if _is_float_from_sizes(n)]
    if not floats:
        return False
    fake_mode = fake_mode_of(gm)
    if fake_mode is None:
        raise NotImplementedError("a float computed from sizes in a graph without fake tensors")
    graph = gm.graph
    tensors = {}
    # The 0-d tensors live where the tensors reading them do (a kernel reads one device's memory).
    devices = {v.device for n in floats for user in n.users if user.args and isinstance(user.args[0], torch.fx.Node)
               and isinstance(v := user.args[0].meta.get("val"), torch.Tensor)}
    if len(devices) != 1:
        raise NotImplementedError("floats computed from sizes read on several devices, or by no tensor op")
    device = devices.pop()

    def add(target, args, kwargs, before, meta):
        with graph.inserting_before(before):
            node = graph.call_function(target, args, kwargs)
        node.meta["val"] = meta
        return node

    with fake_mode:
        scalar = torch.empty((), dtype=torch.float64, device=device)

        def as_tensor(arg, before):
            if isinstance(arg, torch.fx.Node) and arg in tensors:
                return tensors[arg]
            if isinstance(arg, torch.fx.Node) and not isinstance(arg.meta.get("val"), (torch.SymInt, int)):
                raise NotImplementedError(f"a float computed from sizes reads {arg.format_node()}")
            return add(aten.scalar_tensor.default, (arg,), {"dtype": torch.float64, "device": device}, before, scalar)

        for node in floats:
            if node.op == "call_function" and node.target in _CONVERSIONS and len(node.args) == 1 and not node.kwargs:
                tensors[node] = as_tensor(node.args[0], node)
                continue
            if node.op != "call_function" or node.target not in _ARITHMETIC or node.kwargs or len(node.args) != 2:
                raise NotImplementedError(f"a float computed from sizes by {node.format_node()}")
            operands = tuple(as_tensor(a, node) for a in node.args)
            tensors[node] = add(_ARITHMETIC[node.target], operands, {}, node, scalar)

        for node in floats:
            for user in list(node.users):
                if user in tensors:
                    continue
                x = user.args[0].meta.get("val") if user.args and isinstance(user.args[0], torch.fx.Node) else None
                if (user.target not in _READERS or len(user.args) != 2 or user.args[1] is not node or user.kwargs
                        or not isinstance(x, torch.Tensor) or x.dtype not in _READER_DTYPES):
                    raise NotImplementedError(f"a float computed from sizes read by {user.format_node()}")
                converted = add(aten._to_copy.default, (tensors[node],), {"dtype": x.dtype}, user,
                                torch.empty((), dtype=x.dtype, device=device))
                user.replace_input_with(node, converted)
    for node in reversed(floats):
        if not node.users:
            graph.erase_node(node)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return True
