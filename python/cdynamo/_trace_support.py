"""Where the C++ core finds its Python helpers (call_helper / import_attr of "cdynamo._trace_support", NAME): each
re-exported from the module of its concern. Assumes csrc/ names only these; Python code imports the modules below."""
# The helpers, by concern (each file opens with what it does and assumes):
#   _trace_errors.py   TraceUnsupported (a graph break, with why), TraceOpError (the traced code's own exception)
#   _fake_mode.py      the FakeTensorMode a thread's traces share; real tensors and nn layers turned into fakes
#   _fake_runs.py      an operation run on fakes, its failures turned into graph breaks, exceptions or a retrace
#   _call_policy.py    classify_callable: what the interpreter does with a call it has no rule of its own for
#   _class_queries.py  questions the stand-ins (_polyfills) ask about a class, answered at trace time
#   _module_calls.py   how a call of an nn.Module is traced (call_module node or traced through; its hooks)
#   _trace_objects.py  objects leaving a trace: rebuilt by the transformed code, or changed in place
#   _python_rules.py   CPython's operator tables, dict views and relative imports, as the interpreter reads them
#   _graph_module.py   the GraphModule a trace's graph becomes
from ._class_queries import class_making_metaclass  # noqa: F401
from ._call_policy import IDENTITY_CONSTANT_TYPES, classify_callable, silent_log_level  # noqa: F401
from ._fake_mode import data_assignment_refusal, fake_module, new_fake_mode, to_fake  # noqa: F401
from ._fake_runs import fake_run  # noqa: F401
from ._graph_module import make_graph_module  # noqa: F401
from ._module_calls import (is_compiled_module, is_leaf_module, is_nn_layer_method, module_has_state, module_slice,  # noqa: F401
                            module_hooks)
from ._python_rules import (as_dict_view, binary_operators, compare_operators, dict_view_types,  # noqa: F401
                            inplace_to_plain, resolve_relative_import, unary_operators)
from ._trace_errors import TraceUnsupported  # noqa: F401
from ._trace_objects import TracedContextToken, fill_object, new_objects, replace_contents  # noqa: F401

# Set by the frontend (compile_frame.cpp, on this module) while it compiles a frame again with
# operations of data-dependent output sizes breaking the graph; _fake_runs.fake_run reads it here.
data_dependent_ops_break = False
# Set by the frontend while a trace keeps Tensor.item() in the graph (config.capture_scalar_outputs,
# fullgraph=True); _fake_runs.fake_run reads it here.
scalar_outputs_captured = False


# Unused: nothing in csrc/, python/, tests/ or bench/ calls it (since the first commit); kept by the split.
def structseq_fields(value):
    """Field names of a torch.return_types result (e.g. values, indices), or None."""
    fields = getattr(type(value), "__match_args__", None)
    if isinstance(value, tuple) and fields:
        return list(fields)
    return None
