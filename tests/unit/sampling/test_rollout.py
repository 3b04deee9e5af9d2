"""RolloutWorker on real (tiny, deterministic) gymnasium envs: autoreset boundaries, GAE, episode stats."""

import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import EnvError, SamplerSettings
from tests.helpers.fakes import CountdownEnv, NaNRewardEnv

GAMMA, LAM, C = 0.9, 0.8, 0.5


def constant_value_worker(env_config, fragment_length, env=CountdownEnv, postprocess="gae"):
    probe = env(env_config)
    spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, DEFAULT_MODEL)
    settings = SamplerSettings(
        env=env,
        env_config=env_config,
        num_envs=2,
        fragment_length=fragment_length,
        spec=spec,
        gamma=GAMMA,
        lambda_=LAM,
        seed=0,
        postprocess=postprocess,
    )
    worker = RolloutWorker(settings)
    weights = networks.init_weights(spec, np.random.default_rng(0))
    vf_start = worker.policy.net._vf_start
    for i in range(vf_start, len(weights)):
        weights[i] = np.zeros_like(weights[i])
    weights[-1][:] = C  # V(s) = C everywhere: zero kernels, output bias C
    worker.set_weights(weights, version=3)
    return worker


def episode_advantages(num_steps, terminated):
    """Naive per-episode GAE for reward 1 per step and V = C."""
    deltas = [1.0 + GAMMA * C - C] * num_steps
    if terminated:
        deltas[-1] = 1.0 - C
    adv, carry = [], 0.0
    for d in reversed(deltas):
        carry = d + GAMMA * LAM * carry
        adv.append(carry)
    return adv[::-1]


def test_terminations_across_autoreset_drop_reset_steps():
    worker = constant_value_worker({"terminate_at": 3}, fragment_length=8)
    frag = worker.sample()
    # Per env: 3 valid steps, 1 reset step, 3 valid steps, 1 reset step -> 6 valid rows each.
    assert len(frag) == 12 and frag.env_steps == 12
    assert frag.version == 3
    per_env = frag.data["advantages"].reshape(6, 2)  # rows are time-major, reset rows removed
    want = episode_advantages(3, terminated=True) * 2
    np.testing.assert_allclose(per_env[:, 0], want, rtol=1e-5)
    np.testing.assert_allclose(per_env[:, 1], want, rtol=1e-5)
    np.testing.assert_allclose(frag.data["value_targets"], frag.data["advantages"] + C, rtol=1e-5)
    assert frag.episode_returns.tolist() == [3.0] * 4
    assert frag.episode_lengths.tolist() == [3] * 4
    # observations of kept rows are the 0,1,2 counters: no final/reset observation leaks in
    assert sorted(set(frag.data["obs"][:, 0].tolist())) == [0.0, 1.0, 2.0]


def test_truncation_bootstraps_from_final_observation():
    worker = constant_value_worker({"terminate_at": 100, "truncate_at": 2}, fragment_length=3)
    frag = worker.sample()
    per_env = frag.data["advantages"].reshape(2, 2)
    np.testing.assert_allclose(per_env[:, 0], episode_advantages(2, terminated=False), rtol=1e-5)


def test_fragment_boundary_bootstraps_and_stats_carry_over():
    worker = constant_value_worker({"terminate_at": 3}, fragment_length=2)
    first = worker.sample()  # steps 1-2 of the episode, cut by the fragment: bootstrap V = C
    per_env = first.data["advantages"].reshape(2, 2)
    d = 1.0 + GAMMA * C - C
    np.testing.assert_allclose(per_env[:, 0], [d + GAMMA * LAM * d, d], rtol=1e-5)
    assert len(first.episode_returns) == 0
    second = worker.sample()  # step 3 (terminal) then the reset step
    assert len(second) == 2
    assert second.episode_returns.tolist() == [3.0, 3.0]


def test_non_finite_reward_is_reported_with_worker_and_field():
    worker = constant_value_worker({"terminate_at": 5}, fragment_length=4, env=NaNRewardEnv)
    with pytest.raises(EnvError, match="non-finite reward"):
        worker.sample()


def test_seeded_workers_repeat_and_differ_by_index():
    spec_env = CountdownEnv()
    import gymnasium as gym

    spec = networks.spec_from_spaces(gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2), DEFAULT_MODEL)
    weights = networks.init_weights(spec, np.random.default_rng(1))
    del spec_env

    def actions(index):
        s = SamplerSettings(
            env="CartPole-v1", env_config={}, num_envs=4, fragment_length=20, spec=spec, seed=7
        )
        w = RolloutWorker(s, worker_index=index)
        w.set_weights(weights, 0)
        return w.sample().data["obs"]

    np.testing.assert_array_equal(actions(1), actions(1))
    assert not np.array_equal(actions(1), actions(2))


def test_sequences_mode_keeps_time_major_columns_and_marks_reset_steps():
    worker = constant_value_worker({"terminate_at": 3}, fragment_length=8, postprocess="sequences")
    frag = worker.sample()
    d = frag.data
    assert d["obs"].shape == (9, 2, 1) and d["actions"].shape == (8, 2) and d["logp"].shape == (8, 2)
    # per env: steps 0-2 valid (obs 0,1,2), step 2 terminates with final obs 3, step 3 is the reset step
    np.testing.assert_array_equal(d["obs"][:5, 0, 0], [0, 1, 2, 3, 0])
    np.testing.assert_array_equal(d["valid"][:, 0], [1, 1, 1, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(d["terminated"][:, 0], [0, 0, 1, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(d["dones"], d["terminated"])
    assert frag.env_steps == 12 and frag.version == 3
    # behaviour log-probs of the actions taken: log 1/2 with a near-uniform initial policy
    np.testing.assert_allclose(d["logp"], np.log(0.5), atol=0.05)
