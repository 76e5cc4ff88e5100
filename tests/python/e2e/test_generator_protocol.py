"""Generators the trace runs, driven as eager drives them: send(), throw() (with the handler
inside the generator, or none), close() (finally blocks, GeneratorExit) and @contextmanager
blocks that an exception leaves. One graph, and eager's results and side effects."""
import contextlib

import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same

from .helpers import one_graph


def accumulator():
    total, count = 0, 0
    while True:
        received = yield total
        if received is None:
            return count  # StopIteration.value: a number (a tensor would need the trace to hold it)
        total, count = total + received, count + 1


def test_send_throw_and_close():
    def f(x):
        log = []

        def guarded():
            try:
                yield 1
                yield 2
            except ValueError:
                log.append("caught")
                yield 3
            finally:
                log.append("finally")

        acc = accumulator()
        next(acc)
        acc.send(x)
        running = acc.send(x * 2)
        try:
            acc.send(None)
        except StopIteration as stop:
            finished = stop.value
        g = guarded()
        first = next(g)
        after_throw = g.throw(ValueError("boom"))
        g.close()
        closed = guarded()
        next(closed)
        closed.close()
        try:
            accumulator().send(1)
        except TypeError as e:
            message = str(e)
        return running, finished, first, after_throw, log, message

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def test_contextmanager_blocks_left_by_an_exception():
    def f(x):
        log = []

        @contextlib.contextmanager
        def swallowing():
            try:
                yield
            except ValueError:
                log.append("swallowed")

        @contextlib.contextmanager
        def cleaning():
            try:
                yield
            finally:
                log.append("cleaned")

        with swallowing():
            raise ValueError
        try:
            with cleaning():
                raise KeyError("k")
        except KeyError:
            log.append("outside")
        return x + 1, log

    x = torch.randn(3)
    got, want = one_graph(f, x), f(x)
    assert same(got[0], want[0]) and got[1] == want[1]


def test_a_generators_return_value_that_the_graph_computes():
    # StopIteration.value of a generator returning tensors: read back inside the trace; escaping
    # the function, the frame runs as eager does (the caller gets eager's StopIteration).
    def fn(x):
        def produce():
            yield x
            return x * 7, 3

        it = produce()
        first = next(it)
        try:
            next(it)
        except StopIteration as stop:
            value, k = stop.value
        return first, value * k

    def escapes(x):
        def produce():
            yield 1
            return x * 2

        it = produce()
        next(it)
        next(it)

    x = torch.randn(3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)) and counter.frame_count == 1
    with pytest.raises(StopIteration) as raised:
        cdynamo.compile(escapes, backend="eager")(x)
    assert same(raised.value.value, x * 2)
