"""One way to build a learner: Algorithm.make_learner builds every algorithm's learner from its build_learner,
so `learner_placement="actor"` puts it in a Ray actor and `eager=True` runs its update op by op, for every
algorithm in the registry. A3C and tabular Q-learning, whose learners cannot follow these settings, refuse
them in one line naming the field."""

import os

import numpy as np
import pytest

from relayrl.algorithms import REGISTRY, config_class
from relayrl.models.tf_import import tf

TINY = {"fcnet_hiddens": [16]}
OFF_POLICY = dict(learning_starts=16, train_batch_size=16, model=TINY)
CONTINUOUS = dict(OFF_POLICY, critic_hiddens=[16], replay_ratio=0.25)  # 4 updates in the first iteration
# Each does gradient steps in its first iteration (Ape-X: once its replay shards hold a minibatch).
SETTINGS = {
    "ppo": ("CartPole-v1", {}, dict(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1, model=TINY)),
    "a2c": ("CartPole-v1", {}, dict(train_batch_size=64, model=TINY)),
    "reinforce": ("CartPole-v1", {}, dict(train_batch_size=64, model=TINY)),
    "impala": ("CartPole-v1", dict(rollout_fragment_length=16), dict(train_batch_size=64, model=TINY)),
    "dqn": ("CartPole-v1", dict(num_envs_per_worker=1, rollout_fragment_length=32), OFF_POLICY),
    "apex": (
        "CartPole-v1",
        dict(num_rollout_workers=1, num_envs_per_worker=2, rollout_fragment_length=16),
        # prioritized (Ape-X's default): the actor learner sends its TD errors back as new priorities
        dict(OFF_POLICY, num_replay_shards=1, worker_cache_rows=16, updates_per_iteration=2),
    ),
    "sac": ("Pendulum-v1", dict(rollout_fragment_length=32), CONTINUOUS),
    "td3": ("Pendulum-v1", dict(rollout_fragment_length=32), CONTINUOUS),
}
# what their learners are, and so which settings they refuse
REFUSING = {
    "a3c": ("CartPole-v1", "A3C's learner is its parameter server"),
    "qlearning": ("FrozenLake-v1", "tabular Q-learning updates a numpy table on the driver"),
}


def build(algo: str, **resources):
    env, rollouts, training = SETTINGS[algo]
    config = config_class(algo)().environment(env).rollouts(**{"num_rollout_workers": 0, **rollouts})
    eager = resources.pop("eager", False)
    return config.training(**training).resources(**resources).debugging(seed=0, eager=eager).build()


def train_until_updated(algo) -> dict:
    """train() until an iteration ran gradient steps (its learner reports grad_gnorm)."""
    for _ in range(20):
        result = algo.train()
        if "learner/grad_gnorm" in result:
            return result
    raise AssertionError(f"no gradient step in 20 iterations of {algo.name}")


def test_every_registered_algorithm_is_covered():
    assert set(SETTINGS) | set(REFUSING) == set(REGISTRY) and not set(SETTINGS) & set(REFUSING)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_actor_placement_puts_the_learner_in_a_ray_actor(ray_session, name):
    """With eager=True too: the actor builds the learner eagerly in its own process (one actor start per
    algorithm, the slow part here)."""
    algo = build(name, learner_placement="actor", eager=True)
    try:
        placement = algo.learner.placement  # reported by the learner's own process
        assert placement["pid"] != os.getpid() and placement["eager"] is True
        before = algo.learner.get_weights()
        result = train_until_updated(algo)
        assert np.isfinite(result["learner/grad_gnorm"])
        moved = max(float(np.abs(w - w0).max()) for w, w0 in zip(algo.learner.get_weights(), before))
        assert moved > 0  # the actor's update changed the weights the driver reads back
    finally:
        algo.stop()


@pytest.mark.parametrize("name", sorted(set(SETTINGS) - {"apex"}))  # Ape-X builds DQN's learner
def test_eager_runs_the_update_op_by_op_on_the_driver(name):
    algo = build(name, eager=True)
    try:
        assert algo.learner.placement["pid"] == os.getpid()  # 'auto' without GPUs: the driver
        assert algo.learner.placement["eager"] is True and tf.config.functions_run_eagerly()
        result = train_until_updated(algo)
        assert np.isfinite(result["learner/grad_gnorm"])
    finally:
        algo.stop()
    assert tf.config.functions_run_eagerly() is False  # stop() switches the process back


@pytest.mark.parametrize("name", sorted(REFUSING))
@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("learner_placement", "actor", "allowed: 'auto'"),
        ("eager", True, "allowed: False"),
        ("num_gpus", 1, "allowed: 0"),
        ("learner_threads", 2, "allowed: 'auto'"),
    ],
)
def test_learner_settings_that_cannot_apply_are_refused(name, field, value, allowed):
    env, why = REFUSING[name]
    config = config_class(name)().environment(env)
    with pytest.raises(ValueError) as refused:
        config.update_from_dict({field: value})
        config.validate()
    message = str(refused.value)
    assert "\n" not in message and message.startswith(
        f"{type(config).__name__}.{field} = {value!r} is invalid"
    )
    assert allowed in message and why in message


def test_prioritized_dqn_gets_its_priorities_from_a_learner_actor(ray_session):
    config = config_class("dqn")().environment("CartPole-v1").rollouts(**SETTINGS["dqn"][1])
    config.training(**OFF_POLICY, prioritized_replay=True).resources(learner_placement="actor")
    algo = config.debugging(seed=0).build()
    try:
        train_until_updated(algo)
        sampled = algo.learner.last_rows  # the TD errors of the last minibatch, from the actor's process
        assert sampled is not None and np.all(np.isfinite(sampled))
        priorities = algo.replay.tree.get(np.arange(len(algo.replay)))
        assert len(np.unique(priorities)) > 1  # new rows get the max priority; updated rows their TD error
    finally:
        algo.stop()


@pytest.mark.parametrize("name", ["a2c", "ppo"])
def test_gradients_mode_refuses_a_learner_actor(name):
    """In update_mode='gradients' the driver applies the workers' gradients: an actor learner is refused."""
    config = config_class(name)().environment("CartPole-v1").rollouts(num_rollout_workers=1)
    config.update_from_dict({"update_mode": "gradients", "learner_placement": "actor"})
    with pytest.raises(ValueError, match=r"\.learner_placement = 'actor' is invalid: allowed: 'driver' \("):
        config.validate()
    config.update_from_dict({"learner_placement": "auto", "num_gpus": 1})
    with pytest.raises(
        ValueError, match=r"\.num_gpus = 1 is invalid: allowed: 0 \(update_mode = 'gradients'"
    ):
        config.validate()
