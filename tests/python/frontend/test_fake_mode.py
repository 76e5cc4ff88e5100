"""The fake-tensor mode that traces share (one per thread): remembered fakes are checked against
their tensors, so tensors changed in place and fakes changed by earlier traces are converted
again; torch.nn layers run on fake twins that leave the real layer untouched."""
import threading

import torch

import cdynamo
from cdynamo import _fake_mode


def test_one_mode_per_thread_until_reset():
    mode = _fake_mode.new_fake_mode()
    assert _fake_mode.new_fake_mode() is mode
    other = []
    thread = threading.Thread(target=lambda: other.append(_fake_mode.new_fake_mode()))
    thread.start()
    thread.join()
    assert other[0] is not mode
    cdynamo.reset()
    assert _fake_mode.new_fake_mode() is not mode


def test_a_remembered_fake_is_reused_while_it_matches():
    mode = _fake_mode.new_fake_mode()
    t = torch.randn(2, 3)
    assert _fake_mode.to_fake(mode, t) is _fake_mode.to_fake(mode, t)


def test_tensors_changed_in_place_are_converted_again():
    mode = _fake_mode.new_fake_mode()
    t = torch.randn(2, 3)
    _fake_mode.to_fake(mode, t)
    t.resize_(4, 5)
    assert _fake_mode.to_fake(mode, t).shape == (4, 5)
    t.requires_grad_(True)
    assert _fake_mode.to_fake(mode, t).requires_grad
    p = torch.nn.Parameter(torch.randn(3))
    _fake_mode.to_fake(mode, p)
    p.data = torch.randn(6, 2)
    assert _fake_mode.to_fake(mode, p).shape == (6, 2)


def test_fakes_changed_by_an_earlier_trace_are_converted_again():
    mode = _fake_mode.new_fake_mode()
    t = torch.randn(2, 3)
    fake = _fake_mode.to_fake(mode, t)
    with mode:
        fake.unsqueeze_(0)  # what a traced in-place op does to the fake only
    again = _fake_mode.to_fake(mode, t)
    assert again.shape == (2, 3) and again.stride() == (3, 1)


def test_layers_run_on_fake_twins():
    mode = _fake_mode.new_fake_mode()
    layer = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3)).eval()
    before = dict(layer.__dict__)
    weight = layer[0].weight
    twin = _fake_mode.fake_module(mode, layer)
    with mode:
        out = twin(_fake_mode.to_fake(mode, torch.randn(2, 4)))
    assert out.shape == (2, 3) and isinstance(twin[0].weight, torch.nn.Parameter)
    assert twin[0].weight is not weight and type(twin[0].weight).__name__ == "FakeTensor"
    assert layer.__dict__ == before and layer[0].weight is weight and type(weight) is torch.nn.Parameter
    twin.training = True  # attributes set on the twin stay there
    assert not layer.training


def test_compiled_layers_follow_parameter_changes():
    layer = torch.nn.Linear(4, 4)

    def f(x):
        return layer(x) * 2

    compiled = cdynamo.optimize("eager")(f)
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), f(x))
        layer.weight.data = torch.randn(4, 4)
        cdynamo.reset()
        torch.testing.assert_close(compiled(x), f(x))
