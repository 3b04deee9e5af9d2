"""IMPALA's learner queue on real Ray: workers keep sampling while the driver is busy; a full queue drops
the oldest fragments or blocks the workers, per config; weights reach workers through the WeightClient."""

import time

import gymnasium as gym
import numpy as np
import pytest

from relayrl import IMPALAConfig
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.sampling.settings import SamplerSettings


def make_queue(when_full: str, pull: dict | None = None):
    from relayrl.runtime.ray_async import LearnerQueue

    env = gym.make("CartPole-v1")
    spec = networks.spec_from_spaces(env.observation_space, env.action_space, DEFAULT_MODEL)
    settings = SamplerSettings(
        env="CartPole-v1",
        env_config={},
        num_envs=2,
        fragment_length=4,
        spec=spec,
        seed=0,
        postprocess="sequences",
    )
    queue = LearnerQueue(
        settings, 2, 0.5, None, queue_size=1, when_full=when_full, pull=pull or {"every_k": 1}, in_flight=2
    )
    queue.wait_ready()
    weights = networks.init_weights(spec, np.random.default_rng(0))
    queue.sync_weights(weights, 0)
    return queue, weights


def test_full_queue_drops_the_oldest_fragments(ray_session):
    queue, _ = make_queue("drop")
    try:
        first = queue.take(1)[0]
        time.sleep(1.0)  # a busy learner: every armed sample call finishes meanwhile
        queue.take(1)
        dropped = queue.pop_dropped()
        assert len(dropped) >= 2 and all(not f.data for f in dropped)  # columns freed, stats kept
        assert all(f.env_steps > 0 for f in dropped)
        assert first.data["obs"].shape == (5, 2, 4)
        assert len(queue.queue) <= 1
    finally:
        queue.stop()


def test_full_queue_blocks_the_delivering_workers(ray_session):
    queue, _ = make_queue("block")
    try:
        queue.take(1)
        time.sleep(1.0)
        queue._collect(timeout=0)
        assert queue._parked, "workers that delivered into a full queue are not re-armed"
        held = len(queue.queue)
        assert held >= 2 and queue.pop_dropped() == []
        out = queue.take(held)  # the learner drains the queue: parked workers resume
        assert len(out) == held and not queue._parked and queue._pending
    finally:
        queue.stop()


@pytest.mark.parametrize("pull", [{"every_k": 1}, {"background": True, "ema_tau": 0.5}])
def test_fragments_carry_the_version_workers_pulled(ray_session, pull):
    queue, weights = make_queue("drop", pull)
    try:
        queue.take(1)
        queue.sync_weights(weights, 7)
        deadline = time.time() + 10
        while time.time() < deadline:
            if any(f.version == 7 for f in queue.take(1)):
                break
        else:
            pytest.fail("no fragment sampled with version 7")
    finally:
        queue.stop()


def test_impala_reports_policy_lag_and_worker_idle_fraction(ray_session):
    config = IMPALAConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0)
    algo = config.build()
    try:
        for _ in range(20):
            result = algo.train()
    finally:
        algo.stop()
    assert (
        result["learner/policy_lag_mean"] >= 0
        and result["learner/policy_lag_max"] >= result["learner/policy_lag_mean"]
    )
    assert 0.0 <= result["learner/worker_idle_fraction"] < 1.0
    assert (
        result["weights_version"] == 20 and result["timesteps_total"] >= 20 * 400
    )  # 512 per update, less the reset steps
    assert 0.5 < result["learner/rho_mean"] < 2.0
    assert result["timers/wait_s"] > 0 and result["timers/sample_s"] == 0  # the learner waits for workers


def test_in_process_impala_books_its_sampling_as_sampling():
    """Without workers the learner samples itself: the time breakdown and the bottleneck advice must see it
    (it was booked as "wait", which the summary did not show)."""
    algo = IMPALAConfig().environment("CartPole-v1").debugging(seed=0).build()
    try:
        result = [algo.train() for _ in range(3)][-1]
    finally:
        algo.stop()
    assert result["timers/sample_s"] > 0 and result["timers/wait_s"] == 0
