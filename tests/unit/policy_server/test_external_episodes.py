"""ExternalEpisodes (the policy server's runtime) builds the same advantages as a naive per-episode
GAE loop: terminated ends the return, truncated bootstraps from V(final obs), and a cut in the
middle of an open episode bootstraps from V(next obs) and keeps the open step for later."""

import threading
import time

import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.wire import RequestError
from tests.helpers.fakes import CountdownEnv
from tests.unit.sampling.test_rollout import GAMMA, LAM, C, episode_advantages


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
    expected = (
        episode_advantages(2, terminated=False) + episode_advantages(3, True) + episode_advantages(2, False)
    )
    np.testing.assert_allclose(
        fragment.data["advantages"], expected, rtol=1e-5
    )  # open episodes first, then ended
    np.testing.assert_allclose(fragment.data["value_targets"], np.asarray(expected) + C, rtol=1e-5)
    np.testing.assert_allclose(fragment.data["obs"][:, 0], [0, 1, 0, 1, 2, 0, 1])
    assert fragment.env_steps == 7 and fragment.version == 0
    assert sorted(fragment.episode_returns.tolist()) == [2.0, 3.0] and sorted(
        fragment.episode_lengths.tolist()
    ) == [2, 3]
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


def test_a_full_server_evicts_the_episode_idle_longest_and_says_so():
    episodes = constant_value_episodes(train_batch_size=100)
    episodes.max_episodes = 3
    a, b, c = (episodes.start_episode(name) for name in ("a", "b", "c"))
    play(episodes, a, 2)  # a is now the most recently active; b the idlest
    episodes.start_episode("d")
    assert episodes.status()["evicted_episodes"] == 1 and episodes.status()["open_episodes"] == 3
    with pytest.raises(RequestError, match="episode 'b' was evicted: the server holds at most 3") as info:
        episodes.log_returns(b, 1.0)
    assert info.value.status == 410
    episodes.start_episode("e")  # c goes next; a, which is being played, stays
    play(episodes, a, 1)
    with pytest.raises(RequestError, match="episode 'c' was evicted"):
        episodes.get_action(c, np.zeros(1, np.float32))
    assert episodes.start_episode("b") == "b"  # an evicted id can be started afresh (evicting d)
    assert episodes.status()["evicted_episodes"] == 3
    # a's complete steps survived all that; no step of an evicted episode was completed
    assert episodes.status()["complete_steps_waiting"] == 2
    episodes.stop()


def test_unlearnable_episode_steps_are_dropped_with_a_warning_and_the_rest_learned(caplog):
    """Rewards each finite in float32 whose advantages would overflow the update's squares (1e20 per step),
    or whose return itself overflows (3e38 twice): those episodes are dropped by name, the others learned."""
    episodes = constant_value_episodes(train_batch_size=4)
    x = np.zeros(1, np.float32)
    for eid, reward in (("large", 1e20), ("overflowing", 3e38)):
        episodes.start_episode(eid)
        episodes.get_action(eid, x)
        episodes.get_action(eid, x + 1, reward=reward)
        episodes.end_episode(eid, x + 2, reward=reward)
    fine = episodes.start_episode("fine")
    play(episodes, fine, 2, "terminated")
    with caplog.at_level("WARNING", logger="relayrl.policy_server"):
        result = {}
        sampler = threading.Thread(target=lambda: result.update(fragment=episodes.sample()[0]))
        sampler.start()  # 6 complete steps wait, 4 are dropped: sample() waits for 2 more
        time.sleep(0.3)
        assert sampler.is_alive()
        more = episodes.start_episode("more")
        play(episodes, more, 2, "truncated")
        sampler.join(timeout=10)
    fragment = result["fragment"]
    expected = episode_advantages(2, terminated=True) + episode_advantages(2, terminated=False)
    np.testing.assert_allclose(fragment.data["advantages"], expected, rtol=1e-5)
    assert sorted(fragment.episode_returns.tolist()) == [2.0, 2.0]  # not the dropped episodes' returns
    assert episodes.status()["dropped_steps"] == 4
    warnings = [r.getMessage() for r in caplog.records if "dropping" in r.getMessage()]
    assert len(warnings) == 2 and "episode 'large'" in warnings[0] and "episode 'overflowing'" in warnings[1]
    assert "beyond +-" in warnings[0] and "advantages reach inf" in warnings[1]
    episodes.stop()


