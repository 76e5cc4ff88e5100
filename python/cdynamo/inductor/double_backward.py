"""Double backward through compiled training graphs: a backward taken with create_graph=True
(gradient penalties, MAML, physics-informed losses) must itself be differentiable. AOTAutograd's
compiled backward is not; under create_graph its gradients are replaced by eager ones, from the
graph as captured run again on the call's own inputs. Assumes the AOTAutograd node's inputs are
the module's parameters, then its buffers, then the call's arguments (aot_module_simplified)."""
import torch

from .. import eval_frame, utils

# Functions and methods of the captured graph that draw random numbers: a rerun would draw other
# ones than the compiled forward did.
_RANDOM_NAMES = frozenset({
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu",
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli", "multinomial",
    "normal", "poisson", "uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
    "cauchy_", "random_", "native_dropout",
})


def _refusal(gm):
    """Why running gm again would not reproduce the call (None when it would)."""
    from .training import _written_argument

    for node in gm.graph.nodes:
        if _written_argument(gm, node) is not None:
            return f"writes a tensor in place ({node.format_node()})"
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
        if node.op == "call_module":
            module = gm.get_submodule(node.target)
            random_layer = isinstance(module, (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU))
            name = "dropout" if random_layer and module.training and getattr(module, "p", 1) != 0 else ""
        if name in _RANDOM_NAMES and not _inert_dropout(node, name):
            return f"draws random numbers ({node.format_node()})"
    return None


def _inert_dropout(node, name):
    """F.dropout(x, p=0) or F.dropout(x, training=False): no random number is drawn."""
    if "dropout" not in name or node.op != "call_function":
        return False
    p = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
    training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
    return p == 0 or training is False


class CreateGraphBackward:
    """Per compiled graph: watch(node, args, output_count) after each call under grad mode
    registers, on that call's AOTAutograd node, a hook that acts only in a backward with
    create_graph=True."""

    def __init__(self, tuple_gm):
        self._gm = tuple_gm
        self._state = [*(p for _, p in tuple_gm.named_parameters(remove_duplicate=False)),
                       *(b for _, b in tuple_gm.named_buffers(remove_duplicate=False))]
        self._refusal = _refusal(tuple_gm)

    def watch(self, node, args, output_count):
        # Versions now: eager's saved tensors raise when written before the backward; so does this.
        saved = [(a, a._version if isinstance(a, torch.Tensor) else None) for a in args]

        def replace_when_create_graph(grad_inputs, grad_outputs):
            if not torch.is_grad_enabled():
                return None  # a plain backward: the compiled gradients stand
            return self._eager_gradients(saved, grad_inputs, grad_outputs, output_count)

        node.register_hook(replace_when_create_graph)

    def _eager_gradients(self, saved, grad_inputs, grad_outputs, output_count):
        def refuse(why):
            return RuntimeError(
                f"cdynamo: a backward with create_graph=True through a compiled training graph that {why}; "
                "set cdynamo.config.compiled_training = False (or CDYNAMO_COMPILED_TRAINING=0) to train it with "
                "eager autograd")

        if self._refusal:
            raise refuse(self._refusal)
        for value, version in saved:
            if version is not None and value._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: an input of a compiled graph, written after the call (cdynamo reruns the graph for "
                    "create_graph=True)")
        args = [value for value, _ in saved]
        leaves = self._state + args
        if len(leaves) != len(grad_inputs) or len(grad_outputs) != output_count:
            raise refuse("returns views or writes its inputs (its autograd node has other inputs or outputs)")
        utils.counters["inductor"]["create_graph_reruns"] += 1
        grads = [None] * len(leaves)
        # The rerun is eager's own computation: never compiled again (this hook may run inside a
        # compiled function's frame, where the hook mode is on).
        with eval_frame.disable(), torch.enable_grad():
            outputs = self._gm.forward(*args)
            pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
                     if isinstance(o, torch.Tensor) and o.requires_grad and g is not None]
            wanted = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor) and leaf.requires_grad]
            if pairs and wanted:
                found = torch.autograd.grad([o for o, _ in pairs], [leaves[k] for k in wanted], [g for _, g in pairs],
                                            create_graph=True, allow_unused=True)
                for k, g in zip(wanted, found):
                    grads[k] = g
        # Where the rerun finds no path, the compiled backward's zeros (or None) stand as they were.
        return tuple(g if g is not None else old for g, old in zip(grads, grad_inputs))
