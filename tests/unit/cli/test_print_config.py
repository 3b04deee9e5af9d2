"""`relayrl train ALGO ENV --print-config` and the tuned files it names (no TensorFlow, no training)."""

import os
import re

import pytest
import yaml

from relayrl.algorithms import REGISTRY, config_class
from relayrl.cli import app as cli
from relayrl.core import tuned


def print_config(capsys, *args):
    assert cli.main(["train", *args, "--print-config"]) == 0
    return capsys.readouterr().out


def test_prints_defaults_plus_tuned_file_plus_overrides_and_does_not_train(capsys, tmp_path):
    out = print_config(capsys, "ppo", "CartPole-v1", "--set", "lr=0.0005", "--seed", "7")
    comments = [line for line in out.splitlines() if line.startswith("#")]
    assert any(line == f"# tuned: {tuned.path_for('ppo', 'CartPole-v1')}" for line in comments)
    assert any(line.startswith("# _result: ") and "env steps" in line for line in comments)
    fields = yaml.safe_load(out)
    tuned_fields, _ = tuned.load("ppo", "CartPole-v1")
    assert fields["train_batch_size"] == tuned_fields["train_batch_size"] == 512  # from the tuned file
    assert fields["lr"] == 0.0005 and fields["seed"] == 7  # --set and flags win over it
    assert fields["clip_param"] == 0.2 and fields["log_dir"] is None
    assert not any(p.startswith("ppo_CartPole") for p in os.listdir(tmp_path))
    # the body loads back as --config and resolves to the same config
    saved = tmp_path / "resolved.yaml"
    saved.write_text(out)
    assert yaml.safe_load(print_config(capsys, "ppo", "CartPole-v1", "--config", str(saved))) == fields


def test_without_a_tuned_file_it_says_so_and_lists_the_tuned_envs(capsys):
    out = print_config(capsys, "ppo", "MountainCar-v0")
    assert "# tuned: none for ppo on MountainCar-v0 (tuned envs for ppo: " in out
    assert yaml.safe_load(out)["env"] == "MountainCar-v0"


def test_bad_input_still_exits_2_with_one_line(capsys):
    assert cli.main(["train", "ppo", "CartPole-v1", "--print-config", "--set", "lr=-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lr" in err[0]


# every yaml under tuned/, as its path relative to it ('ppo-CartPole-v1.yaml', 'ALE/ppo-Pong-v5.yaml')
TUNED_FILES = sorted(
    os.path.relpath(os.path.join(folder, f), tuned.HERE)
    for folder, _, files in os.walk(tuned.HERE)
    for f in files
    if f.endswith(".yaml")
)


@pytest.mark.parametrize("name", TUNED_FILES)
def test_every_tuned_file_is_a_valid_config_and_records_its_result(name):
    namespace, _, file = name.rpartition("/")
    algo = next(a for a in sorted(REGISTRY, key=len, reverse=True) if file.startswith(f"{a}-"))
    env_id = f"{namespace}/" * bool(namespace) + file[len(algo) + 1 : -len(".yaml")]
    assert tuned.available(algo).count(env_id) == 1
    config = config_class(algo).from_tuned(env_id)
    config.validate()
    result = tuned.notes(tuned.path_for(algo, env_id)).get("_result")
    # what it reached, in how many env steps, how long it took, on what machine
    assert (
        isinstance(result, str) and "steps" in result and re.search(r"\d s\b", result) and "CPU" in result
    ), result
