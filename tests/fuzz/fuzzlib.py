# Seeded generator of small random PyTorch programs (as source text) and the runner that checks them in child processes.
# Assumes torch importable here (candidate statements are validated on small tensors); fuzz_harness.py sits next to this file.
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS_PATH = os.path.join(HERE, "fuzz_harness.py")
REPO_PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")

PRELUDE = '''import io
import torch

SINK = io.StringIO()
LOG = []


class State:
    def __init__(self, scale, count, buf):
        self.scale = scale
        self.count = count
        self.buf = buf

    def bump(self, x):
        self.count += 1
        return x * self.scale


class Acc:
    def __init__(self, first):
        self.items = [first]
        self.total = first.sum()

    def add(self, x):
        self.items.append(x)
        self.total = self.total + x.sum()
        return self
'''

SHAPES = [(4,), (3, 4), (4, 4), (2, 3, 4), (8, 8), (4, 1), (1, 4), (2, 4)]


@dataclass
class InputSpec:
    name: str
    kind: str  # tensor, int, float, list, dict, state, linear
    shape: tuple = ()
    dtype: str = "float32"
    requires_grad: bool = False
    parts: list = field(default_factory=list)  # element specs of list/dict/state inputs


def tensor_source(spec, generator="g"):
    shape = ", ".join(map(str, spec.shape))
    if spec.dtype == "int64":
        text = f"torch.randint(-4, 5, ({shape},), generator={generator})"
    elif spec.dtype == "bool":
        text = f"(torch.randn({shape}, generator={generator}) > 0)"
    else:
        text = f"torch.randn({shape}, generator={generator}, dtype=torch.{spec.dtype})"
    return text + (".requires_grad_()" if spec.requires_grad else "")


def stand_in_tensor(spec):
    """A small real tensor standing in for the input while validating (meta tensors skip some of
    eager's checks, e.g. in-place type promotion)."""
    if spec.dtype == "bool":
        return torch.randn(spec.shape) > 0
    if spec.dtype == "int64":
        return torch.randint(-4, 5, spec.shape)
    return torch.randn(spec.shape, dtype=getattr(torch, spec.dtype), requires_grad=spec.requires_grad)


