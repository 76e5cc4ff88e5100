"""The Python surface on its own (no frame hook involved): config.patch, counters and logging,
the skip rule, the backend registry and call_backend, built-in backends on fx graphs, testing."""
import os

import pytest
import torch
import torch.fx

import cdynamo
from cdynamo import config, exc, utils
from cdynamo.backends import registry
from cdynamo.testing import (
    CompileCounter,
    CompileCounterWithBackend,
    EagerAndRecordGraphs,
    reset_counters,
    same,
)


def test_patch_as_context_manager_and_decorator():
    assert config.cache_size_limit == 8
    with config.patch(cache_size_limit=2, verbose=True):
        assert (config.cache_size_limit, config.verbose) == (2, True)
        with config.patch({"cache_size_limit": 3}):
            assert config.cache_size_limit == 3
        assert config.cache_size_limit == 2
    assert (config.cache_size_limit, config.verbose) == (8, False)

    @config.patch(suppress_errors=True)
    def read_suppress_errors():
        return config.suppress_errors

    assert read_suppress_errors() is True
    assert config.suppress_errors is False  # the test-wide setting from conftest


def test_patch_restores_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with config.patch(cache_size_limit=1):
            1 / 0
    assert config.cache_size_limit == 8


def test_patch_rejects_unknown_knobs():
    with pytest.raises(AttributeError, match="cache_size_limt"):
        config.patch(cache_size_limt=1)


def test_debug_kinds_parse_and_log(capsys):
    assert config.parse_debug("graphs, guards") == {"graphs", "guards"}
    assert config.parse_debug("all") == set(config.DEBUG_KINDS)
    with pytest.raises(ValueError, match="grpahs"):
        config.parse_debug("grpahs")

    with config.patch(debug="recompiles"):
        utils.log("recompiles", "shown\ntwo lines")
        utils.log("graphs", lambda: pytest.fail("a disabled kind must not format its message"))
    utils.log("recompiles", "hidden")
    assert capsys.readouterr().err == "[cdynamo:recompiles] shown\n[cdynamo:recompiles] two lines\n"


def test_record_functions_fill_counters():
    gm = torch.fx.symbolic_trace(lambda x: x.sin().cos() + 1)
    utils.record_graph("fn", gm)
    utils.record_frame_compiled("fn")
    utils.record_frame_fallback("g", "print() at file.py:3")
    utils.record_recompile("fn", "x: dtype changed from torch.float32 to torch.float64")
    stats = utils.counters["stats"]
    assert (stats["unique_graphs"], stats["calls_captured"]) == (1, 3)
    assert (stats["frames_compiled"], stats["frames_fallback"]) == (1, 1)
    assert utils.counters["graph_break"] == {"print() at file.py:3": 1}
    (reason,) = utils.counters["recompiles"]
    assert "fn" in reason and "dtype" in reason
    reset_counters()
    assert not utils.counters and utils.counters is cdynamo.counters


def test_warnings_name_the_function_and_reason():
    with pytest.warns(RuntimeWarning, match=r"f \(a\.py:3\).*cache_size_limit=8.*x: size"):
        utils.warn_cache_size_limit("f", "a.py", 3, "x: size of dim 0 changed")
    with pytest.warns(RuntimeWarning, match="backend 'b' raised"):
        utils.warn_fallback("f", "a.py", 3, "backend 'b' raised ValueError")


def test_skip_rule_longest_prefix_wins(tmp_path):
    library = os.path.join(str(tmp_path), "lib", "")
    site = os.path.join(library, "site-packages", "")
    with config.patch(skip_dirs=[library, os.path.join(site, "torch", "")], trace_dirs=[site]):
        assert utils.is_skipped_file(library + "os.py")
        assert not utils.is_skipped_file(site + "mypackage/model.py")
        assert utils.is_skipped_file(site + "torch/nn/functional.py")
        assert not utils.is_skipped_file(str(tmp_path) + "/library_of_mine.py")
        assert not utils.is_skipped_file("<string>")
        # co_filename keeps the path as imported: sys.path entries like "bench/../python".
        assert utils.is_skipped_file(site + "mypackage/../torch/nn/functional.py")
        assert not utils.is_skipped_file(site + "torch/../mypackage/model.py")


def test_cdynamo_imported_through_a_dotted_path_is_not_traced():
    own = os.path.dirname(utils.__file__)
    assert utils.is_skipped_file(os.path.join(own, "..", os.path.basename(own), "utils.py"))


def test_default_skip_dirs():
    assert utils.is_skipped_file(torch.nn.functional.__file__)
    assert utils.is_skipped_file(os.__file__)
    assert utils.is_skipped_file(registry.__file__)
    assert not utils.is_skipped_file(__file__)
    assert not utils.is_skipped_file(cdynamo.demo.__file__ if hasattr(cdynamo, "demo") else
                                     os.path.join(os.path.dirname(cdynamo.__file__), "demo.py"))


def add_then_relu(x, y):
    return torch.relu(x + y) * 2


