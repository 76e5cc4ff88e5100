# user classes, descriptors, inheritance
import torch, abc
from common import x, xr
import common
P = []
probe = common.collector(P)

class Vec:
    def __init__(self, t): self.t = t
    def __add__(self, o): return Vec(self.t + o.t)
    def __mul__(self, k): return Vec(self.t * k)
    def __rmul__(self, k): return Vec(self.t * k)
    def __neg__(self): return Vec(-self.t)
    def __len__(self): return self.t.shape[0]
    def __getitem__(self, i): return self.t[i]
    def __iter__(self): return iter(self.t.unbind(0))
    def __contains__(self, v): return v == 1
    def __bool__(self): return True
    def __matmul__(self, o): return self.t @ o.t.T

@probe(x)
def user_arith_dunders(x):
    v = Vec(x); w = (v + v) * 2; u = 3 * -w
    return u.t

@probe(x)
def user_len_getitem(x):
    v = Vec(x)
    return v[0] * len(v) + v[-1] + v[1:3].sum()

@probe(x)
def user_iter(x):
    return sum(r for r in Vec(x))

@probe(x)
def user_contains_bool(x):
    v = Vec(x)
    return x * (1 in v) + (2 in v) + bool(v) + (3 if v else 4)

@probe(x)
def user_iadd_fallback(x):
    v = Vec(x); v += Vec(x)
    return v.t

@probe(x)
def user_matmul(x):
    return Vec(x) @ Vec(x)

class Seq2:
    def __init__(self, n): self.n = n
    def __getitem__(self, i):
        if i >= self.n: raise IndexError
        return i * 2

@probe(x)
def old_style_getitem_iteration(x):
    return x * sum(Seq2(4)) + list(Seq2(3))[-1]

class Dyn:
    def __init__(self): self.d = {"a": 2}
    def __getattr__(self, name):
        if name.startswith("x_"): return int(name[2:])
        raise AttributeError(name)

@probe(x)
def user_getattr_fallback(x):
    o = Dyn()
    return x * o.x_3 + hasattr(o, "y") + o.d["a"]

class SetAttrLog:
    def __init__(self): object.__setattr__(self, "log", [])
    def __setattr__(self, k, v):
        self.log.append(k); object.__setattr__(self, k, v)

@probe(x)
def user_setattr_override(x):
    o = SetAttrLog(); o.a = 1; o.b = 2
    return x * len(o.log) + o.a

class Desc:
    def __get__(self, obj, objtype=None): return 7 if obj is not None else -1

class HasDesc:
    d = Desc()

@probe(x)
def descriptor_get(x):
    return x * HasDesc().d + HasDesc.d

class DataDesc:
    def __set_name__(self, owner, name): self.name = "_" + name
    def __get__(self, obj, objtype=None): return getattr(obj, self.name, 0) * 10
    def __set__(self, obj, v): setattr(obj, self.name, v + 1)

class HasDD:
    v = DataDesc()

@probe(x)
def data_descriptor_set_get(x):
    o = HasDD(); o.v = 2
    return x * o.v

class A0:
    def f(self): return 1
    @classmethod
    def make(cls): return cls()

class B0(A0):
    def f(self): return super().f() + 10

class C0(B0):
    def f(self): return super().f() + 100

@probe(x)
def multi_level_super(x):
    return x * C0.make().f() + isinstance(C0.make(), A0)

class M1:
    def g(self): return "M1"
class M2(M1):
    def g(self): return "M2" + super().g()
class M3(M1):
    def g(self): return "M3" + super().g()
class M4(M2, M3):
    def g(self): return super().g()

@probe(x)
def diamond_mro_super(x):
    s = M4().g()
    return x * len(s), s, [c.__name__ for c in M4.__mro__]

class Reg2:
    registry = []
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw); Reg2.registry.append(cls.__name__)
class R1(Reg2): pass
class R2(Reg2): pass

@probe(x)
def init_subclass_registry_read(x):
    return x * len(Reg2.registry), list(Reg2.registry)

class Counter3:
    count = 0
    def __init__(self): Counter3.count += 1

@probe(x, reset=lambda: setattr(Counter3, "count", 0), state=lambda: Counter3.count)
def class_attribute_mutation(x):
    Counter3(); Counter3()
    return x * Counter3.count

