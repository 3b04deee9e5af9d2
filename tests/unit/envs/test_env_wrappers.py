"""env_wrappers (relayrl/envs/wrappers.py) and `module:EnvId` ids (relayrl/envs/make.py): wrappers wrap every
env, single or vector, in order; CartPole keeps its fast vector env without wrappers; every refusal is one
line naming env_wrappers[i]; a module in the current folder is imported, with a hint when it is missing."""

import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.envs.make import check_env_id, env_spaces, make_single_env, make_vector_env, reward_threshold
from relayrl.envs.wrappers import check_data_wrappers
from relayrl.models import networks

CLIP_AND_LIMIT = [
    {"wrapper": "ClipReward", "kwargs": {"min_reward": 0.0, "max_reward": 0.5}},
    {"wrapper": "TimeLimit", "kwargs": {"max_episode_steps": 3}},
]


def test_wrappers_apply_in_order_to_a_single_env():
    env = make_single_env("CartPole-v1", {}, CLIP_AND_LIMIT)
    assert isinstance(env, gym.wrappers.TimeLimit) and isinstance(env.env, gym.wrappers.ClipReward)
    env.reset(seed=0)
    steps = [env.step(0) for _ in range(3)]
    assert [s[1] for s in steps] == [0.5, 0.5, 0.5] and steps[-1][3] is True  # clipped, truncated at 3
    env.close()


def test_vector_envs_wrap_each_sub_env_and_keep_the_fast_path_without_wrappers():
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    fast = make_vector_env("CartPole-v1", {}, 4)
    assert isinstance(fast, CartPoleVectorEnv)  # the env's own vector_entry_point
    fast.close()
    for threads in (0, 2):
        vec = make_vector_env("CartPole-v1", {}, 4, num_threads=threads, wrappers=CLIP_AND_LIMIT)
        assert all(isinstance(e, gym.wrappers.TimeLimit) for e in vec.envs)
        vec.reset(seed=0)
        rewards, truncated = [], None
        for _ in range(3):
            _, reward, _, truncated, _ = vec.step(np.zeros(4, np.int64))
            rewards.append(reward)
        np.testing.assert_array_equal(np.array(rewards), 0.5)
        assert truncated.all()
        vec.close()


def test_a_wrapper_that_changes_the_observation_space_reaches_the_model_spec():
    stack = [{"wrapper": "FrameStackObservation", "kwargs": {"stack_size": 3}}]
    obs_space, action_space = env_spaces("CartPole-v1", {}, stack)
    assert obs_space.shape == (3, 4)
    assert networks.spec_from_spaces(obs_space, action_space, DEFAULT_MODEL).obs_shape == (12,)


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"wrapper": "NoSuchWrapper"}, "env_wrappers[0] = 'NoSuchWrapper' is not a gymnasium.wrappers class"),
        ({"wrapper": "vector"}, "env_wrappers[0] = 'vector' is a module, not a gymnasium.Wrapper subclass"),
        ({"wrapper": "json:JSONDecoder"}, "'json:JSONDecoder' is a type, not a gymnasium.Wrapper subclass"),
        ({"wrapper": "os:system"}, "'os:system' is a builtin_function_or_method, not a gymnasium.Wrapper"),
        ({"wrapper": "json:Nope"}, "env_wrappers[0] = 'json:Nope': module 'json' has no 'Nope'"),
        ({"wrapper": "no_such_mod_x:W"}, "cannot import 'no_such_mod_x'"),
        ({"wrapper": "ClipReward", "kwargs": {"bad": 1}}, "unexpected keyword argument 'bad'"),
        ({"wrapper": "ClipReward", "kwargs": {"min_reward": 2, "max_reward": 1}}, "with kwargs"),
    ],
)
def test_bad_wrappers_are_refused_in_one_line_naming_the_entry(entry, message):
    with pytest.raises(ValueError) as info:
        make_single_env("CartPole-v1", {}, [CLIP_AND_LIMIT[0], entry])
    text = str(info.value)
    assert (
        message.replace("[0]", "[1]") in text and text.startswith("env_wrappers[1] = ") and "\n" not in text
    )


def test_a_saved_file_may_name_only_gymnasiums_own_wrappers_that_write_nothing():
    check_data_wrappers(CLIP_AND_LIMIT)
    for entry, message in [
        ({"wrapper": "os:system"}, "code of your own"),
        ({"wrapper": "RecordVideo", "kwargs": {"video_folder": "/tmp/x"}}, "writes files"),
        ({"wrapper": "Nope"}, "not a gymnasium.wrappers class"),
    ]:
        with pytest.raises(ValueError, match="env_wrappers\\[0\\]") as info:
            check_data_wrappers([entry])
        assert message in str(info.value)


@pytest.fixture
def env_module(tmp_path, monkeypatch):
    """A module registering Tiny-v0 in a folder that is the cwd but not on sys.path (as for the `relayrl`
    console script)."""
    tmp_path.joinpath("tiny_env_mod.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            gym.register("TinyUnit-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv",
                         reward_threshold=12.5)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield "tiny_env_mod"
    sys.modules.pop("tiny_env_mod", None)
    gym.registry.pop("TinyUnit-v0", None)


def test_module_env_id_imports_the_module_from_the_current_folder(env_module):
    assert reward_threshold(f"{env_module}:TinyUnit-v0") is None  # looking it up imports nothing
    check_env_id(f"{env_module}:TinyUnit-v0")
    assert reward_threshold(f"{env_module}:TinyUnit-v0") == 12.5
    env = make_single_env(f"{env_module}:TinyUnit-v0", {})
    assert env.observation_space.shape == (4,)
    env.close()
    with pytest.raises(
        ValueError, match="unknown environment id 'Other-v0' \\(module 'tiny_env_mod' did not"
    ):
        check_env_id(f"{env_module}:Other-v0")


def test_a_module_that_cannot_be_imported_says_how_to_make_it_importable(env_module):
    with pytest.raises(ValueError) as info:
        check_env_id("not_here_mod:X-v0")
    assert str(info.value) == (
        "env 'not_here_mod:X-v0': cannot import 'not_here_mod' (No module named 'not_here_mod'); "
        "run relayrl from the folder that holds it, or add that folder to PYTHONPATH"
    )
    with pytest.raises(ValueError, match="is not a Python module name"):
        check_env_id("../etc:X-v0")
