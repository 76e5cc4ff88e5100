"""The compiled-graph cache: the inductor backend's result for an fx graph, kept on disk so that a
later process rebuilds it without aten tracing, lowering or code generation.

Key: SHA-256 over the graph (node by node: ops, call targets by importable name, constant
arguments), the metadata of every tensor it reads (example inputs, parameters, buffers: type,
dtype, shape, strides, offset, device, requires_grad, and which of them are the same tensor or
share storage), the plain attributes of the nn.Modules it calls, grad/inference/autocast modes,
default dtype and deterministic algorithms, the backend's own version (the extension and these Python files), torch and Python versions, and the
C++ toolchain. A graph with symbolic sizes is described by its inputs' size expressions, the
symbols' ranges and the facts its ShapeEnv holds; facts the compile adds are stored with the entry
and recorded again by the process that loads it. Anything it cannot describe exactly makes the
graph uncacheable, never a guess.

Value: one file <cache_dir>/graphs/<key[:2]>/<key>: a magic line, a SHA-256 of the rest, a JSON
header (the key again; how to bind each constant), the program as the C++ runtime stores it
(kernels by kernel-cache key), and constants made while tracing (torch.tensor(2.0)) by value.
Parameters and buffers are bound by attribute path in the new process, never stored by value.
Written to a temporary file and renamed into place, so readers see whole entries or none; a
corrupt, stale or unloadable entry is ignored (counted) and the graph compiles as usual.
"""
import base64
import hashlib
import importlib
import io
import json
import os
import pickle
import sys
import time

import torch
import torch.fx
from torch.fx.immutable_collections import immutable_dict, immutable_list

from .. import config, utils

_MAGIC = b"cdynamo-graph-v1\n"


class Uncacheable(Exception):
    """Something in the graph has no exact, process-independent description."""


# ---------------------------------------------------------------------------------------------
# Process-wide parts of the key, computed once.

_PROCESS_MATERIAL = None


def _file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _process_material():
    """What every key shares: versions of cdynamo's backend, torch, Python and the toolchain."""
    global _PROCESS_MATERIAL
    if _PROCESS_MATERIAL is None:
        from .. import _C

        here = os.path.dirname(os.path.abspath(__file__))
        sources = [_C.__file__] + [os.path.join(here, name) for name in sorted(os.listdir(here)) if name.endswith(".py")]
        parts = [_MAGIC.decode(), sys.version, torch.__version__, str(getattr(torch.version, "git_version", ""))]
        parts += [f"{os.path.basename(path)}={_file_digest(path)}" for path in sources]
        _PROCESS_MATERIAL = "\n".join(parts)
    return _PROCESS_MATERIAL


def _toolchain_material():
    """The kernels' toolchain key for the configured compiler (config.cxx may change at run
    time; the C++ side probes each compiler once)."""
    from .. import _C

    try:
        return _C._inductor_toolchain_key()
    except RuntimeError as e:  # the compiler cannot be run: compiling reports it
        raise Uncacheable(str(e)) from None


# ---------------------------------------------------------------------------------------------
# Describing a graph.

_TARGET_NAMES = {}
_SIMPLE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))
_TORCH_ENUMS = (torch.dtype, torch.device, torch.memory_format, torch.layout)


