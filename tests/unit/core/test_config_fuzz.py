"""Property-based: whatever value a config file, `--set` or the API gives a field, the config either takes it
and validates, or refuses it with a ValueError naming the field. Never another exception, never a hang."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relayrl.algorithms import REGISTRY, config_class
from relayrl.cli.common import parse_set

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["auto", "CartPole-v1", "NoSuchEnv-v0", "memory", "redis", "samples", "tanh", "drop"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["fcnet_hiddens", "normalize_obs"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("algo", sorted(REGISTRY))
@given(data=st.data())
@FUZZ
def test_any_value_for_any_field_is_taken_or_refused_with_the_field_named(algo, data):
    cls = config_class(algo)
    name = data.draw(st.sampled_from([f.name for f in dataclasses.fields(cls)]))
    value = data.draw(values)
    config = cls().environment("CartPole-v1")
    try:
        config.update_from_dict({name: value})
    except ValueError as exc:
        assert name in str(exc), str(exc)
        return
    try:
        config.validate()
    except ValueError as exc:
        assert f"{cls.__name__}." in str(exc), str(exc)


@given(st.dictionaries(st.text(max_size=20), values, max_size=4))
@FUZZ
def test_a_config_file_of_any_mapping_is_taken_or_refused(data):
    try:
        config_class("ppo").from_dict(data)
    except ValueError as exc:
        assert "PPOConfig" in str(exc), str(exc)


@given(st.lists(st.text(max_size=40), max_size=4))
@FUZZ
def test_any_set_arguments_parse_or_are_refused_with_the_argument_named(items):
    try:
        out = parse_set(items)
    except ValueError as exc:
        assert str(exc).startswith("invalid --set "), str(exc)
        return
    assert isinstance(out, dict)


FLAGS = [
    "--workers",
    "--envs-per-worker",
    "--seed",
    "--stop-reward",
    "--stop-timesteps",
    "--stop-iters",
    "--stop-time",
    "--keep-checkpoints",
    "--checkpoint-every",
    "--set",
    "--address",
]
flag_values = (
    st.integers(min_value=-(10**6), max_value=10**25).map(str)
    | st.floats().map(str)
    | st.text(max_size=20)
    | st.sampled_from(["lr=1e-3", "model=5", "model.x=1", "gamma=2", "lr=[1]"])
)


@given(st.lists(st.tuples(st.sampled_from(FLAGS), flag_values), max_size=4))
@FUZZ
def test_any_train_flags_print_a_config_or_exit_2_with_one_line(pairs):
    import contextlib
    import io

    from relayrl.cli import app as cli

    argv = ["train", "ppo", "CartPole-v1", "--print-config"] + [part for pair in pairs for part in pair]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    assert code in (0, 2), (argv, err.getvalue())
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("relayrl: error: "), (argv, err.getvalue())
