"""Eight threads compile and call the same and different functions at once, with the "eager" and
"inductor" backends: results equal eager, and refcounts and gc object counts stay flat.

CDYNAMO_STRESS_CALLS sets the total number of calls (split over the threads; default 100,000:
about 3 s of calls after about 4 s of compiling on 2 cores; the sanitizer run uses fewer).
"""
import gc
import os
import sys
import threading

import torch

import cdynamo
from cdynamo.testing import same

THREADS = 8
CALLS = int(os.environ.get("CDYNAMO_STRESS_CALLS", "100000"))


def shared(x, y):
    return torch.relu(x * y) + y.sin()


def own0(x, y):
    return x - y * 2


def own1(x, y):
    return (x + 1).abs().sqrt() * y


def own2(x, y):
    return torch.where(x > y, x, y) + torch.tanh(x)


def own3(x, y):
    return (x * x + y).exp().neg()


OWN = [own0, own1, own2, own3]
BACKENDS = ["eager", "inductor"]


class Worker:
    """One thread's functions and inputs: the shared function and one of its own (so every own
    function runs under both backends, on two threads), each compiled by this thread."""

    def __init__(self, index):
        backend = BACKENDS[index % 2]
        g = torch.Generator().manual_seed(index)
        # The shared function sees two input shapes over all threads, each own function one per
        # thread pair: at most 4 cache entries per code object (limit 8).
        shape = (16,) if index % 4 < 2 else (4, 8)
        self.args = [torch.randn(shape, generator=g), torch.randn(shape, generator=g)]
        self.plain = [shared, OWN[index // 2]]
        self.compiled = [cdynamo.optimize(backend, dynamic=False)(fn) for fn in self.plain]
        self.expected = [fn(*self.args) for fn in self.plain]
        self.errors = []
        self.returned = None  # (compiled result, eager result), for their refcounts

    def call(self, k):
        fn = self.compiled[k % 2]
        out = fn(*self.args)
        if not same(out, self.expected[k % 2]):
            self.errors.append(f"{self.plain[k % 2].__name__}: wrong result at call {k}")

    def run(self, calls, barriers):
        start_compiling, warmed, measured = barriers
        try:
            start_compiling.wait()
            for k in range(4):  # compile both functions, all threads at once
                self.call(k)
            warmed.wait()
            measured.wait()  # meanwhile the main thread counts references
            for k in range(calls):
                self.call(k)
            self.returned = (self.compiled[0](*self.args), self.plain[0](*self.args))
        except threading.BrokenBarrierError:
            pass  # another thread failed and says why
        except Exception as error:  # reported by the main thread
            self.errors.append(repr(error))
            for barrier in barriers:
                barrier.abort()


def snapshot(workers):
    """Refcounts of every input and compiled function, and the gc object count."""
    gc.collect()
    counts = [sys.getrefcount(obj) for w in workers for obj in (*w.args, *w.compiled)]
    counts += [sys.getrefcount(fn) for fn in (shared, *OWN)]
    return counts, len(gc.get_objects())


def run_stress(calls_total):
    """Runs the stress; returns the snapshots before and after the calls, and per thread the
    last compiled and eager results."""
    workers = [Worker(i) for i in range(THREADS)]
    barriers = [threading.Barrier(THREADS + 1, timeout=600) for _ in range(3)]
    start_compiling, warmed, measured = barriers
    threads = [threading.Thread(target=w.run, args=(calls_total // THREADS, barriers), daemon=True) for w in workers]
    for t in threads:
        t.start()
    try:
        start_compiling.wait()
        warmed.wait()
        before = snapshot(workers)
        measured.wait()
    except threading.BrokenBarrierError:
        before = None
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads)
    assert [e for w in workers for e in w.errors] == []
    returned = [w.returned for w in workers]
    for w in workers:
        w.returned = None
    return before, snapshot(workers), returned


def test_eight_threads_compile_and_call_with_flat_refcounts_and_gc_counts():
    before, after, returned = run_stress(CALLS)
    assert after[0] == before[0]
    # A leak of one object per call would show as thousands; a few are interpreter noise.
    assert after[1] - before[1] < 100
    for compiled_result, eager_result in returned:
        assert sys.getrefcount(compiled_result) == sys.getrefcount(eager_result)
