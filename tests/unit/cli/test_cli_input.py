"""Every bad command-line input is refused before anything starts: exit 2, one `relayrl: error:` line naming
the flag or field and what is allowed, no traceback, nothing created on disk."""

import os
import subprocess
import sys

import pytest

from relayrl.cli import app as cli
from relayrl.cli.common import config_from_args
from relayrl.core import logs


def run_main(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["--set", "model=5"],
            "invalid --set 'model=5': model is a mapping: set one key with --set model.KEY=VALUE",
        ),
        (["--set", "env_config=[1]"], "env_config is a mapping"),
        (
            ["--set", "env_config={foo: 1}"],
            "env_config {'foo': 1} is not accepted by 'CartPole-v1': CartPoleEnv.__init__() got an "
            "unexpected keyword",
        ),
        (["--set", "env_config.foo=1"], "env_config {'foo': 1} is not accepted by 'CartPole-v1'"),
        (["--set", "lr.x=1"], "only model, env_config, atari take a dotted key"),
        (["--set", "model.=1"], "only model, env_config, atari take a dotted key"),
        (
            ["--set", "train_batch_size=100000000000000000000000"],
            "PPOConfig.train_batch_size = 100000000000000000000000 is invalid: allowed: an integer >= 1 "
            "and <= 10000000",
        ),
        (
            ["--set", "num_envs_per_worker=99999999999"],
            "num_envs_per_worker = 99999999999 is invalid: allowed: an integer >= 1 and <= 65536",
        ),
        (
            ["--set", "num_sgd_iter=99999999999"],
            "num_sgd_iter = 99999999999 is invalid: allowed: an integer >= 1 and <= 2147483647",
        ),
        (["--set", "model.fcnet_hiddens=[100000000]"], "allowed: a list of 0 to 64 integers in 1..65536"),
        (["--stop-timesteps", "-5"], "argument --stop-timesteps: '-5' is invalid: allowed: an integer >= 1"),
        (["--stop-iters", "0"], "argument --stop-iters: '0' is invalid: allowed: an integer >= 1"),
        (["--stop-time", "nan"], "argument --stop-time: 'nan' is invalid: allowed: a finite number"),
        (["--stop-time", "-1"], "argument --stop-time: '-1' is invalid: allowed: a number > 0"),
        (["--stop-reward", "inf"], "argument --stop-reward: 'inf' is invalid: allowed: a finite number"),
        (
            ["--keep-checkpoints", "-1"],
            "argument --keep-checkpoints: '-1' is invalid: allowed: an integer >= 1",
        ),
        (
            ["--checkpoint-every", "-2"],
            "argument --checkpoint-every: '-2' is invalid: allowed: an integer >= 0",
        ),
        (["--workers", "two"], "argument --workers: 'two' is invalid: allowed: an integer >= 0"),
        (["--envs-per-worker", "0"], "argument --envs-per-worker: '0' is invalid: allowed: an integer >= 1"),
        (["--seed", "-1"], "argument --seed: '-1' is invalid: allowed: an integer >= 0"),
        (["--seed", "1" * 5000], "argument --seed: '1111"),
        (["--logdir", "/proc/relayrl-x"], "--logdir /proc/relayrl-x: cannot write there"),
        (
            ["--config", "/nonexistent/relayrl.yaml"],
            "--config /nonexistent/relayrl.yaml: cannot read it (No such file",
        ),
    ],
)
def test_bad_train_input_is_one_line_and_exit_2(capsys, argv, message):
    code, err = run_main(capsys, "train", "ppo", "CartPole-v1", "--stop-iters", "1", "--quiet", *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("relayrl: error: ") and message in lines[0], err


def test_a_missing_resume_checkpoint_is_refused_before_the_log_dir_is_made(capsys, tmp_path):
    logdir = tmp_path / "run"
    code, err = run_main(
        capsys, "train", "ppo", "CartPole-v1", "--logdir", str(logdir), "--resume", "/nonexistent"
    )
    assert code == 2 and err.strip() == "relayrl: error: checkpoint '/nonexistent' does not exist"
    assert not logdir.exists()


def test_dotted_set_merges_into_the_mapping(capsys):
    code, out_err = run_main(
        capsys,
        "train",
        "ppo",
        "CartPole-v1",
        "--set",
        "model.fcnet_hiddens=[32, 32]",
        "--set",
        "model={fcnet_activation: relu}",
        "--print-config",
    )
    assert code == 0
    config = config_from_args(
        cli.build_parser().parse_args(
            [
                "train",
                "ppo",
                "CartPole-v1",
                "--set",
                "model.fcnet_hiddens=[32, 32]",
                "--set",
                "model={fcnet_activation: relu}",
                "--set",
                "env_config.max_episode_steps=50",
            ]
        )
    )
    assert config.model["fcnet_hiddens"] == [32, 32] and config.model["fcnet_activation"] == "relu"
    assert config.env_config == {"max_episode_steps": 50}


@pytest.mark.parametrize("verbose", [False, True])
def test_native_start_up_chatter_is_filtered_unless_verbose(verbose):
    """The filter around TensorFlow's import, fed the lines TF 2.21 prints on a CPU machine plus one real
    line."""
    chatter = (
        b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        b"I0000 00:00:1796307453.363719    4113 cudart_stub.cc:31] Could not find cuda drivers on your "
        b"machine, GPU will not be used.\n"
        b"2026-12-03 14:00:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on.\n"
        b"To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n"
    )
    script = (
        "import os; from relayrl.models import tf_import\n"
        "with tf_import._native_chatter_filtered():\n"
        f"    os.write(2, {chatter!r} + b'a real problem\\n')\n"
    )
    env = dict(os.environ, **{logs.VERBOSE_ENV: "1" if verbose else "0"})
    err = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=60).stderr
    assert b"a real problem" in err
    assert (chatter in err) is verbose, err
