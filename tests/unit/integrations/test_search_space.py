"""Search expressions of `relayrl tune`: parsed strictly, checked against the config's own field checks."""

import pytest

from relayrl.algorithms.ppo import PPOConfig
from relayrl.integrations import search_space


@pytest.mark.parametrize(
    "text,key,kind,args",
    [
        ("lr=loguniform(1e-4,1e-2)", "lr", "loguniform", (1e-4, 1e-2)),
        ("gamma=choice(0.98, 0.99)", "gamma", "choice", (0.98, 0.99)),
        ("num_sgd_iter=randint(3,11)", "num_sgd_iter", "randint", (3, 11)),
        ("clip_param=uniform(0.1,0.3)", "clip_param", "uniform", (0.1, 0.3)),
        ("model.fcnet_hiddens=grid([32,32],[64,64])", "model.fcnet_hiddens", "grid", ([32, 32], [64, 64])),
        ("model.fcnet_activation=choice(relu,tanh)", "model.fcnet_activation", "choice", ("relu", "tanh")),
    ],
)
def test_expressions_parse(text, key, kind, args):
    spec = search_space.parse(text)
    assert (spec.key, spec.kind, spec.args) == (key, kind, args)
    search_space.check_against([spec], PPOConfig())


@pytest.mark.parametrize(
    "text,message",
    [
        ("lr=loguniform(1e-4)", "loguniform needs exactly 2 arguments (low, high), got 1"),
        ("lr=loguniform(0,1e-2)", "loguniform needs 0 < low"),
        ("lr=uniform(0.2,0.1)", "uniform needs low < high"),
        (
            "lr=normal(0,1)",
            "unknown distribution 'normal'; allowed: uniform, loguniform, randint, choice, grid",
        ),
        ("lr 0.1", "expected KEY=KIND(ARGS)"),
        ("lr=choice()", "choice needs at least one value"),
        ("num_sgd_iter=randint(1.5,3)", "randint needs 2 integers"),
        ("lr=uniform(1,", "expected KEY=KIND(ARGS)"),
        ("lr=choice(1e-3,[)", "cannot read the arguments"),
    ],
)
def test_bad_expressions_name_the_problem(text, message):
    with pytest.raises(ValueError) as info:
        search_space.parse(text)
    assert f"invalid --search {text!r}" in str(info.value) and message in str(info.value)


@pytest.mark.parametrize(
    "text,message",
    [
        ("lrr=uniform(0.1,0.2)", "unknown key 'lrr' (did you mean 'lr'?)"),
        ("lr=uniform(-1,1)", "PPOConfig.lr = -1 is invalid: allowed: a finite number > 0"),
        ("gamma=choice(0.9,1.5)", "PPOConfig.gamma = 1.5 is invalid"),
        ("num_sgd_iter=randint(0,4)", "PPOConfig.num_sgd_iter = 0 is invalid"),
        ("model.fcnet_hidden=choice([32])", "unknown model option 'fcnet_hidden'"),
        ("model.fcnet_activation=choice(relu,gelu)", "model.fcnet_activation = 'gelu'"),
    ],
)
def test_fields_and_values_are_checked_against_the_config(text, message):
    with pytest.raises(ValueError) as info:
        search_space.check_against([search_space.parse(text)], PPOConfig())
    assert f"invalid --search {text!r}" in str(info.value) and message in str(info.value)


def test_randint_checks_its_largest_value_not_the_excluded_bound():
    search_space.check_against(
        [search_space.parse("gamma=choice(1)"), search_space.parse("num_sgd_iter=randint(1,2)")], PPOConfig()
    )


def test_model_keys_are_merged_into_the_model_dict():
    assert search_space.split_model_keys({"lr": 1e-3, "model.fcnet_hiddens": [32]}) == {
        "lr": 1e-3,
        "model": {"fcnet_hiddens": [32]},
    }


def test_importing_relayrl_tune_loads_neither_ray_tune_nor_tensorflow():
    import subprocess
    import sys

    code = (
        "import sys, relayrl.integrations.tune, relayrl.cli.tune; "
        "print('ray.tune' in sys.modules, 'tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


def test_trial_config_is_laid_over_the_base_and_checked_by_relayrl():
    import numpy as np

    from relayrl.integrations.tune import build_config

    base = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=1000)
        .reporting(log_dir="/tmp/x")
        .to_dict()
    )
    # what Tune samples: numpy scalars; model options as flat model.<key> fields
    config = build_config(
        "ppo", base, {"lr": np.float64(1e-3), "num_sgd_iter": np.int64(3), "model.fcnet_hiddens": [16]}
    )
    assert config.lr == 1e-3 and type(config.num_sgd_iter) is int and config.num_sgd_iter == 3
    assert config.model["fcnet_hiddens"] == [16] and config.model["fcnet_activation"] == "tanh"
    assert config.train_batch_size == 1000 and config.log_dir is None  # Tune logs the results itself
    config.to_dict()  # JSON-able: the checkpoint's config.json
    with pytest.raises(ValueError, match="unknown key 'lrr' \\(did you mean 'lr'\\?\\)"):
        build_config("ppo", base, {"lrr": 0.1})
    with pytest.raises(ValueError, match="PPOConfig.gamma = 2 is invalid"):
        build_config("ppo", base, {"gamma": 2})
