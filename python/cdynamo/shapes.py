"""Dynamic shapes in the frontend: which input dimensions a trace makes symbolic (mark_dynamic,
automatic dynamic after a size changed, dynamic=True), and what such a trace needs around it.

Symbolic sizes are torch's own SymInts over a ShapeEnv (torch.fx.experimental.symbolic_shapes):
fake tensors carry them, torch's meta functions compute with them, and the ShapeEnv records every
fact a computation relied on as a guard. A trace turns those into graph nodes (ShapeTrace.to_fx:
a SymInt is rebuilt from its expression over the inputs' sizes) and into the frame's shape guard
(ShapeTrace.guard_checks: small integer programs the C++ guard tree evaluates). Static traces, the
default, never build a ShapeEnv: they only record the sizes they saw, so that a size that changes
at the next compile is seen (and that trace restarts as a dynamic one).
"""
import collections
import dataclasses
import functools
import inspect
import math
import operator
import weakref

import torch

from . import _fake_mode
from ._trace_errors import TraceUnsupported

# On a tensor: {dim: (kind, min, max)}, kind in "dynamic", "maybe", "static", "unbacked".
_MARKS = "_cdynamo_dim_marks"


def _check_dims(t, index, api):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"cdynamo.{api}() takes a tensor, not {type(t).__name__}")
    dims = list(index) if isinstance(index, (list, tuple)) else [index]
    for d in dims:
        if not isinstance(d, int) or not -t.dim() <= d < max(t.dim(), 1):
            raise IndexError(f"cdynamo.{api}(): dimension {d!r} is out of range for a {t.dim()}-d tensor")
    return [d % t.dim() if t.dim() else 0 for d in dims]


def _mark(t, index, kind, low=None, high=None, api="mark_dynamic"):
    marks = dict(getattr(t, _MARKS, None) or {})
    for d in _check_dims(t, index, api):
        marks[d] = (kind, low, high)
    setattr(t, _MARKS, marks)


def mark_dynamic(t, index, *, min=None, max=None):  # noqa: A002 - torch._dynamo's keywords
    """Compile dimension(s) `index` of `t` as symbolic from the first compile on. min/max bound
    the sizes the compiled code accepts (a size outside them recompiles). Code that needs the
    size fixed (a Python loop over it) specialises it; the recompile reason names that line."""
    if min is not None and max is not None and min > max:
        raise ValueError(f"cdynamo.mark_dynamic(): min={min} is larger than max={max}")
    _mark(t, index, "dynamic", min, max)


def maybe_mark_dynamic(t, index):
    """Like mark_dynamic (a hint: torch._dynamo's maybe_mark_dynamic, accepted for its programs)."""
    _mark(t, index, "maybe", api="maybe_mark_dynamic")


def mark_static(t, index=None):
    """Keep dimension(s) `index` of `t` (all when None) specialised, even after they change."""
    _mark(t, list(range(t.dim())) if index is None else index, "static", api="mark_static")


def mark_unbacked(t, index):
    """Compile dimension(s) `index` of `t` as a symbol the trace knows nothing about (no example
    size): never specialised, 0 and 1 included. Code that branches on it breaks the graph there;
    the inductor runs calls its compiled kernels' guards do not admit (sizes 0 and 1) as captured."""
    _mark(t, index, "unbacked", api="mark_unbacked")


def begin_compile():
    """Called by compile_frame before a trace: symbolic sizes made from here to end_compile are
    not specialised at 0 and 1 unless config.specialize_zero_one (torch's backed_size_oblivious,
    set only while cdynamo traces and compiles, so that other users of torch see their own
    setting). Returns what end_compile restores."""
    from torch.fx.experimental import _config as symbolic_config

    from . import config

    previous = symbolic_config.backed_size_oblivious
    symbolic_config.backed_size_oblivious = not config.specialize_zero_one
    return previous


def end_compile(previous):
    from torch.fx.experimental import _config as symbolic_config

    symbolic_config.backed_size_oblivious = previous