def _resolve(module_name, qualname):
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _target_name(target):
    """An importable name that resolves to this very object; Uncacheable if there is none."""
    try:
        return _TARGET_NAMES[target]
    except KeyError:
        pass
    except TypeError:
        raise Uncacheable(f"unhashable call target {target!r}") from None
    name = None
    if isinstance(target, torch._ops.OpOverload):
        name = f"op:{target.name()}"
    elif isinstance(target, torch._ops.OpOverloadPacket):
        name = f"packet:{target._qualified_op_name}"
    else:
        candidates = []
        module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
        owner, short = getattr(target, "__objclass__", None), getattr(target, "__name__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            candidates.append((module, qualname))
        if isinstance(module, str) and isinstance(short, str):
            candidates.append((module, short))  # torch.relu: qualname _VariableFunctionsClass.relu
        if isinstance(owner, type) and isinstance(short, str):
            candidates.append((owner.__module__, f"{owner.__qualname__}.{short}"))
        for module, qualname in candidates:
            if "<" in qualname:
                continue  # a lambda or a local function: not the same object in another process
            try:
                if _resolve(module, qualname) is target:
                    name = f"{module}:{qualname}"
                    break
            except Exception:  # noqa: BLE001 - not importable: try the next spelling
                continue
    if name is None:
        raise Uncacheable(f"call target {target!r} has no importable name")
    _TARGET_NAMES[target] = name
    return name


class _Describer:
    """Builds the key material of one graph; tensors are numbered in order of first sight so
    that aliasing (one tensor reached twice, views of one storage) is part of the key."""

    def __init__(self):
        self.parts = []
        self._tensor_ids = {}
        self._storages = {}
        self._modules = {}

    def tensor(self, t):
        if _is_symbolic_fake(t):
            return self._symbolic_tensor(t)
        if type(t) not in (torch.Tensor, torch.nn.Parameter):
            raise Uncacheable(f"tensor of type {type(t).__qualname__}")
        if t.layout != torch.strided or t.is_quantized:
            raise Uncacheable("a non-strided or quantized tensor")
        index = self._tensor_ids.setdefault(id(t), len(self._tensor_ids))
        storage = t.untyped_storage().data_ptr() if t.device.type != "meta" else 0
        shares = self._storages.setdefault(storage, index) if storage else -1
        return (
            f"T{index}/{shares}:{type(t).__name__}:{t.dtype}:{tuple(t.shape)}:{t.stride()}:{t.storage_offset()}:"
            f"{t.device}:{int(t.requires_grad)}:{int(t.is_conj())}:{int(t.is_neg())}:{int(t.is_inference())}"
        )

    def _symbolic_tensor(self, t):
        """A fake input of a graph with symbolic sizes: its sizes, strides and offset as
        expressions over the size symbols (ShapeEnv.symbol_material adds what they range over)."""
        from .output_aliases import storage_of

        index = self._tensor_ids.setdefault(id(t), len(self._tensor_ids))
        shares = self._storages.setdefault(storage_of(t), index)
        layout = ",".join(_number_text(v) for v in (*t.shape, "/", *t.stride(), "/", t.storage_offset()))
        return (f"S{index}/{shares}:{t.dtype}:{layout}:{t.device}:{int(t.requires_grad)}:{int(t.is_conj())}:"
                f"{int(t.is_neg())}:{int(t.is_inference())}")

    def number(self, v):
        """A number input: a symbolic one by its expression, a plain one by its value."""
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return f"{type(v).__name__}:{_number_text(v)}"
        return self.value(v)

    def value(self, v):
        """A constant argument (or a module attribute) as text that determines it exactly."""
        kind = type(v)
        if kind in _SIMPLE_TYPES:
            return f"{kind.__name__}:{v!r}"
        if kind in (tuple, list, torch.Size, immutable_list):
            return f"{kind.__name__}(" + ",".join(self.value(item) for item in v) + ")"
        if kind in (dict, immutable_dict, set, frozenset) or (isinstance(v, dict) and not v):
            if isinstance(v, dict):
                items = sorted((self.value(k), self.value(item)) for k, item in v.items())
                return f"{kind.__name__}{{" + ",".join(f"{k}={item}" for k, item in items) + "}"
            return f"{kind.__name__}{{" + ",".join(sorted(self.value(item) for item in v)) + "}"
        if kind is slice:
            return f"slice({self.value(v.start)},{self.value(v.stop)},{self.value(v.step)})"
        if isinstance(v, _TORCH_ENUMS):
            return f"{kind.__name__}:{v}"
        if kind is torch.fx.Node:
            return f"%{v.name}"
        if isinstance(v, torch.Tensor):
            return self.tensor(v)
        raise Uncacheable(f"a constant of type {kind.__qualname__}")

    def module(self, m):
        """An nn.Module called as one node: its class, plain attributes, tensors and children."""
        if id(m) in self._modules:
            return f"M{self._modules[id(m)]}"
        self._modules[id(m)] = len(self._modules)
        cls = type(m)
        if "<" in cls.__qualname__ or _resolve_or_none(cls.__module__, cls.__qualname__) is not cls:
            raise Uncacheable(f"module class {cls.__qualname__} has no importable name")
        fields = []
        for name, attr in sorted(vars(m).items()):
            if name in ("_parameters", "_buffers", "_modules"):
                continue
            fields.append(f"{name}={self.value(attr)}")  # hooks (functions) make it Uncacheable
        for name, t in m._parameters.items():
            fields.append(f"p.{name}={'None' if t is None else self.tensor(t)}")
        for name, t in m._buffers.items():
            fields.append(f"b.{name}={'None' if t is None else self.tensor(t)}")
        for name, child in m._modules.items():
            fields.append(f"m.{name}={'None' if child is None else self.module(child)}")
        return f"{cls.__module__}:{cls.__qualname__}[" + ";".join(fields) + "]"


def _is_symbolic_fake(t):
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor) and t.fake_mode.shape_env is not None


