# Differential check of one generated program: eager vs a compiler, on results, mutations, aliasing and grads.
# Assumes only torch (and cdynamo or torch.compile for the compiled side); its text is pasted into every repro file.
import io
import json
import os
import sys
import traceback

import torch

FLOAT_RTOL, FLOAT_ATOL = 1e-4, 1e-5
# CDYNAMO_FUZZ_DEVICE=cuda moves each program's inputs (tensors and modules) there: the GPU target's run.
INPUT_DEVICE = os.environ.get("CDYNAMO_FUZZ_DEVICE")


def compile_with(backend, fn):
    """backend: 'eager'/'inductor' (cdynamo) or 'torch-eager'/'torch-inductor' (torch.compile)."""
    if backend.startswith("torch-"):
        return torch.compile(fn, backend=backend[len("torch-"):])
    import cdynamo

    return cdynamo.optimize(backend)(fn)


def reset_compiler(backend):
    # Each program's code objects are new, but resetting keeps caches and fake modes from growing.
    if backend.startswith("torch-"):
        torch._dynamo.reset()
    else:
        import cdynamo

        cdynamo.reset()


def describe(value, classes, tensors, path="out"):
    """A comparable picture of `value`; tensors met on the way are appended as (path, tensor)."""
    if isinstance(value, torch.Tensor):
        tensors.append((path, value))
        return ("tensor", value.detach().clone(), value.requires_grad)
    if isinstance(value, (list, tuple)):
        items = [describe(v, classes, tensors, f"{path}[{i}]") for i, v in enumerate(value)]
        return (type(value).__name__, items)
    if isinstance(value, dict):
        return ("dict", [(repr(k), describe(v, classes, tensors, f"{path}[{k!r}]")) for k, v in value.items()])
    if isinstance(value, io.StringIO):
        return ("stringio", value.getvalue())
    if isinstance(value, torch.nn.Module):
        params = sorted(value.named_parameters())
        return ("module", [(n, describe(p, classes, tensors, f"{path}.{n}")) for n, p in params])
    if isinstance(value, classes):
        attrs = sorted(vars(value).items())
        return ("object", type(value).__name__, [(k, describe(v, classes, tensors, f"{path}.{k}")) for k, v in attrs])
    if isinstance(value, (int, float, bool, str, type(None), torch.dtype, torch.Size)):
        return ("value", value)
    return ("other", type(value).__name__)


def differences(a, b, path):
    """Human-readable differences between two describe() pictures."""
    if a[0] != b[0]:
        return [f"{path}: {a[0]} vs {b[0]}"]
    kind = a[0]
    if kind == "tensor":
        return tensor_differences(a, b, path)
    if kind in ("list", "tuple"):
        if len(a[1]) != len(b[1]):
            return [f"{path}: length {len(a[1])} vs {len(b[1])}"]
        return [d for i, (x, y) in enumerate(zip(a[1], b[1])) for d in differences(x, y, f"{path}[{i}]")]
    if kind in ("dict", "module", "object"):
        items_a, items_b = a[-1], b[-1]
        if kind == "object" and a[1] != b[1]:
            return [f"{path}: class {a[1]} vs {b[1]}"]
        if [k for k, _ in items_a] != [k for k, _ in items_b]:
            return [f"{path}: keys {[k for k, _ in items_a]} vs {[k for k, _ in items_b]}"]
        return [d for (k, x), (_, y) in zip(items_a, items_b) for d in differences(x, y, f"{path}.{k}")]
    if kind == "value" and isinstance(a[1], float) and isinstance(b[1], float):
        same = (a[1] != a[1] and b[1] != b[1]) or abs(a[1] - b[1]) <= FLOAT_ATOL + FLOAT_RTOL * abs(a[1])
        return [] if same else [f"{path}: {a[1]!r} vs {b[1]!r}"]
    return [] if a[1:] == b[1:] else [f"{path}: {a[1:]!r} vs {b[1:]!r}"]