def _marks_of(t):
    """{dim: kind} from cdynamo's marks and from torch._dynamo's mark_* attributes (a program
    written for torch.compile marks tensors that way)."""
    marks = {d: kind for d, (kind, _, _) in (getattr(t, _MARKS, None) or {}).items()}
    for attribute, kind in (("_dynamo_dynamic_indices", "dynamic"), ("_dynamo_weak_dynamic_indices", "maybe"),
                            ("_dynamo_unbacked_indices", "unbacked"), ("_dynamo_static_indices", "static")):
        for d in getattr(t, attribute, ()) or ():
            marks.setdefault(d, kind)
    return marks


# Automatic dynamic: per code object and input source, the sizes compiled so far (None where a
# size differed between compiles). Weakly keyed: a code object's record goes with it.
_seen_sizes = weakref.WeakKeyDictionary()


def reset():
    _seen_sizes.clear()


_UNSEEN = object()


class RetraceDynamic(Exception):
    """Raised from a static trace that met an input whose dimensions must be symbolic, or an
    operation whose output size the data gives (data_dependent)."""

    def __init__(self, what, data_dependent=False):
        super().__init__(what)
        self.data_dependent = data_dependent


def _source_class():
    from torch._guards import GuardSource, Source

    def attribute_style(name):
        return not callable(inspect.getattr_static(Source, name))

    namespace = {"text": None, "__annotations__": {"text": str}}
    namespace["_name_template"] = property(lambda self: self.text)
    if not attribute_style("name"):
        namespace["name"] = lambda self: self.text
    if attribute_style("guard_source"):
        namespace["guard_source"] = property(lambda self: GuardSource.LOCAL)
    else:
        namespace["guard_source"] = lambda self: GuardSource.LOCAL
    del namespace["text"]
    cls = type("TraceSource", (Source,), namespace)
    return dataclasses.dataclass(frozen=True)(cls)


@functools.cache
def _trace_source_type():
    """A torch._guards.Source naming an input as users read it (L['x']): ShapeEnv wants one per
    symbol. torch has changed whether `name` is a method or an attribute; both are served."""
    return _source_class()


def _is_symbolic(obj):
    return isinstance(obj, (torch.SymInt, torch.SymFloat, torch.SymBool))


