"""Config builder, validation messages and (de)serialisation."""

import pytest

from relayrl.algorithms.ppo import PPOConfig
from tests.helpers.fakes import CountdownEnv


def test_builder_methods_chain_and_set_fields():
    c = (
        PPOConfig()
        .environment("CartPole-v1", env_config={"max_episode_steps": 100})
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4)
        .resources(num_cpus_per_worker=0.5)
        .training(lr=1e-3, lambda_=0.9, model={"fcnet_hiddens": [32]})
        .debugging(seed=3)
        .reporting(metrics_num_episodes_for_smoothing=10)
    )
    assert (c.env, c.num_rollout_workers, c.lr, c.lambda_, c.seed) == ("CartPole-v1", 2, 1e-3, 0.9, 3)
    assert c.model["fcnet_hiddens"] == [32] and c.model["fcnet_activation"] == "tanh"  # merged with defaults
    c.validate()


def test_a_partial_model_dict_completes_the_configs_own_default_model():
    """A model dict completes the algorithm's default network, whichever way it comes in (builder, a
    dict or YAML): SAC's relu stays relu, Q-learning's table stays a table. It once completed the shared
    DEFAULT_MODEL, so `model={"fcnet_hiddens": [400, 300]}` quietly turned SAC's relu into tanh and any
    model option gave Q-learning a 64x64 network."""
    from relayrl.algorithms.qlearning import QLearningConfig
    from relayrl.algorithms.sac import SACConfig

    sac = SACConfig().training(model={"fcnet_hiddens": [400, 300]})
    assert sac.model == dict(SACConfig().model, fcnet_hiddens=[400, 300])
    assert sac.model["fcnet_activation"] == "relu"
    from_dict = SACConfig.from_dict({"env": "Pendulum-v1", "model": {"normalize_obs": True}})
    assert from_dict.model == dict(SACConfig().model, normalize_obs=True)
    table = QLearningConfig().training(model={"normalize_obs": False})
    assert table.model["fcnet_hiddens"] == []
    assert SACConfig.from_dict(sac.to_dict()).model == sac.model  # a whole model (config.json) is kept


def test_unknown_key_names_group_key_and_allowed_with_suggestion():
    with pytest.raises(ValueError) as err:
        PPOConfig().training(lrr=0.1)
    msg = str(err.value)
    assert "training()" in msg and "'lrr'" in msg and "did you mean 'lr'" in msg and "num_sgd_iter" in msg


@pytest.mark.parametrize(
    "group,key,value,allowed",
    [
        ("training", "lr", -1.0, "a finite number > 0"),
        ("training", "gamma", 1.5, "<= 1"),
        ("training", "num_sgd_iter", 0, "an integer >= 1"),
        ("training", "num_sgd_iter", 2.5, "an integer"),
        ("rollouts", "num_rollout_workers", -1, "an integer >= 0"),
        ("rollouts", "rollout_fragment_length", "long", "or 'auto'"),
        ("training", "model", {"fcnet_hidens": [8]}, "unknown model key 'fcnet_hidens'"),
        ("training", "model", {"fcnet_activation": "sigmoidal"}, "one of 'tanh'"),
        ("training", "model", {"compute_dtype": "float16"}, "one of 'float32', 'bfloat16'"),
        ("training", "lr_schedule", [[10, 0.1]], "starting at timestep 0"),
        ("resources", "learner_threads", 0, "or 'auto'"),
    ],
)
def test_invalid_values_name_field_value_and_allowed(group, key, value, allowed):
    with pytest.raises(ValueError) as err:
        getattr(PPOConfig(), group)(**{key: value})
    msg = str(err.value)
    assert f"PPOConfig.{key} = {value!r}" in msg and allowed in msg


def test_validate_catches_direct_assignment_and_cross_field_rules():
    c = PPOConfig().environment("CartPole-v1")
    c.gamma = float("nan")
    with pytest.raises(ValueError, match="PPOConfig.gamma"):
        c.validate()
    c = PPOConfig().environment("CartPole-v1").training(train_batch_size=128, sgd_minibatch_size=256)
    with pytest.raises(ValueError, match="sgd_minibatch_size = 256 .* at most train_batch_size"):
        c.validate()
    c = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=64)
        .training(train_batch_size=32, sgd_minibatch_size=16)
    )
    with pytest.raises(ValueError, match="train_batch_size = 32 is too small"):
        c.validate()


def test_missing_and_unknown_env():
    with pytest.raises(ValueError, match="env is not set"):
        PPOConfig().validate()
    with pytest.raises(ValueError, match="unknown environment id 'CartPol-v1'.*CartPole-v1"):
        PPOConfig().environment("CartPol-v1").validate()


def test_dict_and_yaml_round_trip_including_callable_env():
    c = (
        PPOConfig()
        .environment(CountdownEnv, env_config={"terminate_at": 4})
        .training(lr=5e-4, model={"fcnet_hiddens": [8, 8]})
    )
    d = c.to_dict()
    assert d["env"] == "callable:tests.helpers.fakes:CountdownEnv"
    again = PPOConfig.from_yaml(c.to_yaml())
    assert again.env is CountdownEnv and again.to_dict() == d
    with pytest.raises(ValueError, match="unknown key 'not_a_field'"):
        PPOConfig.from_dict({"not_a_field": 1})
    with pytest.raises(ValueError, match="PPOConfig.lr = 'fast'"):
        PPOConfig.from_dict({"lr": "fast"})


def test_fragment_length_auto_fills_the_train_batch():
    c = PPOConfig().rollouts(num_rollout_workers=2, num_envs_per_worker=4).training(train_batch_size=800)
    assert c.resolved_fragment_length() == 100