def tensor_differences(a, b, path):
    (ta, grad_a), (tb, grad_b) = a[1:], b[1:]
    if ta.dtype != tb.dtype or ta.shape != tb.shape:
        return [f"{path}: {ta.dtype}{list(ta.shape)} vs {tb.dtype}{list(tb.shape)}"]
    found = []
    if grad_a != grad_b:
        found.append(f"{path}: requires_grad {grad_a} vs {grad_b}")
    if ta.dtype.is_floating_point:
        same = torch.allclose(ta, tb, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, equal_nan=True)
    else:
        same = torch.equal(ta, tb)
    if not same:
        found.append(f"{path}: values differ\n  eager:    {ta.flatten()[:8].tolist()}\n  compiled: {tb.flatten()[:8].tolist()}")
    return found


def alias_relation(x, y):
    """How two tensors share memory: what a caller can observe by writing into one of them."""
    if x is y:
        return "same object"
    if x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr() or x.numel() == 0 or y.numel() == 0:
        return "separate"
    # Strides of dimensions of size 1 are arbitrary (torch itself does not keep them across views).
    strides_x = [st for st, size in zip(x.stride(), x.shape) if size > 1]
    strides_y = [st for st, size in zip(y.stride(), y.shape) if size > 1]
    same_view = (x.storage_offset(), x.shape, strides_x) == (y.storage_offset(), y.shape, strides_y)
    return "same view" if same_view else "shared storage"


def alias_map(outputs, inputs):
    """Relations output/input and output/output, keyed by paths; separate pairs are left out."""
    relations = {}
    for i, (path_o, out) in enumerate(outputs):
        for path_i, inp in inputs:
            relation = alias_relation(out, inp)
            if relation != "separate":
                relations[f"{path_o} ~ {path_i}"] = relation
        for path_p, other in outputs[i + 1:]:
            relation = alias_relation(out, other)
            if relation != "separate":
                relations[f"{path_o} ~ {path_p}"] = relation
    return relations


def leaf_tensors(inputs):
    """(path, tensor) of every leaf tensor that requires grad, reachable from the arguments."""
    return [(p, t) for p, t in inputs if t.requires_grad and t.is_leaf]


def observe(fn, args, namespace, classes):
    """Calls fn(*args) and records everything a caller could see afterwards, or the exception."""
    input_tensors = []
    describe(args, classes, input_tensors, "arg")
    try:
        result = fn(*args)
    except Exception as error:  # the exception type is part of the behaviour
        return {"raised": type(error).__name__, "message": str(error)[:300], "where": "call"}
    output_tensors = []
    record = {"raised": None, "result": describe(result, classes, output_tensors, "out")}
    record["inputs"] = describe(args, classes, [], "arg")
    record["globals"] = describe({k: v for k, v in namespace.items() if k in ("SINK", "LOG")}, classes, [], "g")
    record["aliases"] = alias_map(output_tensors, input_tensors)
    record["grads"] = gradients(output_tensors, input_tensors)
    return record


def gradients(output_tensors, input_tensors):
    """Backward of a weighted sum of the float outputs; .grad of every leaf (None stays None)."""
    differentiable = [t for _, t in output_tensors if t.requires_grad and t.dtype.is_floating_point]
    leaves = leaf_tensors(input_tensors)
    if not differentiable or not leaves:
        return None
    try:
        loss = sum((t.double() * (i + 1)).sum() for i, t in enumerate(differentiable))
        loss.backward()
    except Exception as error:
        return ("raised", type(error).__name__)
    return [(p, None if t.grad is None else ("tensor", t.grad.clone(), False)) for p, t in leaves]


def compare(eager, compiled):
    """List of differences between two observe() records (empty: same behaviour)."""
    if eager["raised"] or compiled["raised"]:
        if eager["raised"] == compiled["raised"]:
            return []
        return [f"exception: eager {eager['raised']} vs compiled {compiled['raised']}",
                f"  eager: {eager.get('message')}", f"  compiled: {compiled.get('message')}"]
    found = differences(eager["result"], compiled["result"], "result")
    found += differences(eager["inputs"], compiled["inputs"], "inputs after call")
    found += differences(eager["globals"], compiled["globals"], "globals")
    if eager["aliases"] != compiled["aliases"]:
        keys = sorted(set(eager["aliases"]) | set(compiled["aliases"]))
        found += [f"aliasing {k}: eager {eager['aliases'].get(k, 'separate')}, compiled {compiled['aliases'].get(k, 'separate')}"
                  for k in keys if eager["aliases"].get(k) != compiled["aliases"].get(k)]
    found += grad_differences(eager["grads"], compiled["grads"])
    return found


