"""TFLite export: the .tflite file, run with tf.lite.Interpreter alone, acts like the SavedModel (float32:
exactly; float16 / int8 post-training quantisation: agreement rates asserted and printed); the CLI's
`relayrl export --format tflite [--quantize ...]`."""

import os
import warnings

import numpy as np
import pytest

from relayrl import PPOConfig
from relayrl.cli import app as cli
from relayrl.models.tf_import import tf
from relayrl.persistence.tflite_export import export_tflite, observation_explore, policy_observations
from tests.helpers.fakes import ImageEnv


def run_tflite(path, obs):
    """The file on its own: TensorFlow's interpreter and the two signatures, no relayrl."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice (LiteRT is its successor)
        interpreter = tf.lite.Interpreter(model_path=path)
    assert sorted(interpreter.get_signature_list()) == ["serving_default", "value"]
    action = interpreter.get_signature_runner("serving_default")(observation=obs)["action"]
    value = interpreter.get_signature_runner("value")(observation=obs)["value"]
    return action, value


def run_saved_model(path, obs):
    loaded = tf.saved_model.load(path)
    return (
        loaded.signatures["serving_default"](observation=tf.constant(obs))["action"].numpy(),
        loaded.signatures["value"](observation=tf.constant(obs))["value"].numpy(),
    )


def observations(algo, count, seed):
    c = algo.config
    return policy_observations(
        c.env,
        c.env_config,
        algo.spec,
        algo.action_space,
        algo.learner.get_weights(),
        count,
        seed,
        explore=observation_explore(algo),
    )


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    base = tmp_path_factory.mktemp("tflite")
    algo = PPOConfig.from_tuned("CartPole-v1").debugging(seed=0).build()
    for _ in range(15):  # a policy that prefers its actions (an untrained one is full of near-ties)
        result = algo.train()
    assert result["episode_reward_mean"] > 40
    yield algo, base
    algo.stop()


def test_cartpole_tflite_matches_the_saved_model_float32_exactly_and_quantised_mostly(cartpole):
    algo, base = cartpole
    saved_model = algo.export_policy(str(base / "saved_model"))
    obs = observations(algo, 400, seed=123)  # 400 CartPole states the policy visits
    ref_action, ref_value = run_saved_model(saved_model, obs)
    sizes = {}
    for quantize in ("none", "float16", "int8"):
        report = export_tflite(algo, str(base / quantize), quantize)
        assert report.path == str(base / quantize / "policy.tflite")
        sizes[quantize] = os.path.getsize(report.path)
        action, value = run_tflite(report.path, obs)
        agreement = float(np.mean(action == ref_action))
        print(
            f"\n{quantize}: {sizes[quantize]} bytes, {agreement:.1%} of 400 actions equal, value max |diff| "
            f"{np.abs(value - ref_value).max():.3g}; export's own check: {report.summary()}"
        )
        assert action.dtype == ref_action.dtype == np.int64 and action.shape == (400,)
        if quantize == "none":
            np.testing.assert_array_equal(action, ref_action)
            np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-4)
            assert report.action_agreement == 1.0
        else:
            assert agreement >= 0.95 and report.action_agreement >= 0.95 and report.observations == 500
            np.testing.assert_allclose(value, ref_value, atol=0.05 * np.abs(ref_value).max())
    assert sizes["float16"] < sizes["none"]


@pytest.mark.parametrize(
    "env", ["Pendulum-v1", ImageEnv, "FrozenLake-v1"], ids=["gaussian", "conv", "discrete-obs"]
)
def test_continuous_conv_and_discrete_observation_policies_convert(env, tmp_path):
    algo = (
        PPOConfig()
        .environment(env)
        .rollouts(num_envs_per_worker=4)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=2)
        .debugging(seed=0)
    ).build()
    try:
        algo.train()
        obs = observations(algo, 200, seed=7)
        ref_action, ref_value = run_saved_model(algo.export_policy(str(tmp_path / "sm")), obs)
        for quantize in ("none", "int8"):  # (float16: see the CartPole test)
            action, value = run_tflite(
                algo.export_tflite(str(tmp_path / f"{quantize}.tflite"), quantize), obs
            )
            assert action.dtype == ref_action.dtype and action.shape == ref_action.shape
            if quantize == "none" and ref_action.dtype == np.float32:  # clipped Gaussian means, float32
                np.testing.assert_allclose(action, ref_action, atol=1e-5)
            elif quantize == "none":
                np.testing.assert_array_equal(action, ref_action)
            elif ref_action.dtype == np.float32:  # within 5% of Pendulum's action range [-2, 2]
                assert np.abs(action - ref_action).max() <= 0.2
            np.testing.assert_allclose(value, ref_value, atol=1e-4 if quantize == "none" else 0.5)
    finally:
        algo.stop()


@pytest.mark.parametrize("algo_name", ["sac", "td3"])
def test_sac_and_td3_convert_with_their_critic_value(algo_name, tmp_path):
    """Their `value` signature runs the twin critics at the served action; TD3's calibration observations
    are visited with its exploration sigma (its deterministic head has no std of its own)."""
    from relayrl.algorithms import config_class

    algo = (
        config_class(algo_name)()
        .environment("Pendulum-v1")
        .training(learning_starts=200)
        .debugging(seed=0)
        .build()
    )
    try:
        for _ in range(5):
            algo.train()
        obs = observations(algo, 200, seed=7)
        ref_action, ref_value = run_saved_model(algo.export_policy(str(tmp_path / "sm")), obs)
        for quantize in ("none", "int8"):
            action, value = run_tflite(
                algo.export_tflite(str(tmp_path / f"{quantize}.tflite"), quantize), obs
            )
            tolerance = 1e-5 if quantize == "none" else 0.2  # int8: within 5% of Pendulum's action range
            assert np.abs(action - ref_action).max() <= tolerance
            np.testing.assert_allclose(value, ref_value, atol=1e-4 if quantize == "none" else 0.5)
        assert np.abs(ref_value).max() > 0  # the critics, not a placeholder
    finally:
        algo.stop()


def test_cli_exports_tflite_and_refuses_bad_format_or_quantize(cartpole, capsys):
    algo, base = cartpole
    ckpt = algo.save(str(base / "ckpt"))
    out = base / "cli_int8"
    assert cli.main(["export", ckpt, str(out), "--format", "tflite", "--quantize", "int8"]) == 0
    printed = capsys.readouterr().out
    assert (
        f"exported {out / 'policy.tflite'}" in printed
        and "int8: " in printed
        and "env observations" in printed
    )
    action, _ = run_tflite(str(out / "policy.tflite"), observations(algo, 50, seed=1))
    assert action.shape == (50,)
    for bad, flag in ((["--format", "onnx"], "--format"), (["--quantize", "int4"], "--quantize")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["export", ckpt, str(base / "bad"), "--format", "tflite", *bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == 2 and len(err) == 1 and flag in err[0] and "invalid choice" in err[0]
    assert cli.main(["export", ckpt, str(base / "bad"), "--quantize", "int8"]) == 2
    assert capsys.readouterr().err.strip() == "relayrl: error: --quantize int8: only with --format tflite"
    assert not (base / "bad").exists()
