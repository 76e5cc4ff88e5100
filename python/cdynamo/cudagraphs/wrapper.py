"""CudaGraphed: a compiled callable run through CUDA graphs, one recording per input signature.
Assumes a runtime with CudaRuntime's methods; decisions are in policy.py and outputs.py."""
import threading

import torch

from .. import config, utils
from . import outputs, policy

_WARNED = set()

# Past this many invalidations (parameters replaced or moved) a function stops recording: its
# static tensors change too often for recordings to pay off.
_MAX_INVALIDATIONS = 8

# Bumped whenever any module registers or replaces a parameter or buffer: a recording reads its
# module's tensors by address, so one replaced by a new object needs a new recording.
_REGISTRATION_EPOCH = [0]
_WATCHING_REGISTRATIONS = False


def _bump_registration_epoch(module, name, value):
    _REGISTRATION_EPOCH[0] += 1


# It returns None (it never replaces the value): a registration in traced code may run it after the graph.
_bump_registration_epoch._cdynamo_returns_none = True


def _watch_registrations():
    global _WATCHING_REGISTRATIONS
    if not _WATCHING_REGISTRATIONS:
        from torch.nn.modules import module as nn_module

        nn_module.register_module_parameter_registration_hook(_bump_registration_epoch)
        nn_module.register_module_buffer_registration_hook(_bump_registration_epoch)
        _WATCHING_REGISTRATIONS = True