def grad_differences(eager, compiled):
    if eager is None or compiled is None or eager[0] == "raised" or compiled[0] == "raised":
        return [] if eager == compiled else [f"backward: eager {eager!r:.200} vs compiled {compiled!r:.200}"]
    found = []
    for (path, grad_e), (_, grad_c) in zip(eager, compiled):
        if (grad_e is None) != (grad_c is None):
            found.append(f"{path}.grad: eager {'None' if grad_e is None else 'a tensor'}, compiled "
                         f"{'None' if grad_c is None else 'a tensor of ' + str(grad_c[1].abs().sum().item())}")
        elif grad_e is not None:
            found += tensor_differences(grad_e, grad_c, f"{path}.grad")
    return found


def load_program(source, name):
    """Executes a program's source in a fresh module namespace (each side gets its own globals)."""
    namespace = {"__name__": name}
    exec(compile(source, "<string>", "exec"), namespace)  # cdynamo skips other "<...>" files
    return namespace


def program_classes(namespace):
    return tuple(v for v in namespace.values() if isinstance(v, type) and v.__module__ == namespace["__name__"])


def on_input_device(value, memo):
    """value with its tensors and modules on INPUT_DEVICE; a tensor met twice stays one tensor."""
    if INPUT_DEVICE is None:
        return value
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(INPUT_DEVICE).requires_grad_(value.requires_grad)
    elif isinstance(value, torch.nn.Module):
        moved = value.to(INPUT_DEVICE)
    elif isinstance(value, (list, tuple)):
        moved = type(value)(on_input_device(v, memo) for v in value)
    elif isinstance(value, dict):
        moved = {k: on_input_device(v, memo) for k, v in value.items()}
    else:
        return value
    memo[id(value)] = moved
    return moved


def make_inputs(namespace, variant):
    return on_input_device(namespace["make_inputs"](variant), {})


def check_program(source, backend, variants=(0, 0, 1)):
    """Runs eager and compiled on each input variant; returns (status, lines). status: pass/mismatch/error."""
    eager_ns, compiled_ns = load_program(source, "fuzz_eager"), load_program(source, "fuzz_compiled")
    compiled_fn = compile_with(backend, compiled_ns["fn"])
    status, lines = "pass", []
    try:
        for call, variant in enumerate(variants):
            eager = observe(eager_ns["fn"], make_inputs(eager_ns, variant), eager_ns, program_classes(eager_ns))
            compiled = observe(compiled_fn, make_inputs(compiled_ns, variant), compiled_ns,
                               program_classes(compiled_ns))
            found = compare(eager, compiled)
            if found:
                internal = not eager["raised"] and compiled["raised"]
                status = "error" if internal or (eager["raised"] and compiled["raised"]) else "mismatch"
                lines = [f"call {call + 1} (input variant {variant}), backend {backend}:"] + found
                if compiled.get("raised"):
                    lines.append(f"compiled raised {compiled['raised']}: {compiled['message']}")
                break
    finally:
        reset_compiler(backend)
    return status, lines


def batch_main(argv):
    """Child-process entry: --batch FILE.json --backend B; prints one JSON line per program."""
    import faulthandler

    faulthandler.enable()  # a crash leaves the Python stack on stderr: where in cdynamo it died
    torch.set_num_threads(1)
    batch_file, backend = argv[argv.index("--batch") + 1], argv[argv.index("--backend") + 1]
    with open(batch_file) as f:
        programs = json.load(f)
    for seed, source in programs:
        print(json.dumps({"start": seed}), flush=True)
        try:
            status, lines = check_program(source, backend)
        except Exception:  # a failure of the harness itself, or of compile_with
            status, lines = "error", ["harness: " + traceback.format_exc()[-2000:]]
        print(json.dumps({"seed": seed, "status": status, "lines": lines}), flush=True)


if __name__ == "__main__" and "--batch" in sys.argv:
    batch_main(sys.argv)
