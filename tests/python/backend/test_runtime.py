"""The C++ runtime of compiled programs: extern aten calls with schema-parsed constants, buffer
reuse and views, outputs that repeat or are inputs, constants, early frees, input checks, the GIL
released while kernels run, thread safety and the absence of leaks."""
import gc
import sys
import threading
import time
import weakref

import pytest
import torch

from cpp_support import C, L, T, assert_close_to_reference, buffer, kernel_cache_dir, like, op  # noqa: F401

f32 = torch.float32


def relu_plus_one(src, dst, sizes):
    """dst = relu(src) + 1 over contiguous buffers of these sizes."""
    strides = torch.empty(sizes).stride()
    index = " + ".join(f"i{k}*{s}" for k, s in enumerate(strides))
    return {"kernel": f"k_{dst}", "ranges": list(sizes),
            "nodes": [{"pointwise": dst, "body": op("Add", f32, op("Maximum", f32, L(src, index), C(0.0)), C(1.0))}]}


# ---- externs ---------------------------------------------------------------------------------------


def test_mm_extern_between_kernels():
    a, b = torch.randn(8, 16), torch.randn(16, 5)
    prog = {
        "buffers": [like("a", a), like("b", b), buffer("a2", [8, 16]), buffer("c", [8, 5], "output"), buffer("out", [8, 5], "output")],
        "outputs": ["out", "c"],
        "steps": [
            {"kernel": "k0", "ranges": [8, 16], "nodes": [{"pointwise": "a2", "body": op("Mul", f32, L("a", "i0*16 + i1"), C(2.0))}]},
            {"extern": "aten::mm", "args": ["a2", "b"], "outputs": ["c"]},
            relu_plus_one("c", "out", (8, 5)),
        ],
        "frees": [[], ["a2"], []],
    }
    out, c = T.run_program(prog, [a, b])
    torch.testing.assert_close(c, (a * 2) @ b)
    assert torch.equal(out, torch.relu(c) + 1)


def test_convolution_with_int_list_arguments_and_epilogue():
    x, w, bias = torch.randn(2, 3, 11, 13), torch.randn(4, 3, 3, 3), torch.randn(4)
    ref = torch.nn.functional.conv2d(x, w, bias, stride=2, padding=1)
    prog = {
        "buffers": [like("x", x), like("w", w), like("bias", bias), buffer("y", ref.shape), buffer("out", ref.shape, "output")],
        "outputs": ["out"],
        "steps": [
            {"extern": "aten::convolution",
             "args": ["x", "w", "bias", [2, 2], {"constant": "[1, 1]"}, [1, 1], False, [0, 0], 1], "outputs": ["y"]},
            relu_plus_one("y", "out", ref.shape),
        ],
    }
    (out,) = T.run_program(prog, [x, w, bias])
    torch.testing.assert_close(out, torch.relu(ref) + 1)


def test_extern_keywords_tensor_lists_dtypes_and_layout_fixups():
    a, b = torch.randn(3, 4), torch.randn(3, 2)
    prog = {
        "buffers": [like("a", a), like("b", b), buffer("cat", [3, 6]), buffer("d", [3, 6], "output", torch.float64),
                    buffer("t", [6, 3], "output"), buffer("s", [6, 3], "output")],
        "outputs": ["d", "t", "s"],
        "steps": [
            {"extern": "aten::cat", "args": [["a", "b"], {"name": "dim", "constant": "1"}], "outputs": ["cat"]},
            {"extern": "aten::_to_copy", "args": ["cat", {"name": "dtype", "constant": torch.float64}], "outputs": ["d"]},
            # aten::t returns a transposed view; the buffer is planned contiguous, so the runtime copies
            {"extern": "aten::t", "args": ["cat"], "outputs": ["t"]},
            {"kernel": "k", "ranges": [6, 3], "nodes": [{"pointwise": "s", "body": op("Neg", f32, L("t", "i0*3 + i1"))}]},
        ],
    }
    d, t, s = T.run_program(prog, [a, b])
    ref = torch.cat([a, b], 1)
    assert d.dtype == torch.float64 and torch.equal(d, ref.double())
    assert t.is_contiguous() and torch.equal(t, ref.t()) and torch.equal(s, -ref.t())