class ShapeTrace:
    """The shape side of one trace: static (sizes recorded only) or dynamic (a ShapeEnv)."""

    def __init__(self, code, option, dynamic, first_argument=None):
        self.code = code
        # Sizes seen are kept per code object and, where its first argument is a module, per
        # module: compile(model) enters every model through one function (_entry.call_module).
        self.owner = id(first_argument) if isinstance(first_argument, torch.nn.Module) else 0
        self.option = option  # compile(dynamic=...): None (automatic), True or False
        self.dynamic = bool(dynamic)
        self.inputs = []  # per placeholder with symbolic sizes: (fake, source name, fx node)
        self.bindings = {}  # sympy symbol -> the _Binding it is read from
        self.graph = None
        self._nodes = {}  # sympy expression -> fx node that computes it
        self.where = ""  # file:line the trace is at (set by the interpreter in dynamic traces)
        if self.dynamic:
            from torch._subclasses.fake_tensor import FakeTensorMode
            from torch.fx.experimental.symbolic_shapes import ShapeEnv

            self.env = ShapeEnv()
            self.env.guards = _LocatedGuards(self, self.env.guards)
            self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        else:
            self.env = None
            self.mode = None

    # --- which dimensions are symbolic ------------------------------------------------------
    def _dynamic_dims(self, tensor, source):
        marks = _marks_of(tensor)
        sizes = tuple(tensor.shape)
        record = _seen_sizes.setdefault(self.code, {}) if self.option is not False else {}
        key = (self.owner, source)
        seen = record.get(key)
        if seen is not None and len(seen) != len(sizes):
            seen = None
        changed = {d for d in range(len(sizes)) if seen is not None and (seen[d] is None or seen[d] != sizes[d])}
        if self.option is not False:
            record[key] = tuple(None if d in changed else s for d, s in enumerate(sizes))
        if self.option is False:
            return set()
        # dynamic=True leaves parameters static, as torch._dynamo does (their sizes are the
        # model's, and kernels over symbolic weights are slower); marks still apply.
        everything = self.option is True and not isinstance(tensor, torch.nn.Parameter)
        wanted = set(range(len(sizes))) if everything else changed
        wanted |= {d for d, kind in marks.items() if kind in ("dynamic", "maybe", "unbacked") and d < len(sizes)}
        wanted -= {d for d, kind in marks.items() if kind == "static"}
        # A size of 0 or 1 is specialised where the trace meets it (as torch._dynamo does):
        # broadcasting and the like are decided by it. A graph traced at larger sizes still
        # admits 0 and 1 later, unless a fact it relied on excludes them (see begin_compile).
        wanted -= {d for d in wanted if sizes[d] in (0, 1) and marks.get(d) != "unbacked"}
        return wanted

    def fake_input(self, tensor, source, node):
        """The fake tensor for a graph input read from `source`; RetraceDynamic when this static
        trace meets dimensions that must be symbolic."""
        dims = self._dynamic_dims(tensor, source)
        if not dims or tensor.layout != torch.strided or tensor.is_quantized:
            return _fake_mode.to_fake(self.mode or _fake_mode.new_fake_mode(), tensor)
        if not self.dynamic:
            raise RetraceDynamic(source)
        from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext, StrictMinMaxConstraint
        from torch.utils._sympy.value_ranges import ValueRanges

        limits = getattr(tensor, _MARKS, None) or {}
        constraints = []
        for d in range(tensor.dim()):
            _, low, high = limits.get(d, (None, None, None))
            constraints.append(None if low is None and high is None or d not in dims else
                               StrictMinMaxConstraint(vr=ValueRanges(low if low is not None else 0,
                                                                     high if high is not None else int(2**63 - 1)),
                                                      warn_only=False))
        unbacked = {d for d, kind in _marks_of(tensor).items() if kind == "unbacked"} & dims
        context = StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.UNBACKED if d in unbacked else DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC
                           for d in range(tensor.dim())],
            constraint_sizes=constraints)
        try:
            fake = self.mode.from_tensor(tensor, source=_trace_source_type()(source), symbolic_context=context)
        except Exception as error:  # noqa: BLE001 - a tensor fakes cannot stand in for
            raise TraceUnsupported(
                f"{source} cannot be traced with symbolic sizes ({type(error).__name__}: {error})") from None
        index = len(self.inputs)
        self.inputs.append((fake, source, node))
        # Each symbol is read from the first place it stands alone: a size, else a stride (of a
        # view whose strides are not its sizes' products) or the storage offset.
        places = [("size", d, s) for d, s in enumerate(fake.shape)]
        places += [("stride", d, s) for d, s in enumerate(fake.stride())]
        places.append(("offset", None, fake.storage_offset()))
        for what, d, value in places:
            if isinstance(value, torch.SymInt):
                expr = value.node._expr
                if expr.is_Symbol and expr not in self.bindings:
                    self.bindings[expr] = _Binding(index, what, d)
        if fake.grad is not None:
            # The fake's .grad has sizes of its own symbols; autograd keeps a gradient's sizes
            # equal to its tensor's, so each is read where the tensor's size is.
            for size, grad_size in zip(fake.shape, fake.grad.shape):
                if isinstance(size, torch.SymInt) and isinstance(grad_size, torch.SymInt):
                    own, expr = size.node._expr, grad_size.node._expr
                    if expr.is_Symbol and expr not in self.bindings and own in self.bindings:
                        self.bindings[expr] = self.bindings[own]
        return fake

    def scalar_is_dynamic(self, value, source):
        """Whether an int or float read from the frame's locals is a graph input (a SymInt or
        SymFloat) instead of a constant: with dynamic=True, or once it changed between compiles.
        RetraceDynamic when this static trace meets one."""
        if self.option is False or _float_without_symbol(value):
            return False
        record = _seen_sizes.setdefault(self.code, {})
        key = (self.owner, "scalar", source)
        seen = record.get(key, _UNSEEN)
        changed = seen is not _UNSEEN and (seen is None or seen != value)
        record[key] = None if changed else value
        # Floats passed as arguments are inputs from the first compile (a learning rate, a scale:
        # compile_frame starts such traces dynamic), ints and other floats once they change.
        if not (changed or self.option is True or (isinstance(value, float) and self.dynamic)):
            return False
        if not self.dynamic:
            raise RetraceDynamic(source)
        return True

    def bind_node(self, symbolic, node):
        """A graph node computes this symbolic number (an unbacked symbol of Tensor.item(); a
        bool tensor's item is the expression Eq(u, 1) of one, which the node computes as it is)."""
        expr = symbolic.node.expr
        if expr not in self.bindings and expr not in self._nodes:
            self._nodes[expr] = node

    def bind_unbacked(self, value, node):
        """Records the unbacked symbols the operation that made `value` created (none pending:
        nothing to do) in node.meta["unbacked_bindings"], where torch's tracers look for them."""
        if not self.env.pending_fresh_unbacked_symbols:
            return
        from torch.fx.experimental.symbolic_shapes import compute_unbacked_bindings

        try:
            bindings = compute_unbacked_bindings(self.env, value)
        except Exception:  # noqa: BLE001 - made inside an op whose result holds none of them
            self.env.pending_fresh_unbacked_symbols.clear()
            return
        if bindings:
            node.meta["unbacked_bindings"] = bindings

    def scalar_symbol(self, value, source, node):
        """The SymInt or SymFloat a dynamic scalar input stands for in this trace."""
        from torch.fx.experimental.symbolic_shapes import DimDynamic

        src = _trace_source_type()(source)
        sym = self.env.create_unspecified_symbol(value, source=src, dynamic_dim=DimDynamic.DYNAMIC)
        if isinstance(value, int):
            symbolic = self.env.create_symintnode(sym, hint=value, source=src)
        else:
            symbolic = self.env.create_symfloatnode(sym, hint=value, source=src)
        index = len(self.inputs)
        self.inputs.append((value, source, node))
        self.bindings[sym] = _Binding(index, "scalar", None)
        return symbolic

    # --- symbolic values as graph nodes --------------------------------------------------------
    def to_fx(self, obj):
        """`obj` (a constant the interpreter holds) for a graph node's arguments: SymInts, at any
        depth of tuples, lists and torch.Size, become the nodes that compute them."""
        if _is_symbolic(obj):
            node = self._node_for(obj.node.expr, type(obj))
            if isinstance(node, torch.fx.Node):
                node.meta.setdefault("example_value", obj)
                node.meta.setdefault("val", obj)
            return node
        if isinstance(obj, (tuple, list)) and any(_holds_symbolic(item) for item in obj):
            items = [self.to_fx(item) for item in obj]
            return items if isinstance(obj, list) else tuple(items)
        if isinstance(obj, slice) and _holds_symbolic(obj):
            return slice(self.to_fx(obj.start), self.to_fx(obj.stop), self.to_fx(obj.step))
        return obj

    def _node_for(self, expr, kind=torch.SymInt):
        import sympy

        if isinstance(expr, (sympy.Integer, int)):
            return int(expr)
        if expr in (sympy.true, sympy.false):
            return bool(expr)
        if isinstance(expr, sympy.Float):
            return float(expr)
        found = self._nodes.get(expr)
        if found is not None:
            return found
        node = self._build_node(expr)
        self._nodes[expr] = node
        return node

    def _build_node(self, expr):
        import sympy
        from torch.utils._sympy import functions as sf

        if expr.is_Symbol:
            binding = self.bindings.get(expr)
            if binding is None and (sized := self._unbacked_size(expr)) is not None:
                return self._call_method("size", sized, expr)
            if binding is None:
                raise TraceUnsupported(
                    f"a size ({expr}) that no input tensor's size stands for reaches the graph")
            placeholder = self.inputs[binding.index][2]
            if binding.what == "scalar":
                return placeholder
            if binding.what == "offset":
                return self._call_method("storage_offset", (placeholder,), expr)
            return self._call_method(binding.what, (placeholder, binding.dim), expr)
        args = [self._node_for(a) for a in expr.args]
        table = {
            sympy.Add: _chain(operator.add), sympy.Mul: _chain(operator.mul),
            sf.FloorDiv: operator.floordiv, sf.CleanDiv: operator.floordiv, sf.PythonMod: operator.mod,
            sympy.Mod: operator.mod, sf.Mod: operator.mod, sf.Max: _chain(torch.sym_max), sf.Min: _chain(torch.sym_min),
            sympy.Eq: operator.eq, sympy.Ne: operator.ne, sympy.StrictLessThan: operator.lt,
            sympy.LessThan: operator.le, sympy.StrictGreaterThan: operator.gt, sympy.GreaterThan: operator.ge,
            sf.IntTrueDiv: operator.truediv, sf.FloatTrueDiv: operator.truediv, sf.ToFloat: torch.sym_float,
            sf.TruncToInt: torch.sym_int,
        }
        for name in ("PowByNatural", "FloatPow"):
            if hasattr(sf, name):
                table[getattr(sf, name)] = operator.pow
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp >= 0:
            table[sympy.Pow] = operator.pow
        if hasattr(sf, "ModularIndexing") and isinstance(expr, sf.ModularIndexing):
            return self._call(operator.mod, (self._call(operator.floordiv, (args[0], args[1])), args[2]))
        fn = table.get(type(expr))
        if fn is None or (isinstance(expr, sympy.Mul) and any(isinstance(a, sympy.Rational) and not a.is_Integer
                                                                for a in expr.args)):
            raise TraceUnsupported(
                f"the size expression {expr} cannot be computed in the graph; "
                "mark the dimension static (cdynamo.mark_static) to specialise it")
        if isinstance(fn, _chain):
            result = args[0]
            for a in args[1:]:
                result = self._call(fn.op, (result, a))
            return result
        return self._call(fn, tuple(args))

    def _unbacked_size(self, symbol):
        """(node, dim) of a graph value whose size is this unbacked symbol, as the operation that
        made it (nonzero, a boolean mask) first gave it; None if none is."""
        for node in self.graph.nodes:
            value = node.meta.get("example_value")
            if not isinstance(value, torch.Tensor):
                continue
            for d, size in enumerate(value.shape):
                if isinstance(size, torch.SymInt) and getattr(size.node, "_expr", None) == symbol:
                    return (node, d)
        return None

    def _call(self, fn, args):
        return self.graph.call_function(fn, args)

    def _call_method(self, name, args, expr):
        return self.graph.call_method(name, args)

    # --- the shape guard -----------------------------------------------------------------------
    def guard_checks(self):
        """(description, program) per fact the trace relied on; a program is a flat list of ints
        the C++ shape guard evaluates over the inputs' sizes, strides and storage offsets, or
        None with a Python predicate instead (expressions the C++ evaluator does not know)."""
        if not self.dynamic or not self.inputs:
            return [], [], []
        import sympy

        checks = []
        names = {sym: b.text(self.inputs[b.index][1]) for sym, b in self.bindings.items()}
        for i, (fake, source, _) in enumerate(self.inputs):
            if not isinstance(fake, torch.Tensor):
                continue
            for what, values in (("stride", fake.stride()), ("storage_offset", (fake.storage_offset(),))):
                for d, value in enumerate(values):
                    if not isinstance(value, torch.SymInt):
                        continue
                    leaf = [_OP_STRIDE, i, d] if what == "stride" else [_OP_OFFSET, i]
                    name = f"{source}.stride()[{d}]" if what == "stride" else f"{source}.storage_offset()"
                    expr = value.node._expr
                    if self.bindings.get(expr) == _Binding(i, what if what == "stride" else "offset", d if what == "stride" else None):
                        continue  # where the symbol is read from: nothing to check
                    checks.append(self._check(f"{name} == {self._text(expr, names)}", expr, leaf, names))
        # What the program's own code relied on first: a failure names the user's condition.
        places = list(getattr(self.env.guards, "places", ()))
        places += [""] * (len(self.env.guards) - len(places))
        for guard, where in zip(self.env.guards, places):
            text = self._text(guard.expr, names) + (f" (relied on at {where})" if where else "")
            checks.append(self._check(text, guard.expr, None, names))
        for sym in self.bindings:
            vr = self.env.var_to_range.get(sym)
            if vr is None:
                continue
            if _finite(vr.lower):
                checks.append(self._check(f"{names[sym]} >= {int(vr.lower)}", sympy.Ge(sym, vr.lower), None, names))
            if _finite(vr.upper):
                checks.append(self._check(f"{names[sym]} <= {int(vr.upper)}", sympy.Le(sym, vr.upper), None, names))
        return [source for _, source, _ in self.inputs], [t for t, _, _ in checks], [(p, fn) for _, p, fn in checks]

    @staticmethod
    def _text(expr, names):
        import sympy

        return str(expr.xreplace({sym: sympy.Symbol(name) for sym, name in names.items()}))

    def _check(self, text, expr, leaf, names):
        """(text, program, predicate) for `expr` (== leaf's value when a leaf is given)."""
        try:
            program = _compile(expr, self.bindings)
            if leaf is not None:
                program = leaf + program + [_OP_EQ]
            return text, program, None
        except _NotCompilable:
            pass
        import sympy

        symbols = list(expr.free_symbols)
        where = [self.bindings.get(s) for s in symbols]
        if any(w is None for w in where):
            raise TraceUnsupported(f"the shape fact {text} cannot be guarded")

        def predicate(tensors, expr=expr, symbols=symbols, where=where, leaf=leaf):
            values = {s: sympy.sympify(b.read(tensors)) for s, b in zip(symbols, where)}
            result = expr.xreplace(values)
            if leaf is None:
                return bool(result)
            i = leaf[1]
            actual = tensors[i].stride(leaf[2]) if leaf[0] == _OP_STRIDE else tensors[i].storage_offset()
            return int(result) == actual

        return text, None, predicate