class ProgramGenerator:
    """Builds one program statement by statement; each candidate is executed on small real tensors first
    so that (nearly) every program runs in eager mode, and so that operand shapes are known."""

    def __init__(self, seed):
        torch.manual_seed(seed)  # the stand-in tensors' values decide which candidates pass
        self.seed = seed
        self.rng = random.Random(seed)
        self.env = {}
        exec(PRELUDE, self.env)
        self.statements = []
        self.counter = 0
        self.inputs = self.choose_inputs()
        for spec in self.inputs:
            self.env[spec.name] = self.stand_in_value(spec)

    # ----- inputs
    def random_tensor_spec(self, name, allow_other_dtypes=True):
        shape = self.rng.choice(SHAPES)
        dtype = "float32"
        if allow_other_dtypes:
            dtype = self.rng.choices(["float32", "float64", "int64", "bool"], [10, 2, 2, 1])[0]
        grad = dtype.startswith("float") and self.rng.random() < 0.35
        return InputSpec(name, "tensor", shape, dtype, grad)

    def choose_inputs(self):
        rng = self.rng
        specs = [self.random_tensor_spec("a", allow_other_dtypes=False)]
        for name in ("b", "c"):
            if rng.random() < 0.6:
                specs.append(self.random_tensor_spec(name))
        if rng.random() < 0.5:
            specs.append(InputSpec("n", "int"))
        if rng.random() < 0.4:
            specs.append(InputSpec("s", "float"))
        if rng.random() < 0.25:
            specs.append(InputSpec("lst", "list", parts=[self.random_tensor_spec("", False) for _ in range(2)]))
        if rng.random() < 0.2:
            specs.append(InputSpec("d", "dict", parts=[self.random_tensor_spec("x", False)]))
        if rng.random() < 0.25:
            specs.append(InputSpec("obj", "state", parts=[self.random_tensor_spec("buf", False)]))
        if rng.random() < 0.2:
            specs.append(InputSpec("lin", "linear", shape=(specs[0].shape[-1], rng.choice([2, 4]))))
        if rng.random() < 0.1:
            specs.append(InputSpec("conv", "conv2d", shape=(1, 2)))
        return specs

    def stand_in_value(self, spec):
        if spec.kind == "tensor":
            return stand_in_tensor(spec)
        if spec.kind == "int":
            return 2
        if spec.kind == "float":
            return 0.5
        if spec.kind == "list":
            return [stand_in_tensor(p) for p in spec.parts]
        if spec.kind == "dict":
            return {"x": stand_in_tensor(spec.parts[0]), "k": 2}
        if spec.kind == "state":
            return self.env["State"](0.5, 1, stand_in_tensor(spec.parts[0]))
        if spec.kind == "conv2d":
            return torch.nn.Conv2d(*spec.shape, 3, padding=1)
        return torch.nn.Linear(*spec.shape)

    def inputs_source(self):
        out = ["def make_inputs(variant):",
               f"    g = torch.Generator().manual_seed({self.seed * 10} + variant)"]
        for spec in self.inputs:
            if spec.kind == "tensor":
                out.append(f"    {spec.name} = {tensor_source(spec)}")
            elif spec.kind == "int":
                out.append(f"    {spec.name} = 2 + variant")
            elif spec.kind == "float":
                out.append(f"    {spec.name} = 0.5 + variant")
            elif spec.kind == "list":
                out.append(f"    {spec.name} = [{', '.join(tensor_source(p) for p in spec.parts)}]")
            elif spec.kind == "dict":
                out.append(f"    {spec.name} = {{'x': {tensor_source(spec.parts[0])}, 'k': 2 + variant}}")
            elif spec.kind == "state":
                out.append(f"    {spec.name} = State(0.5 + variant, 1, {tensor_source(spec.parts[0])})")
            else:
                module = "Linear" if spec.kind == "linear" else "Conv2d"
                extra = "" if spec.kind == "linear" else ", 3, padding=1"
                out.append(f"    {spec.name} = torch.nn.{module}({spec.shape[0]}, {spec.shape[1]}{extra})")
                out.append("    with torch.no_grad():")
                out.append(f"        for p in {spec.name}.parameters():")
                out.append("            p.copy_(torch.randn(p.shape, generator=g))")
        out.append(f"    return [{', '.join(s.name for s in self.inputs)}]")
        return "\n".join(out)

    # ----- operand choice
    def fresh(self, prefix="t"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def names_of(self, predicate):
        return [k for k, v in self.env.items() if not k.startswith("__") and k not in ("SINK", "LOG")
                and predicate(v)]

    def tensor(self, floating=False):
        names = self.names_of(lambda v: isinstance(v, torch.Tensor)
                              and (not floating or v.dtype.is_floating_point))
        if not names:
            return None
        recent = names[-3:]  # favour recent values so that statements build on each other
        return self.rng.choice(recent if self.rng.random() < 0.5 else names)

    def scalar(self):
        names = self.names_of(lambda v: type(v) in (int, float))
        options = names + [str(self.rng.choice([2, 3, -1])), str(self.rng.choice([0.5, 1.5, -2.0]))]
        return self.rng.choice(options)

    def input_tensor(self):
        names = [s.name for s in self.inputs if s.kind == "tensor"]
        return self.rng.choice(names)

    # ----- statement templates: each returns source text (one or more lines) or None
    def expr_pointwise(self, x):
        rng, y = self.rng, self.tensor()
        k = self.scalar()
        options = [f"torch.relu({x})", f"{x}.sin()", f"torch.exp({x}.clamp(max=3))", f"{x}.abs()",
                   f"-{x}", f"{x} * {k}", f"{x} + {k}", f"torch.tanh({x})", f"{x}.sigmoid()",
                   f"({x} > 0)", f"{x}.float()", f"{x}.to(torch.float64)", f"{x}.long()",
                   f"{x}.clamp(-1, 1)", f"{x}.pow(2)", f"{x} + {y}", f"{x} * {y}", f"{x} - {y}",
                   f"torch.maximum({x}, {y})", f"{x} / ({y}.abs() + 1)", f"torch.where({x} > 0, {x}, {y})",
                   f"{x}.clone()", f"{x}.contiguous()", f"{x}.detach()", f"torch.zeros_like({x})",
                   f"torch.full_like({x}, {k})", f"{x}.exp().log1p()"]
        return rng.choice(options)

    def expr_reduction(self, x):
        d = self.rng.choice([0, -1])
        options = [f"{x}.sum()", f"{x}.sum(dim={d})", f"{x}.mean(dim={d}, keepdim=True)", f"{x}.amax(dim={d})",
                   f"{x}.argmax(dim={d})", f"torch.softmax({x}, dim={d})", f"{x}.cumsum({d})", f"{x}.max()",
                   f"{x}.norm()", f"{x}.prod(dim={d})", f"{x}.std()", f"torch.logsumexp({x}, dim={d})"]
        return self.rng.choice(options)

    def expr_view(self, x):
        options = [f"{x}[0]", f"{x}[1:]", f"{x}[..., ::2]", f"{x}.t()", f"{x}.transpose(0, -1)",
                   f"{x}.reshape(-1)", f"{x}.view(-1)", f"{x}.unsqueeze(0)", f"{x}.squeeze()",
                   f"{x}.flatten()", f"{x}.narrow(0, 0, 1)", f"{x}.expand(2, *{x}.shape)", f"{x}.diagonal()",
                   f"{x}.unbind(0)[0]", f"{x}.chunk(2, -1)[0]", f"{x}.split(1)[-1]", f"{x}[:, 1:3]",
                   f"{x}[-1, ...]", f"{x}.mT", f"{x}.view({x}.shape)", f"{x}.unflatten(-1, (2, -1))",
                   f"{x}.select(-1, 0)", f"{x}.movedim(0, -1)"]
        return self.rng.choice(options)

    def expr_matmul(self, x):
        y = self.tensor(floating=True)
        options = [f"{x} @ {y}", f"{x} @ {x}.mT", f"torch.matmul({x}, {y}.mT)", f"{x}.mT @ {y}",
                   f"torch.cat([{x}, {y}], dim=0)", f"torch.stack([{x}, {y}])", f"torch.cat([{x}, {x}], dim=-1)",
                   f"torch.outer({x}.flatten(), {y}.flatten())", f"torch.einsum('...i,...i->...', {x}, {y})"]
        if "lin" in self.env:
            options += [f"lin({x})", f"torch.relu(lin({x}))"]
        if "conv" in self.env:
            options += [f"conv({x}.reshape(1, 1, {x}.shape[-2], -1))", f"conv({x}.reshape(1, 1, 1, -1)).flatten()"]
            if "lin" in self.env:
                options.append(f"lin(conv({x}.reshape(1, 1, 1, -1)).mean(dim=(0, 1, 2)))")
        return self.rng.choice(options)

    def stmt_assign(self):
        kind = self.rng.choices(["pointwise", "reduction", "view", "matmul"], [5, 2, 3, 2])[0]
        x = self.tensor(floating=kind in ("reduction", "matmul"))
        if x is None:
            return None
        expr = getattr(self, "expr_" + kind)(x)
        return f"{self.fresh()} = {expr}"

    def stmt_inplace(self):
        rng = self.rng
        x = self.input_tensor() if rng.random() < 0.4 else self.tensor()
        if x is None:
            return None
        if rng.random() < 0.4:  # in-place through a view
            x = rng.choice([f"{x}[0]", f"{x}[..., :1]", f"{x}.view(-1)[1:3]", f"{x}.t()"])
        y, k = self.tensor(), self.scalar()
        op = rng.choice([f"add_({k})", f"mul_({k})", f"add_({y})", f"mul_({y})", "zero_()", "relu_()",
                         f"clamp_(min={k})", f"copy_({y})", "neg_()", f"fill_({k})", f"sub_({y}, alpha=2)"])
        if rng.random() < 0.25:
            return f"{x}[0] = {k}" if rng.random() < 0.5 else f"{x}[..., 0] = {y}[..., 0]"
        if rng.random() < 0.3:
            return f"{self.fresh()} = {x}.{op}"  # in-place ops return their input: aliasing
        return f"{x}.{op}"

    def stmt_fresh_inplace(self):
        x = self.tensor()
        if x is None:
            return None
        t = self.fresh()
        y, k = self.tensor(), self.scalar()
        op = self.rng.choice([f"add_({y})", f"mul_({k})", "sigmoid_()", f"masked_fill_({t} > 0, {k})", f"div_({k})"])
        return f"{t} = {x}.clone()\n{t}.{op}"

    def branch_bodies(self, target, count=2):
        """`count` alternative one-line bodies assigning `target` (validated to agree below)."""
        x = self.tensor()
        if x is None:
            return None
        return [f"{target} = {self.expr_pointwise(x)}" for _ in range(count)]

    def stmt_python_if(self):
        cond = self.rng.choice(self.names_of(lambda v: type(v) in (int, float)) + ["len(SINK.getvalue()) < 1000"])
        cond = cond if cond.startswith("len") else f"{cond} > {self.rng.choice([1, 2, 0.7])}"
        return self.two_way_block(f"if {cond}:")

    def stmt_tensor_if(self):
        x = self.tensor()
        if x is None:
            return None
        return self.two_way_block(f"if {x}.sum() > 0:")  # a data-dependent branch: graph break

    def two_way_block(self, header):
        target = self.fresh()
        bodies = self.branch_bodies(target)
        if bodies is None:
            return None
        envs = []
        for body in bodies:
            env = dict(self.env)
            try:
                exec(body, env)
            except Exception:
                return None
            envs.append(env[target])
        same = all(e.shape == envs[0].shape and e.dtype == envs[0].dtype and e.requires_grad == envs[0].requires_grad
                   for e in envs)
        if not same:
            return None
        self.pending_env = {target: envs[0]}
        return f"{header}\n    {bodies[0]}\nelse:\n    {bodies[1]}"

    def stmt_loop(self):
        rng = self.rng
        x = self.tensor()
        if x is None:
            return None
        t = self.fresh()
        count = rng.choice(["n", "2", "3"]) if "n" in self.env else rng.choice(["2", "3"])
        body = rng.choice([f"{t} = {t} + i", f"{t} = {t} * 0.5 + {x}", f"{t} = {t}.sin()"])
        return f"{t} = {x}\nfor i in range({count}):\n    {body}"

    def stmt_item(self):
        x = self.tensor(floating=True)
        if x is None:
            return None
        name = self.fresh("f")
        self.pending_env = {name: 0.5}
        follow = self.rng.choice(["", f"\nif {name} > 0:\n    {name} = {name} * 2\nelse:\n    {name} = {name} - 1"])
        return f"{name} = {x}.sum().item(){follow}"

    def stmt_print(self):
        x = self.tensor()
        # Ints only: a float from .item() may differ in its last digits between eager and compiled.
        k = self.rng.choice(self.names_of(lambda v: type(v) is int) + ["'k'"])
        return self.rng.choice([f"print({x}.shape, {k}, file=SINK)", f"print('dtype', {x}.dtype, file=SINK)",
                                f"LOG.append({x}.shape[0])"])

    def stmt_container(self):
        rng = self.rng
        x, y = self.tensor(), self.tensor()
        if x is None:
            return None
        options = [f"{self.fresh('acc')} = [{x}, {y}]", f"{self.fresh('dct')} = {{'x': {x}, 'n': {self.scalar()}}}",
                   f"{self.fresh('tup')} = ({x}, {self.scalar()})"]
        lists = self.names_of(lambda v: type(v) is list)
        dicts = self.names_of(lambda v: type(v) is dict)
        tuples = self.names_of(lambda v: type(v) is tuple)
        for name in lists:
            options += [f"{name}.append({x})", f"{name}[0] = {x}", f"{self.fresh()} = {name}[-1] * 2",
                        f"{self.fresh()} = {name}.pop()", f"{self.fresh()} = sum(v.sum() for v in {name})",
                        f"{name}.insert(0, {y})"]
        for name in dicts:
            options += [f"{name}['y'] = {x}", f"{self.fresh()} = {name}['x'] + 1",
                        f"{self.fresh()} = {name}.get('z', {x})", f"{name}.pop('x', None)"]
        for name in tuples:
            options += [f"{self.fresh()} = {name}[0] + {name}[1]"]
        return rng.choice(options)

    def stmt_closure(self):
        x, y = self.tensor(), self.tensor()
        if x is None:
            return None
        helper, t = self.fresh("helper"), self.fresh()
        if self.rng.random() < 0.5:
            return f"{helper} = lambda v: v * 2 + {y}\n{t} = {helper}({x})"
        return f"def {helper}(v, w={self.scalar()}):\n    return torch.relu(v) * w + {y}.sum()\n{t} = {helper}({x})"

    def stmt_object(self):
        rng = self.rng
        x = self.tensor()
        if x is None:
            return None
        options = []
        if "obj" in self.env:
            options += ["obj.count += 1", "obj.scale = obj.scale * 2", f"obj.buf = obj.buf + {x}",
                        f"{self.fresh()} = obj.bump({x})", f"{self.fresh()} = {x} * obj.scale + obj.count",
                        "obj.buf.add_(1)", f"obj.extra = {x}", f"{self.fresh()} = obj.buf * 2"]
        objects = self.names_of(lambda v: type(v).__name__ == "Acc")
        options.append(f"{self.fresh('box')} = Acc({x})")
        for name in objects:
            options += [f"{name}.add({x})", f"{self.fresh()} = {name}.total * 2", f"{name}.label = {self.scalar()}"]
        return rng.choice(options)

    def stmt_try(self):
        x = self.tensor()
        if x is None:
            return None
        t = self.fresh()
        rng = self.rng
        risky = rng.choice([f"{t} = {{'k': {x}}}['missing']", f"raise ValueError('boom')",
                            f"{t} = getattr({x}, 'no_such_attr')", f"{t} = [{x}][3]"])
        error = {"missing": "KeyError", "boom": "ValueError", "no_such": "AttributeError", "[3]": "IndexError"}
        caught = next(v for k, v in error.items() if k in risky)
        tail = rng.choice(["", "\nfinally:\n    LOG.append('finally')"])
        return f"try:\n    {risky}\nexcept {caught}:\n    {t} = {self.expr_pointwise(x)}{tail}"

    def stmt_no_grad(self):
        x = self.tensor()
        if x is None:
            return None
        t = self.fresh()
        extra = ""
        if self.rng.random() < 0.4:
            extra = f"\n    {self.input_tensor()}.mul_(0.5)"  # allowed on leaves that require grad here
        kind = self.rng.choice(["pointwise", "reduction", "view", "matmul"])
        return f"with torch.no_grad():\n    {t} = {getattr(self, 'expr_' + kind)(x)}{extra}"

    STATEMENTS = [("assign", 12), ("inplace", 4), ("fresh_inplace", 2), ("python_if", 2), ("tensor_if", 1),
                  ("loop", 1), ("item", 1), ("print", 1), ("container", 3), ("closure", 1), ("object", 2),
                  ("try", 1), ("no_grad", 1)]

    def add_statement(self):
        names, weights = zip(*self.STATEMENTS)
        for _ in range(30):
            self.pending_env = {}
            kind = self.rng.choices(names, weights)[0]
            text = getattr(self, "stmt_" + kind)()
            if text is None:
                continue
            env = dict(self.env)
            try:
                exec(text, env)
            except Exception:  # a reject, the generator tries another candidate
                continue
            env.update(self.pending_env)
            self.env = env
            self.statements.append(text)
            return

    def return_statement(self):
        rng = self.rng
        values = self.names_of(lambda v: isinstance(v, (torch.Tensor, int, float, list, dict, tuple))
                               or type(v).__name__ in ("Acc", "State"))
        values = [v for v in values if v not in ("i",) and not v.startswith("helper")]
        tensors = self.names_of(lambda v: isinstance(v, torch.Tensor))
        chosen = [tensors[-1]] + rng.sample(values, min(len(values), rng.randint(0, 3)))
        chosen = list(dict.fromkeys(chosen))
        if len(chosen) == 1 and rng.random() < 0.5:
            return f"return {chosen[0]}"
        if rng.random() < 0.2:
            return "return {" + ", ".join(f"'{c}': {c}" for c in chosen) + "}"
        return "return " + ", ".join(chosen) + ("," if len(chosen) == 1 else "")

    def generate(self, statements=None):
        count = statements or self.rng.randint(3, 12)
        for _ in range(count):
            self.add_statement()
        return Program(self.seed, self.inputs_source(), [s.name for s in self.inputs], self.statements,
                       self.return_statement())


@dataclass
class Program:
    """A generated program in parts, so that the minimizer can drop statements."""
    seed: int
    inputs_source: str
    args: list
    statements: list  # each one or more lines (a block is one statement)
    return_line: str

    def source(self):
        body = [line for text in self.statements for line in text.split("\n")] + [self.return_line]
        fn = f"def fn({', '.join(self.args)}):\n" + "\n".join("    " + line for line in body)
        return f"# fuzz program, seed {self.seed}\n{PRELUDE}\n\n{self.inputs_source}\n\n\n{fn}\n"


def generate_program(seed):
    """The program for `seed` (same seed, same program)."""
    return ProgramGenerator(seed).generate()


def generate_source(seed):
    return generate_program(seed).source()


# ---------------------------------------------------------------- running in child processes
@dataclass
class Outcome:
    seed: int
    backend: str
    status: str  # pass, mismatch, error, crash, hang
    lines: list


def child_command(batch_file, backend):
    return [sys.executable, HARNESS_PATH, "--batch", batch_file, "--backend", backend]


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_batch(programs, backend, timeout_per_program=60.0):
    """Runs [(seed, source)] in one child; returns ({seed: Outcome}, seed in progress or None, died how)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(programs, f)
    outcomes, current = {}, None
    process = subprocess.Popen(child_command(f.name, backend), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=child_env())
    deadline = [time.monotonic() + timeout_per_program + 30]  # first program also pays torch's import
    how = None
    try:
        how = read_results(process, deadline, timeout_per_program, outcomes, backend)
        current = how[1]
        how = how[0]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.unlink(f.name)
    if how is None and process.returncode != 0:
        how = f"exit {process.returncode}"
    if how is None and len(outcomes) < len(programs):
        how = "stopped early"
    return outcomes, (current if how else None), how, process


def read_results(process, deadline, timeout_per_program, outcomes, backend):
    """Reads the child's JSON lines until it ends; ('hang'|'signal N'|None, seed in progress)."""
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    current = None
    while True:
        remaining = deadline[0] - time.monotonic()
        if remaining <= 0:
            return "hang", current
        if not selector.select(timeout=remaining):
            continue
        line = process.stdout.readline()
        if not line:
            process.wait()
            code = process.returncode
            return (f"signal {-code}" if code < 0 else (None if code == 0 else f"exit {code}")), current
        try:
            message = json.loads(line)
        except ValueError:
            continue  # something the program or a library printed to stdout
        if not isinstance(message, dict):
            continue
        if "start" in message:
            current = message["start"]
            deadline[0] = time.monotonic() + timeout_per_program
        elif "seed" in message:
            outcomes[message["seed"]] = Outcome(message["seed"], backend, message["status"], message["lines"])
            current = None


def run_programs(programs, backend, batch_size=25, timeout_per_program=60.0):
    """Checks every program under `backend`; a program whose batch died is re-run alone to classify it."""
    results, queue = {}, list(programs)
    while queue:
        batch, queue = queue[:batch_size], queue[batch_size:]
        outcomes, current, how, process = run_batch(batch, backend, timeout_per_program)
        results.update(outcomes)
        if how is None:
            continue
        done = set(outcomes)
        leftover = [p for p in batch if p[0] not in done]
        if current is None or len(leftover) == 0:
            current = leftover[0][0] if leftover else None
        if current is not None:
            results[current] = classify_alone([p for p in batch if p[0] == current][0], backend, timeout_per_program)
        queue = [p for p in leftover if p[0] != current] + queue
    return [results[seed] for seed, _ in programs]


def classify_alone(program, backend, timeout_per_program):
    """A program in a fresh child of its own: crash (signal), hang (timeout), or whatever it reports."""
    outcomes, _, how, process = run_batch([program], backend, timeout_per_program)
    if program[0] in outcomes:
        return outcomes[program[0]]
    stderr = (process.stderr.read() if process.stderr else "")[-3000:]
    status = "hang" if how == "hang" else ("crash" if how and how.startswith("signal") else "error")
    return Outcome(program[0], backend, status, [f"child process: {how}", stderr])


# ---------------------------------------------------------------- repro files
REPRO_MAIN = '''

PROGRAM = {program!r}

if __name__ == "__main__":
    import faulthandler

    faulthandler.enable()
    sys.path.insert(0, {python_dir!r})  # this checkout's cdynamo, if an installed one is not wanted
    status, lines = check_program(PROGRAM, {backend!r})
    print(status)
    print("\\n".join(lines))
    sys.exit(0 if status == "pass" else 1)
'''


def repro_source(source, backend, outcome_lines):
    """A standalone file: the harness, the program, and a main that checks it under `backend`."""
    with open(HARNESS_PATH) as f:
        harness = f.read()
    comment = "\n".join("# " + line for text in outcome_lines for line in str(text).splitlines()[:40])
    header = f"# Fuzzer finding under backend {backend!r}; run: python THIS_FILE (exit 1 while it reproduces).\n"
    header += "# Found:\n" + comment + "\n"
    program_text = "\n# ----- the program (also in PROGRAM below)\n" + "\n".join("# " + l for l in source.splitlines())
    return header + harness + program_text + REPRO_MAIN.format(program=source, python_dir=REPO_PYTHON_DIR,
                                                                backend=backend)


def save_finding(out_dir, outcome, source):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{outcome.status}_{outcome.backend}_seed{outcome.seed}.py")
    with open(path, "w") as f:
        f.write(repro_source(source, outcome.backend, outcome.lines))
    return path


# ---------------------------------------------------------------- grouping and minimizing findings
def finding_signature(outcome):
    """What kind of finding this is, without paths or values: findings with one signature are
    most likely one bug."""
    import re

    first = next((l for l in outcome.lines[1:] if l.strip()), "") if outcome.status in ("mismatch", "error") else ""
    if outcome.status in ("crash", "hang"):
        stderr = "\n".join(map(str, outcome.lines[1:]))
        frames = re.findall(r'File "([^"]+)", line (\d+) in (\w+)', stderr)  # faulthandler, innermost first
        where = next((f" in {os.path.basename(f)}:{n} {fn}" for f, n, fn in frames if f != "<string>"), "")
        return f"{outcome.status}: {outcome.lines[0] if outcome.lines else ''}{where}"
    if first.startswith("aliasing"):
        return "aliasing: " + first.rsplit(": ", 1)[-1]
    if ".grad:" in first:
        return "grad: " + re.sub(r"of [-\d.e]+", "", first.split(".grad: ", 1)[-1])
    if first.startswith("exception") or first.startswith("harness"):
        return first.split("\n")[0]
    if "values differ" in first:
        return "values differ"
    return outcome.status + ": " + re.sub(r"\[[^\]]*\]|'[^']*'|\d+", "", first.split(": ", 1)[-1])[:80]


def return_alternatives(return_line):
    """Smaller return statements to try: each returned value alone."""
    text = return_line[len("return "):].strip()
    if text.startswith("{"):
        items = [item.split(": ", 1)[1] for item in text.strip("{}").split(", ")]
    else:
        items = [item for item in text.split(", ") if item]
    items = [item.rstrip(",") for item in items]
    return [f"return {item}" for item in items] if len(items) > 1 else []


def check_in_child(source, backend, seed=0, timeout=120.0):
    """(status, lines) of one program run alone in a fresh child: survives crashes and hangs."""
    outcome = classify_alone((seed, source), backend, timeout)
    return outcome.status, outcome.lines


def eager_runs(source):
    """Whether the program runs eagerly without an exception (eager code cannot crash this process)."""
    from fuzz_harness import load_program

    try:
        namespace = load_program(source, "fuzz_eager")
        namespace["fn"](*namespace["make_inputs"](0))
        return True
    except Exception:
        return False


def minimize(program, backend, status, signature, budget=200, check=None):
    """Greedily drops statements (and returned values) while the check still gives a finding with
    the same status and signature. The default check runs in this process (call it in a child);
    crashes and hangs need check_in_child."""
    import dataclasses

    if check is None:
        from fuzz_harness import check_program as check

    keep_eager_clean = eager_runs(program.source())

    def same_finding(candidate):
        if keep_eager_clean and not eager_runs(candidate.source()):
            return False  # e.g. a dropped definition: a NameError is not the finding
        found, lines = check(candidate.source(), backend)
        return found == status and finding_signature(Outcome(candidate.seed, backend, found, lines)) == signature

    changed = True
    while changed and budget > 0:
        changed = False
        for index in reversed(range(len(program.statements))):
            statements = program.statements[:index] + program.statements[index + 1:]
            candidate = dataclasses.replace(program, statements=statements)
            budget -= 1
            if same_finding(candidate):
                program, changed = candidate, True
        for return_line in return_alternatives(program.return_line):
            candidate = dataclasses.replace(program, return_line=return_line)
            budget -= 1
            if same_finding(candidate):
                program, changed = candidate, True
                break
    return program
