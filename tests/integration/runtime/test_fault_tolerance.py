"""Fault injection on real Ray workers: a worker killed mid-sample, an env raising, an env hanging past the
timeout. Training continues, `workers/restarts` counts each fault exactly once, no fragment is lost, and PPO
still reaches the learning threshold; past the restart budget the run stops with a typed error."""

import time

import cloudpickle
import numpy as np
import pytest

import tests.helpers.fakes
from relayrl import PPOConfig
from relayrl.sampling.settings import WorkerFailedError
from tests.helpers.fakes import FaultyCartPole

cloudpickle.register_pickle_by_value(
    tests.helpers.fakes
)  # Ray workers get the fake env by value, not by import


def faulty_config(tmp_path, fault: str, **fault_tolerance):
    return (
        PPOConfig.from_tuned("CartPole-v1")
        .environment(
            FaultyCartPole,
            env_config={"fault": fault, "at_step": 150, "marker": str(tmp_path / f"{fault}.marker")},
        )
        .rollouts(num_rollout_workers=2)
        .debugging(seed=0)
        .fault_tolerance(restart_backoff_s=0.1, **fault_tolerance)
    )


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
        with pytest.raises(
            WorkerFailedError, match=r"rollout worker \d failed 1 times .* injected env failure"
        ):
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


def two_worker_config(algo_name: str, tmp_path, fault: str):
    """`algo_name` on FaultyCartPole with 2 Ray workers of 4 envs; a hang counts after 5 s."""
    from relayrl.algorithms import config_class

    return (
        config_class(algo_name)()
        .environment(
            FaultyCartPole,
            env_config={"fault": fault, "at_step": 150, "marker": str(tmp_path / "fault.marker")},
        )
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4)
        .debugging(seed=0)
        .fault_tolerance(restart_backoff_s=0.1, **({"sample_timeout_s": 5.0} if fault == "hang" else {}))
    )


@pytest.mark.parametrize("algo_name", ["a3c", "impala"])
@pytest.mark.parametrize("fault", ["kill", "raise", "hang"])
def test_async_fleets_restart_a_failed_worker(ray_session, tmp_path, algo_name, fault):
    algo = two_worker_config(algo_name, tmp_path, fault).build()
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


@pytest.mark.parametrize("algo_name,fault", [("a2c", "kill"), ("ppo", "raise"), ("ppo", "hang")])
def test_gradient_aggregation_restarts_a_failed_worker(ray_session, tmp_path, algo_name, fault):
    config = (
        two_worker_config(algo_name, tmp_path, fault)
        .rollouts(rollout_fragment_length=32)
        .training(update_mode="gradients", train_batch_size=256)
    )
    algo = config.build()
    try:
        for _ in range(10):  # the fault comes at the 150th step of an env copy: iteration 5
            result = algo.train()
        assert result["workers/restarts"] == 1
        steps_after_fault = result["timesteps_total"]
        result = algo.train()  # training goes on with the successor
    finally:
        algo.stop()
    assert (tmp_path / "fault.marker").exists()
    assert result["workers/restarts"] == 1 and result["workers/healthy"] == 2
    assert result["workers/lost_fragments"] == 0
    # both workers' fragments counted: more than one worker's 4 x 32 steps (reset steps are not counted)
    assert result["timesteps_total"] - steps_after_fault > 4 * 32


def test_a_worker_killed_during_ppo_sgd_steps_resamples_the_fragment_it_kept(ray_session):
    """In PPO's gradient mode each worker keeps its fragment for the SGD steps; if it dies between them,
    its successor samples a new fragment with the iteration's weights and the update uses all rows."""
    import ray

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4, rollout_fragment_length=32)
        .training(update_mode="gradients", train_batch_size=256, num_sgd_iter=2, sgd_minibatch_size=64)
        .debugging(seed=0)
        .fault_tolerance(restart_backoff_s=0.1)
    )
    algo = config.build()
    fleet = algo.workers
    sample_and_keep, sampled = fleet.sample_and_keep, []

    def sample_then_kill():  # the real call, then a real SIGKILL-like end of worker 1 before the SGD steps
        fragments, rows = sample_and_keep()
        sampled.extend(fragments)
        ray.kill(fleet.actors[0], no_restart=True)
        return fragments, rows

    fleet.sample_and_keep = sample_then_kill
    try:
        before = algo.learner.get_weights()
        result = algo.train()
        after = algo.learner.get_weights()
    finally:
        algo.stop()
    assert result["workers/restarts"] == 1 and result["workers/healthy"] == 2
    assert result["workers/lost_fragments"] == 0
    # the successor's fragment counts too: its env steps happened
    assert result["timesteps_total"] == sum(f.env_steps for f in sampled) + sampled[0].env_steps
    assert all(np.isfinite(w).all() for w in after)
    assert max(np.abs(a - b).max() for a, b in zip(after, before)) > 1e-5


@pytest.mark.parametrize("algo_name", ["ppo", "impala"])
def test_a_worker_lost_while_workers_start_is_recreated_and_counted(ray_session, tmp_path, algo_name):
    """The worker's process dies (SIGKILL) while it builds its envs, as when its node is lost during start-up:
    the build re-creates it instead of failing, the restart is counted, and training runs on 2 workers."""
    import os

    from relayrl.algorithms import config_class

    marker = tmp_path / "start.marker"
    config = (
        config_class(algo_name)()
        .environment(
            FaultyCartPole,
            env_config={"fault": "kill_at_start", "marker": str(marker), "driver_pid": os.getpid()},
        )
        .rollouts(num_rollout_workers=2, num_envs_per_worker=2)
        .training(train_batch_size=256)
        .fault_tolerance(restart_backoff_s=0.1)
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert marker.exists()  # the fault really happened
    assert result["workers/restarts"] == 1
    assert result["workers/healthy"] == 2
    assert result["workers/2/node_ip"] == "127.0.0.1"  # the re-created worker's node is known too
    assert result["timesteps_total"] > 0


def test_a_worker_whose_constructor_raises_ends_the_build_at_once(ray_session, tmp_path):
    """A constructor error is the user's env or config: re-creating the worker would fail the same way."""
    import os

    import ray

    config = (
        PPOConfig()
        .environment(FaultyCartPole, env_config={"fault": "raise_at_start", "driver_pid": os.getpid()})
        .rollouts(num_rollout_workers=1, num_envs_per_worker=2)
        .training(train_batch_size=256)
    )
    with pytest.raises(ray.exceptions.RayActorError, match="injected constructor failure"):
        config.build()
