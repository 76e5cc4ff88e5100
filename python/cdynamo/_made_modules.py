"""torch.nn modules with parameters made inside the traced code (a lazily built head): made at trace
time from constant arguments, for the one call whose trace made them. Assumes the C++ tracer's
construct_module policy calls these and makes the compiled entry one-shot (see spend)."""
import functools

import torch

# Functions and Tensor methods that draw from the global generator (a name in torch, torch.nn.functional
# or the Tensor class). A graph holding one cannot follow a module made at trace time: eager draws
# the module's initial weights between the graph's own draws.
_DRAWING_NAMES = frozenset((
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
    "normal", "poisson", "binomial", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "native_dropout", "rrelu", "rrelu_", "gumbel_softmax", "uniform_", "normal_", "bernoulli_",
    "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "_standard_gamma", "_sample_dirichlet",
))
_DRAWING_MODULES = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)


class AtTraceTime:
    """Calls fn (a module class, or nn.Module's own method on a module made so) at trace time and
    puts the global generator back as it was: retraces make the same module, and the graph's
    call advances the generator (rng_after) where eager's call would have. It starts from
    `start`, where an earlier such call of the trace left the generator (None: where it is).
    rng_after stays None when fn drew nothing."""

    def __init__(self, fn, start=None):
        self.fn = fn
        self.start = start
        self.rng_after = None

    def __call__(self, *args, **kwargs):
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        # A module's sizes are numbers: a symbolic one (nn.Linear(x.shape[-1], 2) with that
        # dimension dynamic) is specialised to its value, guarded, as a graph would read it.
        args, kwargs = _specialized(args), {name: _specialized(value) for name, value in kwargs.items()}

        # A module made on a GPU draws from its generator: put back too (such a module is
        # refused, and eager then makes it once, as the program does).
        cuda_before = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        with unset_fake_temporarily():
            before = torch.get_rng_state()
            start = before if self.start is None else self.start
            try:
                torch.set_rng_state(start)
                result = self.fn(*args, **kwargs)
                after = torch.get_rng_state()
            finally:
                torch.set_rng_state(before)
                if cuda_before is not None:
                    torch.cuda.set_rng_state_all(cuda_before)
        if not torch.equal(start, after):
            self.rng_after = after
        return result


def _specialized(value):
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(value)](value)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_specialized(item) for item in value)
    return value


def refusal(module):
    """Why a module made with parameters or buffers at trace time cannot serve its call, or None."""
    for sub in module.modules():
        if not type(sub).__module__.startswith("torch.nn."):
            # Its __init__ is the program's own Python, which the trace would run at trace time
            # (once per retrace), not where eager runs it.
            return f"constructing a {type(sub).__name__} (a module class of the program's own) with parameters or buffers inside a compiled function"
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.device.type != "cpu":
            return f"constructing an nn.Module with parameters on {tensor.device} inside a compiled function"
    return None


def rng_advance(rng_after):
    """The call made after the graph: the global generator where eager's construction left it."""
    return functools.partial(torch.set_rng_state, rng_after)


def spend(token):
    """Called after the one call a trace that made such modules serves: its entry's guard (the
    token is empty) fails from then on, so the next call traces again (eager makes the module
    again, or the program stored it and takes the other branch)."""
    token["spent"] = True


def spender(token):
    return functools.partial(spend, token)


def random_draws_in(gm):
    """A reason when gm, whose trace made modules with parameters, draws from the global generator."""
    for node in gm.graph.nodes:
        if node.op == "call_module":
            sub = gm.get_submodule(node.target)
            drawing = isinstance(sub, _DRAWING_MODULES) and sub.training
        elif node.op in ("call_function", "call_method"):
            target = node.target
            name = target if isinstance(target, str) else getattr(target, "__name__", "")
            drawing = name in _DRAWING_NAMES or (
                isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in target.tags)
        else:
            drawing = False
        if drawing:
            return (f"a module with parameters made inside the compiled function beside a random operation "
                    f"({node.target}): eager draws its initial weights between the graph's draws")
    return None
