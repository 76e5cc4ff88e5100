"""max-autotune for the Triton target: each kernel's candidate launch configurations (block
sizes, warps: launch_heuristics.cpp) are built, timed once on scratch buffers of the kernel's
sizes on its GPU, and the fastest is kept, on disk too, so a later process skips the timing.
Assumes CUDA kernels described as triton_runtime describes them ("buffer_bytes", "candidates")."""
import hashlib
import json
import os

from .. import utils


def _choice_path(desc):
    from . import triton_build

    from .triton_runtime import device_index

    target = triton_build.target_of(device_index(desc["device"]))
    material = json.dumps([desc["source"], desc["signature"], desc["scalars"], [list(c) for c in desc["candidates"]],
                           [target.backend, target.arch], triton_build._triton_version()])
    key = hashlib.sha256(material.encode()).hexdigest()
    return os.path.join(utils.cache_root(), "triton", "autotune", key[:2], key + ".json")


def _stored_choice(path, candidates):
    try:
        with open(path) as f:
            chosen = tuple(json.load(f)["config"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return chosen if chosen in candidates else None


def _store_choice(path, chosen, times):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as f:
        json.dump({"config": list(chosen), "ms": {str(list(c)): t for c, t in times.items()}}, f)
    os.replace(temporary, path)


def time_on_scratch(desc, info, launch_config):
    """Milliseconds per launch of a built kernel on zeroed scratch buffers of its sizes (zeros:
    gathered positions stay in range; nothing the caller owns is read or written)."""
    import torch

    from .. import _C

    device = torch.device(desc["device"])
    buffers = [torch.zeros(max(int(n), 16), dtype=torch.uint8, device=device) for n in desc["buffer_bytes"]]
    if "cd_error" in desc["signature"]:
        buffers.append(torch.zeros(1, dtype=torch.int32, device=device))
    scalar_types = [kind for kind in desc["signature"].values() if not kind.startswith("*")]
    scalars = [(int(v), kind == "i64") for v, kind in zip(desc["scalars"], scalar_types)]
    from .triton_runtime import launch_grid

    grid = launch_grid(desc, launch_config)
    stream = torch.cuda.current_stream(device).cuda_stream
    return _C._triton_time_kernel(info, [b.data_ptr() for b in buffers], scalars, grid, stream)


def choose_configs(descriptions, kernel_desc, launch_info, timer=time_on_scratch):
    """The launch configuration of each kernel: its only candidate, the stored choice, or the
    fastest candidate timed now. kernel_desc(desc, config) -> KernelDesc; launch_info(built,
    desc, config) -> the result dict the timer launches."""
    from . import triton_build

    chosen = [tuple(d["config"]) for d in descriptions]
    pending = []
    for k, desc in enumerate(descriptions):
        candidates = [tuple(c) for c in desc["candidates"]]
        if len(candidates) < 2 or desc["device"] == "cpu":
            continue
        stored = _stored_choice(_choice_path(desc), candidates)
        if stored is not None:
            chosen[k] = stored
            utils.counters["inductor"]["autotune_cache_hits"] += 1
        else:
            pending.extend((k, c) for c in candidates)
    if not pending:
        return chosen
    built = triton_build.build_many([kernel_desc(descriptions[k], c) for k, c in pending])
    times = {}
    for (k, c), kernel in zip(pending, built):
        times.setdefault(k, {})[c] = timer(descriptions[k], launch_info(kernel, descriptions[k], c), c)
    for k, by_config in times.items():
        chosen[k] = min(by_config, key=by_config.get)
        _store_choice(_choice_path(descriptions[k]), chosen[k], by_config)
        utils.counters["inductor"]["autotuned_kernels"] += 1
        utils.log("graphs", lambda k=k, by_config=by_config: f"autotune {descriptions[k]['name']}: " + ", ".join(
            f"{list(c)} {t * 1000:.1f} us" for c, t in sorted(by_config.items(), key=lambda item: item[1])))
    return chosen
