"""A checkpoint's env_wrappers are data: a 'module:Class' wrapper in its config.json is refused in one line
and its module never imported (the caller supplies such wrappers: from_checkpoint(path, env_wrappers=...));
gymnasium's own wrappers load and are applied."""

import pytest

from relayrl.algorithms.base import Algorithm
from tests.helpers import checkpoint_edits as edits

LIMIT = [{"wrapper": "TimeLimit", "kwargs": {"max_episode_steps": 9}}]


@pytest.fixture(scope="module")
def wrapped_checkpoint(tmp_path_factory):
    from relayrl import PPOConfig

    path = str(tmp_path_factory.mktemp("wrapped") / "ckpt")
    config = (
        PPOConfig()
        .environment("CartPole-v1", env_wrappers=LIMIT)
        .rollouts(num_envs_per_worker=2)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
    )
    with config.build() as algo:
        algo.train()
        algo.save(path)
    return path


def test_gymnasiums_own_wrappers_come_back_with_the_checkpoint(wrapped_checkpoint):
    with Algorithm.from_checkpoint(wrapped_checkpoint) as algo:
        assert algo.evaluate(2)["episode_len_mean"] <= 9


@pytest.mark.parametrize(
    "wrapper, fragment",
    [("evil_wrapper_mod:W", "code of your own"), ("RecordVideo", "writes files or opens a window")],
)
def test_a_wrapper_a_checkpoint_may_not_name_is_refused_and_never_imported(
    wrapped_checkpoint, tmp_path, monkeypatch, wrapper, fragment
):
    path = edits.copy(wrapped_checkpoint, str(tmp_path / "edited"))
    config = edits.read_json(path, "config.json")
    edits.write_json(path, "config.json", {**config, "env_wrappers": [{"wrapper": wrapper}]})
    edits.reseal(path)
    tmp_path.joinpath("evil_wrapper_mod.py").write_text(
        "import pathlib; pathlib.Path('IMPORTED').write_text('ran')\n"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        Algorithm.from_checkpoint(path)
    assert "env_wrappers[0]" in str(info.value) and fragment in str(info.value)
    assert "\n" not in str(info.value)
    assert not tmp_path.joinpath("IMPORTED").exists()
    with Algorithm.from_checkpoint(path, env_wrappers=LIMIT) as algo:  # the caller's wrappers replace them
        assert algo.config.env_wrappers == LIMIT
