"""A CPU stand-in for the CUDA runtime of cdynamo.cudagraphs, so the wrapper's logic runs in tests.
Assumes the wrapper uses only the methods defined here; capture undoes writes and forbids syncs."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Ops whose CUDA kernels copy a value to the host (a sync), which stream capture forbids.
_SYNCING_OPS = {
    torch.ops.aten._local_scalar_dense.default,
    torch.ops.aten.nonzero.default,
    torch.ops.aten.masked_select.default,
    torch.ops.aten.is_nonzero.default,
}

# In-place ops that change what a tensor is (its storage or shape), not the memory it holds.
_METADATA_WRITES = {torch.ops.aten.set_, torch.ops.aten.resize_, torch.ops.aten.as_strided_}


class _CaptureMode(TorchDispatchMode):
    """Capture records work without running it: syncing ops raise as under stream capture, and
    every in-place write the body makes is undone afterwards (its memory keeps what it held)."""

    def __init__(self):
        super().__init__()
        self.saved = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SYNCING_OPS:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        if func.overloadpacket in _METADATA_WRITES:
            return func(*args, **kwargs)
        for schema, value in _bound_arguments(func, args, kwargs):
            if schema.alias_info is not None and schema.alias_info.is_write and isinstance(value, torch.Tensor):
                self.saved.append((value, value.clone()))
        return func(*args, **kwargs)

    def undo_writes(self):
        for tensor, before in reversed(self.saved):
            tensor.copy_(before)


def _bound_arguments(func, args, kwargs):
    for position, schema in enumerate(func._schema.arguments):
        if position < len(args):
            yield schema, args[position]
        elif schema.name in kwargs:
            yield schema, kwargs[schema.name]


class _SyncRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.syncs = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _SYNCING_OPS:
            self.syncs.append(f"called a synchronizing CUDA operation ({func})")
        return func(*args, **(kwargs or {}))


class FakeGraph:
    """Replay runs the captured body again and writes its results where the capture's were, as a
    CUDA graph writes the same memory each replay (static inputs, results in its pool)."""

    def __init__(self, body, captured):
        self.body = body
        self.captured = [t for t in captured if isinstance(t, torch.Tensor)]
        self.replays = 0

    def replay(self):
        self.replays += 1
        results = [t for t in self.body() if isinstance(t, torch.Tensor)]
        with torch.no_grad():
            for where, value in zip(self.captured, results):
                if where.data_ptr() != value.data_ptr():
                    where.copy_(value)


class FakeRuntime:
    device_type = "cpu"

    def __init__(self):
        self.captures = 0
        self.failed_captures = 0
        self.capturing = False
        self.graphs = []

    def warm_up(self, device, fn, args):
        """fn(*args), and the syncing ops it ran (what torch's sync debug mode reports on CUDA)."""
        with _SyncRecorder() as recorder:
            result = fn(*args)
        return result, recorder.syncs

    def keep_for_current_stream(self, tensors, device):
        pass

    def capture(self, device, body):
        self.capturing = True
        mode = _CaptureMode()
        try:
            with mode:
                result = body()
        except BaseException:
            self.failed_captures += 1
            raise
        finally:
            self.capturing = False
            mode.undo_writes()
        self.captures += 1
        graph = FakeGraph(body, result)
        self.graphs.append(graph)
        return graph, result

    def recover(self, device):
        pass

    def replay(self, graph):
        graph.replay()

    def is_capturing(self):
        return self.capturing

    def current_stream(self, device):
        return 0

    def wait(self, stream, other):
        pass
