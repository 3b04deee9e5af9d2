"""progress.csv (RunRecord) and the across-seed mean/spread of `relayrl plot`, without TensorFlow."""

import csv
import json

import numpy as np
import pytest

from relayrl.persistence.plot import group_runs, mean_and_spread, read_run
from relayrl.persistence.run_record import FIRST_COLUMNS, RunRecord


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def result(i, **extra):
    return {
        "training_iteration": i,
        "timesteps_total": 100 * i,
        "time_total_s": 0.5 * i,
        "episode_reward_mean": float(i),
        "episode_reward_min": 0.0,
        "episode_reward_max": 2.0 * i,
        "episodes_total": 3 * i,
        "learner/loss": 1.0 / i,
        "workers/healthy": True,
        "note": "skipped",
        **extra,
    }


def test_rows_are_on_disk_after_each_iteration_before_close(tmp_path):
    record = RunRecord(str(tmp_path), "ppo", {"env": "CartPole-v1", "redis_password": "s3cret", "seed": 0})
    record.log(result(1))
    record.log(result(2))
    got = rows(tmp_path / "progress.csv")  # what a crash now would leave
    assert [r["training_iteration"] for r in got] == ["1", "2"]
    assert list(got[0])[: len(FIRST_COLUMNS)] == list(FIRST_COLUMNS)
    assert got[1]["learner/loss"] == "0.5" and got[1]["workers/healthy"] == "1" and "note" not in got[1]
    meta = json.loads((tmp_path / "config.json").read_text())
    assert meta["algo"] == "ppo" and meta["config"]["seed"] == 0 and meta["config"]["redis_password"] is None
    record.close(plot=False)


def test_a_key_that_appears_later_widens_the_header_and_keeps_earlier_rows(tmp_path):
    record = RunRecord(str(tmp_path), "dqn", {"env": "CartPole-v1"})
    record.log(result(1))
    record.log(result(2, **{"learner/td_error": 0.25}))
    record.log(result(3, **{"learner/td_error": 0.125}))
    record.close(plot=False)
    got = rows(tmp_path / "progress.csv")
    assert [r["learner/td_error"] for r in got] == ["", "0.25", "0.125"]
    assert [r["episode_reward_mean"] for r in got] == ["1.0", "2.0", "3.0"]


def test_a_resumed_run_drops_the_rows_past_its_checkpoint(tmp_path):
    first = RunRecord(str(tmp_path), "ppo", {"env": "CartPole-v1"})
    for i in (1, 2, 3, 4):
        first.log(result(i))
    # the process dies here (no close); a new one resumes from the checkpoint of iteration 2
    resumed = RunRecord(str(tmp_path), "ppo", {"env": "CartPole-v1"})
    resumed.log(result(3, episode_reward_mean=30.0))
    resumed.close(plot=False)
    got = rows(tmp_path / "progress.csv")
    assert [(r["training_iteration"], r["episode_reward_mean"]) for r in got] == [
        ("1", "1.0"),
        ("2", "2.0"),
        ("3", "30.0"),
    ]


def test_mean_and_spread_match_a_naive_loop_on_the_common_range():
    a = (np.array([0.0, 10.0, 20.0, 30.0]), np.array([0.0, 1.0, 2.0, 3.0]))
    b = (np.array([5.0, 25.0]), np.array([10.0, 30.0]))
    grid, mean, lo, hi = mean_and_spread([a, b], points=5)
    assert grid.tolist() == [5.0, 10.0, 15.0, 20.0, 25.0]  # both runs cover [5, 25]
    for g, m, low, high in zip(grid, mean, lo, hi):
        ya = g / 10.0  # a is y = x / 10
        yb = g + 5.0  # b is y = x + 5
        assert (
            m == pytest.approx((ya + yb) / 2)
            and low == pytest.approx(min(ya, yb))
            and high == pytest.approx(max(ya, yb))
        )
    _, mean, lo, hi = mean_and_spread([a, b], spread="std", points=5)
    assert hi - mean == pytest.approx(
        np.abs(np.array([0.5, 1.0, 1.5, 2.0, 2.5]) - np.array([10, 15, 20, 25, 30])) / 2
    )


def test_runs_group_by_algo_and_env_and_bad_dirs_are_named(tmp_path):
    for name, algo, seed in (("a", "ppo", 0), ("b", "ppo", 1), ("c", "dqn", 0)):
        record = RunRecord(str(tmp_path / name), algo, {"env": "CartPole-v1", "seed": seed})
        record.log(result(1))
        record.close(plot=False)
    runs = [read_run(str(tmp_path / n)) for n in "abc"]
    assert {k: [r.name for r in v] for k, v in group_runs(runs, ["algo", "env"]).items()} == {
        "ppo CartPole-v1": ["a", "b"],
        "dqn CartPole-v1": ["c"],
    }
    assert list(group_runs(runs, ["seed"])) == ["seed=0", "seed=1"]
    with pytest.raises(ValueError, match="--group-by 'lr': run .* has no such config field"):
        group_runs(runs, ["lr"])
    with pytest.raises(ValueError, match="is not a directory"):
        read_run(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="has no progress.csv"):
        read_run(str(tmp_path / "empty"))
