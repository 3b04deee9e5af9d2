"""The closing diagnosis names only knobs of the algorithm in use, in the caller's syntax, and only when the
run's measurements support the advice."""

from __future__ import annotations

import dataclasses

import pytest

from relayrl.algorithms.dqn import DQNConfig
from relayrl.algorithms.impala import IMPALAConfig
from relayrl.algorithms.ppo import PPOConfig
from relayrl.algorithms.qlearning import QLearningConfig
from relayrl.core.metrics import GPU_MIN_PARAMS, RunFacts, diagnose

LEARN_BOUND = {"sample": 0.2, "learn": 0.75, "sync": 0.05}


def facts(config, shares=LEARN_BOUND, iterations=50, training_s=60.0, **kw) -> RunFacts:
    return RunFacts(
        shares=shares,
        iterations=iterations,
        training_s=training_s,
        fields=config.to_dict(),
        groups={f.name: f.metadata["group"] for f in dataclasses.fields(config)},
        **kw,
    )


def test_ppo_learner_bound_names_ppo_knobs_only():
    config = PPOConfig().training(num_sgd_iter=10, sgd_minibatch_size=128)
    line = diagnose(facts(config, model_params=5_000))
    assert line.startswith("learner-bound: 75% of time in learning; try ")
    assert "`--set num_sgd_iter=5`" in line and "`--set sgd_minibatch_size=256`" in line
    assert "replay_ratio" not in line and "num_gpus" not in line  # a tiny MLP: no GPU advice


def test_dqn_learner_bound_names_dqn_knobs_only():
    config = DQNConfig().training(replay_ratio=1.0)
    line = diagnose(facts(config, model_params=5_000))
    assert "`--set replay_ratio=0.5`" in line
    assert "num_sgd_iter" not in line and "sgd_minibatch_size" not in line and "num_gpus" not in line


def test_python_syntax_uses_the_builder_groups():
    line = diagnose(facts(PPOConfig().training(num_sgd_iter=10), model_params=5_000), syntax="python")
    assert "`.training(num_sgd_iter=5)`" in line and "--set" not in line


def test_gpu_only_for_a_big_or_conv_model_without_one():
    assert "`--set num_gpus=1` (a GPU)" in diagnose(facts(PPOConfig(), model_params=GPU_MIN_PARAMS))
    assert "num_gpus" in diagnose(facts(PPOConfig(), model_params=1_000, conv=True))
    assert "num_gpus" not in diagnose(facts(PPOConfig().resources(num_gpus=1), conv=True))
    assert "num_gpus" not in diagnose(facts(QLearningConfig(), conv=True, gpu_capable=False))


def test_tabular_q_has_no_learner_knob_to_name():
    line = diagnose(facts(QLearningConfig(), gpu_capable=False))
    assert (
        line == "learner-bound: 75% of time in learning; no knob of this algorithm trades learning per sample"
    )


def test_sampling_bound_names_envs_and_workers():
    config = PPOConfig().rollouts(num_envs_per_worker=2, num_rollout_workers=1)
    shares = {"sample": 0.8, "learn": 0.15, "sync": 0.05}
    line = diagnose(facts(config, shares))
    assert "`--set num_envs_per_worker=4`" in line and "`--set num_rollout_workers=2`" in line
    assert "relayrl scale" in line
    assert "relayrl scale" not in diagnose(facts(config, shares), syntax="python")


def test_a_learner_waiting_for_workers_is_sampling_bound():
    """IMPALA's and Ape-X's learner books its idle time as "wait": the workers are what is slow."""
    config = IMPALAConfig().rollouts(num_envs_per_worker=8, num_rollout_workers=2)
    line = diagnose(facts(config, {"sample": 0.0, "learn": 0.3, "sync": 0.02, "wait": 0.68}))
    assert line.startswith("sampling-bound: 68% of time in sampling (68% waiting for workers); try ")
    assert "`--set num_envs_per_worker=16`" in line and "`--set num_rollout_workers=3`" in line
    balanced = diagnose(facts(config, {"sample": 0.0, "learn": 0.5, "sync": 0.02, "wait": 0.48}))
    assert balanced == "balanced: sampling 48% (48% waiting for workers), learning 50%, weight sync 2%"


def test_sync_bound_only_with_remote_workers():
    shares = {"sample": 0.3, "learn": 0.3, "sync": 0.4}
    remote = diagnose(facts(PPOConfig().rollouts(num_rollout_workers=2), shares))
    assert remote.startswith("sync-bound") and "`--set model.fcnet_hiddens=[32,32]`" in remote
    assert diagnose(facts(PPOConfig().rollouts(num_rollout_workers=0), shares)).startswith("balanced")


@pytest.mark.parametrize(("iterations", "seconds"), [(2, 600.0), (500, 3.0)])
def test_no_advice_when_the_run_was_too_short(iterations, seconds):
    line = diagnose(facts(PPOConfig(), iterations=iterations, training_s=seconds))
    assert line.startswith("too short to diagnose") and "--set" not in line and "try" not in line
