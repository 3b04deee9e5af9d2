"""`relayrl enjoy` and `relayrl evaluate` of a tiny trained PPO CartPole checkpoint and its SavedModel: per-
episode returns, a video file, the env a SavedModel records, and one-line refusals (exit 2) of envs that do
not fit the policy, flags that cannot be honoured and hostile metadata files. Run in this process
(relayrl.cli.app.main): TensorFlow is imported once."""

import json
import os
import re
import shutil
import sys

import pytest

from relayrl.cli.app import main
from relayrl.persistence.policy_metadata import METADATA_FILE


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from relayrl import PPOConfig

    root = tmp_path_factory.mktemp("enjoy")
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=4)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=2)
        .debugging(seed=0)
    )
    with config.build() as algo:
        algo.train()
        algo.save(str(root / "ckpt"))
        algo.export_policy(str(root / "sm"))
    return root


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_refusal(capsys, argv, *fragments):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("relayrl: error: "), (code, err)
    for fragment in fragments:
        assert fragment in err, err


def episodes(out):
    return [
        (float(r), int(n)) for r, n in re.findall(r"^episode \d+: return ([\d.]+), length (\d+)$", out, re.M)
    ]


def test_enjoy_a_checkpoint_prints_each_episode_and_the_mean(trained, capsys):
    code, out, _ = run(capsys, "enjoy", str(trained / "ckpt"), "--episodes", "3", "--seed", "0")
    assert code == 0
    played = episodes(out)
    assert len(played) == 3 and all(r == n for r, n in played)  # CartPole: reward 1 per step
    assert re.search(r"^mean return [\d.]+ ± [\d.]+, length [\d.]+ ± [\d.]+ over 3 episodes$", out, re.M)
    assert (
        episodes(run(capsys, "enjoy", str(trained / "ckpt"), "--episodes", "3", "--seed", "0")[1]) == played
    )
    code, out, _ = run(
        capsys, "enjoy", str(trained / "ckpt"), "--episodes", "2", "--stochastic", "--seed", "1"
    )
    assert code == 0 and len(episodes(out)) == 2


def test_enjoy_a_saved_model_records_a_video_of_each_episode(trained, capsys, tmp_path):
    argv = [
        "enjoy",
        str(trained / "sm"),
        "--env",
        "CartPole-v1",
        "--episodes",
        "2",
        "--video",
        str(tmp_path / "v"),
    ]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and len(episodes(out)) == 2
    videos = sorted(p for p in os.listdir(tmp_path / "v") if p.endswith(".mp4"))
    assert len(videos) == 2 and all(os.path.getsize(tmp_path / "v" / v) > 1000 for v in videos)


def test_video_without_moviepy_names_the_video_extra(trained, capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "moviepy", None)  # `import moviepy` raises ImportError, as if missing
    argv = ["enjoy", str(trained / "sm"), "--env", "CartPole-v1", "--video", str(tmp_path / "v")]
    one_line_refusal(capsys, argv, "--video needs the 'video' extra: pip install 'relayrl[video]'")


def test_a_saved_model_records_its_env_and_is_evaluated_on_it(trained, capsys):
    recorded = json.loads((trained / "sm" / METADATA_FILE).read_text())
    assert recorded["env"] == "CartPole-v1" and recorded["action_space"]["n"] == 2
    assert (
        recorded["observation_space"]["shape"] == [4] and recorded["observation_space"]["dtype"] == "float32"
    )
    code, out, _ = run(capsys, "evaluate", str(trained / "sm"), "--episodes", "2", "--json")
    assert code == 0 and json.loads(out)["episodes"] == 2


@pytest.mark.parametrize("command", ["evaluate", "enjoy"])
def test_an_env_that_does_not_fit_is_one_line(trained, capsys, command):
    fits = "does not fit the policy"
    one_line_refusal(capsys, [command, str(trained / "sm"), "--env", "Pendulum-v1"], fits, "Box [3] float32")
    one_line_refusal(capsys, [command, str(trained / "sm"), "--env", "Acrobot-v1"], fits)
    one_line_refusal(capsys, [command, str(trained / "ckpt"), "--env", "Pendulum-v1"], "cannot be restored")


