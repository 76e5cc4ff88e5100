"""No leaked references over many calls (compiled, fallback and error paths), compiled modules
freed with their owner, and concurrent calls from several threads."""
import gc
import sys
import threading
import weakref

import torch

import cdynamo
from cdynamo.testing import CompileCounter, same

CALLS = 10_000


def add_one(x):
    return x + 1


def calls_item(x):
    return x * x.sum().item()


def gather_plus_one(x, index):
    return torch.gather(x, 0, index) + 1


def call_many_times(fn, *args, calls=CALLS):
    for _ in range(calls):
        fn(*args)


def test_refcounts_stable_over_many_calls():
    compiled = cdynamo.optimize(CompileCounter())(add_one)
    x = torch.randn(4)
    call_many_times(compiled, x, calls=10)  # compile and warm up
    before = (sys.getrefcount(x), sys.getrefcount(add_one), sys.getrefcount(add_one.__code__),
              sys.getrefcount(compiled))
    call_many_times(compiled, x)
    after = (sys.getrefcount(x), sys.getrefcount(add_one), sys.getrefcount(add_one.__code__),
             sys.getrefcount(compiled))
    assert after == before


def test_result_holds_no_extra_references():
    compiled = cdynamo.optimize(CompileCounter())(add_one)
    x = torch.randn(4)
    compiled(x)
    result, eager_result = compiled(x), add_one(x)
    assert sys.getrefcount(result) == sys.getrefcount(eager_result)


def test_gc_object_count_stable_over_many_calls():
    compiled = cdynamo.optimize(CompileCounter())(add_one)
    x = torch.randn(4)
    call_many_times(compiled, x, calls=10)
    gc.collect()
    before = len(gc.get_objects())
    call_many_times(compiled, x)
    gc.collect()
    # A leak of one object per call would show as 10,000; a few are interpreter noise.
    assert len(gc.get_objects()) - before < 50


def test_refcounts_stable_on_fallback_path():
    compiled = cdynamo.optimize(CompileCounter())(calls_item)
    x = torch.randn(4)
    call_many_times(compiled, x, calls=10)
    before = (sys.getrefcount(x), sys.getrefcount(calls_item.__code__))
    call_many_times(compiled, x, calls=2000)
    assert (sys.getrefcount(x), sys.getrefcount(calls_item.__code__)) == before


def test_refcounts_stable_when_compiled_code_raises():
    counter = CompileCounter()
    compiled = cdynamo.optimize(counter)(gather_plus_one)
    x = torch.randn(4)
    good, bad = torch.tensor([0, 1]), torch.tensor([0, 99])  # same metadata, bad values
    assert same(compiled(x, good), gather_plus_one(x, good))
    before = (sys.getrefcount(x), sys.getrefcount(bad), sys.getrefcount(gather_plus_one.__code__))
    for _ in range(2000):
        try:
            compiled(x, bad)
        except RuntimeError:
            pass
        else:
            raise AssertionError("gathering index 99 of 4 elements must raise")
    after = (sys.getrefcount(x), sys.getrefcount(bad), sys.getrefcount(gather_plus_one.__code__))
    assert after == before
    assert counter.frame_count == 1  # the error came from the cached graph, not a recompile


class Doubler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x) * 2


def test_compiled_module_is_freed_with_its_owner():
    model = Doubler()
    compiled = cdynamo.compile(model, backend=CompileCounter())
    compiled(torch.randn(2, 4))
    model_ref = weakref.ref(model)
    del model, compiled
    gc.collect()
    # Cache entries live on Doubler.forward's code object, shared by all instances: they must not
    # keep this instance (and its parameters) alive.
    assert model_ref() is None


def test_concurrent_calls_from_two_threads():
    compiled = cdynamo.optimize(CompileCounter(), dynamic=False)(add_one)
    errors = []
    barrier = threading.Barrier(2)

    def worker(shape, seed):
        try:
            generator = torch.Generator().manual_seed(seed)
            inputs = [torch.randn(shape, generator=generator) for _ in range(10)]
            barrier.wait()
            for call in range(1000):
                x = inputs[call % len(inputs)]
                if not same(compiled(x), x + 1):
                    errors.append(f"wrong result for shape {shape} at call {call}")
                    return
        except Exception as error:  # reported by the main thread
            errors.append(repr(error))

    threads = [threading.Thread(target=worker, args=(shape, seed))
               for seed, shape in enumerate([(3,), (5, 2)])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


def test_compile_mode_is_thread_local():
    def fn(x):
        return x * 3

    counter = CompileCounter()
    x = torch.randn(4)
    inside_block, other_thread_done = threading.Event(), threading.Event()
    results = {}

    def compiling_thread():
        try:
            with cdynamo.optimize(counter):
                inside_block.set()
                other_thread_done.wait(timeout=30)
                results["compiled"] = fn(x)
        finally:
            inside_block.set()  # never leave the main thread waiting

    thread = threading.Thread(target=compiling_thread)
    thread.start()
    inside_block.wait(timeout=30)
    # This thread never entered optimize(): its call must run eagerly, compiling nothing.
    results["plain"] = fn(x)
    frames_compiled_by_plain_call = counter.frame_count
    other_thread_done.set()
    thread.join(timeout=30)

    assert frames_compiled_by_plain_call == 0
    assert counter.frame_count == 1
    assert same(results["plain"], x * 3) and same(results["compiled"], x * 3)
