"""ALE ids (relayrl/envs/atari.py): plain 'ALE/...' ids work, the DeepMind preprocessing gives channel-last
uint8 stacks and honours each atari option; a worker on a real Breakout shows the learner clipped rewards and
a lost life as `terminated` while it reports the real game score per real game."""

import sys

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_ATARI, DEFAULT_MODEL
from relayrl.envs.atari import ALE_STANDARD, frame_stack
from relayrl.envs.make import check_env_id, env_spaces, make_single_env, make_vector_env
from relayrl.extras import MissingExtraError
from relayrl.models import networks

pytest.importorskip("ale_py")
BREAKOUT = "ALE/Breakout-v5"


def test_the_envs_layer_defaults_are_the_configs():
    assert ALE_STANDARD == DEFAULT_ATARI


def test_a_plain_ale_id_is_preprocessed_to_channel_last_uint8_stacks():
    check_env_id(BREAKOUT)  # registered through ale_py: no 'ale_py:' prefix needed
    obs_space, action_space = env_spaces(BREAKOUT, {})
    assert obs_space == gym.spaces.Box(0, 255, (84, 84, 4), np.uint8) and action_space == gym.spaces.Discrete(
        4
    )
    # the reference chain of the DeepMind preprocessing, stack moved to the last axis
    reference = gym.wrappers.FrameStackObservation(
        gym.wrappers.AtariPreprocessing(gym.make(BREAKOUT, frameskip=1)), 4
    )
    env = make_single_env(BREAKOUT, {})
    try:
        ours, _ = env.reset(seed=3)
        theirs, _ = reference.reset(seed=3)
        for action in (1, 2, 3, 0, 1):
            ours, *_ = env.step(action)
            theirs, *_ = reference.step(action)
        assert ours.dtype == np.uint8 and ours.shape == (84, 84, 4)
        np.testing.assert_array_equal(ours, np.moveaxis(theirs, 0, -1))
    finally:
        env.close(), reference.close()
    assert frame_stack(BREAKOUT, None) == 4 and frame_stack("CartPole-v1", None) == 0


@pytest.mark.parametrize(
    "options, shape, actions",
    [
        ({"screen_size": 64, "frame_stack": 2}, (64, 64, 2), 4),
        ({"grayscale": False, "frame_stack": 3}, (84, 84, 9), 4),
        ({"preprocess": False}, (210, 160, 3), 4),
        ({"full_action_space": True, "frame_stack": 1}, (84, 84, 1), 18),
    ],
)
def test_each_option_shapes_the_env(options, shape, actions):
    obs_space, action_space = env_spaces(BREAKOUT, {}, atari=options)
    assert obs_space.shape == shape and obs_space.dtype == np.uint8 and action_space.n == actions


def test_sticky_actions_frame_skip_and_the_frame_limit_reach_ale():
    env = make_single_env(
        BREAKOUT, {}, atari={"repeat_action_probability": 0.5, "frame_skip": 2, "max_episode_frames": 40}
    )
    try:
        ale = env.unwrapped.ale
        assert ale.getFloat("repeat_action_probability") == 0.5
        env.reset(seed=0)
        start = ale.getEpisodeFrameNumber()
        steps = 0
        while True:
            *_, terminated, truncated, _ = env.step(0)
            steps += 1
            if terminated or truncated:
                break
        assert truncated and not terminated and ale.getEpisodeFrameNumber() == 40
        assert steps == (40 - start) // 2  # 2 frames per agent step after the reset's no-ops
    finally:
        env.close()


def test_a_plain_ale_id_without_ale_py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # `import ale_py` fails, as when it is not installed
    for key in [k for k in gym.registry if k.startswith("ALE/")]:
        monkeypatch.delitem(gym.registry, key)
    with pytest.raises(MissingExtraError, match=r"^env 'ALE/Pong-v5' needs the 'atari' extra: pip install"):
        check_env_id("ALE/Pong-v5")


def test_env_config_may_not_set_what_an_atari_option_sets():
    with pytest.raises(
        ValueError, match=r"^env_config\['frameskip'\] is set by the atari options .*atari.frame_skip"
    ):
        make_single_env(BREAKOUT, {"frameskip": 2})


