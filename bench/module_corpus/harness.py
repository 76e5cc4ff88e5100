"""One corpus case in a child process: python harness.py <model_file> <backend> <mode> prints one
JSON line prefixed RESULT: (outputs, gradients, module state, inputs after the call, RNG state
and the module's own py_state() compared with eager's). Assumes cdynamo importable; run by
bench/module_corpus.py."""
import sys, os, json, copy, dataclasses, importlib.util, traceback, warnings, math
import torch
torch.set_num_threads(1)
import cdynamo
from cdynamo.utils import counters

RTOL, ATOL = 1e-4, 1e-5


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def flatten(obj, prefix="out"):
    """-> list of (path, leaf)"""
    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(prefix + ".__type__", type(obj).__name__)] + flatten({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, prefix)
    if isinstance(obj, dict):
        res = []
        for k, v in obj.items():
            res += flatten(v, f"{prefix}[{k!r}]")
        return res
    if isinstance(obj, (list, tuple)):
        res = [(prefix + ".__type__", type(obj).__name__)]
        for i, v in enumerate(obj):
            res += flatten(v, f"{prefix}[{i}]")
        return res
    return [(prefix, obj)]


def compare(a, b, what):
    fa, fb = flatten(a, what), flatten(b, what)
    if len(fa) != len(fb):
        return [f"{what}: structure differs: {len(fa)} vs {len(fb)} leaves: {[p for p,_ in fa][:6]} vs {[p for p,_ in fb][:6]}"]
    errs = []
    for (pa, va), (pb, vb) in zip(fa, fb):
        if pa != pb:
            errs.append(f"{what}: path {pa} vs {pb}")
            continue
        if isinstance(va, torch.Tensor) or isinstance(vb, torch.Tensor):
            if not (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor)):
                errs.append(f"{pa}: tensor vs {type(vb).__name__}")
                continue
            try:
                if va.dtype != vb.dtype or va.shape != vb.shape:
                    errs.append(f"{pa}: dtype/shape {va.dtype}{tuple(va.shape)} vs {vb.dtype}{tuple(vb.shape)}")
                    continue
                torch.testing.assert_close(vb.detach(), va.detach(), rtol=RTOL, atol=ATOL, equal_nan=True)
                if va.requires_grad != vb.requires_grad:
                    errs.append(f"{pa}: requires_grad {va.requires_grad} vs {vb.requires_grad}")
            except Exception as e:
                errs.append(f"{pa}: " + str(e).strip().replace("\n", " | ")[:300])
        elif isinstance(va, float) and isinstance(vb, float):
            if not (math.isclose(va, vb, rel_tol=RTOL, abs_tol=ATOL) or (va != va and vb != vb)):
                errs.append(f"{pa}: {va} vs {vb}")
        else:
            if type(va) != type(vb) or va != vb:
                errs.append(f"{pa}: {va!r} vs {vb!r}")
    return errs


def clone_inputs(inp):
    return copy.deepcopy(inp)


def norm_inputs(inputs):
    if not (isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[1], dict) and isinstance(inputs[0], (tuple, list))):
        inputs = (tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), {})
    return inputs


def run(fn, model, inputs, mode, ncalls=2):
    """-> dict with outs, grads, state, inputs_after, rng.  inputs: list of (args, kwargs), one per call"""
    outs, grads = [], []
    for i in range(len(inputs)):
        args, kwargs = inputs[i]
        torch.manual_seed(100 + i)
        model.zero_grad(set_to_none=True)
        if mode == "nograd":
            with torch.no_grad():
                out = fn(*args, **kwargs)
        else:
            out = fn(*args, **kwargs)
        outs.append(out)
        g = {}
        if mode == "train":
            leaves = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]
            if leaves:
                loss = sum(t.float().sum() for t in leaves)
                loss.backward()
                g = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
        grads.append(g)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return dict(outs=outs, grads=grads, state=state, inputs_after=inputs, rng=torch.get_rng_state())


def main():
    path, backend, mode = sys.argv[1:4]
    suppress = os.environ.get("SUPPRESS", "1") == "1"
    cdynamo.config.suppress_errors = suppress
    m = load(path)
    def build():
        torch.manual_seed(0)
        return m.Model(*getattr(m, "INIT_ARGS", ()))
    torch.manual_seed(1)
    if hasattr(m, "make_inputs_seq"):
        inputs = [norm_inputs(i) for i in m.make_inputs_seq()]
    else:
        one = norm_inputs(m.make_inputs())
        inputs = [one, copy.deepcopy(one)]
    res = {"model": os.path.basename(path)[:-3], "backend": backend, "mode": mode}

    if hasattr(m, "reset_globals"):
        m.reset_globals()
    ref_model = build()
    ref_model.train(mode == "train")
    ref = run(ref_model, ref_model, clone_inputs(inputs), mode)
    ref_py = m.py_state(ref_model) if hasattr(m, "py_state") else None

    if hasattr(m, "reset_globals"):
        m.reset_globals()
    cm = build()
    cm.train(mode == "train")
    cdynamo.reset()
    counters.clear()
    got_py = None
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        try:
            f = cdynamo.optimize(backend)(cm)
            got = run(f, cm, clone_inputs(inputs), mode)
            got_py = m.py_state(cm) if hasattr(m, "py_state") else None
        except Exception as e:
            res["status"] = "exception"
            res["error"] = f"{type(e).__name__}: {str(e).strip()[:600]}"
            res["tb"] = traceback.format_exc()[-3000:]
            got = None
    res["warnings"] = sorted({str(w.message)[:400] for w in wlist if "cdynamo" in str(w.message)})
    res["graphs"] = counters["stats"]["unique_graphs"]
    res["stats"] = dict(counters["stats"])
    res["graph_breaks"] = dict(counters["graph_break"])
    res["inductor"] = {k: v for k, v in counters["inductor"].items()}
    if got is not None:
        errs = []
        for i in range(len(ref["outs"])):
            errs += compare(ref["outs"][i], got["outs"][i], f"call{i}.out")
            errs += compare(ref["grads"][i], got["grads"][i], f"call{i}.grad")
        errs += compare(ref["state"], got["state"], "state")
        if hasattr(m, "py_state"):
            errs += compare(ref_py, got_py, "py_state")
        errs += compare(ref["inputs_after"], got["inputs_after"], "inputs_after")
        if not torch.equal(ref["rng"], got["rng"]):
            errs.append("global RNG state differs after calls")
        if errs:
            res["status"] = "wrong"
            res["errors"] = errs[:12]
        else:
            res["status"] = "pass"
    print("RESULT:" + json.dumps(res, default=str))


if __name__ == "__main__":
    main()