def _float_without_symbol(value):
    """-0.0, infinities and NaN: a symbolic float (sympy) would lose what tells them apart (the
    sign of zero: str(), copysign, 1/x), so each stays a constant, guarded by its bits."""
    return isinstance(value, float) and (not math.isfinite(value) or (value == 0.0 and math.copysign(1.0, value) < 0))


def _finite(bound):
    import sympy

    return isinstance(bound, (int, sympy.Integer))


class _LocatedGuards(list):
    """ShapeEnv.guards, remembering the user's line each fact was recorded at."""

    def __init__(self, trace, items):
        super().__init__(items)
        self.trace = trace
        self.places = [""] * len(items)

    def append(self, guard):
        super().append(guard)
        self.places.append(self.trace.where)


class _Binding(collections.namedtuple("_Binding", "index what dim")):
    """Where a symbol's value is read: input `index`'s size or stride at `dim`, its storage
    offset, or the input itself (a number)."""

    def text(self, source):
        return {"size": f"{source}.size()[{self.dim}]", "stride": f"{source}.stride()[{self.dim}]",
                "offset": f"{source}.storage_offset()", "scalar": source}[self.what]

    def program(self):
        return {"size": [_OP_SIZE, self.index, self.dim], "stride": [_OP_STRIDE, self.index, self.dim],
                "offset": [_OP_OFFSET, self.index], "scalar": [_OP_SCALAR, self.index]}[self.what]

    def read(self, inputs):
        value = inputs[self.index]
        return {"size": lambda: value.size(self.dim), "stride": lambda: value.stride(self.dim),
                "offset": lambda: value.storage_offset(), "scalar": lambda: value}[self.what]()