class CaptureFailed(Exception):
    """A capture that could not be recorded; `reason` is what the user is told."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class _Recording:
    """One captured graph and the buffers (in its own memory pool) that each replay fills."""

    __slots__ = ("graph", "buffers", "owned", "liveness")

    def __init__(self, graph, buffers, owned):
        self.graph, self.buffers, self.owned = graph, buffers, owned
        self.liveness = outputs.Liveness(buffers, owned)


class _Signature:
    """What the calls of one input signature taught the wrapper, and what it recorded for it."""

    def __init__(self):
        self.refusal = None
        self.warmups = 0
        self.device = None
        self.plan = None
        self.rebuild = None
        self.copied = ()  # argument positions copied into static buffers on each call
        self.written_copied = ()  # of those, the ones the graph writes: copied back after replay
        self.written_static_args = ()  # static arguments the graph writes: versions bumped
        self.written_statics = ()  # module tensors the graph writes: versions bumped
        self.static_args = None  # what every recording of this signature was captured with
        self.recordings = []  # their results are handed out as they are
        self.private = None  # its results are copied out: used when every other one is held
        self.writes_checked = False


def _same_data_ptrs(tensors, ptrs):
    fast = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)
    if fast is not None:
        return fast(tensors, ptrs, list(range(len(tensors))))
    return all(t.data_ptr() == p for t, p in zip(tensors, ptrs))


class CudaGraphed:
    """Calls `fn` through CUDA graphs. `static_tensors` are read where they are (the module's
    parameters and buffers); `gm`, when given, is re-read for them if a registration replaces one."""

    def __init__(self, fn, runtime, static_tensors=(), gm=None, refusal=None):
        self._fn, self._runtime, self._gm = fn, runtime, gm
        self._statics = list(static_tensors)
        self._static_ptrs = policy.data_ptrs(self._statics)
        self._epoch = _REGISTRATION_EPOCH[0]
        self._graph_refusal = refusal  # decided once, from the graph itself
        self._static_refusal = None  # re-decided whenever the module's tensors change
        if self._statics:
            self._static_refusal = policy.recordable_reason(self._statics, runtime.device_type, False)
        self._signatures = {}
        self._lock = threading.RLock()
        self._last_stream = None
        self._invalidations = 0
        # Read now: compile(mode=..., options=...) overrides hold while the backend compiles.
        self._warmup_calls = config.cudagraphs_warmup_calls
        self._max_graphs = config.cudagraphs_max_graphs
        self._instances = max(1, config.cudagraphs_instances)
        if gm is not None:
            _watch_registrations()

    def __call__(self, *args, **kwargs):
        with self._lock:
            if kwargs:
                return self._run_plain("keyword arguments", args, kwargs)
            signature, reason = self._route(args)
            if reason is not None:
                return self._run_plain(reason, args)
            if signature.static_args is None:
                if signature.warmups < self._warmup_calls:
                    return self._warm_up(signature, args)
                self._allocate_static_inputs(signature, args)
                if signature.refusal is not None:
                    return self._run_plain(signature.refusal, args)
            return self._replay(signature, args)

    def _route(self, args):
        """The signature this call belongs to, or the reason it runs without a graph."""
        reason = self._statics_reason()
        if reason is None and self._runtime.is_capturing():
            reason = "called while another CUDA graph is being captured"
        if reason is not None:
            return None, reason
        key = policy.input_signature(args, torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        if key is None:
            return None, policy.unhashable_argument_reason(args)
        signature = self._signatures.get(key)
        if signature is None:
            if len(self._signatures) >= self._max_graphs:
                return None, (f"more than {self._max_graphs} input signatures (shapes, dtypes, "
                              "non-tensor values) for one function (config.cudagraphs_max_graphs)")
            signature = self._signatures[key] = _Signature()
        return signature, signature.refusal or self._call_reason(signature, args)

    def _call_reason(self, signature, args):
        written = signature.written_copied + signature.written_static_args
        reason = policy.written_input_alias_reason(args, written, self._statics)
        if reason is None and torch.is_grad_enabled():
            reason = policy.autograd_reason(self._statics, True)
        return reason

    def _statics_reason(self):
        """Starts over (new recordings) when the module's tensors were replaced or moved."""
        if self._graph_refusal is not None:
            return self._graph_refusal
        if self._gm is not None and _REGISTRATION_EPOCH[0] != self._epoch:
            self._epoch = _REGISTRATION_EPOCH[0]
            fresh = policy.module_tensors(self._gm)
            if len(fresh) != len(self._statics) or any(a is not b for a, b in zip(fresh, self._statics)):
                self._invalidate(fresh, "a parameter or buffer was replaced")
        if self._statics and not _same_data_ptrs(self._statics, self._static_ptrs):
            self._invalidate(self._statics, "a parameter or buffer moved to other memory")
        return self._static_refusal

    def _invalidate(self, tensors, why):
        utils.counters["cudagraphs"][f"invalidated: {why}"] += 1
        self._statics, self._static_ptrs = list(tensors), policy.data_ptrs(tensors)
        self._signatures.clear()
        self._invalidations += 1
        if self._invalidations > _MAX_INVALIDATIONS:
            self._static_refusal = "parameters or buffers keep changing (replaced or moved between calls)"
        elif self._statics:
            self._static_refusal = policy.recordable_reason(self._statics, self._runtime.device_type, False)

    def _run_plain(self, reason, args, kwargs=None):
        utils.counters["cudagraphs"][f"skipped: {reason}"] += 1
        message = f"cdynamo cudagraphs: running without CUDA graphs: {reason}"
        utils.log_and_warn_once("graphs", message, reason, _WARNED, stacklevel=3)
        return self._fn(*args, **(kwargs or {}))

    def _warm_up(self, signature, args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        reason = policy.recordable_reason(tensors + self._statics, self._runtime.device_type,
                                          torch.is_grad_enabled())
        if reason is not None:
            signature.refusal = reason
            return self._run_plain(reason, args)
        device = (tensors or self._statics)[0].device
        arg_versions, static_versions = policy.versions(tensors), policy.versions(self._statics)
        result, syncs = self._runtime.warm_up(device, self._fn, args)
        leaves, rebuild = outputs.flatten(result)
        self._runtime.keep_for_current_stream(leaves, device)
        utils.counters["cudagraphs"]["warmups"] += 1
        signature.warmups += 1
        positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        written = [positions[p] for p in policy.changed_positions(arg_versions, policy.versions(tensors))]
        written_statics = policy.changed_positions(static_versions, policy.versions(self._statics))
        self._learn(signature, args, leaves, rebuild, device, written, written_statics)
        if syncs and signature.refusal is None:
            signature.refusal = policy.sync_reason(syncs)
        return result

    def _learn(self, signature, args, leaves, rebuild, device, written, written_statics):
        """What a warm-up run shows: results, in-place writes, and whether they allow a graph."""
        signature.device, signature.rebuild = device, rebuild
        signature.copied = policy.copied_input_indices(args)
        signature.written_copied = tuple(i for i in written if i in signature.copied)
        signature.written_static_args = tuple(i for i in written if i not in signature.copied)
        signature.written_statics = tuple(self._statics[k] for k in written_statics)
        try:
            signature.plan = outputs.describe(leaves, args, self._statics, device)
        except outputs.Unrecordable as error:
            signature.refusal = str(error)
            return
        signature.refusal = policy.written_input_alias_reason(args, written, self._statics)

    def _allocate_static_inputs(self, signature, args):
        static_args = list(args)
        try:
            for i in signature.copied:
                static_args[i] = torch.empty_strided(args[i].shape, args[i].stride(), dtype=args[i].dtype,
                                                     device=args[i].device)
                _copy_into(static_args[i], args[i])
        except RuntimeError as error:
            signature.refusal = f"an input whose elements overlap in memory ({error})"
            return
        signature.static_args = static_args

    def _replay(self, signature, args):
        self._follow_stream(signature.device)
        for i in signature.copied:
            _copy_into(signature.static_args[i], args[i])
        try:
            recording, private = self._pick_recording(signature)
        except CaptureFailed as failure:
            signature.refusal = failure.reason
            signature.static_args, signature.recordings, signature.private = None, [], None
            return self._run_plain(failure.reason, args)
        self._runtime.replay(recording.graph)
        counters = utils.counters["cudagraphs"]
        counters["replays"] += 1
        if not signature.writes_checked:
            self._find_unversioned_writes(signature, args)
        self._write_back(signature, args)
        owned = recording.owned
        if private:
            counters["replays_copied_out"] += 1
            owned = outputs.tensors_in(signature.plan, outputs.copies_of(recording.buffers))
        return signature.rebuild(outputs.build_results(signature.plan, owned, args, self._statics))

    def _pick_recording(self, signature):
        """A recording whose earlier results nobody holds; else a new one while there may be
        more; else the private one, whose results are copied out (flagged True)."""
        for recording in signature.recordings:
            if not recording.liveness.held():
                return recording, False
        if len(signature.recordings) < self._instances:
            signature.recordings.append(self._capture(signature))
            return signature.recordings[-1], False
        if signature.private is None:
            signature.private = self._capture(signature)
        return signature.private, True

    def _capture(self, signature):
        def body():
            leaves, _ = outputs.flatten(self._fn(*signature.static_args))
            captured = outputs.describe(leaves, signature.static_args, self._statics, signature.device)
            if captured != signature.plan:
                raise outputs.Unrecordable("results whose layout or aliasing differ between warm-up and capture")
            return leaves

        try:
            graph, leaves = self._runtime.capture(signature.device, body)
        except outputs.Unrecordable as error:
            raise CaptureFailed(str(error)) from error
        except Exception as error:
            self._runtime.recover(signature.device)
            raise CaptureFailed(policy.capture_failure_reason(error)) from error
        utils.counters["cudagraphs"]["recorded"] += 1
        # Results stay where the capture put them, in the recording's own pool: no copy per replay.
        buffers, owned = outputs.alias_owned(signature.plan, leaves)
        return _Recording(graph, buffers, owned)

    def _find_unversioned_writes(self, signature, args):
        """A backend may write an input without bumping its version counter: after the first
        replay, a copied input that now differs from the caller's was written by the graph."""
        signature.writes_checked = True
        found = [i for i in signature.copied if i not in signature.written_copied
                 and not policy.same_values(signature.static_args[i], args[i])]
        if found:
            signature.written_copied += tuple(found)
            signature.refusal = policy.written_input_alias_reason(args, signature.written_copied, self._statics)

    def _write_back(self, signature, args):
        """In-place writes reach the caller's tensors, with their versions bumped as eager's."""
        for i in signature.written_copied:
            args[i].copy_(signature.static_args[i])
        for t in signature.written_statics:
            _bump_version(t)
        for i in signature.written_static_args:
            _bump_version(args[i])

    def _follow_stream(self, device):
        # Calls on different streams share the static buffers: the later waits for the earlier.
        stream = self._runtime.current_stream(device)
        if self._last_stream is not None and stream != self._last_stream:
            self._runtime.wait(stream, self._last_stream)
        self._last_stream = stream


def _copy_into(static, value):
    """Copies an input into its static buffer; broadcast (stride-0) dimensions are copied once."""
    if 0 in static.stride():
        for dim, (size, stride) in enumerate(zip(static.shape, static.stride())):
            if stride == 0 and size > 1:
                static, value = static.narrow(dim, 0, 1), value.narrow(dim, 0, 1)
    static.copy_(value)


def _bump_version(t):
    if not t.is_inference():
        torch.autograd.graph.increment_version(t)