def test_extern_constants_of_every_schema_type():
    a, b = torch.randn(4, 6), torch.randn(4, 6) + 3
    kinds = [("f", torch.float64), ("d", f32), ("s", f32), ("l", f32), ("p", f32), ("e", f32), ("m", f32)]
    prog = {
        "buffers": [like("a", a), like("b", b)] + [buffer(n, [4, 6], "output", dt) for n, dt in kinds],
        "outputs": [n for n, _ in kinds],
        "steps": [
            # dtype, layout, device, bool, memory format (keywords)
            {"extern": "aten::_to_copy", "args": ["a", {"name": "dtype", "constant": "torch.float64"},
                                                  {"name": "layout", "constant": "torch.strided"},
                                                  {"name": "device", "constant": "device(type='cpu')"},
                                                  {"name": "pin_memory", "constant": "False"},
                                                  {"name": "memory_format", "constant": "torch.contiguous_format"}],
             "outputs": ["f"]},
            {"extern": "aten::div", "overload": "Tensor_mode", "args": ["a", "b", {"name": "rounding_mode", "constant": "'floor'"}],
             "outputs": ["d"]},  # a string
            {"extern": "aten::add", "overload": "Tensor", "args": ["a", "b", {"name": "alpha", "constant": 2.5}], "outputs": ["s"]},  # Scalar
            {"extern": "aten::leaky_relu", "args": ["a", 0.25], "outputs": ["l"]},
            {"extern": "aten::pow", "overload": "Tensor_Scalar", "args": ["b", 2], "outputs": ["p"]},  # an int Scalar
            {"extern": "aten::elu", "args": ["a", 1.5, 1, 1], "outputs": ["e"]},
            {"extern": "aten::clamp", "args": ["a", None, {"constant": "0.5"}], "outputs": ["m"]},  # None for Scalar?
        ],
    }
    f, d, s_, l_, p, e, m = T.run_program(prog, [a, b])
    assert f.dtype == torch.float64 and torch.equal(f, a.double())
    assert torch.equal(d, torch.div(a, b, rounding_mode="floor"))
    assert torch.equal(s_, torch.add(a, b, alpha=2.5))
    assert torch.equal(l_, torch.nn.functional.leaky_relu(a, 0.25))
    assert torch.equal(p, b ** 2)
    assert torch.equal(e, torch.nn.functional.elu(a, 1.5))
    assert torch.equal(m, a.clamp(max=0.5))


def test_extern_errors_are_clear():
    a = torch.randn(3, 4)
    bad_op = {"buffers": [like("a", a), buffer("y", [3, 4], "output")], "outputs": ["y"],
              "steps": [{"extern": "aten::no_such_op", "args": ["a"], "outputs": ["y"]}]}
    with pytest.raises(RuntimeError, match="unknown aten op aten::no_such_op"):
        T.run_program(bad_op, [a])
    bad_constant = {"buffers": [like("a", a), buffer("y", [3, 4], "output")], "outputs": ["y"],
                    "steps": [{"extern": "aten::sum", "overload": "dim_IntList", "args": ["a", {"constant": "[one]"}], "outputs": ["y"]}]}
    with pytest.raises(RuntimeError, match=r"cannot read \"\[one\]\" as argument dim"):
        T.run_program(bad_constant, [a])
    shape_error = {"buffers": [like("a", a), buffer("y", [3, 3], "output")], "outputs": ["y"],
                   "steps": [{"extern": "aten::mm", "args": ["a", "a"], "outputs": ["y"]}]}
    with pytest.raises(RuntimeError, match="compiled program: .*mat1 and mat2 shapes cannot be multiplied"):
        T.run_program(shape_error, [a])


# ---- buffers: reuse, views, outputs ------------------------------------------------------------------


def test_views_reuse_repeated_outputs_and_inputs_returned():
    x = torch.randn(32)
    prog = {
        "buffers": [like("x", x), buffer("t", [32]), buffer("y", [32], "output"),
                    buffer("u", [32], "intermediate", reuses="t"),  # written in place over t
                    buffer("z", [32], "output"),
                    buffer("yt", [8, 4], "output", strides=[1, 8], reuses="y"),  # y viewed as (4, 8), transposed
                    buffer("ys", [3], "output", strides=[2], offset=1, reuses="y")],
        "outputs": ["y", "x", "yt", "y", "ys", "z"],
        "steps": [
            {"kernel": "k0", "ranges": [32], "nodes": [{"pointwise": "t", "body": op("Sin", f32, L("x", "i0"))},
                                                       {"pointwise": "y", "body": op("Add", f32, L("x", "i0"), C(1.0))}]},
            {"kernel": "k1", "ranges": [32], "nodes": [{"pointwise": "u", "body": op("Mul", f32, L("t", "i0"), C(2.0))}]},
            {"kernel": "k2", "ranges": [32], "nodes": [{"pointwise": "z", "body": op("Neg", f32, L("u", "i0"))}]},
        ],
        "frees": [[], ["t"], ["u"]],
    }
    y, x_out, yt, y_again, ys, z = T.run_program(prog, [x])
    assert x_out is x and y_again is y
    assert torch.equal(y, x + 1)
    assert yt.data_ptr() == y.data_ptr() and torch.equal(yt, y.reshape(4, 8).t())
    assert ys.untyped_storage().data_ptr() == y.untyped_storage().data_ptr() and torch.equal(ys, y.reshape(-1)[1:7:2])
    assert_close_to_reference(z, -2 * torch.sin(x.double()), f32)


