"""evaluate(explore=True) acts with the training exploration: TD3 with its Gaussian action noise (it used
to crash: the evaluation policy got no sigma, np.exp(None)); explore=False is deterministic."""

import numpy as np

from relayrl import TD3Config


def test_td3_evaluates_with_its_exploration_noise_and_without():
    config = TD3Config().environment("Pendulum-v1").rollouts(num_rollout_workers=0).debugging(seed=0)
    with config.training(exploration_noise=0.5).build() as algo:
        greedy = [algo.evaluate(num_episodes=1, seed=3)["episode_reward_mean"] for _ in range(2)]
        assert greedy[0] == greedy[1]  # deterministic actions, same seed: the same episode
        noisy = algo.evaluate(num_episodes=1, seed=3, explore=True)["episode_reward_mean"]
        assert np.isfinite(noisy) and noisy != greedy[0]