class _chain:
    """A sympy n-ary operation computed as a chain of binary calls."""

    def __init__(self, op):
        self.op = op


def _holds_symbolic(obj):
    if _is_symbolic(obj):
        return True
    if isinstance(obj, slice):
        return any(_is_symbolic(part) for part in (obj.start, obj.stop, obj.step))
    return isinstance(obj, (tuple, list)) and any(_holds_symbolic(item) for item in obj)


# The shape guard's programs (csrc/frontend/guards/shape_guard.cpp reads the same numbers).
_OP_CONST, _OP_SIZE, _OP_STRIDE, _OP_OFFSET, _OP_SCALAR = 0, 1, 2, 3, 4
_OP_ADD, _OP_MUL, _OP_FLOORDIV, _OP_MOD, _OP_POW, _OP_MAX, _OP_MIN = 10, 11, 12, 13, 14, 15, 16
_OP_EQ, _OP_NE, _OP_LT, _OP_LE, _OP_GT, _OP_GE = 20, 21, 22, 23, 24, 25
_OP_AND, _OP_OR, _OP_NOT = 30, 31, 32


class _NotCompilable(Exception):
    pass


def _compile(expr, bindings):
    import sympy
    from torch.utils._sympy import functions as sf

    out = []

    def emit(e):
        if isinstance(e, sympy.Integer) or e is sympy.true or e is sympy.false:
            out.extend([_OP_CONST, int(bool(e)) if e in (sympy.true, sympy.false) else int(e)])
            return
        if e.is_Symbol:
            where = bindings.get(e)
            if where is None or (where.what == "scalar" and not e.is_integer):
                raise _NotCompilable  # unknown, or a float input: the Python predicate
            out.extend(where.program())
            return
        nary = {sympy.Add: _OP_ADD, sympy.Mul: _OP_MUL, sf.Max: _OP_MAX, sf.Min: _OP_MIN,
                sympy.And: _OP_AND, sympy.Or: _OP_OR}
        binary = {sf.FloorDiv: _OP_FLOORDIV, sf.CleanDiv: _OP_FLOORDIV, sf.PythonMod: _OP_MOD, sympy.Mod: _OP_MOD,
                  sf.Mod: _OP_MOD, sympy.Eq: _OP_EQ, sympy.Ne: _OP_NE, sympy.StrictLessThan: _OP_LT,
                  sympy.LessThan: _OP_LE, sympy.StrictGreaterThan: _OP_GT, sympy.GreaterThan: _OP_GE}
        if hasattr(sf, "PowByNatural"):
            binary[sf.PowByNatural] = _OP_POW
        kind = type(e)
        if kind in nary:
            for a in e.args:
                emit(a)
            out.extend([nary[kind], len(e.args)])
        elif kind in binary and len(e.args) == 2:
            emit(e.args[0])
            emit(e.args[1])
            out.append(binary[kind])
        elif kind is sympy.Pow and e.exp.is_Integer and e.exp >= 0:
            emit(e.base)
            emit(e.exp)
            out.append(_OP_POW)
        elif kind is sympy.Not:
            emit(e.args[0])
            out.append(_OP_NOT)
        else:
            raise _NotCompilable

    emit(expr)
    return out


def unbacked_extreme(numbers, maximum):
    """max(numbers) (or min) as torch.sym_max/sym_min when one of them holds a symbol only the data
    gives (comparing would need its value); None otherwise, where the builtin compares them (a
    backed size's relation becomes a guard)."""
    from .symbolic_graphs import unbacked_symbols

    if not any(isinstance(n, (torch.SymInt, torch.SymFloat)) and unbacked_symbols(n) for n in numbers):
        return None
    integers = [isinstance(n, (int, torch.SymInt)) and not isinstance(n, bool) for n in numbers]
    if not all(integers) and any(integers):
        return None  # ints beside floats: the builtin returns the larger one as it is, of its own type
    combine = torch.sym_max if maximum else torch.sym_min
    result = numbers[0]
    for number in numbers[1:]:
        result = combine(result, number)
    return result
