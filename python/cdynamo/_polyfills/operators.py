"""The operator module's functions as the statements they stand for; calls of attrgetter/itemgetter/methodcaller.
Assumes the interpreter traces those statements by its own rules; the getters' __reduce__ gives what made them."""
import functools
import operator


def _getter_call(getter):
    # operator.attrgetter("a.b", "c") / itemgetter(1, 2) objects: what they were made with is in
    # their __reduce__; the lookups are traced.
    _, names = getter.__reduce__()
    if type(getter) is operator.itemgetter:
        def get(obj):
            return obj[names[0]] if len(names) == 1 else tuple(obj[name] for name in names)
    else:
        def attribute(obj, dotted):
            for part in dotted.split("."):
                obj = getattr(obj, part)
            return obj

        def get(obj):
            return attribute(obj, names[0]) if len(names) == 1 else tuple(attribute(obj, name) for name in names)
    return get


def _methodcaller_call(caller):
    # operator.methodcaller("name", *args, **kwargs) objects: __reduce__ gives back what they
    # were made with (a partial of the class when there are keywords); the method call is traced.
    made_by, args = caller.__reduce__()
    if type(made_by) is functools.partial:
        name, keywords = made_by.args[0], dict(made_by.keywords)
    else:
        name, args, keywords = args[0], args[1:], {}

    def call(obj):
        return getattr(obj, name)(*args, **keywords)

    return call


# The operator module's functions, as the statements and expressions they stand for: the
# interpreter traces `a[b] = c`, `a += b`, `b in a` with its own rules (a list or dict changed in
# place, a tensor's item assignment a graph node), where a call of the C function would be one
# opaque graph node. operator.index and operator.length_hint keep their policy.
def add_(a, b): return a + b
def sub_(a, b): return a - b
def mul_(a, b): return a * b
def matmul_(a, b): return a @ b
def truediv_(a, b): return a / b
def floordiv_(a, b): return a // b
def mod_(a, b): return a % b
def pow_(a, b): return a ** b
def lshift_(a, b): return a << b
def rshift_(a, b): return a >> b
def and__(a, b): return a & b
def or__(a, b): return a | b
def xor_(a, b): return a ^ b
def lt_(a, b): return a < b
def le_(a, b): return a <= b
def eq_(a, b): return a == b
def ne_(a, b): return a != b
def gt_(a, b): return a > b
def ge_(a, b): return a >= b
def is__(a, b): return a is b
def is_not_(a, b): return a is not b
def neg_(a): return -a
def pos_(a): return +a
def invert_(a): return ~a
def abs_(a): return abs(a)
def not__(a): return not a
def truth_(a): return True if a else False
def contains_(a, b): return b in a
def getitem_(a, b): return a[b]


def setitem_(a, b, c):
    a[b] = c


def delitem_(a, b):
    del a[b]


def iadd_(a, b):
    a += b
    return a


def isub_(a, b):
    a -= b
    return a


def imul_(a, b):
    a *= b
    return a


def imatmul_(a, b):
    a @= b
    return a


def itruediv_(a, b):
    a /= b
    return a


def ifloordiv_(a, b):
    a //= b
    return a


def imod_(a, b):
    a %= b
    return a


def ipow_(a, b):
    a **= b
    return a


def ilshift_(a, b):
    a <<= b
    return a


def irshift_(a, b):
    a >>= b
    return a


def iand_(a, b):
    a &= b
    return a


def ior_(a, b):
    a |= b
    return a


def ixor_(a, b):
    a ^= b
    return a


def _concatenable(a):
    if not hasattr(a, "__getitem__"):
        raise TypeError(f"'{type(a).__name__}' object can't be concatenated")


def concat_(a, b):
    _concatenable(a)
    return a + b


def iconcat_(a, b):
    _concatenable(a)
    a += b
    return a


def countOf_(a, b):
    # Items equal to b, each compared as `in` compares (identity first).
    found = 0
    for item in a:
        if item is b or item == b:
            found += 1
    return found


def indexOf_(a, b):
    position = 0
    for item in a:
        if item is b or item == b:
            return position
        position += 1
    raise ValueError("sequence.index(x): x not in sequence")


def call_(obj, /, *args, **kwargs):
    return obj(*args, **kwargs)


_OPERATOR_STAND_INS = {
    getattr(operator, name): stand_in for name, stand_in in (
        ("add", add_), ("sub", sub_), ("mul", mul_), ("matmul", matmul_), ("truediv", truediv_),
        ("floordiv", floordiv_), ("mod", mod_), ("pow", pow_), ("lshift", lshift_), ("rshift", rshift_),
        ("and_", and__), ("or_", or__), ("xor", xor_), ("lt", lt_), ("le", le_), ("eq", eq_), ("ne", ne_),
        ("gt", gt_), ("ge", ge_), ("is_", is__), ("is_not", is_not_), ("neg", neg_), ("pos", pos_),
        ("invert", invert_), ("inv", invert_), ("abs", abs_), ("not_", not__), ("truth", truth_),
        ("contains", contains_), ("getitem", getitem_), ("setitem", setitem_), ("delitem", delitem_),
        ("iadd", iadd_), ("isub", isub_), ("imul", imul_), ("imatmul", imatmul_), ("itruediv", itruediv_),
        ("ifloordiv", ifloordiv_), ("imod", imod_), ("ipow", ipow_), ("ilshift", ilshift_),
        ("irshift", irshift_), ("iand", iand_), ("ior", ior_), ("ixor", ixor_), ("concat", concat_),
        ("iconcat", iconcat_), ("countOf", countOf_), ("indexOf", indexOf_), ("call", call_))
    if hasattr(operator, name)
}
