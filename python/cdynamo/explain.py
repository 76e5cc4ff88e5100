"""explain(fn)(*args): what cdynamo captures from one call of fn: the graphs, the graph breaks and
their reasons, like torch._dynamo.explain. Runs fn once (eager kernels) after reset()."""
import dataclasses

from . import utils
from .eval_frame import optimize, reset


@dataclasses.dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list  # one string per graph break: the construct and the user's file:line
    op_count: int
    ops_per_graph: list  # the call targets of each graph, in order
    out: object = None  # what fn returned

    def __str__(self):
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
            "Break Reasons:",
        ]
        lines += [f"  {i + 1}. {reason}" for i, reason in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Graph {i + 1}: " + ", ".join(ops))
        return "\n".join(lines)


def explain(fn):
    """explain(fn)(*args, **kwargs) -> ExplainOutput. Clears every compiled entry first (reset())."""

    def run(*args, **kwargs):
        graphs = []

        def record(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        reset()
        before = dict(utils.counters["graph_break"])
        out = optimize(record)(fn)(*args, **kwargs)
        after = utils.counters["graph_break"]
        reasons = []
        for reason, count in after.items():
            reasons += [reason] * (count - before.get(reason, 0))
        ops_per_graph = [
            [str(node.target) for node in gm.graph.nodes if node.op in utils.CALL_OPS] for gm in graphs
        ]
        return ExplainOutput(
            graphs=graphs,
            graph_count=len(graphs),
            graph_break_count=len(reasons),
            break_reasons=reasons,
            op_count=sum(len(ops) for ops in ops_per_graph),
            ops_per_graph=ops_per_graph,
            out=out,
        )

    return run
