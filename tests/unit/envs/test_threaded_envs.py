"""ThreadedVectorEnv: the same results as gymnasium's SyncVectorEnv (NEXT_STEP autoreset included),
with every sub-env's step truly in flight at the same time."""

import threading

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.config import Config
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.envs.make import make_vector_env
from relayrl.envs.threaded import ThreadedVectorEnv
from relayrl.models import networks
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings
from tests.helpers.fakes import CountdownEnv


def test_matches_sync_vector_env_across_autoresets():
    fns = [lambda i=i: CountdownEnv({"terminate_at": 2 + i, "truncate_at": 4}) for i in range(3)]
    sync, threaded = gym.vector.SyncVectorEnv(fns), ThreadedVectorEnv(fns, num_threads=3)
    for a, b in zip(sync.reset(seed=1), threaded.reset(seed=1)):
        np.testing.assert_equal(a, b)
    for _ in range(
        9
    ):  # crosses terminations (envs 0, 1), a truncation (env 2) and the reset steps after them
        actions = np.array([0, 1, 0])
        for a, b in zip(sync.step(actions), threaded.step(actions)):
            np.testing.assert_equal(a, b)
    threaded.close()
    sync.close()


class BarrierEnv(CountdownEnv):
    """step() returns only once `parties` steps wait together: it deadlocks (and the barrier times
    out) unless the vector env really has all its envs in flight at once."""

    def __init__(self, env_config):
        super().__init__(env_config)
        self.barrier = env_config["barrier"]

    def step(self, action):
        self.barrier.wait(timeout=10)
        return super().step(action)


def test_all_envs_are_in_flight_together():
    barrier = threading.Barrier(8)
    env = make_vector_env(BarrierEnv, {"barrier": barrier, "terminate_at": 50}, num_envs=8, num_threads=8)
    assert isinstance(env, ThreadedVectorEnv)
    env.reset(seed=0)
    for _ in range(3):
        _, rewards, *_ = env.step(np.zeros(8, np.int64))
        assert rewards.tolist() == [1.0] * 8
    assert not barrier.broken
    env.close()


def test_rollout_worker_fragments_are_identical_with_threads():
    spec = networks.spec_from_spaces(
        CountdownEnv().observation_space, CountdownEnv().action_space, DEFAULT_MODEL
    )
    weights = networks.init_weights(spec, np.random.default_rng(0))
    fragments = []
    for threads in (0, 4):
        settings = SamplerSettings(
            env=CountdownEnv,
            env_config={"terminate_at": 5},
            num_envs=4,
            fragment_length=12,
            spec=spec,
            seed=3,
            num_env_threads=threads,
        )
        worker = RolloutWorker(settings)
        worker.set_weights(weights, 0)
        fragments.append(worker.sample())
        worker.stop()
    for key in fragments[0].data:
        np.testing.assert_array_equal(fragments[0].data[key], fragments[1].data[key])
    np.testing.assert_array_equal(fragments[0].episode_returns, fragments[1].episode_returns)


def test_config_field_is_checked():
    config = Config().rollouts(num_env_threads=32)
    assert config.num_env_threads == 32
    with pytest.raises(ValueError, match=r"num_env_threads = -1 is invalid: allowed: an integer >= 0"):
        Config().rollouts(num_env_threads=-1)
