"""`relayrl train --resume`: the run continues the checkpoint's config with the user's explicit changes over
it, and `--resume auto` finds the newest run or says what to pass (real checkpoints, no Ray, no training run
through the CLI: --print-config resolves and exits)."""

import os
import shutil

import pytest
import yaml

from relayrl.algorithms.ppo import PPOConfig
from relayrl.cli import app as cli
from relayrl.cli.resume import changes, newest_run_checkpoint
from relayrl.cli.run_names import run_name
from relayrl.persistence import checkpoint

SMALL = {"train_batch_size": 64, "sgd_minibatch_size": 32, "num_sgd_iter": 1, "num_envs_per_worker": 2}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real PPO CartPole checkpoint with a non-default network (32x32 relu) and lr, as a run dir would
    hold it: <run>/checkpoints/ckpt-0000001."""
    run = tmp_path_factory.mktemp("results") / run_name("ppo", "CartPole-v1")
    config = PPOConfig().environment("CartPole-v1").update_from_dict(SMALL)
    config.update_from_dict({"lr": 0.0007, "model": {"fcnet_hiddens": [32, 32], "fcnet_activation": "relu"}})
    algo = config.build()
    algo.train()
    path = algo.save(str(run / "checkpoints" / "ckpt-0000001"))
    algo.stop()
    return path


def main(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_resume_takes_the_checkpoints_config_not_the_defaults_or_tuned_file(capsys, saved):
    code, out, err = main(capsys, "train", "ppo", "CartPole-v1", "--resume", saved, "--print-config")
    assert code == 0, err
    fields = yaml.safe_load(out)
    assert fields["model"]["fcnet_hiddens"] == [32, 32] and fields["model"]["fcnet_activation"] == "relu"
    assert fields["lr"] == 0.0007 and fields["train_batch_size"] == 64  # not the tuned file's 0.002 / 512
    assert f"# resumed from: {saved} (no tuned file)" in out.splitlines()


def test_explicit_set_config_and_flags_override_the_checkpoint_key_by_key(capsys, saved, tmp_path):
    user = tmp_path / "user.yaml"
    user.write_text("num_sgd_iter: 3\nmodel: {vf_share_layers: true}\n")
    argv = ["train", "ppo", "CartPole-v1", "--resume", saved, "--config", str(user)]
    argv += ["--set", "lr=0.001", "--set", "model.fcnet_activation=tanh", "--envs-per-worker", "4"]
    code, out, err = main(capsys, *argv, "--print-config")
    assert code == 0, err
    fields = yaml.safe_load(out)
    assert fields["lr"] == 0.001 and fields["num_envs_per_worker"] == 4 and fields["num_sgd_iter"] == 3
    model = fields["model"]  # the keys the user left alone stay the checkpoint's: its weights fit
    assert model["fcnet_hiddens"] == [32, 32] and model["fcnet_activation"] == "tanh"
    assert model["vf_share_layers"] is True


def test_changes_lists_each_field_and_model_key_that_differs_but_no_host_field():
    stored = {"lr": 0.0007, "model": {"fcnet_hiddens": [32, 32], "fcnet_activation": "relu"}, "log_dir": "x"}
    resolved = {"lr": 0.001, "model": {"fcnet_hiddens": [32, 32], "fcnet_activation": "tanh"}, "log_dir": "y"}
    resolved["seed"] = 3
    assert changes(stored, resolved) == [
        "lr: 0.0007 -> 0.001",
        "model.fcnet_activation: 'relu' -> 'tanh'",
        "seed: (unset) -> 3",
    ]
    assert changes(stored, {**stored, "log_dir": "elsewhere"}) == []


def test_another_algorithms_or_envs_checkpoint_is_still_refused(capsys, saved):
    code, _, err = main(capsys, "train", "dqn", "CartPole-v1", "--resume", saved, "--print-config")
    assert code == 2 and err.strip().endswith("is a ppo checkpoint, not dqn"), err
    code, _, err = main(capsys, "train", "ppo", "Acrobot-v1", "--resume", saved, "--print-config")
    assert code == 2 and "is not this run's env 'Acrobot-v1'" in err and len(err.strip().splitlines()) == 1


def test_resume_auto_without_logdir_finds_the_newest_run_of_the_pair(capsys, saved, tmp_path, monkeypatch):
    root = tmp_path / "relayrl_results"
    runs = []
    for i, name in enumerate(["ppo_CartPole-v1_20260101-000000_1", "ppo_CartPole-v1_20250101-000000_2"]):
        dest = root / name / "checkpoints" / "ckpt-0000001"
        shutil.copytree(saved, dest)
        os.utime(dest / checkpoint.MARKER, (1e9 + i, 1e9 + i))  # the second one finished last
        runs.append(root / name)
    (root / "dqn_CartPole-v1_20270101-000000_3" / "checkpoints").mkdir(parents=True)  # another algorithm
    (root / "ppo_CartPole-v1_20270101-000000_4").mkdir()  # a run that never checkpointed
    assert newest_run_checkpoint(str(root), "ppo", "CartPole-v1") == str(runs[1] / "checkpoints/ckpt-0000001")
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, err = main(capsys, "train", "ppo", "CartPole-v1", "--resume", "auto", "--print-config")
    assert code == 0, err
    assert f"# resumed from: {runs[1] / 'checkpoints' / 'ckpt-0000001'} (no tuned file)" in out.splitlines()


def test_resume_auto_without_logdir_and_no_run_is_one_line_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = main(capsys, "train", "ppo", "CartPole-v1", "--resume", "auto", "--stop-iters", "1")
    assert code == 2
    assert err.strip() == (
        f"relayrl: error: --resume auto: no run of ppo on CartPole-v1 with a complete checkpoint under "
        f"{tmp_path / 'relayrl_results'}: pass --resume CHECKPOINT_DIR, or --logdir RUN_DIR to resume (or "
        f"start) there"
    )
    assert not (tmp_path / "relayrl_results").exists()  # nothing started


@pytest.mark.parametrize("flag", ["--resume", "--logdir", "--config"])
def test_an_empty_path_is_refused_not_taken_as_unset(capsys, flag):
    code, _, err = main(capsys, "train", "ppo", "CartPole-v1", flag, "", "--print-config")
    assert (
        code == 2
        and err.strip() == f"relayrl: error: argument {flag}: '' is invalid: allowed: a non-empty path"
    )


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c.update(lr="x" * 100_000), "config.json: PPOConfig.lr = 'xxxx"),
        (lambda c: c.update(env="callable:os:system"), "env = 'callable:os:system' is not this run's env"),
        (lambda c: c.update(model={"fcnet_hiddens": "evil"}), "model['fcnet_hiddens'] = 'evil'"),
        (lambda c: c.update(model=[1]), "PPOConfig.model = [1] is invalid"),
        (lambda c: c.update({"no_such_field": 1}), "unknown key 'no_such_field'"),
        (lambda c: c.update(address="10.0.0.1:6379", log_dir="/etc"), None),  # never read: resumes
    ],
)
def test_a_hostile_checkpoint_config_is_one_line_or_ignored_where_never_read(
    capsys, saved, tmp_path, edit, message
):
    from tests.helpers import checkpoint_edits

    path = checkpoint_edits.copy(saved, str(tmp_path / "ckpt"))
    checkpoint_edits.edit_json(path, "config.json", edit)
    code, out, err = main(capsys, "train", "ppo", "CartPole-v1", "--resume", path, "--print-config")
    if message is None:
        fields = yaml.safe_load(out)
        assert code == 0 and fields["address"] is None and fields["log_dir"] is None, err
        return
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0] and len(lines[0]) < 1000, err


def test_a_run_directory_given_as_the_checkpoint_says_what_to_pass(capsys, saved):
    run = os.path.dirname(os.path.dirname(saved))
    code, _, err = main(capsys, "train", "ppo", "CartPole-v1", "--resume", run, "--print-config")
    assert code == 2 and err.strip() == (
        f"relayrl: error: --resume {run} is a run directory, not a checkpoint: pass --resume auto --logdir "
        f"{run}, or a checkpoint such as {saved}"
    )
