"""REINFORCE and A2C learn CartPole-v1 in-process (real training, fixed seeds)."""

import pytest

from relayrl import A2CConfig, REINFORCEConfig
from tests.learning.test_ppo_learning import train_until

pytestmark = pytest.mark.learning


def test_a2c_solves_cartpole_in_process():
    result = train_until(A2CConfig.from_tuned("CartPole-v1").debugging(seed=0))
    assert result["episode_reward_mean"] >= 475, result


def test_reinforce_with_baseline_reaches_400_in_process():
    result = train_until(REINFORCEConfig().environment("CartPole-v1").debugging(seed=0), threshold=400.0)
    assert result["episode_reward_mean"] >= 400, result
