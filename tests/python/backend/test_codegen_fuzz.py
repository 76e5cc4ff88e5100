"""Differential tests of the C++ generator against eager torch: random pointwise expression trees
(mixed dtypes, casts, comparisons, selects, broadcast and transposed inputs, odd sizes) built the
same way as IR bodies and as torch calls, with a fixed seed so a failure reproduces."""
import random

import pytest
import torch

from cpp_support import DTYPE_NAMES, T, kernel_cache_dir, like  # noqa: F401

FLOATS = [torch.float32, torch.float64]
INTS = [torch.int32, torch.int64, torch.int16]


class Gen:
    """Builds matching (IR tuple, torch function) pairs."""

    def __init__(self, rng, leaves):
        self.rng = rng
        self.leaves = leaves  # list of (ir load tuple, tensor)

    def expr(self, dtype, depth):
        r = self.rng
        if depth == 0 or r.random() < 0.2:
            return self.leaf(dtype)
        name = DTYPE_NAMES[dtype]
        if dtype.is_floating_point:
            choice = r.choice(["bin", "bin", "unary", "where", "cast"])
            if choice == "bin":
                op, fn = r.choice([("Add", torch.add), ("Sub", torch.sub), ("Mul", torch.mul),
                                   ("Maximum", torch.maximum), ("Minimum", torch.minimum)])
                (a, fa), (b, fb) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
                return (op, name, a, b), lambda: fn(fa(), fb())
            if choice == "unary":
                op, fn = r.choice([("Sin", torch.sin), ("Tanh", torch.tanh), ("Abs", torch.abs), ("Neg", torch.neg),
                                   ("Sigmoid", torch.sigmoid), ("Floor", torch.floor), ("Exp", lambda t: torch.exp(t.clamp(max=20)))])
                a, fa = self.expr(dtype, depth - 1)
                if op == "Exp":  # keep values small so float32 rounding stays comparable
                    a = ("Minimum", name, a, ("Constant", name, 20.0))
                return (op, name, a), lambda: fn(fa())
            if choice == "where":
                other = r.choice(FLOATS)
                (c1, f1), (c2, f2) = self.expr(other, depth - 1), self.expr(other, depth - 1)
                (a, fa), (b, fb) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
                return ("Where", name, ("Lt", "Bool", c1, c2), a, b), lambda: torch.where(f1() < f2(), fa(), fb())
            src = r.choice(INTS + FLOATS)
            a, fa = self.expr(src, depth - 1)
            return ("Cast", name, a), lambda: fa().to(dtype)
        choice = r.choice(["bin", "bin", "cast", "where"])
        if choice == "bin":
            op, fn = r.choice([("Add", torch.add), ("Sub", torch.sub), ("Mul", torch.mul), ("BitwiseXor", torch.bitwise_xor),
                               ("Maximum", torch.maximum), ("BitwiseAnd", torch.bitwise_and)])
            (a, fa), (b, fb) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            return (op, name, a, b), lambda: fn(fa(), fb())
        if choice == "where":
            (a, fa), (b, fb) = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            return ("Where", name, ("Ge", "Bool", a, b), a, b), lambda: torch.where(fa() >= fb(), fa(), fb())
        src = r.choice(INTS)
        a, fa = self.expr(src, depth - 1)
        return ("Cast", name, a), lambda: fa().to(dtype)

    def leaf(self, dtype):
        name = DTYPE_NAMES[dtype]
        if self.rng.random() < 0.25:
            v = round(self.rng.uniform(-3, 3), 2) if dtype.is_floating_point else self.rng.randint(-5, 5)
            return ("Constant", name, v), lambda: torch.tensor(v, dtype=dtype)
        load, tensor = self.rng.choice(self.leaves)
        return ("Cast", name, load), lambda: tensor.to(dtype)


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("CDYNAMO_FUZZ_SEEDS", "8"))))
def test_random_pointwise_programs_match_eager(seed):
    rng = random.Random(seed)
    rows, cols = rng.choice([(3, 37), (17, 64), (1, 100), (40, 9)])
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(rows, cols, generator=g)
    b = torch.randn(cols, rows, generator=g).t()  # transposed layout
    c = torch.randint(-50, 50, (cols,), generator=g, dtype=torch.int32)  # broadcast along rows
    d = torch.randn(rows, 1, generator=g, dtype=torch.float64)
    leaves = [
        (("Load", "Float32", "a", f"i0*{cols} + i1"), a),
        (("Load", "Float32", "b", f"i0 + i1*{rows}"), b),
        (("Load", "Int32", "c", "i1"), c),
        (("Load", "Float64", "d", "i0"), d.expand(rows, cols)),
    ]
    if seed % 2:  # without the transposed input the kernel vectorizes
        leaves.pop(1)
    gen = Gen(rng, leaves)
    out_dtypes = [rng.choice(FLOATS + INTS) for _ in range(3)]
    bodies = [gen.expr(dt, 4) for dt in out_dtypes]
    buffers = [like("a", a), like("b", b), like("c", c), like("d", d)]
    nodes, outputs = [], []
    for k, (dt, (body, _)) in enumerate(zip(out_dtypes, bodies)):
        buffers.append({"name": f"o{k}", "kind": "output", "dtype": str(dt), "sizes": [rows, cols]})
        nodes.append({"pointwise": f"o{k}", "body": body})
        outputs.append(f"o{k}")
    prog = {"buffers": buffers, "inputs": ["a", "b", "c", "d"], "outputs": outputs,
            "steps": [{"kernel": "kernel0", "ranges": [rows, cols], "nodes": nodes}]}
    results = T.run_program(prog, [a, b, c, d])
    for dt, (_, fn), got in zip(out_dtypes, bodies, results):
        want = fn().to(dt).expand(rows, cols)
        if dt.is_floating_point:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        else:
            assert torch.equal(got, want), (got, want)