class Shape:
    def area(self): raise NotImplementedError
class Sq(Shape):
    def __init__(self, s): self.s = s
    def area(self): return self.s ** 2

@probe(x)
def polymorphic_call(x):
    return sum(s.area() for s in [Sq(2), Sq(3)]) * x

class WithCall:
    def __init__(self, k): self.k = k
    def __call__(self, t, *, bias=0): return t * self.k + bias

@probe(x)
def callable_object_kwonly(x):
    return WithCall(2)(x, bias=1) + callable(WithCall(1))

class Pt:
    def __init__(self, a, b): self.a, self.b = a, b

@probe(x)
def vars_and_dict(x):
    o = Pt(1, 2)
    return x * sum(vars(o).values()) + len(o.__dict__)

@probe(x)
def class_name_qualname(x):
    return x * len(type(Pt(1, 2)).__name__ + Pt.__qualname__), Pt(1, 2).__class__.__name__

class Defaults:
    k = 3
    def __init__(self, override=False):
        if override: self.k = 10
    def get(self): return self.k

@probe(x)
def class_attr_shadowed_by_instance(x):
    return x * Defaults().get() + Defaults(True).get() + Defaults.k

class St:
    @staticmethod
    def s(a): return a + 1
    def use(self, t): return self.s(t) * type(self).s(1)

@probe(x)
def staticmethod_via_instance_and_type(x):
    return St().use(x)

@probe(x)
def bound_method_as_value(x):
    m = Vec(x).__len__; f = Sq(2).area
    return x * (m() + f()) + (m.__self__.t is x)

@probe(x)
def isinstance_user_hierarchy(x):
    return x * (isinstance(C0(), (B0, int)) + issubclass(C0, A0) + (type(C0()) is C0) + isinstance(C0(), M1))

class PropCache:
    def __init__(self, t): self.t = t
    @property
    def doubled(self): return self.t * 2

@probe(x)
def property_returning_tensor(x):
    return PropCache(x).doubled

@probe(PropCache(x))
def input_object_attr_mutation(o):
    o.t = o.t + 1; o.new_attr = 5
    return o.doubled

class Stack:
    def __init__(self): self.items = []
    def push(self, v): self.items.append(v); return self
    def pop(self): return self.items.pop()

@probe(x)
def object_with_list_state(x):
    s = Stack().push(x).push(x * 2).push(x * 3)
    a = s.pop()
    return a + s.pop(), len(s.items)

@probe(Stack())
def input_object_list_mutation(s):
    s.push(torch.ones(2)); s.push(torch.zeros(2))
    return len(s.items)

class Base2(abc.ABC):
    @abc.abstractmethod
    def f(self, t): ...
    def run(self, t): return self.f(t) * 2
class Impl2(Base2):
    def f(self, t): return t + self.k
    k = 5

@probe(x)
def abstract_template_method(x):
    return Impl2().run(x)

class Slotted:
    __slots__ = ("v",)
    def __init__(self, v): self.v = v

@probe(x)
def slots_mutation(x):
    s = Slotted(1); s.v += 4
    return x * s.v

class Outer:
    class Inner:
        val = 4
    def get(self): return self.Inner.val

@probe(x)
def nested_class_access(x):
    return x * Outer().get() + Outer.Inner().val

class ClsMethodFactory:
    def __init__(self, t, s): self.t, self.s = t, s
    @classmethod
    def from_tensor(cls, t): return cls(t, t.shape[0])
    def out(self): return self.t * self.s

@probe(x)
def classmethod_factory(x):
    return ClsMethodFactory.from_tensor(x).out()

class Sub(ClsMethodFactory):
    def out(self): return super().out() + 1

@probe(x)
def classmethod_inherited_cls(x):
    o = Sub.from_tensor(x)
    return o.out(), type(o) is Sub

class EqObj:
    def __init__(self, v): self.v = v
    def __eq__(self, o): return isinstance(o, EqObj) and self.v == o.v
    def __hash__(self): return hash(self.v)

@probe(x)
def user_eq_hash_in_set_dict(x):
    s = {EqObj(1), EqObj(1), EqObj(2)}
    d = {EqObj(3): 5}
    return x * (len(s) + d[EqObj(3)] + (EqObj(2) in s) + (EqObj(1) == EqObj(1)) + (EqObj(1) != EqObj(2)))

