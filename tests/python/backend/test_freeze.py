"""config.freeze_constants: kernels computed from parameters and buffers alone run once and their
results are kept while those tensors keep their storage and version."""
import pytest
import torch
import torch.nn as nn

import cdynamo
from cpp_support import T, kernel_cache_dir  # noqa: F401


class ScaledLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 16))
        self.register_buffer("scale", torch.rand(8, 1) + 0.5)

    def forward(self, x):
        # weight * scale reads constants only: one kernel the runtime may keep.
        return torch.relu(x @ (self.weight * self.scale).t())


@pytest.fixture(autouse=True)
def fresh():
    cdynamo.reset()
    with cdynamo.config.patch(suppress_errors=False):
        yield
    cdynamo.reset()


def compiled_pair(freeze):
    model = ScaledLinear().eval()
    with cdynamo.config.patch(freeze_constants=freeze):
        compiled = cdynamo.optimize("inductor")(model)
        x = torch.randn(4, 16)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x))
    return model, compiled, x


def test_schedule_marks_constant_only_kernels():
    gm = torch.fx.symbolic_trace(ScaledLinear())
    from cdynamo.inductor.compile_fx import aten_graph

    aten = aten_graph(gm, [torch.randn(4, 16)])
    assert " cached" not in T.schedule(aten)
    frozen = T.schedule(aten, {"cache_constant_kernels": True})
    assert sum(line.endswith(" cached") for line in frozen.splitlines()) == 1


def test_in_place_changes_through_torch_are_seen():
    model, compiled, x = compiled_pair(freeze=True)
    with torch.no_grad():
        model.weight.mul_(3)  # bumps the version counter
        torch.testing.assert_close(compiled(x), model(x))
        model.scale.fill_(2.0)
        torch.testing.assert_close(compiled(x), model(x))
        model.load_state_dict(ScaledLinear().state_dict())
        torch.testing.assert_close(compiled(x), model(x))


def test_changes_through_data_are_not_seen_when_frozen_and_seen_otherwise():
    model, compiled, x = compiled_pair(freeze=True)
    with torch.no_grad():
        before = compiled(x)
        model.weight.data.mul_(3)  # no version bump: the kept product is reused, as documented
        torch.testing.assert_close(compiled(x), before)
    model, compiled, x = compiled_pair(freeze=False)
    with torch.no_grad():
        model.weight.data.mul_(3)
        torch.testing.assert_close(compiled(x), model(x))


def test_kept_results_are_not_handed_out():
    class ReturnsDerived(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(5))

        def forward(self, x):
            return x + 1, self.weight * 2

    model = ReturnsDerived()
    with cdynamo.config.patch(freeze_constants=True), torch.no_grad():
        compiled = cdynamo.optimize("inductor")(model)
        _, derived = compiled(torch.randn(5))
        derived.add_(100)  # the caller owns what it gets
        _, again = compiled(torch.randn(5))
    torch.testing.assert_close(again, model.weight * 2)
