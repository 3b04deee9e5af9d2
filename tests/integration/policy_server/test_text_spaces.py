"""Text observation and action spaces through the policy server with a user codec: strings on the
wire both ways, PPO learns the text task (random replies score 2 of 8)."""

import sys
import threading

import gymnasium as gym
import pytest

from tests.helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "examples"))

import text_commands  # noqa: E402  (registers TextCommands-v0)

from relayrl import PPOConfig
from relayrl.envs.text import encoded_spaces  # noqa: E402
from relayrl.policy_server import PolicyClient, PolicyServerError  # noqa: E402
from relayrl.policy_server.serve import ServedAlgorithm  # noqa: E402


def text_config():
    return (
        PPOConfig()
        .environment("TextCommands-v0")
        .training(train_batch_size=256, sgd_minibatch_size=64, lr=3e-3, gamma=0.5)
        .debugging(seed=0)
    )


def test_text_spaces_need_a_codec():
    with pytest.raises(ValueError, match="observation space Text.* is Text: pass a codec"):
        ServedAlgorithm(text_config())
    with pytest.raises(ValueError, match="must set action_space"):
        encoded_spaces(
            gym.spaces.Discrete(2), gym.spaces.Text(5), type("NoSpace", (text_commands.TextCodec,), {})()
        )


def test_ppo_learns_a_text_task_through_the_server():
    served = ServedAlgorithm(text_config(), codec=text_commands.CommandCodec()).start()
    stop, failures = threading.Event(), []

    def clients():
        while not stop.is_set():
            try:
                text_commands.run(served.url, episodes=20)
            except (OSError, PolicyServerError) as exc:
                if not stop.is_set():  # mid-test: a waiting train() raises ServerStopped, not waits
                    failures.append(exc)
                    served.episodes.stop()
                return

    thread = threading.Thread(target=clients)
    thread.start()
    try:
        client = PolicyClient(served.url)
        eid = client.start_episode()
        reply = client.get_action(eid, "please go left now")
        assert reply in text_commands.REPLIES
        with pytest.raises(PolicyServerError, match="observation must be a string in Text"):
            client.get_action(eid, [1.0, 2.0])
        with pytest.raises(PolicyServerError, match="observation must be a string in Text"):
            client.get_action(eid, "UPPER CASE IS NOT IN THE CHARSET")
        client.end_episode(eid, "done")
        for _ in range(60):
            result = served.train()
            if result["episode_reward_mean"] >= 7.0:
                break
        assert result["episode_reward_mean"] >= 7.0, result
        actions = [client.get_action(e, "go up") for e in [client.start_episode() for _ in range(3)]]
        assert set(actions) <= set(text_commands.REPLIES)
    finally:
        stop.set()
        served.stop()
        thread.join(timeout=30)
        assert not failures, f"the client thread failed: {failures[0]!r}"
