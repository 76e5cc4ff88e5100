"""The Python half of the inductor's Triton target: builds the kernels the C++ code generator
wrote (cubins for the C++ launcher on CUDA; interpreter callables on CPU tensors).

Called from C++ (target/triton_target.cpp) as build_kernels(descriptions): one dict per kernel
with "name", "source", "function", "device", "signature" (parameters in order, constexprs
left out), "scalars" (the numel and size-symbol values; "varying" names those that change per
call, whose values are hints; "multiples_of_16" those of them that are at every size),
"reduction" and "tiled" (2-D tiles: rnumel and RBLOCK exist; tiled kernels also use grid axis
1), "config" (XBLOCK, RBLOCK, num_warps, num_stages), "candidates" (max-autotune's) and "buffer_bytes" (per pointer). Returns, per kernel, a callable
launch(*tensors) for CPU tensors (Triton's interpreter, TRITON_INTERPRET=1), or for CUDA a dict
with "cubin", "symbol", "num_warps", "shared", "implicit_params", "device_index", "config" and
"unaligned" (a callable building the variant for misaligned pointers).
"""
import os
import sys

from .. import utils

INTERPRET_ENV = "TRITON_INTERPRET"


def require_interpreter():
    """Triton's interpreter runs kernels on CPU tensors only when the whole process is in
    interpreter mode (Triton reads TRITON_INTERPRET when it decorates and while kernels run):
    it is switched on here if Triton is not imported yet."""
    triton = sys.modules.get("triton")
    if triton is None:
        os.environ[INTERPRET_ENV] = "1"
        return
    if not triton.knobs.runtime.interpret:
        raise RuntimeError(
            "cdynamo: the Triton target on CPU tensors (cdynamo.config.cpu_backend = 'triton') runs Triton's "
            f"interpreter, which must be on before triton is imported (torch imports it too); triton is already "
            f"imported without it: start the process with CDYNAMO_CPU_BACKEND=triton or {INTERPRET_ENV}=1")


def launch_grid(desc, launch_config):
    """(programs along axis 0, along axis 1): rows of XBLOCK; tiled kernels also columns of RBLOCK."""
    xblock, rblock = launch_config[0], launch_config[1]
    rows = (int(desc["scalars"][0]) + xblock - 1) // xblock
    columns = (int(desc["scalars"][1]) + rblock - 1) // rblock if desc.get("tiled") else 1
    return rows, columns


def _interpreted_launch(desc):
    require_interpreter()
    from . import triton_build

    xblock, rblock = desc["config"][0], desc["config"][1]
    kernel = triton_build.load_interpreted(_kernel_desc(desc, desc["config"], aligned=False, target=triton_build.Target()))
    scalars = list(desc["scalars"])
    constexprs = {"XBLOCK": xblock}
    if desc["reduction"]:
        constexprs["RBLOCK"] = rblock
    grid = launch_grid(desc, desc["config"])
    scalar_names = [name for name, kind in desc["signature"].items() if not kind.startswith("*")]

    def launch(*tensors, cd_grid=None, **per_call):
        # A kernel of symbolic sizes gets each call's numels, size symbols and grid by name.
        values = [per_call.get(name, value) for name, value in zip(scalar_names, scalars)]
        triton_build.launch_interpreted(kernel, cd_grid or grid, (*tensors, *values), constexprs)

    return launch


def device_index(device):
    """The index of a CUDA device string: 'cuda:1' -> 1, 'cuda' -> 0."""
    return int(device.split(":")[1]) if ":" in device else 0


def _kernel_desc(desc, launch_config, aligned, target=None):
    """The build service's description of a generated kernel under one launch configuration.
    aligned: every pointer argument is 16-byte aligned (the launcher checks it per launch)."""
    from . import triton_build

    xblock, rblock, num_warps, num_stages = launch_config
    signature = dict(desc["signature"])
    constexprs = {"XBLOCK": xblock}
    signature["XBLOCK"] = "constexpr"
    if desc["reduction"]:
        signature["RBLOCK"] = "constexpr"
        constexprs["RBLOCK"] = rblock
    divisible = [name for name, kind in desc["signature"].items() if kind.startswith("*") and aligned]
    scalar_names = [name for name, kind in desc["signature"].items() if not kind.startswith("*")]
    varying = set(desc.get("varying", ()))  # symbolic sizes: their values at compile time are only hints
    divisible += [name for name, value in zip(scalar_names, desc["scalars"])
                  if value % 16 == 0 and value > 0 and name not in varying]
    divisible += desc.get("multiples_of_16", [])  # symbolic, but a multiple of 16 at every size
    return triton_build.KernelDesc(
        source=desc["source"], name=desc["function"], signature=signature, constexprs=constexprs,
        attrs=triton_build.divisibility_attrs(divisible), options={"num_warps": num_warps, "num_stages": num_stages},
        target=target or triton_build.target_of(device_index(desc["device"])))


def _launch_info(built, desc, launch_config):
    if built.global_scratch_bytes or built.profile_scratch_bytes:
        raise RuntimeError(f"cdynamo: Triton kernel {desc['name']} needs scratch memory, which the launcher does not provide")
    if built.num_ctas != 1 or built.launch_cooperative_grid or built.launch_pdl:
        raise RuntimeError(f"cdynamo: Triton kernel {desc['name']} needs a launch the C++ launcher does not make")
    return {"cubin": built.cubin, "symbol": built.symbol, "num_warps": built.num_warps, "shared": built.shared_bytes,
            "implicit_params": len(built.implicit_params), "device_index": device_index(desc["device"]),
            "config": tuple(launch_config)}


def build_for_launch(descriptions):
    """Cubins and launch data for CUDA kernels, all compiled at once (in parallel). Each result
    also has "unaligned": a callable building the variant for pointers not 16-byte aligned, which
    the launcher calls on the first launch that needs it. With config.max_autotune each kernel's
    candidate configurations are built and timed once (autotune.py), and the fastest launches."""
    from .. import config
    from . import triton_build

    configs = [tuple(desc["config"]) for desc in descriptions]
    if config.max_autotune:
        from . import autotune

        configs = autotune.choose_configs(descriptions, lambda d, c: _kernel_desc(d, c, True), _launch_info)
    built = triton_build.build_many([_kernel_desc(d, c, True) for d, c in zip(descriptions, configs)])
    results = []
    for desc, launch_config, kernel in zip(descriptions, configs, built):
        info = _launch_info(kernel, desc, launch_config)

        def unaligned(desc=desc, launch_config=launch_config):
            return _launch_info(triton_build.build(_kernel_desc(desc, launch_config, False)), desc, launch_config)

        info["unaligned"] = unaligned
        results.append(info)
    return results


# A triton_build.Target, or None: kernels interpreted on CPU tensors are also compiled for that
# GPU (tests on machines without one: the very source must compile, not only interpret).
cubin_check_target = None


def build_kernels(descriptions):
    results = [None] * len(descriptions)
    cuda = []
    for k, desc in enumerate(descriptions):
        if desc["device"] == "cpu":
            results[k] = _interpreted_launch(desc)
        else:
            cuda.append(k)
    if cubin_check_target is not None:
        from . import triton_build

        interpreted = [d for d in descriptions if d["device"] == "cpu"]
        triton_build.build_many([_kernel_desc(d, d["config"], True, cubin_check_target) for d in interpreted])
    if cuda:
        built = build_for_launch([descriptions[k] for k in cuda])
        for k, result in zip(cuda, built):
            results[k] = result
    utils.counters["inductor"]["triton_kernels"] += len(descriptions)
    return results
