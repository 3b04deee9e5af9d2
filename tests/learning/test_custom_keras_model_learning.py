"""examples/custom_keras_model.py: DQN with your own tf.keras.Model solves CartPole-v1 (last-100 mean >= 475),
and the SavedModel it exports loads with TensorFlow alone and balances the pole. ~1 minute on 2 cores."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.learning


def test_custom_keras_model_example_solves_cartpole_and_exports(tmp_path):
    export_dir = tmp_path / "policy"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [sys.executable, "examples/custom_keras_model.py", "--seed", "0", "--export-dir", str(export_dir)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["episode_reward_mean"] >= 475, last
    assert last["export_dir"] == str(export_dir)

    from relayrl.persistence.export import evaluate_saved_model

    scored = evaluate_saved_model(last["export_dir"], "CartPole-v1", num_episodes=10, seed=0)
    assert scored["episodes"] == 10
    assert scored["episode_reward_mean"] >= 400, scored  # greedy on the learned Q-values
