"""Shared fixtures for the end-to-end tests: every test starts from empty caches and counters,
with errors raised rather than hidden behind eager fallback."""
import pytest

import cdynamo
from cdynamo import config
from cdynamo.backends import registry
from cdynamo.utils import counters


@pytest.fixture(autouse=True)
def fresh_cdynamo():
    cdynamo.reset()
    counters.clear()
    with config.patch(suppress_errors=False):
        yield
    cdynamo.reset()
    counters.clear()


@pytest.fixture
def restore_backend_registry():
    """Lets a test register backends without leaking them into other tests."""
    saved_backends, saved_tags = dict(registry._BACKENDS), dict(registry._TAGS)
    yield
    registry._BACKENDS.clear()
    registry._BACKENDS.update(saved_backends)
    registry._TAGS.clear()
    registry._TAGS.update(saved_tags)
