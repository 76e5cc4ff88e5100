"""Measurement primitives: error against the fp64 reference, casts, statistics, peak memory."""
import math
import subprocess
import sys

import pytest
import torch

from cdynamo.bench import measure


def test_relative_error_is_normalised_by_the_largest_reference_value():
    reference = (torch.tensor([1.0, -4.0], dtype=torch.float64), {"b": torch.tensor([0.0, 2.0])})
    actual = (torch.tensor([1.0, -3.96]), {"b": torch.tensor([0.01, 2.0])})
    # first tensor: 0.04 / 4; second: 0.01 / 2
    assert measure.max_relative_error(actual, reference) == pytest.approx(0.01)
    assert measure.max_relative_error(reference, reference) == 0.0


def test_relative_error_on_integers_is_exact_and_nan_is_reported():
    assert measure.max_relative_error(torch.tensor([1, 2]), torch.tensor([1, 2])) == 0.0
    assert measure.max_relative_error(torch.tensor([1, 3]), torch.tensor([1, 2])) == math.inf
    assert math.isnan(measure.max_relative_error(torch.tensor([math.nan]), torch.tensor([1.0])))
    with pytest.raises(ValueError, match="output tensors"):
        measure.max_relative_error((torch.ones(1),), (torch.ones(1), torch.ones(1)))


def test_cast_floats_leaves_integer_inputs_alone():
    cast = measure.cast_floats({"ids": torch.tensor([1]), "x": (torch.ones(2),)}, torch.float64)
    assert cast["ids"].dtype == torch.int64 and cast["x"][0].dtype == torch.float64


def test_fp64_reference_leaves_the_model_untouched():
    model = torch.nn.Linear(3, 2)
    inputs = (torch.randn(4, 3),)
    reference = measure.fp64_reference(model, inputs, train=False)
    assert reference.dtype == torch.float64 and model.weight.dtype == torch.float32
    assert measure.max_relative_error(model(*inputs), reference) < 1e-6


def test_train_step_returns_loss_and_every_gradient():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    result = measure.train_step(model, (torch.randn(4, 3),))
    assert result[0].dim() == 0 and len(result) == 1 + len(list(model.parameters()))


def test_sample_stats():
    assert measure.sample_stats([3.0, 1.0, 2.0, 5.0, 4.0]) == {"median": 3.0, "p25": 2.0, "p75": 4.0}
    assert measure.sample_stats([7.0]) == {"median": 7.0, "p25": 7.0, "p75": 7.0}


def test_peak_memory_sees_a_tensor_allocated_and_freed_inside():
    # In a fresh process, as the suite's workers are: in a long test process, pages freed by
    # earlier tests stay resident and a new tensor may reuse them without raising the RSS.
    code = (
        "import time, torch\n"
        "from cdynamo.bench import measure\n"
        "with measure.PeakMemory('cpu') as peak:\n"
        "    block = torch.ones(64 * 2**20 // 4)\n"
        "    time.sleep(0.05)\n"
        "    del block\n"
        "print(peak.peak_bytes)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(result.stdout.strip().splitlines()[-1]) >= 48 * 2**20