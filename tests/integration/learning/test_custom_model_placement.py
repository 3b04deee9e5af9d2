"""Your own tf.keras.Model across processes: in Ray rollout workers and a learner actor (a class by import
path, and a class no import reaches, which Ray pickles by value as it does a script's __main__ class), in
A3C's and Ape-X's workers, and under a MirroredStrategy over 2 logical CPUs (equal to one replica)."""

import json
import os
import subprocess
import sys

import numpy as np

from relayrl import A3CConfig, ApeXConfig, PPOConfig
from tests.helpers import custom_models as M
from tests.helpers.paths import HELPERS, ROOT

SMALL = dict(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1)


def test_mirrored_update_of_a_custom_model_equals_one_replica():
    script = HELPERS / "mirrored_custom_model_check.py"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for algo in ("ppo", "dqn"):
        assert out[algo]["replicas"] == [1, 2]
        assert out[algo]["max_weight_change"] > 1e-4, out  # the update really moved the weights
        assert out[algo]["max_weight_diff"] < 1e-5, out


def local_class():
    class ScriptNet(M.PolicyValueNet):  # qualname '...<locals>.ScriptNet': no import finds it
        pass

    return ScriptNet


def test_learner_actor_and_workers_train_a_class_pickled_by_value(ray_session):
    """(Classes an import reaches travel by reference: the A3C and Ape-X tests below.)"""
    model = local_class()
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=4)
        .resources(learner_placement="actor")
        .training(model={"custom_model": model}, **SMALL)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.learner.placement["pid"] != os.getpid()
        before = algo.learner.get_weights()
        for _ in range(2):
            result = algo.train()
        assert np.isfinite(result["learner/total_loss"]) and result["weights_version"] == 2
        after = algo.learner.get_weights()
        assert any(not np.allclose(a, b) for a, b in zip(before, after))
        fragment = algo.workers.sample()[0]  # the worker acts with the model it was sent, at this version
        assert fragment.version == algo.weights_version and fragment.env_steps > 0
        weights, _ = ray_session.get(algo.workers.actors[0].get_weights.remote())
        for a, b in zip(weights, after):
            np.testing.assert_array_equal(a, b)
    finally:
        algo.stop()


def test_a3c_workers_compute_gradients_of_a_custom_model(ray_session):
    config = (
        A3CConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=2, rollout_fragment_length=8)
        .training(train_batch_size=64, model={"custom_model": M.PolicyValueNet})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["learner/updates"] >= 1 and np.isfinite(result["learner/grad_gnorm"])


def test_apex_trains_a_custom_q_network(ray_session):
    config = (
        ApeXConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=2, rollout_fragment_length=16)
        .training(
            learning_starts=32,
            train_batch_size=16,
            updates_per_iteration=2,
            worker_cache_rows=16,
            num_replay_shards=1,
            dueling=False,
            model={"custom_model": M.QNetwork},
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(20):
            result = algo.train()
            if "learner/grad_gnorm" in result:
                break
    finally:
        algo.stop()
    assert np.isfinite(result["learner/grad_gnorm"]), result