def _breakout_worker(atari: dict, rewards_seen: list):
    """A worker on one real Breakout whose env rewards are tripled (so clipping shows), each logged."""
    from relayrl.sampling.rollout import RolloutWorker
    from relayrl.sampling.settings import SamplerSettings

    def log(reward):
        rewards_seen.append(3.0 * reward)
        return 3.0 * reward

    obs_space, action_space = env_spaces(BREAKOUT, {}, atari=atari)
    model = dict(DEFAULT_MODEL, conv_filters=[[4, 8, 8]], fcnet_hiddens=[8])
    settings = SamplerSettings(
        env=BREAKOUT,
        env_config={},
        num_envs=1,
        fragment_length=700,
        spec=networks.spec_from_spaces(obs_space, action_space, model),
        seed=1,
        postprocess="sequences",
        atari=atari,
        env_wrappers=[{"wrapper": "TransformReward", "kwargs": {"func": log}}],
    )
    worker = RolloutWorker(settings)
    worker.set_weights(networks.init_weights(settings.spec, np.random.default_rng(0)), 0)  # repeatable
    return worker


def _games(valid: np.ndarray) -> list[slice]:
    """The step ranges of the games that end inside a fragment: a game's last step is followed by the
    NEXT_STEP reset step, the one invalid step."""
    ends = np.nonzero(~valid[1:])[0]
    starts = np.concatenate([[0], ends + 2])
    return [slice(s, e + 1) for s, e in zip(starts, ends)]


def test_the_learner_sees_lost_lives_and_clipped_rewards_the_report_the_real_score():
    rewards_seen: list[float] = []
    worker = _breakout_worker({"episodic_life": True, "clip_rewards": True}, rewards_seen)
    try:
        fragment = worker.sample()
    finally:
        worker.stop()
    data = fragment.data
    valid = data["valid"][:, 0]
    real = np.asarray(rewards_seen)  # one per env step: the reset step is no step of the env
    assert len(real) == valid.sum() and np.abs(real).max() >= 3  # tripled rewards did happen
    np.testing.assert_array_equal(data["rewards"][valid, 0], np.sign(real))
    games = _games(valid)
    assert len(games) >= 1 and len(fragment.episode_returns) == len(games)
    valid_index = np.cumsum(valid) - 1  # step -> index of that env step in rewards_seen
    for game, reported, length in zip(games, fragment.episode_returns, fragment.episode_lengths):
        steps = np.arange(game.start, game.stop)
        assert reported == pytest.approx(real[valid_index[steps]].sum())  # the real game score
        assert length == len(steps)
        # Breakout has 5 lives: 4 lost lives end the learner's episode, the game over ends the 5th
        assert data["terminated"][steps, 0].sum() == 5 and data["terminated"][game.stop - 1, 0]
        assert (data["dones"][steps, 0] == data["terminated"][steps, 0]).all()


def test_without_the_training_options_the_learner_sees_the_game_as_it_is():
    rewards_seen: list[float] = []
    worker = _breakout_worker({"episodic_life": False, "clip_rewards": False}, rewards_seen)
    try:
        fragment = worker.sample()
    finally:
        worker.stop()
    valid = fragment.data["valid"][:, 0]
    np.testing.assert_array_equal(fragment.data["rewards"][valid, 0], np.asarray(rewards_seen))
    for game in _games(valid):
        assert fragment.data["terminated"][game, 0].sum() == 1  # only the game over


def test_vector_envs_of_an_ale_id_report_lives_and_step_together():
    vec = make_vector_env(BREAKOUT, {}, 2, atari={"frame_stack": 2})
    try:
        obs, info = vec.reset(seed=0)
        assert obs.shape == (2, 84, 84, 2) and obs.dtype == np.uint8 and list(info["lives"]) == [5, 5]
        obs, reward, terminated, truncated, info = vec.step(np.array([1, 1]))
        assert obs.shape == (2, 84, 84, 2) and reward.shape == (2,) and "lives" in info
    finally:
        vec.close()
