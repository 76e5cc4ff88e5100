"""CPython's own tables and rules that the C++ interpreter reads from Python: the operators behind BINARY_OP,
COMPARE_OP and the unary opcodes, dict views' classes, and how a relative import resolves. Assumes CPython 3.11+."""
import operator


def binary_operators():
    """BINARY_OP's argument order (NB_ADD=0 ... NB_XOR=12, then in-place forms)."""
    plain = [operator.add, operator.and_, operator.floordiv, operator.lshift, operator.matmul,
             operator.mul, operator.mod, operator.or_, operator.pow, operator.rshift, operator.sub,
             operator.truediv, operator.xor]
    inplace = [operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift, operator.imatmul,
               operator.imul, operator.imod, operator.ior, operator.ipow, operator.irshift,
               operator.isub, operator.itruediv, operator.ixor]
    return tuple(plain + inplace)


def inplace_to_plain():
    """operator.iadd -> operator.add, ...: what an in-place operator computes on an immutable left side."""
    ops = binary_operators()
    return dict(zip(ops[13:], ops[:13]))


def compare_operators():
    """COMPARE_OP's argument order (Py_LT ... Py_GE)."""
    return (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)


def unary_operators():
    return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert, "not": operator.not_}


def resolve_relative_import(name, frame_globals, level):
    """The absolute module name of `from <level dots><name> import ...` in code with these globals,
    or None outside a package (the import system's own rule: __package__, else __spec__.parent)."""
    import importlib.util

    package = frame_globals.get("__package__")
    if package is None and frame_globals.get("__spec__") is not None:
        package = frame_globals["__spec__"].parent
    if not package:
        return None
    try:
        return importlib.util.resolve_name("." * level + name, package)
    except ImportError:
        return None


def dict_view_types():
    """The classes of dict.keys(), values() and items(), by method name."""
    sample = {}
    return {"keys": type(sample.keys()), "values": type(sample.values()), "items": type(sample.items())}


def as_dict_view(items, view_type):
    """A real view of the kind view_type over the trace's snapshot of it (constants)."""
    if view_type is type({}.items()):
        return dict(items).items()
    if view_type is type({}.keys()):
        return dict.fromkeys(items).keys()
    return dict(enumerate(items)).values()
