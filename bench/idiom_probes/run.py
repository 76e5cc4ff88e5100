"""834 small TorchDynamo-style programs (closures, generators, containers, user classes,
exceptions, modules, tensor idioms, guards, symbolic sizes), each run eagerly and compiled with
fullgraph=True (backend: a counting eager backend), compared on results, mutated arguments,
aliasing, a second call after a change, and side state. Usage:
    PYTHONPATH=python python bench/idiom_probes/run.py [name-substring ...]     # cdynamo
    TC=1 PYTHONPATH=python python bench/idiom_probes/run.py                     # torch.compile
Writes results_<tag>.json to $PROBE_OUT (default: the system temp folder)."""
import sys, os, copy, math, signal, json, traceback, importlib, dataclasses, tempfile
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, "..", "..", "python")); sys.path.insert(0, _here)
import warnings; warnings.filterwarnings("ignore")
import torch, torch.nn as nn, numpy as np
torch.set_num_threads(1)
TC = os.environ.get("TC") == "1"
if not TC:
    import cdynamo
MODS = ["pa", "pb", "pc", "pd", "pe", "pf", "pg", "ph", "pi", "pj", "pk", "pl", "pm", "pn", "po", "pp", "pq", "pr"]
only = sys.argv[1:]
P = []
for m in MODS:
    try:
        mod = importlib.import_module(m)
    except ModuleNotFoundError as e:
        if e.name == m: continue
        raise
    P += [dict(p, mod=m) for p in mod.P]
import common

class Timeout(Exception): pass
def _alarm(*a): raise Timeout("timeout 30s")
signal.signal(signal.SIGALRM, _alarm)

def same(a, b, d=0):
    if d > 25: return True
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor): return False
        if a.shape != b.shape or a.dtype != b.dtype or a.requires_grad != b.requires_grad: return False
        if a.is_floating_point() or a.is_complex():
            return torch.allclose(a.detach(), b.detach(), rtol=1e-4, atol=1e-5, equal_nan=True)
        return torch.equal(a, b)
    if type(a) != type(b): return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
    if isinstance(a, nn.Module):
        if a.training != b.training: return False
        sa, sb = a.state_dict(), b.state_dict()
        if list(sa) != list(sb) or not all(same(sa[k], sb[k], d + 1) for k in sa): return False
        if [m.training for m in a.modules()] != [m.training for m in b.modules()]: return False
        pa = {k: v for k, v in vars(a).items() if not k.startswith("_")}
        pb = {k: v for k, v in vars(b).items() if not k.startswith("_")}
        return same(pa, pb, d + 1)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(u, v, d + 1) for u, v in zip(a, b))
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k], d + 1) for k in a)
    if hasattr(a, "__iter__") and type(a).__module__ == "collections":  # deque etc.
        return same(list(a), list(b), d + 1)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (int, str, bool, type(None), bytes, complex, set, frozenset, torch.dtype, torch.device, torch.Size)):
        return a == b
    if dataclasses.is_dataclass(a) or (hasattr(a, "__dict__") and not isinstance(a, type) and not callable(a)):
        return same(vars(a), vars(b), d + 1)
    if hasattr(a, "__slots__"):
        return all(same(getattr(a, s, None), getattr(b, s, None), d + 1) for s in a.__slots__)
    try:
        return bool(a == b)
    except Exception:
        return a is b

def tensors(o, out, d=0):
    if d > 10: return out
    if isinstance(o, torch.Tensor): out.append(o)
    elif isinstance(o, (list, tuple)):
        for v in o: tensors(v, out, d + 1)
    elif isinstance(o, dict):
        for v in o.values(): tensors(v, out, d + 1)
    return out

def alias_map(res, args):
    ta = tensors(args, [])
    return [next((i for i, t in enumerate(ta) if t is r), -1) for r in tensors(res, [])]

NGRAPHS = [0]
def backend(gm, example_inputs):
    NGRAPHS[0] += 1
    return gm.forward

def run_one(p, compiled):
    fn = p["fn"]
    if p["reset"]: p["reset"]()
    a1 = copy.deepcopy(p["args"])
    a2 = copy.deepcopy(p["args2"]) if p["args2"] is not None else None
    if compiled:
        if TC:
            torch._dynamo.reset(); f = torch.compile(fn, backend=backend, fullgraph=True)
        else:
            cdynamo.reset(); f = cdynamo.optimize(backend, nopython=True)(fn)
    else:
        f = fn
    r1 = f(*a1)
    al1 = alias_map(r1, a1)
    r2 = al2 = None
    if p["between"]: p["between"]()
    if a2 is not None:
        r2 = f(*a2); al2 = alias_map(r2, a2)
    st = p["state"]() if p["state"] else None
    st = copy.deepcopy(st)
    return (r1, a1, r2, a2, st), (al1, al2)

results = {}
ok = 0
grad_mode = torch.is_grad_enabled()
for p in P:
    name = p["mod"] + "." + p["fn"].__name__
    if only and not any(o in name for o in only): continue
    out = {}
    NGRAPHS[0] = 0
    try:
        signal.alarm(30)
        try:
            want, wal = run_one(p, False)
        finally:
            signal.alarm(0); torch.set_grad_enabled(grad_mode)
    except Exception as e:
        out = dict(status="eager_error", err=f"{type(e).__name__}: {str(e)[:300]}")
        results[name] = out; print(name, out); continue
    try:
        signal.alarm(30)
        try:
            with warnings.catch_warnings(record=True) as wl:
                warnings.simplefilter("always")
                got, gal = run_one(p, True)
            fb = [str(w.message) for w in wl if "runs eagerly" in str(w.message) or "graph break" in str(w.message).lower()]
            if fb:
                raise RuntimeError("FELL BACK TO EAGER despite nopython: " + fb[0])
        finally:
            signal.alarm(0); torch.set_grad_enabled(grad_mode)
        labels = ["result", "args", "result2", "args2", "state"]
        bad = [l for l, u, v in zip(labels, want, got) if not same(u, v)]
        if wal != gal: bad.append("aliasing")
        if bad:
            out = dict(status="wrong", what=bad, want=repr(want)[:400], got=repr(got)[:400])
        else:
            out = dict(status="pass"); ok += 1
    except Exception as e:
        msg = str(e)
        out = dict(status="fail", err=f"{type(e).__name__}: {msg[:600]}")
    out["graphs"] = NGRAPHS[0]
    results[name] = out
tag = "tc" if TC else "cdynamo"
n = len(results)
print(f"{tag}: {ok} / {n} pass")
for k, v in results.items():
    if v["status"] != "pass":
        print(f"  {k}: {v['status']}: " + (v.get('err') or str(v.get('what')) + " want=" + v['want'][:150] + " got=" + v['got'][:150]).split("\n")[0][:250])
if not only:
    json.dump(results, open(os.path.join(os.environ.get("PROBE_OUT", tempfile.gettempdir()), f"results_{tag}.json"), "w"), indent=1)
