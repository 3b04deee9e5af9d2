"""Checkpoints: bit-exact resume in a new process, refusal of incomplete / corrupted / foreign checkpoints,
SavedModel export that runs without relayrl, and the CLI's checkpoint, resume, export and evaluate."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relayrl import PPOConfig
from relayrl.algorithms.base import Algorithm
from relayrl.core.saved_state import CheckpointError
from relayrl.persistence import checkpoint, checkpoint_io
from tests.helpers.paths import HELPERS, ROOT

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))


def run(*args, timeout=300):
    proc = subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=timeout, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("variant", ["ppo", "ppo_norm", "sac"])
def test_resume_in_a_new_process_is_bit_identical(tmp_path, variant):
    script = HELPERS / "resume_check.py"
    straight = last_json(run(script, variant, "straight", 5))
    saved = last_json(run(script, variant, "save", 3, tmp_path / "ckpt"))
    resumed = last_json(run(script, variant, "resume", tmp_path / "ckpt", 2))
    if variant == "sac":
        assert (tmp_path / "ckpt" / "replay.npz").exists()
    assert saved["iteration"] == 3 and resumed["iteration"] == 5
    assert resumed["timesteps_total"] == straight["timesteps_total"]
    assert resumed["episodes_total"] == straight["episodes_total"]
    assert resumed["weights"] == straight["weights"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = tmp_path_factory.mktemp("ckpt")
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=4)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=2)
        .debugging(seed=0)
    ).build()
    algo.train()
    path = algo.save(str(base / "good"))
    yield algo, path, base
    algo.stop()


def copy(path, base, name):
    target = str(base / name)
    shutil.copytree(path, target)
    return target


def test_incomplete_corrupted_and_foreign_checkpoints_are_refused(trained):
    algo, path, base = trained
    assert sorted(os.listdir(path)) == ["COMPLETE", "config.json", "learner", "state.json"]
    half = copy(path, base, "half")
    os.remove(os.path.join(half, "COMPLETE"))  # what a crash before the marker leaves
    with pytest.raises(CheckpointError, match="incomplete"):
        Algorithm.from_checkpoint(half)
    corrupted = copy(path, base, "corrupted")
    learner_file = next(
        p for p in Path(corrupted, "learner").iterdir() if p.name.endswith(".data-00000-of-00001")
    )
    data = bytearray(learner_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    learner_file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted: learner/.* does not match its checksum"):
        Algorithm.from_checkpoint(corrupted)
    old = copy(path, base, "old-version")
    state = json.loads(Path(old, "state.json").read_text())
    state["relayrl_version"] = "0.0.1"
    Path(old, "state.json").write_text(json.dumps(state))
    manifest = json.loads(Path(old, "COMPLETE").read_text())
    manifest["files"]["state.json"] = {
        "bytes": os.path.getsize(Path(old, "state.json")),
        "sha256": checkpoint_io.file_sha256(str(Path(old, "state.json"))),
    }
    Path(old, "COMPLETE").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="written by relayrl 0.0.1"):
        Algorithm.from_checkpoint(old)
    os.makedirs(base / "runs" / "ckpt-0000009.tmp-1")  # a crash mid-write leaves only a temp dir
    shutil.copytree(path, base / "runs" / "ckpt-0000002")
    assert checkpoint.latest(str(base / "runs")).endswith("ckpt-0000002")


def test_export_runs_without_relayrl_and_matches_the_policy(trained, tmp_path):
    algo, _, _ = trained
    export_dir = algo.export_policy(str(tmp_path / "policy"))
    obs = np.random.default_rng(0).uniform(-0.2, 0.2, (32, 4)).astype(np.float32)
    from relayrl.models.policy import Policy

    policy = Policy(algo.spec, algo.action_space)
    policy.set_weights(algo.learner.get_weights(), 0)
    want = policy.compute_actions(obs, explore=False)
    np.save(tmp_path / "obs.npy", obs)
    code = (
        "import sys, json, numpy as np, tensorflow as tf\n"
        f"m = tf.saved_model.load({export_dir!r})\n"
        f"obs = np.load({str(tmp_path / 'obs.npy')!r})\n"
        "a = m.signatures['serving_default'](observation=tf.constant(obs))['action'].numpy()\n"
        "v = m.signatures['value'](observation=tf.constant(obs))['value'].numpy()\n"
        "assert 'relayrl' not in sys.modules\n"
        "print(json.dumps({'actions': a.tolist(), 'values': v.tolist()}))\n"
    )
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd="/"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(out["actions"], want)
    assert len(out["values"]) == 32
    from relayrl.models.tf_import import tf

    loaded = tf.saved_model.load(export_dir)
    with pytest.raises((ValueError, TypeError, tf.errors.InvalidArgumentError)):
        loaded.signatures["serving_default"](observation=tf.constant(obs[:, :3]))  # wrong shape
    with pytest.raises((ValueError, TypeError, tf.errors.InvalidArgumentError)):
        loaded.signatures["serving_default"](observation=tf.constant(obs.astype(np.int32)))  # wrong dtype


def test_cli_checkpoints_resume_export_and_evaluate(tmp_path):
    def cli(*args, check=True):
        proc = subprocess.run(
            [sys.executable, "-m", "relayrl.cli", *args],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=300,
            cwd=ROOT,
        )
        if check:
            assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    common = [
        "train",
        "ppo",
        "CartPole-v1",
        "--logdir",
        str(tmp_path),
        "--seed",
        "0",
        "--quiet",
        "--json",
        "--set",
        "train_batch_size=256",
        "--set",
        "sgd_minibatch_size=128",
        "--set",
        "num_sgd_iter=2",
    ]
    first = last_json(cli(*common, "--stop-iters", "4", "--checkpoint-every", "1", "--keep-checkpoints", "2"))
    names = sorted(os.listdir(tmp_path / "checkpoints"))
    assert names == ["ckpt-0000003", "ckpt-0000004"] and first["training_iteration"] == 4
    second = last_json(cli(*common, "--stop-iters", "6", "--resume", "auto", "--checkpoint-at-end"))
    assert second["training_iteration"] == 6 and second["timesteps_total"] > first["timesteps_total"]
    latest = checkpoint.latest(str(tmp_path / "checkpoints"))
    assert latest.endswith("ckpt-0000006")
    cli("export", latest, str(tmp_path / "exported"))
    scored = json.loads(
        cli("evaluate", str(tmp_path / "exported"), "--env", "CartPole-v1", "--episodes", "5", "--json")
        .stdout.strip()
        .splitlines()[-1]
    )
    assert scored["episodes"] == 5
    from_ckpt = json.loads(
        cli("evaluate", latest, "--episodes", "4", "--json").stdout.strip().splitlines()[-1]
    )
    assert from_ckpt["episodes"] == 4
    bad = cli("evaluate", str(tmp_path / "nope"), check=False)
    assert bad.returncode == 2 and "does not exist" in bad.stderr and "Traceback" not in bad.stderr
