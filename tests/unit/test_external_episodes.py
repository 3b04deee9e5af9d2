"""ExternalEpisodes (the policy server's runtime) builds the same advantages as a naive per-episode
GAE loop: terminated ends the return, truncated bootstraps from V(final obs), and a cut in the
middle of an open episode bootstraps from V(next obs) and keeps the open step for later."""
import time

import numpy as np
import pytest

from relayrl import networks
from relayrl.config import DEFAULT_MODEL
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.wire import RequestError
from tests.fakes import CountdownEnv
from tests.unit.test_rollout import GAMMA, LAM, C, episode_advantages


def constant_value_episodes(train_batch_size):
    env = CountdownEnv()
    spec = networks.spec_from_spaces(env.observation_space, env.action_space, DEFAULT_MODEL)
    episodes = ExternalEpisodes(spec, env.action_space, train_batch_size, GAMMA, LAM, seed=0)
    weights = networks.init_weights(spec, np.random.default_rng(0))
    vf_start = episodes.batcher.policy.net._vf_start
    for i in range(vf_start, len(weights)):
        weights[i] = np.zeros_like(weights[i])
    weights[-1][:] = C  # V(s) = C everywhere
    episodes.sync_weights(weights, 0)
    return episodes


def play(episodes, eid, steps, end=None):
    """`steps` actions with reward 1 after each; then end 'terminated' / 'truncated' / None (stays open)."""
    x = np.zeros(1, np.float32)
    for t in range(steps):
        episodes.get_action(eid, x + t, reward=1.0 if t > 0 else None)
    if end is not None:
        episodes.end_episode(eid, x + steps, truncated=end == "truncated", reward=1.0)
    else:
        episodes.log_returns(eid, 1.0)


def test_fragment_advantages_match_naive_gae():
    episodes = constant_value_episodes(train_batch_size=7)
    a, b, c = (episodes.start_episode(name) for name in ("a", "b", "c"))
    play(episodes, a, 3, "terminated")
    play(episodes, b, 2, "truncated")
    play(episodes, c, 3)  # open: 2 complete steps, the third awaits its next observation
    [fragment] = episodes.sample()
    expected = episode_advantages(2, terminated=False) + episode_advantages(3, True) + episode_advantages(2, False)
    np.testing.assert_allclose(fragment.data["advantages"], expected, rtol=1e-5)  # open episodes first, then ended
    np.testing.assert_allclose(fragment.data["value_targets"], np.asarray(expected) + C, rtol=1e-5)
    np.testing.assert_allclose(fragment.data["obs"][:, 0], [0, 1, 0, 1, 2, 0, 1])
    assert fragment.env_steps == 7 and fragment.version == 0
    assert sorted(fragment.episode_returns.tolist()) == [2.0, 3.0] and sorted(fragment.episode_lengths.tolist()) == [2, 3]
    # the open step of c completes on its next action and goes into the next fragment
    episodes.end_episode(c, np.full(1, 3.0, np.float32), truncated=False)
    assert episodes.status()["complete_steps_waiting"] == 1 and episodes.status()["open_episodes"] == 0
    episodes.stop()


def test_silent_episodes_expire_and_keep_their_complete_steps():
    episodes = constant_value_episodes(train_batch_size=100)
    episodes.idle_timeout_s = 0.01
    a = episodes.start_episode("a")
    play(episodes, a, 2)  # 1 complete step + 1 awaiting its outcome
    time.sleep(0.05)
    episodes.start_episode("b")  # the sweep runs here
    status = episodes.status()
    assert status["open_episodes"] == 1 and status["expired_episodes"] == 1
    assert status["complete_steps_waiting"] == 1  # kept; the step awaiting its outcome is gone
    with pytest.raises(RequestError, match="episode 'a' expired after 0.01 s without a request") as info:
        episodes.get_action(a, np.zeros(1, np.float32))
    assert info.value.status == 410
    episodes.stop()
