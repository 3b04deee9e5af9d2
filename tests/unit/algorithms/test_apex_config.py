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
