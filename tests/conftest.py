"""Shared fixtures: one real Ray session for all integration tests; quiet TensorFlow."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest


@pytest.fixture(scope="session")
def ray_session():
    """A real embedded Ray started once per test session (2 CPUs, as on the CI machine)."""
    import ray

    from relayrl.runtime.ray_workers import init_ray

    init_ray()
    yield ray
    ray.shutdown()