def _number_text(v):
    """A size or number as text: an int as itself, a symbolic one as its expression after the
    ShapeEnv's replacements (s1 == s0 read as s0)."""
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        node = v.node
        return f"<{node.shape_env.simplify(node.expr)}>"
    return str(v)


def _shape_env_of(example_inputs):
    for v in example_inputs:
        if _is_symbolic_fake(v):
            return v.fake_mode.shape_env
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return v.node.shape_env
    return None


def _symbol_material(env):
    """What the ShapeEnv knows that tracing a symbolic graph reads: each symbol's range and
    every fact recorded so far (the frontend's guards). The program never depends on a hint."""
    ranges = getattr(env, "var_to_range", {})
    parts = [f"range {symbol}={ranges[symbol]}" for symbol in sorted(ranges, key=str)]
    parts += sorted(f"guard {guard.expr}" for guard in env.guards)
    return parts


def guard_count(example_inputs):
    """How many facts the inputs' ShapeEnv holds (0 for static inputs)."""
    env = _shape_env_of(example_inputs)
    return 0 if env is None else len(env.guards)


def guards_since(example_inputs, count):
    """The facts about sizes recorded since guard_count gave `count` (a compile's own: tracing
    took a branch by a size), as sympy expressions."""
    env = _shape_env_of(example_inputs)
    return [] if env is None else [guard.expr for guard in list(env.guards)[count:]]


def _encoded_guards(exprs):
    """Sympy expressions as text for the entry's header (pickled: torch's sympy functions
    included; the cache folder is trusted as the kernel libraries it holds are)."""
    if not exprs:
        return ""
    try:
        return base64.b64encode(pickle.dumps(list(exprs))).decode()
    except Exception as error:  # noqa: BLE001 - an expression that does not pickle
        raise Uncacheable(f"a size guard that cannot be stored ({error!r})") from None


def _replay_guards(text, example_inputs):
    """Records in this process's ShapeEnv the facts the stored program was compiled under, when
    they hold for these inputs; False (a miss) when one does not."""
    if not text:
        return True
    env = _shape_env_of(example_inputs)
    if env is None:
        return False
    exprs = pickle.loads(base64.b64decode(text))
    from .symbolic import symbol_values

    values = symbol_values(env)
    for expr in exprs:
        if not all(symbol in values for symbol in expr.free_symbols) or not bool(expr.xreplace(values)):
            return False
    for expr in exprs:
        env.evaluate_expr(expr)  # true at the hints: guarded from now on
    return True


def _resolve_or_none(module_name, qualname):
    try:
        return _resolve(module_name, qualname)
    except Exception:  # noqa: BLE001
        return None


