"""Learner placement: a Ray actor (the GPU path, exercised on CPU), MirroredStrategy equivalence with
2 logical CPU replicas, and clear errors when GPUs are asked for but absent."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from relayrl import PPOConfig
from tests.helpers.paths import HELPERS, ROOT

SMALL = dict(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=2)


def test_mirrored_update_on_two_replicas_equals_one_replica():
    script = HELPERS / "mirrored_update_check.py"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["replicas"] == [1, 2]
    assert out["max_weight_change"] > 1e-4  # the update really moved the weights
    assert out["max_weight_diff"] < 1e-5, out
    assert out["max_metric_diff"] < 1e-5, out


def test_learner_in_a_ray_actor_trains_and_feeds_workers(ray_session):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=4)
        .resources(learner_placement="actor")
        .training(**SMALL)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.learner.placement["pid"] != os.getpid()
        assert algo.learner.placement["replicas"] == 1
        for _ in range(2):
            result = algo.train()
        assert np.isfinite(result["learner/total_loss"]) and result["weights_version"] == 2
        fragment = algo.workers.sample()[0]
        assert fragment.version == algo.weights_version
        weights, _ = ray_session.get(algo.workers.actors[0].get_weights.remote())
        for a, b in zip(weights, algo.learner.get_weights()):
            np.testing.assert_array_equal(a, b)
    finally:
        algo.stop()


def test_gpu_requests_without_gpus_are_refused_clearly(ray_session):
    with pytest.raises(ValueError, match=r"num_gpus = 1 but the Ray cluster has 0 GPU"):
        PPOConfig().environment("CartPole-v1").resources(num_gpus=1).training(**SMALL).build()
    with pytest.raises(ValueError, match=r"num_gpus = 1 but TensorFlow sees 0 GPU"):
        PPOConfig().environment("CartPole-v1").resources(num_gpus=1, learner_placement="driver").training(
            **SMALL
        ).build()
