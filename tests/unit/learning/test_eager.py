"""Eager debugging (`.debugging(eager=True)` / `relayrl train --eager`): the learner's update runs op by op,
gives the same result as the compiled update (to float tolerance), and a loss sees concrete tensors."""

import functools
import json

import numpy as np
import pytest

from relayrl.algorithms.dqn import DQNConfig
from relayrl.algorithms.ppo import PPO, PPO_METRICS, PPOConfig, ppo_hparams, ppo_loss, ppo_prepare
from relayrl.algorithms.sac import SACConfig
from relayrl.algorithms.td3 import TD3Config
from relayrl.learning.placement import build_eagerly
from relayrl.models.tf_import import tf

SMALL_MLP = {"fcnet_hiddens": [32, 32]}
CONFIGS = {  # each does gradient steps in its first iteration
    "ppo": lambda: (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=512, sgd_minibatch_size=128, num_sgd_iter=2, model=SMALL_MLP)
    ),
    "dqn": lambda: (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=1, rollout_fragment_length=128)
        .training(learning_starts=64, train_batch_size=32, model=SMALL_MLP, target_network_update_freq=8)
    ),
    "sac": lambda: (
        SACConfig()
        .environment("Pendulum-v1")
        .rollouts(rollout_fragment_length=48)
        .training(learning_starts=32, train_batch_size=32, model=SMALL_MLP, critic_hiddens=[32, 32])
    ),
    "td3": lambda: (
        TD3Config()
        .environment("Pendulum-v1")
        .rollouts(rollout_fragment_length=48)
        .training(learning_starts=32, train_batch_size=32, model=SMALL_MLP, critic_hiddens=[32, 32])
    ),
}


@pytest.mark.parametrize("algo", sorted(CONFIGS))
def test_eager_update_matches_the_compiled_update(algo):
    """Same seed -> same initial weights, same samples, same minibatches: one iteration compiled and one
    eager end with the same weights and learner metrics (oneDNN reorders float sums: ~1e-7 per op)."""
    results, weights = [], []
    for eager in (False, True):
        a = CONFIGS[algo]().debugging(seed=3, eager=eager).build()
        try:
            assert a.learner.eager is eager
            assert tf.config.functions_run_eagerly() is eager
            initial = a.learner.get_weights()
            results.append(a.train())
            weights.append(a.learner.get_weights())
        finally:
            a.stop()
        assert tf.config.functions_run_eagerly() is False  # stop() switches the process back
    compiled, eager = results
    learner_keys = sorted(k for k in compiled if k.startswith("learner/") and "time" not in k)  # not timers
    assert learner_keys and learner_keys == sorted(
        k for k in eager if k.startswith("learner/") and "time" not in k
    )
    for key in learner_keys:
        assert eager[key] == pytest.approx(compiled[key], rel=1e-4, abs=1e-5), key
    assert eager["timesteps_total"] == compiled["timesteps_total"]
    for w_compiled, w_eager in zip(*weights):
        np.testing.assert_allclose(w_eager, w_compiled, rtol=1e-4, atol=1e-5)
    moved = max(float(np.abs(w - w0).max()) for w, w0 in zip(weights[0], initial))
    assert moved > 1e-3  # the update did change the weights: well above the tolerance


def ppo_learner(loss_fn, eager: bool):
    spec = PPO.check_env(PPOConfig().environment("CartPole-v1"))[2]
    c = PPOConfig().training(sgd_minibatch_size=16)
    from relayrl.learning.learner import Learner
    from relayrl.learning.spec import LearnerSpec
    from relayrl.sampling.settings import batch_spec

    learner = LearnerSpec(
        loss_fn,
        PPO_METRICS,
        c.lr,
        batch_spec(spec),
        c.sgd_minibatch_size,
        c.grad_clip,
        ppo_hparams(c),
        prepare_fn=ppo_prepare,
    )
    factory = functools.partial(Learner, spec, learner)
    try:
        return build_eagerly(factory) if eager else factory()
    finally:
        tf.config.run_functions_eagerly(False)


