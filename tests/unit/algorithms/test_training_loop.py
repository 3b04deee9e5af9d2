"""train_until: the CLI's stop rules, the checkpoint plan (every N, at end, keep K, keep best) and the
summary it returns; stop rules and plans that cannot be followed are refused in one line."""

from __future__ import annotations

import json
import os

import pytest

from relayrl.algorithms.checkpointing import CheckpointPlan, read_best
from relayrl.algorithms.ppo import PPOConfig
from relayrl.algorithms.stop_rules import default_rules, should_stop, stop_rules
from relayrl.algorithms.training import train_until
from relayrl.persistence import checkpoint


def ppo(**evaluation):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=0)
        .training(train_batch_size=64, sgd_minibatch_size=64, num_sgd_iter=1)
        .evaluation(**evaluation)
        .debugging(seed=2)
    )


@pytest.fixture(scope="module")
def algo():
    with ppo(evaluation_interval=1, evaluation_episodes=2).build() as a:
        yield a


def test_iteration_rule_and_summary(algo):
    start = algo.iteration
    final = train_until(algo, {"iters": start + 3}, progress=False)
    assert final["training_iteration"] == start + 3
    assert final["interrupted"] is False and final["solved"] is False and final["time_to_solve_s"] is None
    assert 0.99 < sum(final[f"run/{k}_frac"] for k in ("sample", "learn", "sync", "wait")) < 1.01
    assert final["diagnosis"].startswith("too short to diagnose (3 iterations")
    assert "evaluation/episode_reward_mean" in final


def test_timestep_and_time_rules(algo):
    target = algo.timesteps_total + 150
    assert train_until(algo, {"timesteps": target}, progress=False)["timesteps_total"] >= target
    final = train_until(algo, {"time": algo.time_total_s + 0.05}, progress=False)
    assert final["time_total_s"] >= final["time_total_s"] - final["time_this_iter_s"]


def test_reward_rule_counts_as_solved(algo):
    final = train_until(algo, {"reward": -1.0}, progress=False)  # any CartPole episode beats it
    assert final["solved"] is True and final["time_to_solve_s"] >= 0


def test_rules_match_their_results():
    result = {"episode_reward_mean": float("nan"), "timesteps_total": 10, "training_iteration": 2}
    result["time_total_s"] = 1.0
    assert not should_stop({"reward": 0.0}, result)  # no episode yet: a reward rule never holds
    assert should_stop({"iters": 2}, result) and not should_stop({"iters": 3}, result)
    assert should_stop({"timesteps": 10}, result) and should_stop({"time": 1.0}, result)
    assert default_rules("CartPole-v1") == {"timesteps": 1_000_000, "reward": 475.0}
    assert default_rules(lambda cfg: None) == {"timesteps": 1_000_000}
    assert stop_rules({"iters": None}, "CartPole-v1") == default_rules("CartPole-v1")


@pytest.mark.parametrize(
    ("stop", "message"),
    [
        ({"iterations": 3}, "stop rule 'iterations' is unknown; allowed: reward, timesteps, iters, time"),
        ({"iters": 0}, r"stop rule iters = 0 is invalid: allowed: an integer in \[1, 2\*\*53\]"),
        ({"iters": 2.5}, "stop rule iters = 2.5 is invalid"),
        ({"timesteps": True}, "stop rule timesteps = True is invalid"),
        ({"reward": float("nan")}, "stop rule reward = nan is invalid: allowed: a finite number"),
        ({"time": -1}, "stop rule time = -1 is invalid: allowed: a number of seconds > 0"),
        ({"time": "10"}, "stop rule time = '10' is invalid"),
        ([("iters", 3)], "stop = list is invalid: allowed: a dict"),
    ],
)
def test_hostile_stop_rules_are_refused(stop, message):
    with pytest.raises(ValueError, match=message):
        stop_rules(stop, "CartPole-v1")


def test_checkpoint_cadence_keep_and_at_end(algo, tmp_path):
    start = algo.iteration
    plan = CheckpointPlan(str(tmp_path), every=2, at_end=True, keep=2)
    told = []
    train_until(algo, {"iters": start + 7}, checkpoints=plan, progress=False, on_checkpoint=told.append)
    saved = sorted({start + i for i in range(1, 8) if (start + i) % 2 == 0} | {start + 7})  # one save each
    assert [os.path.basename(p) for p in told] == [f"ckpt-{i:07d}" for i in saved]
    assert sorted(os.listdir(tmp_path)) == [f"ckpt-{i:07d}" for i in saved[-2:]]  # keep=2
    assert checkpoint.latest(str(tmp_path)).endswith(f"ckpt-{start + 7:07d}")


def test_keep_best_saves_only_improvements(algo, tmp_path):
    plan = CheckpointPlan(str(tmp_path), keep_best=True)
    told = []
    final = train_until(
        algo, {"iters": algo.iteration + 4}, checkpoints=plan, progress=False, on_checkpoint=told.append
    )
    assert told and all(os.path.basename(p) == "best" for p in told)
    best = read_best(str(tmp_path / "best.json"))
    assert best >= final["evaluation/episode_reward_mean"]
    state = checkpoint.verify(str(tmp_path / "best"), algo="ppo")
    assert json.loads((tmp_path / "best.json").read_text())["training_iteration"] == state["iteration"]


def test_a_resumed_run_keeps_a_better_best(algo, tmp_path):
    (tmp_path / "best.json").write_text(json.dumps({"evaluation/episode_reward_mean": 1e9}))
    told = []
    plan = CheckpointPlan(str(tmp_path), keep_best=True)
    train_until(
        algo, {"iters": algo.iteration + 2}, checkpoints=plan, progress=False, on_checkpoint=told.append
    )
    assert told == [] and not (tmp_path / "best").exists()  # algo.iteration > 0: a resumed run


@pytest.mark.parametrize("content", ["{", "[1]", '{"evaluation/episode_reward_mean": "NaN"}', "1e999"])
def test_a_broken_best_json_counts_as_none(tmp_path, content):
    (tmp_path / "best.json").write_text(content)
    assert read_best(str(tmp_path / "best.json")) == float("-inf")


def test_keep_best_without_evaluation_is_refused(tmp_path):
    with ppo().build() as a:
        with pytest.raises(ValueError, match="keep_best needs evaluation while training; allowed: set"):
            train_until(a, {"iters": 1}, checkpoints=CheckpointPlan(str(tmp_path), keep_best=True))
        with pytest.raises(ValueError, match=r"checkpoint keep = 0 is invalid: allowed: an integer >= 1"):
            train_until(a, {"iters": 1}, checkpoints=CheckpointPlan(str(tmp_path), keep=0))
        assert a.iteration == 0  # refused before any training
