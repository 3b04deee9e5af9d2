"""The everyday resume, as users run it: train with a non-default network and a checkpoint at the end, then
`--resume auto --logdir` the same run with one change. It continues (no shape error), prints one line of
what differs from the checkpoint, and run.json records both starts."""

import json
import os
import subprocess
import sys

from tests.helpers.paths import ROOT

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
SMALL = ["--set", "train_batch_size=128", "--set", "sgd_minibatch_size=64", "--set", "num_sgd_iter=1"]


def relayrl(*args):
    return subprocess.run(
        [sys.executable, "-m", "relayrl.cli", *args], capture_output=True, text=True, env=ENV, timeout=300
    )


def test_resume_with_a_non_default_network_continues_and_says_what_changed(tmp_path):
    run = tmp_path / "a"
    first = relayrl(
        "train", "ppo", "CartPole-v1", "--set", "model.fcnet_hiddens=[32,32]", *SMALL, "--stop-iters", "2",
        "--checkpoint-at-end", "--logdir", str(run), "--quiet",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    second = relayrl(
        "train", "ppo", "CartPole-v1", "--resume", "auto", "--logdir", str(run), "--stop-iters", "3",
        "--set", "lr=0.001", "--json",
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-2000:]
    assert json.loads(second.stdout.strip().splitlines()[-1])["training_iteration"] == 3
    ckpt = run / "checkpoints" / "ckpt-0000002"
    assert f"relayrl: resuming from {ckpt}; config changed from the checkpoint: lr: 0.002 -> 0.001" in (
        second.stderr.splitlines()
    )  # 0.002: the tuned file's, which the checkpoint recorded

    info = json.loads((run / "run.json").read_text())
    assert info["argv"][:4] == ["relayrl", "train", "ppo", "CartPole-v1"] and "lr=0.001" in info["argv"]
    assert info["resumed_from"] == str(ckpt) and info["tuned_file"] is None
    earlier = info["earlier"]
    assert len(earlier) == 1 and "model.fcnet_hiddens=[32,32]" in earlier[0]["argv"]
    assert earlier[0]["tuned_file"].endswith("ppo-CartPole-v1.yaml") and earlier[0]["resumed_from"] is None
    import gymnasium
    import numpy

    import relayrl as package

    versions = info["versions"]
    assert versions["relayrl"] == package.__version__ and versions["numpy"] == numpy.__version__
    assert versions["gymnasium"] == gymnasium.__version__ and versions["tensorflow"] and versions["ray"]
    assert versions["python"] == ".".join(map(str, sys.version_info[:3]))
    if (
        os.path.dirname(os.path.dirname(os.path.abspath(package.__file__))) == str(ROOT)
        and (ROOT / ".git").exists()
    ):  # a git checkout (a worktree's .git is a file)
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert info["git_revision"] == head.stdout.strip() and isinstance(info["git_dirty"], bool)