def _attribute(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


def _global_hooks_present():
    from torch.nn.modules import module as module_impl

    names = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks", "_global_module_registration_hooks")
    return any(getattr(module_impl, name, None) for name in names)


def _global_state():
    """Process state that tracing reads: grad and inference mode, autocast, default dtype,
    deterministic algorithms, and the backend's config options."""
    try:
        autocast = (torch.is_autocast_enabled("cpu"), torch.is_autocast_enabled("cuda"))
    except TypeError:  # older signature without a device
        autocast = (torch.is_autocast_enabled(),)
    return (
        f"grad={torch.is_grad_enabled()} inference={torch.is_inference_mode_enabled()} autocast={autocast} "
        f"dtype={torch.get_default_dtype()} deterministic={torch.are_deterministic_algorithms_enabled()} "
        f"verify_ir={config.verify_ir} channels_last={config.channels_last_convolutions} "
        f"freeze={config.freeze_constants} cpu_backend={config.cpu_backend}"
    )


def graph_key(gm, example_inputs):
    """The cache key of compiling gm for these inputs, or None when the cache is off or the graph
    cannot be described exactly (counted in counters["inductor"]["graph_cache_uncacheable"])."""
    if not config.graph_cache:
        return None
    start = time.perf_counter()
    try:
        d = _Describer()
        if _global_hooks_present():
            raise Uncacheable("global nn.Module hooks are installed")
        d.parts.append(_global_state())
        for t in example_inputs:
            d.parts.append("in " + (d.tensor(t) if isinstance(t, torch.Tensor) else d.number(t)))
        env = _shape_env_of(example_inputs)
        if env is not None:
            d.parts.extend(_symbol_material(env))
        for node in gm.graph.nodes:
            target = node.target
            if node.op == "call_function":
                target = _target_name(target)
            elif node.op == "get_attr":
                attr = _attribute(gm, target)
                if not isinstance(attr, torch.Tensor):
                    raise Uncacheable(f"get_attr {target} is not a tensor")
                target = f"{target}={d.tensor(attr)}"
            elif node.op == "call_module":
                target = f"{target}={d.module(_attribute(gm, target))}"
            elif not isinstance(target, str):
                raise Uncacheable(f"a {node.op} node with target {target!r}")
            d.parts.append(f"{node.op} {node.name} {target} {d.value(tuple(node.args))} {d.value(dict(node.kwargs))}")
        material = _process_material() + "\n" + _toolchain_material() + "\n" + "\n".join(d.parts)
    except Uncacheable as why:
        utils.counters["inductor"]["graph_cache_uncacheable"] += 1
        utils.log("graphs", f"inductor: graph not cached: {why}")
        return None
    finally:
        utils.add_time("graph_cache_key", time.perf_counter() - start)
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------------------------------------
# Entries on disk.


def entry_path(key):
    return os.path.join(utils.cache_root(), "graphs", key[:2], key)


def _meta(t):
    return [str(t.dtype), list(t.shape), list(t.stride()), t.storage_offset(), str(t.device)]


def store(key, gm, aten_gm, blob, guards=()):
    """Writes the entry for key: blob from _C._inductor_compile, constants bound by path into gm
    where they are gm's tensors, by value where tracing made them, and the size guards the
    compile added (guards_since). Failures only cost the entry."""
    try:
        paths = {}
        for name, t in list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False)):
            paths.setdefault(id(t), name)
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                paths.setdefault(id(_attribute(gm, node.target)), node.target)
        own_storages = {_attribute(gm, p).untyped_storage().data_ptr() for p in paths.values()}
        constants, values = [], []
        for node in aten_gm.graph.nodes:
            if node.op != "get_attr":
                continue
            t = _attribute(aten_gm, node.target)
            if id(t) in paths:
                constants.append([node.name, "attr", paths[id(t)], _meta(t)])
                continue
            # Made while tracing (a literal tensor): stored by value, unless it is a view of one of
            # gm's tensors, whose values the next process may have changed.
            if t.device.type != "cpu" or (t.untyped_storage().data_ptr() in own_storages and t.numel() > 0):
                raise Uncacheable(f"constant {node.target} is neither one of the graph's tensors nor a fresh one")
            constants.append([node.name, "value", len(values), _meta(t)])
            values.append(t.detach().clone())
        value_bytes = b""
        if values:
            buffer = io.BytesIO()
            torch.save(values, buffer)
            value_bytes = buffer.getvalue()
        header = json.dumps({"key": key, "program": len(blob), "values": len(value_bytes), "constants": constants,
                             "guards": _encoded_guards(guards)}).encode()
        body = header + b"\n" + blob + value_bytes
        content = _MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        path = entry_path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            with open(tmp, "wb") as f:
                f.write(content)
            os.replace(tmp, path)  # atomic: concurrent readers see the old entry or this one
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        utils.counters["inductor"]["graph_cache_store"] += 1
    except Uncacheable as why:
        utils.counters["inductor"]["graph_cache_uncacheable"] += 1
        utils.log("graphs", f"inductor: graph not cached: {why}")
    except (OSError, RuntimeError, ValueError, TypeError, AttributeError) as error:
        utils.log("graphs", f"inductor: could not store a compiled graph: {error!r}")