def random_batch(rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "obs": rng.normal(size=(rows, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, rows),
        "logp": np.full(rows, np.log(0.5), np.float32),
        "vf_preds": rng.normal(size=rows).astype(np.float32),
        "advantages": rng.normal(size=rows).astype(np.float32),
        "value_targets": rng.normal(size=rows).astype(np.float32),
    }


def test_with_eager_a_loss_sees_concrete_values():
    """What a breakpoint inside a loss shows: EagerTensors with values, one call per SGD step, and the
    values it sees average to the metric the update reports."""
    seen = []

    def spying_loss(model, mb, hp):
        loss, metrics = ppo_loss(model, mb, hp)
        seen.append((type(loss).__name__, float(loss.numpy()), mb["obs"].numpy().copy()))
        return loss, metrics

    learner = ppo_learner(spying_loss, eager=True)
    assert learner.eager and not seen  # nothing traced at construction
    rng = np.random.default_rng(0)
    batch = random_batch(64, rng)
    idx = np.stack([rng.permutation(64)[:16] for _ in range(3)])
    metrics = learner.update(batch, idx)
    assert [kind for kind, _, _ in seen] == ["EagerTensor"] * 3
    np.testing.assert_array_equal(seen[1][2], batch["obs"][idx[1]])  # the second step's minibatch rows
    assert metrics["total_loss"] == pytest.approx(np.mean([v for _, v, _ in seen]), rel=1e-5)


def test_compiled_learner_traces_the_loss_with_symbolic_tensors():
    """Why eager mode exists: compiled, the loss runs once at trace time on placeholders without values."""
    kinds = []

    def spying_loss(model, mb, hp):
        loss, metrics = ppo_loss(model, mb, hp)
        kinds.append(hasattr(loss, "numpy") and tf.executing_eagerly())
        return loss, metrics

    learner = ppo_learner(spying_loss, eager=False)
    assert not learner.eager and kinds == [False]  # traced once at construction, no values
    rng = np.random.default_rng(0)
    learner.update(random_batch(64, rng), np.stack([rng.permutation(64)[:16] for _ in range(3)]))
    assert kinds == [False]  # later updates run the compiled graph, the Python loss is not called


def test_gradient_exchange_paths_run_eagerly_too():
    rng = np.random.default_rng(1)
    batch = random_batch(32, rng)
    compiled, eager = ppo_learner(ppo_loss, eager=False), ppo_learner(ppo_loss, eager=True)
    eager.set_weights(compiled.get_weights())
    (g_c, m_c), (g_e, m_e) = compiled.compute_gradients(batch), eager.compute_gradients(batch)
    for a, b in zip(g_c, g_e):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    assert m_e["total_loss"] == pytest.approx(m_c["total_loss"], rel=1e-5)
    assert eager.apply_gradients(g_c) == pytest.approx(compiled.apply_gradients(g_c), rel=1e-5)
    for a, b in zip(compiled.get_weights(), eager.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_cli_eager_flag_trains(tmp_path, capsys):
    from relayrl.cli.app import main

    assert (
        main(
            [
                "train",
                "ppo",
                "CartPole-v1",
                "--eager",
                "--stop-iters",
                "1",
                "--quiet",
                "--json",
                "--seed",
                "0",
                "--set",
                "train_batch_size=256",
                "--set",
                "sgd_minibatch_size=64",
                "--logdir",
                str(tmp_path),
            ]
        )
        == 0
    )
    final = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert final["training_iteration"] == 1 and np.isfinite(final["learner/total_loss"])
    assert tf.config.functions_run_eagerly() is False


def test_eager_is_a_debugging_knob():
    assert PPOConfig().debugging(eager=True).eager is True
    with pytest.raises(ValueError, match="PPOConfig.eager = 'yes' is invalid: allowed: true or false"):
        PPOConfig().debugging(eager="yes")
    with pytest.raises(ValueError, match="unknown key 'eager'"):
        PPOConfig().training(eager=True)


class _EagerProbe:
    """Stands in for a conv policy's Keras model: records whether each call runs eagerly, then delegates."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def __call__(self, obs):
        self.calls.append(tf.executing_eagerly())
        return self.model(obs)

    def __getattr__(self, name):  # set_weights, log_std, ...
        return getattr(self.model, name)


def test_conv_policy_forward_runs_eagerly_when_sampling_in_process():
    from tests.helpers.fakes import ImageEnv

    algo = (
        PPOConfig()
        .environment(ImageEnv)
        .rollouts(num_envs_per_worker=2)
        .training(train_batch_size=32, sgd_minibatch_size=16, num_sgd_iter=1, model={"fcnet_hiddens": [16]})
        .debugging(eager=True, seed=0)
        .build()
    )
    try:
        net = algo.workers.worker.policy.net
        assert type(net).__name__ == "TFForward"
        net.model = _EagerProbe(net.model)  # its tf.functions look the model up when they run
        algo.train()
        assert net.model.calls and all(net.model.calls)  # every sampling step ran op by op
    finally:
        algo.stop()
