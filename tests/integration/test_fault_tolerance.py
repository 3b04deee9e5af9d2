"""Fault injection on real Ray workers: a worker killed mid-sample, an env raising, an env hanging past the
timeout. Training continues, `workers/restarts` counts each fault exactly once, no fragment is lost, and PPO
still reaches the learning threshold; past the restart budget the run stops with a typed error."""
import time

import cloudpickle
import pytest

import tests.fakes
from relayrl import PPOConfig
from relayrl.runtime.ray_workers import WorkerFailedError
from tests.fakes import FaultyCartPole

cloudpickle.register_pickle_by_value(tests.fakes)  # Ray workers get the fake env by value, not by import


def faulty_config(tmp_path, fault: str, **fault_tolerance):
    return (PPOConfig.from_tuned("CartPole-v1").environment(FaultyCartPole, env_config={
                "fault": fault, "at_step": 150, "marker": str(tmp_path / f"{fault}.marker")})
            .rollouts(num_rollout_workers=2).debugging(seed=0)
            .fault_tolerance(restart_backoff_s=0.1, **fault_tolerance))


@pytest.mark.learning
@pytest.mark.parametrize("fault,timeout", [("kill", 60.0), ("raise", 60.0), ("hang", 5.0)])
def test_training_survives_a_fault_and_still_learns(ray_session, tmp_path, fault, timeout):
    algo = faulty_config(tmp_path, fault, sample_timeout_s=timeout).build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= 475 or result["timesteps_total"] >= 200_000:
                break
    finally:
        algo.stop()
    assert (tmp_path / f"{fault}.marker").exists()  # the fault really happened
    assert result["workers/restarts"] == 1
    assert result["workers/lost_fragments"] == 0
    assert result["workers/healthy"] == 2
    assert result["episode_reward_mean"] >= 475, result


def test_past_the_restart_budget_the_error_names_the_worker(ray_session, tmp_path):
    algo = faulty_config(tmp_path, "raise", max_worker_restarts=0).build()
    try:
        with pytest.raises(WorkerFailedError, match=r"rollout worker \d failed 1 times .* injected env failure"):
            for _ in range(50):
                algo.train()
    finally:
        algo.stop()


def test_a_crashing_env_can_be_recreated_in_place(ray_session, tmp_path):
    algo = faulty_config(tmp_path, "raise", recreate_failed_envs=True).build()
    try:
        for _ in range(20):
            result = algo.train()
    finally:
        algo.stop()
    assert (tmp_path / "raise.marker").exists()
    assert result["workers/restarts"] == 0  # the worker rebuilt its env instead of dying


@pytest.mark.parametrize("algo_name", ["a3c", "impala"])
@pytest.mark.parametrize("fault", ["kill", "raise", "hang"])
def test_async_fleets_restart_a_failed_worker(ray_session, tmp_path, algo_name, fault):
    from relayrl.algos import config_class

    config = (config_class(algo_name)().environment(FaultyCartPole, env_config={
                  "fault": fault, "at_step": 150, "marker": str(tmp_path / "fault.marker")})
              .rollouts(num_rollout_workers=2, num_envs_per_worker=4).debugging(seed=0)
              .fault_tolerance(restart_backoff_s=0.1, **({"sample_timeout_s": 5.0} if fault == "hang" else {})))
    algo = config.build()
    try:
        after_fault, deadline = 0, time.monotonic() + 180  # iterations are short: bound the wait by time
        while after_fault < 5 and time.monotonic() < deadline:
            result = algo.train()
            after_fault += result["workers/restarts"] == 1
        steps_at_fault = result["timesteps_total"]
        for _ in range(5):  # training goes on past the restart
            result = algo.train()
    finally:
        algo.stop()
    assert (tmp_path / "fault.marker").exists()
    assert result["workers/restarts"] == 1 and result["workers/healthy"] == 2
    assert result["timesteps_total"] > steps_at_fault