def _parse(content, key):
    if not content.startswith(_MAGIC):
        raise ValueError("unknown format")
    digest_end = len(_MAGIC) + 64
    if content[digest_end : digest_end + 1] != b"\n":
        raise ValueError("truncated")
    body = content[digest_end + 1 :]
    if hashlib.sha256(body).hexdigest().encode() != content[len(_MAGIC) : digest_end]:
        raise ValueError("checksum mismatch")
    newline = body.index(b"\n")
    header = json.loads(body[:newline])
    if header.get("key") != key:
        raise ValueError("entry of another key")
    program_end = newline + 1 + header["program"]
    blob, value_bytes = body[newline + 1 : program_end], body[program_end:]
    if len(blob) != header["program"] or len(value_bytes) != header["values"]:
        raise ValueError("section sizes")
    return header, blob, value_bytes


def load(key, gm, example_inputs=()):
    """The compiled callable stored under key, bound to gm's tensors, or None (a miss). Every
    problem with the entry is a miss: counted as graph_cache_invalid, and the caller recompiles.
    A symbolic program's size guards are recorded in the ShapeEnv of example_inputs (a miss when
    one does not hold for them); it runs calls past its kernels' 32-bit limits through gm."""
    start = time.perf_counter()
    try:
        try:
            with open(entry_path(key), "rb") as f:
                content = f.read()
        except FileNotFoundError:
            utils.counters["inductor"]["graph_cache_miss"] += 1
            return None
        from .. import _C

        header, blob, value_bytes = _parse(content, key)
        if not _replay_guards(header.get("guards", ""), example_inputs):
            utils.counters["inductor"]["graph_cache_miss"] += 1
            utils.log("graphs", "inductor: a stored symbolic program's size guards do not hold; recompiling")
            return None
        values = torch.load(io.BytesIO(value_bytes), weights_only=True) if value_bytes else []
        constants = []
        for name, how, where, meta in header["constants"]:
            t = _attribute(gm, where) if how == "attr" else values[where]
            if not isinstance(t, torch.Tensor) or _meta(t) != meta:
                raise ValueError(f"constant {name} does not match the entry")
            constants.append((name, t))
        compiled = _C._inductor_load(blob, constants, gm.forward)
        if compiled is None:
            utils.counters["inductor"]["graph_cache_miss"] += 1  # a kernel left the kernel cache
            utils.log("graphs", "inductor: compiled-graph cache entry names a missing kernel; recompiling")
            return None
        utils.counters["inductor"]["graph_cache_hit"] += 1
        return compiled
    except Exception as error:  # noqa: BLE001 - any broken entry is a miss, never a failure
        utils.counters["inductor"]["graph_cache_invalid"] += 1
        utils.log("graphs", f"inductor: ignoring an unusable compiled-graph cache entry: {error!r}")
        return None
    finally:
        utils.add_time("graph_cache_load", time.perf_counter() - start)
