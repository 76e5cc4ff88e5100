"""Helpers for the C++ back-end stage tests: hand-built program descriptions (the format of
csrc/backend/runtime/program_dict.h), a shared kernel cache folder, and eager references."""
import atexit
import os
import shutil
import tempfile

import pytest
import torch

import cdynamo  # noqa: F401  (loads torch before the extension)
from cdynamo import config
from cdynamo._C import _testing as T

# One cache folder for the whole test session: kernels repeated across tests compile once. A
# folder made here is removed when the process ends (each run would otherwise leave ~8 MB).
SESSION_CACHE = os.environ.get("CDYNAMO_TEST_CACHE_DIR")
if not SESSION_CACHE:
    SESSION_CACHE = tempfile.mkdtemp(prefix="cdynamo-test-cache-")
    atexit.register(shutil.rmtree, SESSION_CACHE, ignore_errors=True)

DTYPE_NAMES = {
    torch.bool: "Bool",
    torch.uint8: "UInt8",
    torch.int8: "Int8",
    torch.int16: "Int16",
    torch.int32: "Int32",
    torch.int64: "Int64",
    torch.float16: "Float16",
    torch.bfloat16: "BFloat16",
    torch.float32: "Float32",
    torch.float64: "Float64",
}


@pytest.fixture(autouse=True)
def kernel_cache_dir():
    with config.patch(cache_dir=SESSION_CACHE, async_compile=False):
        yield SESSION_CACHE


def dt(dtype):
    return DTYPE_NAMES[dtype] if isinstance(dtype, torch.dtype) else dtype


def buffer(name, sizes, kind="intermediate", dtype=torch.float32, strides=None, offset=0, reuses=None):
    b = {"name": name, "kind": kind, "dtype": str(dtype) if isinstance(dtype, torch.dtype) else dtype, "sizes": list(sizes)}
    if strides is not None:
        b["strides"] = list(strides)
    if offset:
        b["offset"] = offset
    if reuses:
        b["reuses"] = reuses
    return b


def like(name, tensor, kind="input"):
    """A buffer with the tensor's dtype and layout."""
    return buffer(name, tensor.shape, kind, tensor.dtype, tensor.stride())


def contiguous_index(sizes, prefix="i"):
    """i0*s0 + i1*s1 + ... for a contiguous tensor of these sizes."""
    terms, stride = [], 1
    for k in reversed(range(len(sizes))):
        terms.append(f"{prefix}{k}*{stride}")
        stride *= sizes[k]
    return " + ".join(reversed(terms)) or "0"


def strided_index(strides, variables, offset=0):
    terms = [f"{v}*{s}" for v, s in zip(variables, strides)]
    if offset:
        terms.append(str(offset))
    return " + ".join(terms) or "0"


def L(name, index, dtype=torch.float32):
    return ("Load", dt(dtype), name, index)


def C(value, dtype=torch.float32):
    return ("Constant", dt(dtype), value)


def op(name, dtype, *args):
    return (name, dt(dtype), *args)


def pointwise_program(inputs, out_dtype, body, sizes, out_strides=None, extra_outputs=()):
    """A one-kernel program: inputs is a list of (name, tensor); out = body over `sizes`."""
    buffers = [like(name, t) for name, t in inputs]
    buffers.append(buffer("out", sizes, "output", out_dtype, out_strides))
    nodes = [{"pointwise": "out", "body": body}]
    outputs = ["out"]
    for name, dtype, extra_body in extra_outputs:
        buffers.append(buffer(name, sizes, "output", dtype))
        nodes.append({"pointwise": name, "body": extra_body})
        outputs.append(name)
    return {
        "buffers": buffers,
        "outputs": outputs,
        "steps": [{"kernel": "kernel0", "ranges": list(sizes), "nodes": nodes}],
    }


def run(program, *inputs, constants=None):
    return T.run_program(program, list(inputs), constants) if constants else T.run_program(program, list(inputs))


def assert_close_to_reference(actual, reference_fp64, dtype, rtol=None, atol=None):
    """Floats against an fp64 reference: NaN where the reference is NaN, equal infinities, and
    finite values within a tolerance that suits the dtype's precision."""
    tolerances = {
        torch.float64: (1e-12, 1e-12),
        torch.float32: (2e-6, 1e-6),
        torch.float16: (2e-3, 1e-3),
        torch.bfloat16: (1.6e-2, 1e-2),
    }
    default_rtol, default_atol = tolerances[dtype]
    assert actual.dtype == dtype
    torch.testing.assert_close(
        actual.double(),
        reference_fp64.to(dtype).double() if dtype != torch.float64 else reference_fp64,
        rtol=rtol if rtol is not None else default_rtol,
        atol=atol if atol is not None else default_atol,
        equal_nan=True,
    )