def test_constants_are_bound_by_name():
    w = torch.randn(10)
    prog = {"buffers": [buffer("x", [10], "input"), buffer("w", [10], "constant"), buffer("y", [10], "output")],
            "outputs": ["y", "w"],
            "steps": [{"kernel": "k", "ranges": [10], "nodes": [{"pointwise": "y", "body": op("Mul", f32, L("x", "i0"), L("w", "i0"))}]}]}
    x = torch.randn(10)
    y, w_out = T.run_program(prog, [x], {"w": w})
    assert torch.equal(y, x * w) and w_out is w
    with pytest.raises(ValueError, match="no tensor given for constant w"):
        T.run_program(prog, [x])


def test_inputs_are_checked():
    prog = {"buffers": [buffer("x", [4, 6], "input"), buffer("y", [4, 6], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k", "ranges": [4, 6], "nodes": [{"pointwise": "y", "body": L("x", "i0*6 + i1")}]}]}
    fn = T.compile_program(prog)
    assert torch.equal(fn(torch.ones(4, 6))[0], torch.ones(4, 6))
    for bad in [torch.ones(4, 5), torch.ones(4, 6, dtype=torch.float64)]:
        with pytest.raises(ValueError, match=r"input 0 \(x\): expected Float \[4, 6\] with strides \[6, 1\]"):
            fn(bad)
    with pytest.raises(TypeError, match="takes 1 argument, 2 given"):
        fn(torch.ones(4, 6), torch.ones(4, 6))
    with pytest.raises(TypeError, match="not a tensor"):
        fn([1.0])


def test_an_input_in_another_layout_is_read_from_a_copy_in_the_planned_one():
    # A gradient autograd laid out otherwise, a saved expand that reached the backward as a copy:
    # the kernels index by the planned layout, so the program reads a copy in it.
    double = {"kernel": "k", "ranges": [4, 6], "nodes": [{"pointwise": "y", "body": op("Mul", f32, L("x", "i0*6 + i1"), C(2.0))}]}
    prog = {"buffers": [buffer("x", [4, 6], "input"), buffer("y", [4, 6], "output")], "outputs": ["y"], "steps": [double]}
    transposed = torch.randn(6, 4).t()
    assert torch.equal(T.compile_program(prog)(transposed)[0], transposed * 2)
    # Planned as a broadcast (stride 0 over the rows): the traced value was an expand, one row read.
    broadcast = dict(prog, buffers=[buffer("x", [4, 6], "input", strides=[0, 1]), buffer("y", [4, 6], "output")],
                     steps=[dict(double, nodes=[{"pointwise": "y", "body": op("Mul", f32, L("x", "i1"), C(2.0))}])])
    row = torch.randn(1, 6)
    assert torch.equal(T.compile_program(broadcast)(row.expand(4, 6).contiguous())[0], row.expand(4, 6) * 2)


def test_an_input_written_or_returned_as_a_view_must_come_in_the_planned_layout():
    # A copy would take the write, or the returned view would not alias the caller's tensor.
    written = {"buffers": [buffer("x", [4, 6], "input"), buffer("y", [4, 6], "output", reuses="x")], "outputs": ["y"],
               "steps": [{"kernel": "k", "ranges": [4, 6],
                          "nodes": [{"pointwise": "y", "body": op("Add", f32, L("x", "i0*6 + i1"), C(1.0))}]}]}
    written_through = {"buffers": [buffer("x", [4, 6], "input"), buffer("u", [4, 6], reuses="x"),
                                   buffer("y", [4, 6], "output")], "outputs": ["y"],
                       "steps": [{"kernel": "k", "ranges": [4, 6], "nodes": [
                           {"pointwise": "u", "body": op("Add", f32, L("x", "i0*6 + i1"), C(1.0))},
                           {"pointwise": "y", "body": op("Mul", f32, L("u", "i0*6 + i1"), C(2.0))}]}]}
    viewed = {"buffers": [buffer("x", [4, 6], "input"), buffer("xt", [6, 4], "output", strides=[1, 6], reuses="x")],
              "outputs": ["xt"], "steps": []}
    for prog in (written, written_through, viewed):
        x = torch.zeros(6, 4).t()
        with pytest.raises(ValueError, match=r"input 0 \(x\): expected Float \[4, 6\] with strides \[6, 1\]"):
            T.compile_program(prog)(x)
        assert torch.equal(x, torch.zeros(4, 6))
    x = torch.zeros(4, 6)
    (y,) = T.compile_program(written)(x)
    assert torch.equal(x, torch.ones(4, 6)) and y.data_ptr() == x.data_ptr()


# ---- threads, GIL, leaks -------------------------------------------------------------------------


def heavy_program(n):
    x = L("x", "i0")
    body = x
    for _ in range(12):
        body = op("Sin", f32, op("Add", f32, body, C(0.5)))
    return {"buffers": [buffer("x", [n], "input"), buffer("y", [n], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k", "ranges": [n], "nodes": [{"pointwise": "y", "body": body}]}]}


def test_kernels_run_with_the_gil_released():
    n = 1 << 22
    fn = T.compile_program(heavy_program(n))
    x = torch.randn(n)
    fn(x)
    start = time.perf_counter()
    fn(x)
    duration = time.perf_counter() - start
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)  # with the GIL held by the call, the counter could not run at all
    try:
        t = threading.Thread(target=count)
        t.start()
        time.sleep(0.01)
        before = ticks
        for _ in range(3):
            fn(x)
        during = ticks - before
        stop.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert duration > 0.005, "the kernel is too fast to tell"
    assert during > 1000, f"another thread made only {during} steps while kernels ran"


def test_concurrent_calls_from_threads():
    fn = T.compile_program(heavy_program(50000))
    inputs = [torch.randn(50000) for _ in range(4)]
    expected = [fn(x)[0] for x in inputs]
    errors = []

    def worker(k):
        for _ in range(20):
            if not torch.equal(fn(inputs[k])[0], expected[k]):
                errors.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leaks_of_tensors_or_references():
    x = torch.randn(256, 1024)
    w = torch.randn(1024)
    prog = {"buffers": [buffer("x", [256, 1024], "input"), buffer("w", [1024], "constant"), buffer("t", [256, 1024]),
                        buffer("y", [256, 1024], "output"), buffer("m", [256, 1024], "output")],
            "outputs": ["y", "x", "y", "m"],
            "steps": [{"kernel": "k0", "ranges": [256, 1024], "nodes": [
                          {"pointwise": "t", "body": op("Mul", f32, L("x", "i0*1024 + i1"), L("w", "i1"))}]},
                      {"extern": "aten::mul", "overload": "Tensor", "args": ["t", "t"], "outputs": ["m"]},
                      {"kernel": "k1", "ranges": [256, 1024], "nodes": [
                          {"pointwise": "y", "body": op("Add", f32, L("m", "i0*1024 + i1"), C(1.0))}]}],
            "frees": [[], ["t"], []]}
    fn = T.compile_program(prog, {"w": w})
    out = fn(x)
    probe = weakref.ref(out[0])
    del out
    assert probe() is None  # outputs are owned by the caller only
    for _ in range(50):
        fn(x)
    gc.collect()
    refs = (sys.getrefcount(x), sys.getrefcount(w), sys.getrefcount(fn))
    objects = len(gc.get_objects())
    rss = rss_bytes()
    for _ in range(500):  # 1 MB per output: a leak of outputs or temporaries would show in RSS
        fn(x)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(w), sys.getrefcount(fn)) == refs
    assert len(gc.get_objects()) <= objects + 10
    assert rss_bytes() - rss < 64 << 20


def test_large_buffers_are_reused_only_once_the_caller_dropped_them():
    n = 5 << 20  # 20 MB per float32 buffer: above the reuse threshold
    from cdynamo import config

    prog = {"buffers": [buffer("x", [n], "input"), buffer("t", [n]), buffer("y", [n], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k0", "ranges": [n], "nodes": [{"pointwise": "t", "body": op("Mul", f32, L("x", "i0"), C(2.0))}]},
                      {"extern": "aten::add", "overload": "Tensor", "args": ["t", "x"], "outputs": ["y"]}]}
    x = torch.randn(n)
    fn = T.compile_program(prog)
    first = fn(x)[0]
    second = fn(x)[0]
    assert second.data_ptr() != first.data_ptr() and torch.equal(first, second)  # the caller still holds the first
    del first
    third = fn(x)[0]
    assert third.data_ptr() != second.data_ptr()
    del third, second
    fourth = fn(x)[0]
    view = fourth[::2]
    del fourth
    fifth = fn(x)[0]
    assert fifth.data_ptr() != view.data_ptr()  # a view keeps the storage busy
    assert torch.equal(fifth, x * 2 + x)
    # a simple output is written in place once dropped
    fn2 = T.compile_program(prog_out_only(n))
    a = fn2(x)[0]
    ptr = a.data_ptr()
    del a
    assert fn2(x)[0].data_ptr() == ptr


def prog_out_only(n):
    return {"buffers": [buffer("x", [n], "input"), buffer("y", [n], "output")], "outputs": ["y"],
            "steps": [{"kernel": "k", "ranges": [n], "nodes": [{"pointwise": "y", "body": op("Neg", f32, L("x", "i0"))}]}]}