def test_rewards_adding_up_past_float32_within_one_step_are_refused():
    episodes = constant_value_episodes(train_batch_size=100)
    eid = episodes.start_episode()
    episodes.get_action(eid, np.zeros(1, np.float32))
    episodes.log_returns(eid, 3e38)
    with pytest.raises(RequestError, match="rewards since the last action add up to 6e\\+38, beyond") as info:
        episodes.log_returns(eid, 3e38)
    assert info.value.status == 400
    episodes.log_returns(eid, -3e38)  # the refused reward was not added
    episodes.stop()


def test_a_repeated_request_is_answered_again_and_applied_once():
    """A client that lost a reply sends the same request again (the same seq): the same action, no second
    step, no second reward. The fragment equals the one of the episode played without repetitions."""
    once, twice = constant_value_episodes(train_batch_size=3), constant_value_episodes(train_batch_size=3)
    x = np.zeros(1, np.float32)
    for episodes, repeat in ((once, False), (twice, True)):
        eid = episodes.start_episode("e", seq=2**52 + 5)
        if repeat:
            assert episodes.start_episode("e", seq=2**52 + 5) == "e"  # a retried start
        for t in range(4):
            reward = 1.0 if t > 0 else None
            action = episodes.get_action(eid, x + t, reward=reward, seq=t + 1)
            if repeat:
                assert episodes.get_action(eid, x + t, reward=reward, seq=t + 1) == action
        episodes.end_episode(eid, x + 4, reward=1.0, seq=5)
        if repeat:
            episodes.end_episode(eid, x + 4, reward=1.0, seq=5)  # answered from the ended episode's seq
            with pytest.raises(RequestError, match="unknown episode_id 'e'"):
                episodes.end_episode(eid, x + 4, seq=6)  # a new request for an ended episode: 404
    [a], [b] = once.sample(), twice.sample()
    assert a.env_steps == b.env_steps == 4 and a.episode_returns.tolist() == b.episode_returns.tolist() == [
        4.0
    ]
    for key in a.data:
        np.testing.assert_array_equal(a.data[key], b.data[key])
    with pytest.raises(RequestError, match="already open") as info:  # another start of an open id
        twice.start_episode("f", seq=2**52 + 1)
        twice.start_episode("f", seq=2**52 + 2)
    assert info.value.status == 409
    once.stop()
    twice.stop()


def test_a_repetition_of_a_request_in_progress_waits_for_its_answer():
    episodes = constant_value_episodes(train_batch_size=100)
    compute, calls = episodes.batcher.compute, []

    def slow_compute(x):  # the first try is still being answered when its repetition arrives
        calls.append(x)
        time.sleep(0.3)
        return compute(x)

    episodes.batcher.compute = slow_compute
    eid = episodes.start_episode("e", seq=2**52)
    x = np.zeros(1, np.float32)
    first: list = []
    thread = threading.Thread(target=lambda: first.append(episodes.get_action(eid, x, seq=1)))
    thread.start()
    time.sleep(0.1)
    again = episodes.get_action(eid, x, seq=1)
    thread.join()
    assert len(calls) == 1 and again == first[0]
    with pytest.raises(RequestError, match="has a request in progress") as info:  # (no seq: as before)
        thread = threading.Thread(target=lambda: episodes.get_action(eid, x, seq=2))
        thread.start()
        time.sleep(0.1)
        try:
            episodes.get_action(eid, x)
        finally:
            thread.join()
    assert info.value.status == 409
    episodes.stop()


def test_a_failed_first_try_is_answered_anew_and_its_reward_counted_once():
    episodes = constant_value_episodes(train_batch_size=100)
    eid = episodes.start_episode("e", seq=2**52)
    x = np.zeros(1, np.float32)
    episodes.get_action(eid, x, seq=1)
    compute = episodes.batcher.compute

    def failing(_x):
        raise RuntimeError("inference failed")

    episodes.batcher.compute = failing
    with pytest.raises(RuntimeError):
        episodes.get_action(eid, x + 1, reward=2.5, seq=2)  # the reward was added, the action not computed
    episodes.batcher.compute = compute
    episodes.get_action(eid, x + 1, reward=2.5, seq=2)  # the client's retry
    episodes.end_episode(eid, x + 2, reward=1.0, seq=3)
    assert episodes.status()["complete_steps_waiting"] == 2
    assert [ep.ep_return for ep in episodes._finished] == [3.5]
    episodes.stop()
