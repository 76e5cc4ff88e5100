"""The systems compared: plain eager, cdynamo with each of its backends, and PyTorch's own
torch.compile; how each compiles a model, resets its caches and reports graphs and breaks."""
import collections
import dataclasses
import os

EAGER = "eager"
CDYNAMO_BACKENDS = ("eager", "aot_eager", "inductor")
TORCH_BACKENDS = ("eager", "inductor")
# Display and key order: the baseline first, then cdynamo, then the peer it is measured against.
ALL_BACKENDS = (EAGER,) + tuple(f"cdynamo:{b}" for b in CDYNAMO_BACKENDS) + tuple(
    f"torch:{b}" for b in TORCH_BACKENDS
)


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    name: str  # "eager", "cdynamo:<backend>" or "torch:<backend>"
    compiler: str  # "none", "cdynamo" or "torch"
    backend: str  # the backend name given to the compiler
    mode: str = None  # compile mode given to both compilers alike (e.g. "reduce-overhead"); None: default

    def availability(self):
        """(available, reason): cdynamo backends must be registered (inductor registers itself
        once it exists), torch backends need torch.compile."""
        if self.compiler == "none":
            return True, ""
        if self.compiler == "torch":
            import torch

            if not hasattr(torch, "compile"):
                return False, f"torch {torch.__version__} has no torch.compile"
            return True, ""
        try:
            import cdynamo
        except ImportError as error:  # e.g. the extension is not built for this interpreter
            return False, f"cdynamo does not import: {error}"
        if self.backend not in cdynamo.list_backends(exclude_tags=()):
            return False, f"{self.backend!r} not in cdynamo.list_backends()"
        return True, ""

    def prepare(self, extra_trace_files=()):
        """Imports the compiler stack ahead of timing, so cold compile times measure compiling
        and not the first import of modules every backend shares (AOTAutograd, decompositions).
        extra_trace_files: more files of this package whose modules are benchmarked."""
        if self.compiler == "cdynamo":
            import cdynamo

            from . import models

            cdynamo.lookup_backend(self.backend)
            import torch._subclasses.fake_tensor  # noqa: F401  (its tracer's metadata engine)
            # cdynamo never traces its own package; the microbenchmark modules live in it.
            for path in (models.__file__, *extra_trace_files):
                if path not in cdynamo.config.trace_dirs:
                    cdynamo.config.trace_dirs.append(path)
        if self.compiler == "torch" or self.backend in ("aot_eager", "inductor"):
            import torch._dynamo  # noqa: F401
            import torch._functorch.aot_autograd  # noqa: F401
        if self.compiler == "torch" and self.backend == "inductor":
            import torch._inductor.compile_fx  # noqa: F401

    def compile(self, model):
        """The callable that runs `model` through this system; static shapes (dynamic=False)
        so the tiny-input overhead variant adds a cache entry instead of a dynamic graph."""
        if self.compiler == "none":
            return model
        # mode is passed only when set: a compiler without modes still compiles the default way.
        mode = {"mode": self.mode} if self.mode else {}
        if self.compiler == "cdynamo":
            import cdynamo

            return cdynamo.compile(model, backend=self.backend, dynamic=False, **mode)
        import torch

        return torch.compile(model, backend=self.backend, dynamic=False, **mode)

    def set_cache_dir(self, path):
        """Points the compiler's on-disk cache at `path` (an empty directory gives a cold start)."""
        if self.compiler == "cdynamo":
            os.environ["CDYNAMO_CACHE_DIR"] = path
            import cdynamo

            if hasattr(cdynamo.config, "cache_dir"):
                cdynamo.config.cache_dir = path
        elif self.compiler == "torch":
            # Inductor reads the variable each time it looks for its cache directory.
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = path

    def reset_in_memory(self):
        """Forgets compiled code held in memory (the disk caches stay): the next call compiles
        again. Also clears the compiler's counters so compile_stats() covers what follows."""
        if self.compiler == "cdynamo":
            import cdynamo

            cdynamo.reset()
            cdynamo.counters.clear()
        elif self.compiler == "torch":
            import torch._dynamo
            import torch._dynamo.utils

            torch._dynamo.reset()
            torch._dynamo.utils.counters.clear()

    def compile_stats(self):
        """{"graphs", "graph_breaks", "break_reasons": {reason: count}} since the last reset,
        from the compiler's own counters; empty for plain eager."""
        if self.compiler == "none":
            return {}
        if self.compiler == "cdynamo":
            import cdynamo

            counters = cdynamo.counters
        else:
            import torch._dynamo.utils

            counters = torch._dynamo.utils.counters
        breaks = collections.Counter(counters.get("graph_break", {}))
        return {
            "graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
            "graph_breaks": int(sum(breaks.values())),
            "break_reasons": {str(reason): int(count) for reason, count in breaks.most_common(5)},
        }


def get_backend(name, mode=None):
    """The BackendSpec for "eager", "cdynamo:<backend>" or "torch:<backend>", compiling with
    `mode` (eager ignores it)."""
    if name == EAGER:
        return BackendSpec(EAGER, "none", EAGER)
    compiler, _, backend = name.partition(":")
    if compiler not in ("cdynamo", "torch") or not backend:
        raise ValueError(
            f"unknown backend {name!r}: use 'eager', 'cdynamo:<backend>' or 'torch:<backend>' "
            f"(default set: {', '.join(ALL_BACKENDS)})"
        )
    return BackendSpec(name, compiler, backend, mode)


def default_backends():
    """Every name of ALL_BACKENDS; the runner reports the unavailable ones as skipped."""
    return list(ALL_BACKENDS)


def order_backends(names):
    """`names` without duplicates, eager first (the baseline), the known ones in ALL_BACKENDS order."""
    unique = list(dict.fromkeys(names))
    rank = {name: i for i, name in enumerate(ALL_BACKENDS)}
    return sorted(unique, key=lambda name: (rank.get(name, len(rank)), name))
