"""The CUDA calls of the wrapper: a memory pool per recording, a capture stream per device, warm-up, capture, recovery.
Assumes a CUDA build of torch (2.11+); tests replace this with tests/python/e2e/cudagraph_fakes.py."""
import contextlib
import logging
import threading
import warnings

import torch

# What torch's sync debug mode ("warn") says at each synchronizing call.
_SYNC_WARNING = "called a synchronizing CUDA operation"

# One capture at a time in the process (CUDA graphs' documented restriction); also keeps two
# threads from interleaving their work on the shared capture stream.
_CAPTURE_LOCK = threading.RLock()
log = logging.getLogger("cdynamo.cudagraphs")


class CudaRuntime:
    device_type = "cuda"

    def __init__(self):
        self._pools = {}
        self._anchors = {}
        self._streams = {}
        self._retired = []  # (pool, anchor) no longer captured into: kept so that nothing frees under torch

    def pool(self, device):
        """The memory pool of `device`'s recovery captures (recordings have pools of their own).
        A pool dies with the last graph captured into it, and torch cannot take its handle again
        after that: a small graph that is never replayed keeps it alive for the process."""
        if device.index not in self._pools:
            with _CAPTURE_LOCK, torch.cuda.device(device):
                pool = torch.cuda.graph_pool_handle()
                self._anchors[device.index] = self._capture_trivial(device, pool)
                self._pools[device.index] = pool
        return self._pools[device.index]

    def _capture_trivial(self, device, pool):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(self.capture_stream(device)):
            graph.capture_begin(pool=pool, capture_error_mode="thread_local")
            try:
                kept = torch.zeros(1, device=device)
                kept.add_(1)
            finally:
                graph.capture_end()
        return graph, kept

    def capture_stream(self, device):
        if device.index not in self._streams:
            self._streams[device.index] = torch.cuda.Stream(device)
        return self._streams[device.index]

    def warm_up(self, device, fn, args):
        """fn(*args) run on the capture stream itself, so that libraries setting up per-stream
        state (cuBLAS workspaces) do it before capture, as torch's CUDA-graph notes advise.
        Returns (result, what torch reported as synchronizing): the sync debug mode warns at each
        synchronizing call, which a capture would refuse."""
        current = torch.cuda.current_stream(device)
        side = self.capture_stream(device)
        side.wait_stream(current)
        previous_mode = torch.cuda.get_sync_debug_mode()
        try:
            with warnings.catch_warnings(record=True) as caught, torch.cuda.stream(side):
                warnings.simplefilter("always")
                if previous_mode == 0:
                    torch.cuda.set_sync_debug_mode("warn")
                result = fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode(previous_mode)
            current.wait_stream(side)
        syncs = [str(w.message) for w in caught if _SYNC_WARNING in str(w.message)]
        for w in caught:  # the program's own warnings go on as they came
            if _SYNC_WARNING not in str(w.message):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        return result, syncs

    def keep_for_current_stream(self, tensors, device):
        """Results made on the side stream are used on the caller's: their memory must not be
        reused before the caller's stream is done with them."""
        current = torch.cuda.current_stream(device)
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                t.record_stream(current)

    def capture(self, device, body):
        """Records body() into a new CUDA graph on the capture stream; returns (graph, result).
        A body that raises, or a capture CUDA invalidates, raises here with the capture ended.
        The graph gets a memory pool of its own: the results it leaves there are handed out as
        they are, and no other recording's replay may overwrite them (the price: each recording
        keeps its own peak of intermediate memory)."""
        graph = torch.cuda.CUDAGraph()
        pool = torch.cuda.graph_pool_handle()
        with _CAPTURE_LOCK, torch.cuda.device(device):
            torch.cuda.synchronize(device)
            with torch.cuda.stream(self.capture_stream(device)):
                # thread_local: other threads' legal CUDA calls don't break our capture; our own
                # forbidden calls still raise, which is what tells us the graph cannot be captured.
                graph.capture_begin(pool=pool, capture_error_mode="thread_local")
                try:
                    result = body()
                except BaseException:
                    _end_abandoned_capture(graph, device, pool)
                    raise
                graph.capture_end()
        return graph, result

    def recover(self, device):
        """After a failed capture: torch leaves the CUDA random generators in capture mode when a
        capture does not end cleanly (every later random op would raise); a capture that does end
        cleanly takes them out of it. Then check that the device still runs work."""
        with _CAPTURE_LOCK, torch.cuda.device(device):
            with contextlib.suppress(RuntimeError):
                torch.cuda.synchronize(device)
            try:
                self._capture_trivial(device, self.pool(device))
            except RuntimeError as error:
                if "already recording" not in str(error):
                    raise
                # The allocator still routes the shared pool to the failed capture (some torch
                # releases refuse to end that): later recordings share a new pool, whose first
                # clean capture also takes the generators out of capture mode.
                log.debug("cdynamo cudagraphs: a new pool for %s after %s", device, error)
                self._retired.append((self._pools.pop(device.index), self._anchors.pop(device.index)))
                self.pool(device)
            probe = torch.rand(1, device=device)
            probe.add_(1)
            torch.cuda.synchronize(device)

    def replay(self, graph):
        graph.replay()

    def is_capturing(self):
        return torch.cuda.is_current_stream_capturing()

    def current_stream(self, device):
        return torch.cuda.current_stream(device)

    def wait(self, stream, other):
        stream.wait_stream(other)


# Graphs whose capture failed: kept, never replayed. A capture that ends with an error can
# leave the allocator holding a routing rule that points at its graph object.
_ABANDONED = []


def _end_abandoned_capture(graph, device, pool):
    # The capture must end on this stream whatever happened; its own error (an invalidated
    # capture) is a consequence of the body's, which is the one worth reporting. If ending it
    # failed before the allocator stopped routing allocations to the pool, stop that here
    # (this raises, harmlessly, when the allocator already stopped).
    _ABANDONED.append(graph)
    try:
        graph.capture_end()
    except Exception as error:
        log.debug("cdynamo cudagraphs: ending the failed capture: %s", error)
    try:
        torch._C._cuda_endAllocateToPool(device.index, pool)
    except Exception as error:
        log.debug("cdynamo cudagraphs: ending its pool routing: %s", error)


_RUNTIME = None


def cuda_runtime():
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = CudaRuntime()
    return _RUNTIME
