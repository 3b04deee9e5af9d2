"""Ape-X's config rules: a shard no worker feeds would keep the learner waiting forever (before this rule,
`--set num_replay_shards=3` with 2 workers ran a million steps without one update)."""

import pytest

from relayrl.algorithms.apex import ApeXConfig


def test_more_shards_than_workers_is_refused_in_one_line():
    config = ApeXConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2)
    config.training(num_replay_shards=3)
    with pytest.raises(
        ValueError, match=r"num_replay_shards = 3 is invalid: .* to num_rollout_workers \(2\)"
    ):
        config.validate()
    config.training(num_replay_shards=2).validate()


def test_each_worker_warms_up_from_the_initial_epsilon_to_its_own():
    """Worker i's epsilon falls linearly from exploration_initial_eps to eps_i = 0.4^(1 + 7 i / (N - 1)) over
    exploration_timesteps, then stays there."""
    config = ApeXConfig().rollouts(num_rollout_workers=3)
    config.training(apex_epsilon=0.4, apex_alpha=7.0, exploration_initial_eps=1.0, exploration_timesteps=1000)
    own = [0.4, 0.4**4.5, 0.4**8]
    for i, eps in enumerate(own):
        assert config.worker_epsilon(i, 0) == pytest.approx(1.0)
        assert config.worker_epsilon(i, 500) == pytest.approx((1.0 + eps) / 2)
        assert config.worker_epsilon(i, 1000) == pytest.approx(eps)
        assert config.worker_epsilon(i, 10**6) == pytest.approx(eps)


def test_the_unused_final_epsilon_is_refused():
    """Ape-X's workers end their warm-up at their own epsilons: a final epsilon would be silently ignored."""
    config = ApeXConfig().environment("CartPole-v1").training(exploration_final_eps=0.05)
    with pytest.raises(ValueError, match=r"exploration_final_eps = 0.05 is invalid: allowed: 0.02 \(unused"):
        config.validate()
