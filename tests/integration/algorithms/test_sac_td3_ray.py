"""SAC and TD3 on real Ray actors (2 workers): transitions from both workers reach replay, the learner
trains at the replay ratio, the new actor weights reach the workers, and TD3's workers explore with
their own noise scales."""

import numpy as np
import pytest

from relayrl import SACConfig, TD3Config


def build(config_class, **training):
    config = (
        config_class()
        .environment("Pendulum-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=2, rollout_fragment_length=16)
        .training(
            model={"fcnet_hiddens": [16], "fcnet_activation": "relu"},
            critic_hiddens=[16],
            train_batch_size=32,
            learning_starts=64,
            **training,
        )
        .debugging(seed=3)
    )
    return config.build()


@pytest.mark.parametrize(
    "config_class, training",
    [(SACConfig, {}), (TD3Config, {"exploration_noise_max": 0.4})],
    ids=["sac", "td3"],
)
def test_two_workers_fill_replay_and_learn(config_class, training, ray_session):
    algo = build(config_class, **training)
    try:
        for _ in range(3):
            result = algo.train()
        assert result["workers/healthy"] == 2
        # 3 iterations x 2 workers x 2 envs x 16 steps, no episode ended (Pendulum truncates at 200)
        assert result["learner/replay_size"] == 192
        assert (
            result["learner/num_updates_total"] == 192
        )  # replay ratio 1 from the first iteration (>= 64 steps)
        algo.workers.sample()  # workers pull the latest version when they next sample
        learner_weights = algo.learner.get_weights()
        for actor in algo.workers.actors:
            weights, version = ray_session.get(actor.get_weights.remote())
            assert version == algo.weights_version
            for a, b in zip(weights, learner_weights):
                np.testing.assert_array_equal(a, b)
        if config_class is TD3Config:
            sigmas = ray_session.get(
                [
                    a.__ray_call__.remote(lambda self: float(np.exp(self.policy._sigma_log[0])))
                    for a in algo.workers.actors
                ]
            )
            np.testing.assert_allclose(sorted(sigmas), [0.1, 0.4], rtol=1e-5)
    finally:
        algo.stop()