def test_call_backend_returns_compiled_callable():
    gm = torch.fx.symbolic_trace(add_then_relu)
    x, y = torch.randn(3), torch.randn(3)
    for backend in ("eager", "aot_eager", CompileCounter()):
        compiled = registry.call_backend(backend, gm, [x, y])
        assert same(compiled(x, y), add_then_relu(x, y))


def test_eager_backend_returns_bound_forward():
    gm = torch.fx.symbolic_trace(add_then_relu)
    assert registry.lookup_backend("eager")(gm, []) == gm.forward


def test_aot_eager_backward_matches_eager():
    gm = torch.fx.symbolic_trace(add_then_relu)
    x, y = torch.randn(4, requires_grad=True), torch.randn(4)
    x_eager = x.detach().clone().requires_grad_()
    compiled = registry.call_backend("aot_eager", gm, [x, y])
    compiled(x, y).sum().backward()
    add_then_relu(x_eager, y).sum().backward()
    assert same(x.grad, x_eager.grad)


def test_call_backend_wraps_failures_naming_the_backend():
    def exploding_backend(gm, example_inputs):
        raise ValueError("boom")

    gm = torch.fx.symbolic_trace(add_then_relu)
    with pytest.raises(exc.BackendCompilerFailed, match="exploding_backend.*ValueError: boom") as raised:
        registry.call_backend(exploding_backend, gm, [])
    assert raised.value.backend_name == "exploding_backend"
    assert isinstance(raised.value.__cause__, ValueError)

    with pytest.raises(exc.BackendCompilerFailed, match="str, not a callable"):
        registry.call_backend(lambda gm, example_inputs: "oops", gm, [])

    class CallableBackend:
        def __call__(self, gm, example_inputs):
            raise RuntimeError("no")

    with pytest.raises(exc.BackendCompilerFailed, match="CallableBackend"):
        registry.call_backend(CallableBackend(), gm, [])


def test_call_backend_lets_cdynamo_errors_through():
    def nested(gm, example_inputs):
        raise exc.Unsupported("nested")

    with pytest.raises(exc.Unsupported):
        registry.call_backend(nested, torch.fx.symbolic_trace(add_then_relu), [])


def test_lookup_backend():
    assert registry.lookup_backend(add_then_relu) is add_then_relu
    with pytest.raises(exc.InvalidBackend, match="aot_eager, cudagraphs, eager"):
        registry.lookup_backend("nope")
    with pytest.raises(TypeError):
        registry.lookup_backend(3)


def test_testing_backends_count_and_record():
    gm = torch.fx.symbolic_trace(add_then_relu)
    x, y = torch.randn(3), torch.randn(3)
    counter = CompileCounter()
    counter(gm, [x, y])
    counter(gm, [x, y])
    assert (counter.frame_count, counter.op_count) == (2, 6)
    counter.clear()
    assert (counter.frame_count, counter.op_count) == (0, 0)

    with_backend = CompileCounterWithBackend("aot_eager")
    assert same(with_backend(gm, [x, y])(x, y), add_then_relu(x, y))
    assert (with_backend.frame_count, with_backend.graphs) == (1, [gm])

    recorder = EagerAndRecordGraphs()
    recorder(gm, [x, y])
    assert recorder.graphs == [gm]


def test_same():
    a = torch.randn(3)
    assert same(a, a + 1e-6)
    assert not same(a, a + 1e-2)
    assert not same(a, a.double())
    assert not same(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert same(float("nan"), float("nan"))
    assert same((a, [1, {"k": a}], None), (a.clone(), [1, {"k": a}], None))
    assert not same((a,), [a])
    assert same(a.shape, (3,))
    assert not same(1, True)


def test_backends_returning_forward_of_a_lazy_graph_module_get_the_generated_code():
    from cdynamo import _graph_module
    from cdynamo.backends import registry

    graph = torch.fx.symbolic_trace(lambda x: x + 1).graph
    gm = _graph_module.make_graph_module(torch.nn.Module(), graph, "f")
    compiled = registry.call_backend(lambda g, inputs: g.forward, gm, [torch.ones(2)])
    assert getattr(compiled, "__func__", None) is not getattr(type(gm), "_lazy_forward", object())
    assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))


def _defining_file(library_path, symbol):
    """The file that defines `symbol` as library_path's own lookup scope resolves it."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                    ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

    libdl = ctypes.CDLL(None)
    libdl.dlsym.restype = ctypes.c_void_p
    libdl.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    libdl.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    handle = ctypes.CDLL(library_path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    address = libdl.dlsym(handle._handle, symbol)
    assert address, symbol
    info = DlInfo()
    assert libdl.dladdr(address, ctypes.byref(info))
    return os.path.realpath(info.fname.decode())


def test_extension_shares_torchs_cpp_runtime():
    # A second, static libstdc++ inside the extension crashed the first `stream << number`.
    from cdynamo import _C

    torch_cpu = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    for symbol in (b"_ZNSt6locale7classicEv", b"_ZNSo9_M_insertIlEERSoT_"):
        ours = _defining_file(_C.__file__, symbol)
        assert ours != os.path.realpath(_C.__file__)
        assert ours == _defining_file(torch_cpu, symbol)