class LtObj:
    def __init__(self, v): self.v = v
    def __lt__(self, o): return self.v < o.v

@probe(x)
def sorted_user_objects_lt(x):
    l = sorted([LtObj(3), LtObj(1), LtObj(2)])
    return x * l[0].v + min(LtObj(5), LtObj(4)).v

class Base3:
    def __init__(self, a): self.a = a
class Derived3(Base3):
    def __init__(self, a, b):
        super().__init__(a); self.b = b

@probe(x)
def super_init_chain(x):
    d = Derived3(x, 2)
    return d.a * d.b, vars(d).keys().__len__()

class WithRepr:
    def __repr__(self): return "WR()"
    def __str__(self): return "wr"

@probe(x)
def user_repr_str(x):
    w = WithRepr()
    return x * len(str(w) + repr(w) + f"{w}{w!r}")

class Ctr:
    def __init__(self): self.n = 0
    def __iadd__(self, k): self.n += k; return self

@probe(x)
def user_iadd(x):
    c = Ctr(); c += 2; c += 3
    return x * c.n

class GetItemSlice:
    def __getitem__(self, k):
        if isinstance(k, slice): return (k.start, k.stop, k.step)
        if isinstance(k, tuple): return len(k)
        return k

@probe(x)
def getitem_slice_tuple_keys(x):
    g = GetItemSlice()
    return x * (g[1:5:2][1] + g[1, 2, 3] + g[7]), g[::2]

class Cls_setitem:
    def __init__(self): self.d = {}
    def __setitem__(self, k, v): self.d[k] = v
    def __delitem__(self, k): del self.d[k]

@probe(x)
def user_setitem_delitem(x):
    c = Cls_setitem(); c["a"] = x; c["b"] = 1; del c["b"]
    return c.d["a"] * len(c.d)

class Ctx:
    def __enter__(self): return 5
    def __exit__(self, *a): return False
class UsesCtx(Ctx): pass

@probe(x)
def inherited_context_manager(x):
    with UsesCtx() as v:
        return x * v

class ObjNew:
    def __new__(cls, v):
        o = super().__new__(cls); o.created = True; return o
    def __init__(self, v): self.v = v

@probe(x)
def custom_new(x):
    o = ObjNew(3)
    return x * o.v + o.created

class Prop2:
    def __init__(self): self._x = 1
    x = property(lambda self: self._x, lambda self, v: setattr(self, "_x", v * 3))

@probe(x)
def property_builtin_call_form(x):
    p = Prop2(); p.x = 2
    return x * p.x

class ClsVarCounter:
    instances = []
    def __init__(self, t): self.t = t; type(self).instances.append(self)

@probe(x, reset=lambda: ClsVarCounter.instances.clear(), state=lambda: len(ClsVarCounter.instances))
def class_level_list_append(x):
    ClsVarCounter(x); ClsVarCounter(x * 2)
    return sum(o.t for o in ClsVarCounter.instances)

class GetAttribute:
    def __init__(self): self.a = 1
    def __getattribute__(self, n):
        if n == "magic": return 42
        return object.__getattribute__(self, n)

@probe(x)
def user_getattribute(x):
    g = GetAttribute()
    return x * (g.magic + g.a)

class MethodChain:
    def __init__(self, t): self.t = t
    def scale(self, k): return MethodChain(self.t * k)
    def shift(self, k): return MethodChain(self.t + k)

@probe(x)
def immutable_method_chain(x):
    return MethodChain(x).scale(2).shift(1).scale(3).t

class TensorHolder:
    def __init__(self): self.ts = {}
    def register(self, name, t): self.ts[name] = t
    def total(self): return sum(self.ts.values())

@probe(x)
def holder_dict_methods(x):
    h = TensorHolder(); h.register("a", x); h.register("b", x * 3)
    return h.total()

class DelAttr:
    def __init__(self): self.a = 1; self.b = 2

@probe(x)
def delattr_and_hasattr(x):
    o = DelAttr(); del o.a; delattr(o, "b")
    return x * (hasattr(o, "a") + hasattr(o, "b") + 3)
