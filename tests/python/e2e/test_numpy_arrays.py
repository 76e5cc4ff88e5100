"""NumPy on tensors inside compiled functions: t.numpy(), numpy functions and array arithmetic
are torch operations in the graph with NumPy's dtypes, torch.from_numpy / as_tensor / tensor
take the values back, and an array that leaves the function is a real ndarray."""
import numpy as np
import pytest
import torch

import cdynamo
from cdynamo.testing import CompileCounter, same


def side_statistics(h):
    arr = h.detach().cpu().numpy()
    mean = np.mean(arr, axis=0, keepdims=True)
    std = np.std(arr, axis=0, keepdims=True) + 1e-5
    norm = torch.from_numpy(((arr - mean) / std).astype(np.float32))
    order = np.argsort(arr[:, 0])
    return h + norm, h[torch.as_tensor(order)], torch.tensor(arr.max(axis=1)), arr.shape


def numpy_dtypes(t):
    a = t.numpy()
    return (torch.from_numpy(a // 2), torch.as_tensor(a / 2), torch.tensor(a.mean(axis=0)),
            torch.from_numpy(np.exp(a).astype(np.float32)), torch.from_numpy(a.T.copy() * 2.5),
            torch.from_numpy(np.maximum(a, 3) - np.sqrt(a)))


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
            torch.testing.assert_close(g, w)
        else:
            assert g == w


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_statistics_computed_in_numpy_are_one_graph(backend):
    counter = CompileCounter() if backend == "eager" else None
    compiled = cdynamo.compile(side_statistics, backend=counter or backend, fullgraph=True)
    h = torch.randn(6, 8)
    assert_same(compiled(h), side_statistics(h))
    if counter:
        assert counter.frame_count == 1


def test_results_have_numpys_dtypes():
    counter = CompileCounter()
    t = torch.arange(6).reshape(2, 3)
    assert_same(cdynamo.compile(numpy_dtypes, backend=counter, fullgraph=True)(t), numpy_dtypes(t))
    assert counter.frame_count == 1


def test_an_array_returned_is_a_real_ndarray_sharing_the_tensors_memory():
    def f(t):
        doubled = t * 2
        return doubled.numpy(), doubled

    array, tensor = cdynamo.compile(f, backend="eager", fullgraph=True)(torch.ones(3))
    assert type(array) is np.ndarray and array.tolist() == [2.0, 2.0, 2.0]
    tensor.add_(1)
    assert array.tolist() == [3.0, 3.0, 3.0]  # .numpy() shares memory, as in eager


def test_numpy_of_a_tensor_that_requires_grad_raises_eagers_error():
    def f(t):
        return torch.from_numpy(t.numpy() * 2)

    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        f(t)
    with pytest.raises(RuntimeError, match="requires grad"):
        cdynamo.compile(f, backend="eager")(t)


def test_an_array_made_from_a_tensor_is_an_ndarray_to_the_program():
    def f(t):
        a = t.numpy()
        kind = "array" if isinstance(a, np.ndarray) and type(a) is np.ndarray else "other"
        return torch.from_numpy(a * 2), kind, isinstance(a, torch.Tensor)

    counter = CompileCounter()
    t = torch.randn(3)
    got = cdynamo.compile(f, backend=counter, fullgraph=True)(t)
    want = f(t)
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:] == ("array", False) and counter.frame_count == 1


def test_in_place_array_arithmetic_changes_the_tensor_as_numpy_does():
    def f(t):
        a = t.numpy()
        a += 1
        a *= 2
        return t * 1

    t1, t2 = torch.zeros(3), torch.zeros(3)
    want = f(t1)
    got = cdynamo.compile(f, backend="eager", fullgraph=True)(t2)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(t2, t1)  # the tensor behind the array changed in both


def test_arrays_numpy_makes_from_constants_are_traced():
    # RepVGG's identity kernel: np.zeros, item writes, torch.from_numpy; an arange squared; a
    # NumPy scalar's methods (Informer's np.ceil(np.log(L)).astype("int").item()).
    def fn(x):
        kernel = np.zeros((3, 3), dtype=np.float32)
        for i in range(3):
            kernel[i, (i + 1) % 3] = 1
        steps = int(np.ceil(np.log(x.shape[0])).astype("int").item())
        return x @ torch.from_numpy(kernel), x * torch.from_numpy(np.arange(3) ** 2), steps

    x = torch.randn(4, 3)
    counter = CompileCounter()
    assert same(cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x))
    assert counter.frame_count == 1


_basis = np.arange(0, 5) / 5


class _HoldsArray(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.anchors = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)

    def forward(self, x):
        return x @ torch.from_numpy(self.anchors), x.sum() + torch.from_numpy(_basis ** 2) * self.anchors[0, 1]


def test_numpy_arrays_read_from_the_frame_are_guarded_constants():
    # N-BEATS' basis, a detector's anchors: their values are the graph's (as a tensor where a torch
    # operation takes them); a change of contents recompiles.
    torch.manual_seed(0)
    x = torch.randn(3, 2)
    m = _HoldsArray()
    counter = CompileCounter()
    compiled = cdynamo.compile(m, backend=counter, fullgraph=True)
    assert same(compiled(x), m(x)) and same(compiled(x), m(x)) and counter.frame_count == 1
    _basis[1] = 7.0
    m.anchors[0, 1] = -1.0
    assert same(compiled(x), m(x)) and counter.frame_count == 2


def test_a_function_with_no_tensor_operation_runs_as_written_with_its_callees():
    # Its trace (numpy's functions folded, inline) found nothing to compile: it runs as it is, and
    # the library functions it calls are not compiled on their own (under fullgraph=True they
    # would be refused).
    def fn(a):
        return np.sum(a, axis=0) * 2 + a.mean()

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    compiled = cdynamo.compile(fn, backend="eager", fullgraph=True)
    assert np.array_equal(compiled(a), fn(a)) and np.array_equal(compiled(a), fn(a))


def test_a_tensor_indexed_by_an_array_numpy_made_from_a_traced_tensor():
    # TimesNet's FFT_for_Period: top-k indices through .cpu().numpy(), then x[:, indices].
    def fn(x):
        _, top = torch.topk(x.abs().mean(0), 2)
        top = top.detach().cpu().numpy()
        return x[:, top], x.shape[1] // (top + 1)

    x = torch.randn(4, 6)
    counter = CompileCounter()
    got, want = cdynamo.compile(fn, backend=counter, fullgraph=True)(x), fn(x)
    assert same(got[0], want[0]) and (got[1] == want[1]).all() and counter.frame_count == 1


def test_truth_and_len_of_arrays_made_from_tensors_follow_numpy():
    def f(x):
        a = x.numpy()
        picked = a[a.argmax()]  # one value, read from the data
        if picked > 0:  # its truth is the data's: a graph break (eager reads it)
            return x * 2, len(a)
        return x - 1, len(a)

    x = torch.tensor([0.5, -1.0, 2.0])
    out = cdynamo.explain(f)(x)
    assert out.graph_break_count >= 1 and same(out.out[0], f(x)[0]) and out.out[1] == 3

    def length_of_one_value(x):
        return len(x.numpy().sum())

    with pytest.raises(TypeError, match="unsized object"):
        cdynamo.optimize("eager")(length_of_one_value)(x)