def test_a_saved_model_from_before_needs_env_and_is_checked_against_its_signature(trained, capsys, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(trained / "sm", old)
    os.remove(old / METADATA_FILE)
    one_line_refusal(capsys, ["evaluate", str(old)], "records no env", "pass --env ID")
    one_line_refusal(capsys, ["enjoy", str(old), "--env", "MountainCar-v0"], "takes float32 (None, 4)")
    one_line_refusal(capsys, ["evaluate", str(old), "--env", "Pendulum-v1"], "does not fit the policy")
    assert run(capsys, "evaluate", str(old), "--env", "CartPole-v1", "--episodes", "2")[0] == 0


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--stochastic"], "a SavedModel serves deterministic actions only"),
        (["--render", "--video", "x"], "--render and --video: choose one"),
        (["--render"], "--render needs a display"),
        (["--custom-model", "json:JSONDecoder"], "only for a checkpoint"),
        (["--env", "CartPole-v1", "--video", os.devnull], "--video /dev/null: File exists"),
    ],
)
def test_flags_that_cannot_be_honoured_are_one_line(trained, capsys, monkeypatch, argv, fragment):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    one_line_refusal(capsys, ["enjoy", str(trained / "sm"), *argv], fragment)


@pytest.mark.parametrize(
    "flag, value, fragment",
    [
        ("--custom-model", "not_a_module_xyz:Model", "--custom-model 'not_a_module_xyz:Model'"),
        ("--custom-model", "json", "allowed: 'package.module:Class'"),
        ("--custom-critic", "json:loads", "is a function, not a class"),
    ],
)
def test_custom_class_flags_are_checked(trained, capsys, flag, value, fragment):
    for command in ("enjoy", "evaluate", "export"):
        extra = [str(trained / "out")] if command == "export" else []
        one_line_refusal(capsys, [command, str(trained / "ckpt"), *extra, flag, value], fragment)


EVIL = "import pathlib; pathlib.Path('IMPORTED').write_text('ran')\n"


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda m: "not json {", "not valid JSON"),
        (lambda m: json.dumps(m) + " " * (1 << 20), "larger than"),
        (lambda m: json.dumps([m]), "allowed: a JSON object with format 1"),
        (lambda m: json.dumps({**m, "format": 2}), "allowed: a JSON object with format 1"),
        (lambda m: json.dumps({**m, "extra": 1}), "unknown key 'extra'"),
        (lambda m: json.dumps({**m, "env": "evil_mod:X-v0"}), "is not an env id gymnasium has registered"),
        (lambda m: json.dumps({**m, "env": "callable:evil_mod:f"}), "is a Python callable"),
        (lambda m: json.dumps({**m, "env": 7}), "allowed: an env id or null"),
        (lambda m: json.dumps({**m, "env_config": [1]}), "env_config is invalid"),
        (
            lambda m: json.dumps({**m, "env": "CartPole-v1", "env_config": {"render_mode": "human"}}),
            "render_mode is not taken",
        ),
        (
            lambda m: json.dumps({**m, "env": "CartPole-v1", "env_wrappers": [{"wrapper": "evil_mod:W"}]}),
            "code of your own",
        ),
        (
            lambda m: json.dumps({**m, "env": "CartPole-v1", "env_wrappers": [{"wrapper": "RecordVideo"}]}),
            "writes files",
        ),
        (lambda m: json.dumps({**m, "action_space": "Discrete(2)"}), "action_space is missing"),
    ],
)
def test_hostile_metadata_is_refused_in_one_line_and_imports_nothing(
    trained, capsys, tmp_path, monkeypatch, edit, fragment
):
    model = tmp_path / "sm"
    shutil.copytree(trained / "sm", model)
    recorded = json.loads((model / METADATA_FILE).read_text())
    (model / METADATA_FILE).write_text(edit(recorded))
    (tmp_path / "evil_mod.py").write_text(EVIL)
    monkeypatch.chdir(tmp_path)
    for command in ("evaluate", "enjoy"):
        one_line_refusal(capsys, [command, str(model)], fragment)
    assert not (tmp_path / "IMPORTED").exists()


def test_a_custom_model_checkpoint_needs_its_class_from_the_flag(capsys, tmp_path):
    from relayrl import PPOConfig

    model = "tests.helpers.custom_models:PolicyValueNet"
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=2)
        .training(model={"custom_model": model}, train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
    )
    with config.build() as algo:
        algo.train()
        algo.save(str(tmp_path / "ckpt"))
    one_line_refusal(capsys, ["enjoy", str(tmp_path / "ckpt")], "names a Python class")
    code, out, _ = run(capsys, "enjoy", str(tmp_path / "ckpt"), "--episodes", "2", "--custom-model", model)
    assert code == 0 and len(episodes(out)) == 2
    argv = ["evaluate", str(tmp_path / "ckpt"), "--episodes", "2", "--custom-model", model, "--json"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and json.loads(out)["episodes"] == 2
