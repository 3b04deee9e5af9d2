"""A checkpoint is data. Hostile checkpoints (code named in config.json, manifest paths that leave the
checkpoint, links, devices, FIFOs, unlisted or malformed files) are refused by `relayrl evaluate`,
`relayrl export` and `relayrl train ... --resume DIR` with exit status 2 and one stderr line naming the file,
and no code named in them runs: each payload would create a marker file, which must not exist afterwards.

The matrix runs the real CLI entry point (`relayrl.cli.main`, what the `relayrl` script calls) in this
process; a few runs go through a fresh `python -m relayrl.cli` process to check the exit status and stderr
end to end."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relayrl import PPOConfig
from relayrl.cli import app as cli
from relayrl.persistence import checkpoint, checkpoint_io
from tests.helpers.checkpoint_edits import (
    copy,
    edit_json,
    learner_data_file,
    read_json,
    reseal,
    time_limit,
    write_json,
)
from tests.helpers.paths import ROOT

TRAIN_FLAGS = [
    "--envs-per-worker",
    "2",
    "--seed",
    "0",
    "--quiet",
    "--stop-iters",
    "2",
    "--set",
    "train_batch_size=64",
    "--set",
    "sgd_minibatch_size=32",
    "--set",
    "num_sgd_iter=1",
]
PAYLOAD_MODULE = "relayrl_ckpt_payload"  # imported, it would write the marker


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=2)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .debugging(seed=0)
    ).build()
    algo.train()
    path = algo.save(str(base / "good"))
    algo.stop()
    return path


# --- hostile variants: name -> (change(ckpt, marker, outside_dir), the file the refusal must name)
def callable_env(ckpt, marker, outside):
    # Popen(env_config) runs the dict's keys: `sh -c "touch MARKER"` (the reproduction)
    def change(config):
        config["env"] = "callable:subprocess:Popen"
        config["env_config"] = {"sh": 0, "-c": 0, f"touch {marker}": 0}

    edit_json(ckpt, "config.json", change)


def module_env(ckpt, marker, outside):
    Path(outside, f"{PAYLOAD_MODULE}.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    edit_json(ckpt, "config.json", lambda config: config.update(env=f"{PAYLOAD_MODULE}:Evil-v0"))


def _list_outside_file(ckpt, outside, listed_as):
    """A manifest entry, with the right size and checksum, for a file outside the checkpoint."""
    Path(outside, "secret.txt").write_text("not the checkpoint's\n")
    manifest = read_json(ckpt, "COMPLETE")
    manifest["files"][listed_as] = {"bytes": 21, "sha256": checkpoint_io.file_sha256(f"{outside}/secret.txt")}
    write_json(ckpt, "COMPLETE", manifest)


def parent_path(ckpt, marker, outside):
    _list_outside_file(ckpt, outside, "../outside/secret.txt")


def dotdot_inside(ckpt, marker, outside):
    _list_outside_file(ckpt, outside, "learner/../../outside/secret.txt")


def absolute_path(ckpt, marker, outside):
    _list_outside_file(ckpt, outside, f"{outside}/secret.txt")


def link_to_dev_zero(ckpt, marker, outside):
    data = learner_data_file(ckpt)  # listed with 0 bytes, hashing it used to read /dev/zero forever
    os.remove(data)
    os.symlink("/dev/zero", data)
    manifest = read_json(ckpt, "COMPLETE")
    manifest["files"][os.path.relpath(data, ckpt)] = {
        "bytes": 0,
        "sha256": checkpoint_io.file_sha256(os.devnull),
    }
    write_json(ckpt, "COMPLETE", manifest)


def link_outside(ckpt, marker, outside):
    target = Path(outside, "config.json")  # same bytes: the checksum matches through the link
    target.write_bytes(Path(ckpt, "config.json").read_bytes())
    os.remove(os.path.join(ckpt, "config.json"))
    os.symlink(target, os.path.join(ckpt, "config.json"))


def linked_learner_dir(ckpt, marker, outside):
    os.rename(os.path.join(ckpt, "learner"), os.path.join(outside, "learner"))
    os.symlink(os.path.join(outside, "learner"), os.path.join(ckpt, "learner"))


def fifo_state(ckpt, marker, outside):
    os.remove(os.path.join(ckpt, "state.json"))
    os.mkfifo(os.path.join(ckpt, "state.json"))  # reading it would block forever


def unlisted_file(ckpt, marker, outside):
    Path(ckpt, "learner", "learner.data-00001-of-00002").write_bytes(b"\0" * 64)


def manifest_files_list(ckpt, marker, outside):
    write_json(ckpt, "COMPLETE", {"format": 1, "files": ["config.json", "state.json"]})


def manifest_without_files(ckpt, marker, outside):
    write_json(ckpt, "COMPLETE", {"format": 1})


def manifest_huge_size(ckpt, marker, outside):
    manifest = read_json(ckpt, "COMPLETE")
    manifest["files"]["state.json"]["bytes"] = 10**30
    write_json(ckpt, "COMPLETE", manifest)


def state_iteration_text(ckpt, marker, outside):
    edit_json(ckpt, "state.json", lambda state: state.update(iteration="abc"))


def state_bad_rng(ckpt, marker, outside):
    edit_json(ckpt, "state.json", lambda state: state.update(rng={"bit_generator": "system", "state": "id"}))


def state_a_list(ckpt, marker, outside):
    edit_json(ckpt, "state.json", lambda state: [state])


def env_method_overwrite(ckpt, marker, outside):
    # restoring used to setattr any name the file gave on the live env
    edit_json(ckpt, "state.json", lambda state: state["workers"][0]["env"]["values"].update(step="boom"))


def env_array_retyped(ckpt, marker, outside):
    def change(state):
        state["workers"][0]["env"]["values"]["state"] = {"__ndarray__": [[1]], "dtype": "|O", "shape": [1, 1]}

    edit_json(ckpt, "state.json", change)


def saved_model_inside(ckpt, marker, outside):
    # a SavedModel is a TensorFlow program: a checkpoint must not switch evaluate to loading one
    Path(ckpt, "saved_model.pb").write_bytes(b"\0" * 32)


def truncated_learner(ckpt, marker, outside):
    data = Path(learner_data_file(ckpt))
    data.write_bytes(data.read_bytes()[:100])
    reseal(ckpt)


VARIANTS = {
    "callable_env": (callable_env, "config.json"),
    "module_env": (module_env, "config.json"),
    "parent_path": (parent_path, "COMPLETE"),
    "dotdot_inside": (dotdot_inside, "COMPLETE"),
    "absolute_path": (absolute_path, "COMPLETE"),
    "link_to_dev_zero": (link_to_dev_zero, "learner.data-00000-of-00001"),
    "link_outside": (link_outside, "config.json"),
    "linked_learner_dir": (linked_learner_dir, "learner"),
    "fifo_state": (fifo_state, "state.json"),
    "unlisted_file": (unlisted_file, "learner/learner.data-00001-of-00002"),
    "manifest_files_list": (manifest_files_list, "COMPLETE"),
    "manifest_without_files": (manifest_without_files, "COMPLETE"),
    "manifest_huge_size": (manifest_huge_size, "COMPLETE"),
    "state_iteration_text": (state_iteration_text, "state.json: iteration"),
    "state_bad_rng": (state_bad_rng, "state.json: rng"),
    "state_a_list": (state_a_list, "state.json"),
    "env_method_overwrite": (env_method_overwrite, "state.json: workers: env.'step'"),
    "env_array_retyped": (env_array_retyped, "state.json: workers: env.state"),
    "truncated_learner": (truncated_learner, "learner/learner.index"),
    "saved_model_inside": (saved_model_inside, "saved_model.pb"),
}


@pytest.fixture
def hostile(good, tmp_path, request, monkeypatch):
    name = request.param
    outside, marker = tmp_path / "outside", tmp_path / "PWNED"
    outside.mkdir()
    monkeypatch.syspath_prepend(str(outside))  # where the payload module would be imported from
    ckpt = copy(good, str(tmp_path / "ckpt"))
    VARIANTS[name][0](ckpt, marker, str(outside))
    return name, ckpt, marker, tmp_path


def command_line(command: str, ckpt: str, tmp_path: Path) -> list[str]:
    if command == "evaluate":
        return ["evaluate", ckpt, "--episodes", "1"]
    if command == "export":
        return ["export", ckpt, str(tmp_path / "exported")]
    return ["train", "ppo", "CartPole-v1", "--resume", ckpt, "--logdir", str(tmp_path / "run"), *TRAIN_FLAGS]


@pytest.mark.parametrize("command", ["evaluate", "export", "train"])
@pytest.mark.parametrize("hostile", sorted(VARIANTS), indirect=True)
def test_hostile_checkpoint_is_refused_and_runs_nothing(hostile, command, capsys):
    name, ckpt, marker, tmp_path = hostile
    with time_limit(120):  # a link to /dev/zero or a FIFO once hung the loader
        code = cli.main(command_line(command, ckpt, tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert not marker.exists(), f"{name}: code named in the checkpoint ran"
    assert code == 2, (code, err)
    assert len(err) == 1 and err[0].startswith("relayrl: error: checkpoint "), err
    assert VARIANTS[name][1] in err[0], err[0]
    assert not (tmp_path / "exported").exists()


def test_callable_env_checkpoint_is_refused_by_a_fresh_cli_process(good, tmp_path):
    """End to end: the issue's reproduction (callable:subprocess:Popen running `sh -c "touch FILE"`) through
    a `python -m relayrl.cli` process, for evaluate and export, refused before TensorFlow even loads. With
    --env the caller supplies the env; the checkpoint's env_config (the payload) then does not fit it:
    refused as well, in one line."""
    ckpt, marker = copy(good, str(tmp_path / "ckpt")), tmp_path / "PWNED"
    callable_env(ckpt, marker, None)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))
    for args in (["evaluate", ckpt], ["export", ckpt, str(tmp_path / "exported")]):
        proc = subprocess.run(
            [sys.executable, "-m", "relayrl.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 2 and not marker.exists(), proc.stderr
        assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr
        assert "config.json: env = 'callable:subprocess:Popen' is a Python callable" in proc.stderr
        assert "--env ID" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "relayrl.cli", "evaluate", ckpt, "--env", "CartPole-v1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    refusals = [line for line in proc.stderr.splitlines() if line.startswith("relayrl:")]
    assert proc.returncode == 2 and not marker.exists() and "Traceback" not in proc.stderr, proc.stderr
    assert len(refusals) == 1 and "config.json with env," in refusals[0] and "does not build: " in refusals[0]


def test_resume_refuses_a_missing_or_foreign_checkpoint(good, tmp_path, capsys):
    missing = cli.main(command_line("train", str(tmp_path / "nope"), tmp_path))
    assert missing == 2 and "does not exist" in capsys.readouterr().err
    foreign = copy(good, str(tmp_path / "dqn"))
    edit_json(foreign, "state.json", lambda state: state.update(algo="dqn"))
    assert cli.main(command_line("train", foreign, tmp_path)) == 2
    assert "is a dqn checkpoint, not ppo" in capsys.readouterr().err
    other_env = command_line("train", good, tmp_path)
    other_env[2] = "Acrobot-v1"  # a CartPole-v1 checkpoint resumed on another env
    assert cli.main(other_env) == 2 and not (tmp_path / "run").exists()
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "config.json: env = 'CartPole-v1' is not this run's env 'Acrobot-v1': a checkpoint resumes on "
            "the env it was trained on"
        )
    )


def test_a_ray_worker_refuses_a_hostile_env_snapshot_in_one_line(ray_session, good, tmp_path):
    """Worker states are checked where the envs live, in the worker actors: the refusal comes back as the
    worker's CheckpointError (one line), not Ray's wrapped traceback."""
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=2)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .debugging(seed=0)
    ).build()
    try:
        ckpt = copy(good, str(tmp_path / "ckpt"))
        env_method_overwrite(ckpt, None, None)
        with pytest.raises(checkpoint.CheckpointError) as refused:
            algo.restore(ckpt)
        want = (
            "state.json: workers: env.'step': not a plain attribute of CartPoleVectorEnv: a snapshot "
            "only writes the attributes capture() keeps"
        )
        assert str(refused.value).endswith(want)
        algo.restore(good)  # the same worker then takes a good checkpoint
        assert algo.train()["training_iteration"] == 2
    finally:
        algo.stop()
