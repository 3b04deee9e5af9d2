"""vector_backend = "envpool" (relayrl/envs/envpool_vec.py) has the gymnasium path's semantics: the same
spaces, bit-identical observations, rewards and lives where both are deterministic, NEXT_STEP autoreset after
a truncation, per-env seeds; a worker samples from it; what envpool cannot do is refused in one line."""

import numpy as np
import pytest

from relayrl.envs.make import make_vector_env

pytest.importorskip("ale_py")
pytest.importorskip("envpool")
BREAKOUT = "ALE/Breakout-v5"
# deterministic on both sides: exactly one no-op after a reset, no sticky actions
DETERMINISTIC = {"noop_max": 1, "repeat_action_probability": 0.0}


def test_envpool_matches_the_gymnasium_path_step_for_step():
    gym_vec = make_vector_env(BREAKOUT, {}, 2, atari=DETERMINISTIC)
    pool = make_vector_env(BREAKOUT, {}, 2, atari=DETERMINISTIC, backend="envpool")
    try:
        assert pool.single_observation_space == gym_vec.single_observation_space
        assert pool.single_action_space == gym_vec.single_action_space
        ours, _ = pool.reset(seed=3)
        theirs, _ = gym_vec.reset(seed=3)
        np.testing.assert_array_equal(ours, theirs)
        rng = np.random.default_rng(0)
        for _ in range(120):
            actions = rng.integers(0, 4, 2)
            a = pool.step(actions)
            b = gym_vec.step(actions)
            assert a[0].dtype == np.uint8 and a[0].shape == (2, 84, 84, 4)
            for mine, reference in zip(a[:4], b[:4]):  # obs, rewards, terminated, truncated
                np.testing.assert_array_equal(mine, reference)
            np.testing.assert_array_equal(a[4]["lives"], b[4]["lives"])
    finally:
        pool.close(), gym_vec.close()


def test_truncation_then_next_step_autoreset():
    # 40 frames at frame_skip 4: truncated on the 10th agent step (envpool counts agent steps)
    pool = make_vector_env(BREAKOUT, {}, 1, atari={"max_episode_frames": 40}, backend="envpool")
    try:
        pool.reset(seed=0)
        outcomes = [pool.step(np.array([0]))[1:4] for _ in range(11)]
        assert [bool(t[2][0]) for t in outcomes] == [False] * 9 + [True, False]
        assert not any(bool(t[1][0]) for t in outcomes)  # never terminated
        assert outcomes[10][0][0] == 0.0  # the step after the truncation only resets the env
    finally:
        pool.close()


def test_env_i_is_seeded_seed_plus_i():
    sticky = {"repeat_action_probability": 0.25}  # random no-ops and sticky actions: the seed shows
    first = make_vector_env(BREAKOUT, {}, 2, atari=sticky, backend="envpool")
    second = make_vector_env(BREAKOUT, {}, 1, atari=sticky, backend="envpool")
    try:
        first.reset(seed=10)
        second.reset(seed=11)
        rng, differ = np.random.default_rng(0), False
        for _ in range(100):
            action = rng.integers(0, 4)
            obs_two = first.step(np.array([action, action]))[0]
            obs_one = second.step(np.array([action]))[0]
            np.testing.assert_array_equal(obs_two[1], obs_one[0])  # env 1 of seed 10 is env 0 of seed 11
            differ |= not np.array_equal(obs_two[0], obs_two[1])
        assert differ  # and env 0 of seed 10 played another game with the same actions
    finally:
        first.close(), second.close()


def test_a_worker_samples_from_envpool():
    from relayrl.core.knobs import DEFAULT_MODEL
    from relayrl.envs.make import env_spaces
    from relayrl.models import networks
    from relayrl.sampling.rollout import RolloutWorker
    from relayrl.sampling.settings import SamplerSettings

    spec = networks.spec_from_spaces(
        *env_spaces(BREAKOUT, {}), dict(DEFAULT_MODEL, conv_filters=[[4, 8, 8]], fcnet_hiddens=[8])
    )
    settings = SamplerSettings(BREAKOUT, {}, 2, 16, spec, seed=0, vector_backend="envpool")
    worker = RolloutWorker(settings)
    try:
        fragment = worker.sample()
    finally:
        worker.stop()
    assert fragment.data["obs"].dtype == np.uint8 and fragment.data["obs"].shape == (32, 84, 84, 4)


@pytest.mark.parametrize(
    "env, kwargs, message",
    [
        ("CartPole-v1", {}, r"^vector_backend = 'envpool' is for ALE ids .* allowed: 'gymnasium'$"),
        (BREAKOUT, {"atari": {"preprocess": False}}, r"^atari.preprocess = False is invalid with vector_"),
        (BREAKOUT, {"atari": {"noop_max": 0}}, r"^atari.noop_max = 0 is invalid with vector_backend"),
        (BREAKOUT, {"wrappers": [{"wrapper": "ClipReward"}]}, r"^env_wrappers are not applied by vector_"),
    ],
)
def test_what_envpool_cannot_do_is_refused_in_one_line(env, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_vector_env(env, {}, 2, backend="envpool", **kwargs)


def test_env_config_names_only_envpool_atari_arguments():
    with pytest.raises(ValueError, match=r"^env_config\['frameskip'\] is not an envpool Atari argument"):
        make_vector_env(BREAKOUT, {"frameskip": 2}, 2, backend="envpool")
