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


REDUCTIONS = {
    "Sum": lambda t, dims: t.sum(dims),
    "Max": lambda t, dims: t.amax(dims),
    "Min": lambda t, dims: t.amin(dims),
    "Prod": lambda t, dims: t.prod(dims[0]) if len(dims) == 1 else t.prod(dims[1]).prod(dims[0]),
}


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("CDYNAMO_FUZZ_SEEDS", "8"))))
def test_random_reductions_match_eager(seed):
    """Reductions over random subsets of the dims of a possibly permuted 3-d tensor; the kept dims
    iterate i, the reduced ones r, in order."""
    rng = random.Random(100 + seed)
    sizes = [rng.choice([1, 3, 8, 17, 40]) for _ in range(3)]
    g = torch.Generator().manual_seed(seed)
    dtype = rng.choice([torch.float32, torch.float64, torch.int64])
    base = torch.randn(sizes, generator=g, dtype=torch.float64)
    base = (base * 3).round() if dtype == torch.int64 else base
    perm = rng.sample(range(3), 3)
    x = base.permute(perm).to(dtype)  # any layout
    rdims = sorted(rng.sample(range(3), rng.choice([1, 2])))
    idims = [d for d in range(3) if d not in rdims]
    kind = rng.choice(list(REDUCTIONS) + ["ArgMax", "ArgMin"] if len(rdims) == 1 else list(REDUCTIONS))
    if kind == "Prod":
        x = (x.double().abs() % 1.5 + 0.5).to(dtype) if dtype != torch.int64 else x.clamp(-2, 2)
    var = {d: f"i{k}" for k, d in enumerate(idims)} | {d: f"r{k}" for k, d in enumerate(rdims)}
    index = " + ".join(f"{var[d]}*{x.stride(d)}" for d in range(3))
    name = DTYPE_NAMES[dtype]
    body = ("Load", name, "x", index)
    if dtype != torch.int64 and rng.random() < 0.5:
        body = ("Tanh", name, body)
        x_eval = torch.tanh(x)
    else:
        x_eval = x
    out_sizes = [x.shape[d] for d in idims]
    out_dtype = torch.int64 if kind.startswith("Arg") else dtype
    prog = {"buffers": [like("x", x), {"name": "y", "kind": "output", "dtype": str(out_dtype), "sizes": out_sizes}],
            "outputs": ["y"],
            "steps": [{"kernel": "kernel0", "ranges": out_sizes, "reduction_ranges": [x.shape[d] for d in rdims],
                       "nodes": [{"reduction": "y", "type": kind, "body": body}]}]}
    (got,) = T.run_program(prog, [x])
    if kind == "ArgMax":
        want = x_eval.argmax(rdims[0])
    elif kind == "ArgMin":
        want = x_eval.argmin(rdims[0])
    else:
        want = REDUCTIONS[kind](x_eval.double() if dtype != torch.int64 else x_eval, rdims).to(dtype)
    if dtype == torch.int64 or kind.startswith("Arg"):
        assert torch.equal(got, want), (kind, rdims, perm, got, want)
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
