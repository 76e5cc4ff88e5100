"""Class statements in traced code: the body runs in the trace on its namespace, and the class is
made at trace time (one per compiled code, as for namedtuple()) when that runs no Python code of
the program; otherwise the statement runs eagerly, with the reason."""
import abc
import dataclasses

import torch

from .helpers import explain, one_graph


class Base:
    def scale(self):
        return 2


def test_class_with_attributes_annotations_super_and_a_read_of_the_function_variable():
    def f(x, n):
        class Local(Base):
            k: int = 3
            m = n + 1  # the body reads the function's variable

            def scale(self):
                return super().scale() * self.k

            def g(self, t):
                return t * self.scale() + self.m

        obj = Local()
        return obj.g(x), Local.__name__, Local.__qualname__, Local.__annotations__, isinstance(obj, Base)

    x = torch.randn(3)
    got, want = one_graph(f, x, 5), f(x, 5)
    assert torch.equal(got[0], want[0])
    assert got[1:3] == want[1:3] and got[1] == "Local" and got[2].endswith("f.<locals>.Local")
    assert got[3] == {"k": int} and got[4] is True


def test_abstract_base_classes_defined_in_the_function():
    def f(x):
        class A(abc.ABC):
            @abc.abstractmethod
            def f(self): ...

        class B(A):
            def f(self):
                return 3

        return x * B().f()

    x = torch.randn(3)
    assert torch.equal(one_graph(f, x), f(x))


def test_class_with_a_mutable_class_attribute_runs_eagerly():
    def f(x):
        class C:
            seen = []  # one list per call in eager: a class made once would share it

        C.seen.append(1)
        return x * len(C.seen)

    x = torch.randn(3)
    out = explain(f, x)
    assert "mutable class attribute" in out.break_reasons[0]
    assert torch.equal(out.out, f(x)) and torch.equal(f(x), x)


def test_method_reading_the_function_variables_runs_eagerly():
    def f(x):
        class C:
            def get(self):
                return x

        return C().get() + 1

    x = torch.randn(3)
    out = explain(f, x)
    assert "reads the function's variables" in out.break_reasons[0]
    assert torch.equal(out.out, x + 1)


def test_make_dataclass_in_the_function():
    def f(x):
        D = dataclasses.make_dataclass("D", [("a", int), ("b", int, dataclasses.field(default=4))])
        d = D(1)
        return x * (d.a + d.b), d.b, dataclasses.is_dataclass(d)

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:] == (4, True)
