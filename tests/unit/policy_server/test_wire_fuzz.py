"""Property-based tests of the policy server's wire layer: whatever JSON a client sends, a field
validator either returns a value the model can use (finite in float32, the right shape and dtype, equal
to what the client meant) or raises a RequestError with a 4xx status and a message. Never another
exception: that would be a 500 (or worse) on the server.

Request bodies are built as JSON *text* and parsed by wire.parse_body, as the server does, so the
tokens Python's json module is lenient about (NaN, Infinity, 1e400, a 5,000-digit integer) take the
real path."""

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.policy_server import wire
from relayrl.policy_server.wire import F32_MAX, RequestError, SpaceCodec

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

EXTREME_NUMBERS = [
    "9" * 5000,
    "-" + "9" * 5000,
    "1" + "0" * 400,
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e39",
    "-1e39",
    "3.4028234663852886e38",
    "3.4028236e38",
    "1e-400",
    "-0",
    "0.0",
    "1e308",
    "340282366920938463463374607431768211456",
    "18446744073709551616",
    "-9223372036854775809",
]
number_text = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(EXTREME_NUMBERS),
)
leaf_text = st.one_of(
    number_text, st.sampled_from(["true", "false", "null"]), st.text(max_size=6).map(json.dumps)
)
json_text = st.recursive(
    leaf_text,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5).map(lambda items: "[" + ", ".join(items) + "]"),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=30,
)


def nested_text(shape: tuple, leaf: st.SearchStrategy) -> st.SearchStrategy:
    """JSON text of a nested list of exactly `shape` whose entries are drawn from `leaf`."""
    if not shape:
        return leaf
    return st.lists(nested_text(shape[1:], leaf), min_size=shape[0], max_size=shape[0]).map(
        lambda items: "[" + ", ".join(items) + "]"
    )


def codec_for(obs_space: gym.Space, action_space: gym.Space, **model) -> SpaceCodec:
    spec = networks.spec_from_spaces(obs_space, action_space, {**DEFAULT_MODEL, **model})
    return SpaceCodec(obs_space, action_space, spec)


SPACES = {
    "box-f32": (gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2), {}),
    "box-f64-2d": (gym.spaces.Box(-1.0, 1.0, (2, 3), np.float64), gym.spaces.MultiDiscrete([3, 4]), {}),
    "box-int": (gym.spaces.Box(0, 10, (3,), np.int64), gym.spaces.Box(-1.0, 1.0, (2,), np.float32), {}),
    "image-u8": (
        gym.spaces.Box(0, 255, (6, 6, 2), np.uint8),
        gym.spaces.Discrete(3),
        {"conv_filters": [[4, 3, 1]], "fcnet_hiddens": [8]},
    ),
    "discrete": (gym.spaces.Discrete(5, start=-2), gym.spaces.MultiDiscrete([2, 2, 2]), {}),
}
CODECS = {name: codec_for(obs, act, **model) for name, (obs, act, model) in SPACES.items()}


def observation_of(text: str):
    return wire.parse_body(('{"observation": ' + text + "}").encode())["observation"]


def check_observation(codec: SpaceCodec, text: str) -> None:
    """The property: a 4xx RequestError, or the row the model reads holding exactly the client's numbers."""
    value = observation_of(text)
    try:
        row = codec.observation(value)
    except RequestError as exc:
        assert 400 <= exc.status < 500 and exc.message.startswith("observation"), exc.message
        return
    space = codec.obs_space
    meant = np.asarray(json.loads(text), np.float64)  # what the client meant, as Python reads the JSON
    if isinstance(space, gym.spaces.Discrete):
        assert row.shape == (space.n,) and row.dtype == np.float32 and row[int(meant) - space.start] == 1.0
        return
    assert np.isfinite(row.astype(np.float64)).all()
    if codec.spec.obs_kind == "image":
        assert row.shape == space.shape and row.dtype == np.uint8
    else:
        assert row.shape == (int(np.prod(space.shape)),) and row.dtype == np.float32
    np.testing.assert_array_equal(
        row.astype(np.float64), meant.astype(np.float32).reshape(-1 if row.ndim == 1 else space.shape)
    )
    if np.issubdtype(space.dtype, np.integer):
        assert (space.low <= meant).all() and (meant <= space.high).all()


@pytest.mark.parametrize("name", list(CODECS))
@FUZZ
@given(text=json_text)
def test_any_json_observation_is_a_valid_row_or_a_4xx(name, text):
    check_observation(CODECS[name], text)


def valid_leaf(space: gym.spaces.Box) -> st.SearchStrategy:
    if np.issubdtype(space.dtype, np.integer):
        return st.integers(int(space.low.min()), int(space.high.max())).map(str)
    return st.floats(-F32_MAX, F32_MAX).map(repr)


def nest(leaves: list, shape: tuple) -> str:
    """JSON text of the row-major `leaves` (JSON texts) as a nested list of `shape`."""
    if len(shape) <= 1:
        return "[" + ", ".join(leaves) + "]" if shape else leaves[0]
    step = len(leaves) // shape[0]
    return "[" + ", ".join(nest(leaves[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


@pytest.mark.parametrize("name", [n for n in CODECS if n != "discrete"])
@FUZZ
@given(data=st.data())
def test_well_shaped_observations_with_any_numbers_are_a_valid_row_or_a_4xx(name, data):
    """Valid observations with, sometimes, one entry swapped for any token: accepted exactly, or refused."""
    codec = CODECS[name]
    shape = codec.obs_space.shape
    size = int(np.prod(shape))
    leaves = data.draw(st.lists(valid_leaf(codec.obs_space), min_size=size, max_size=size))
    swap = data.draw(st.none() | st.tuples(st.integers(0, size - 1), st.one_of(leaf_text, json_text)))
    if swap is not None:
        leaves[swap[0]] = swap[1]
    check_observation(codec, nest(leaves, shape))


def test_the_issue_s_observations_are_refused_by_position():
    codec = CODECS["box-f32"]
    for text, message in [
        ("[" + "9" * 5000 + ", 0, 0, 0]", "observation[0] = 999999999999...(5000 characters) is not a"),
        ("[0, 1" + "0" * 400 + ", 0, 0]", "observation[1] = 100000000000...(401 characters) is not a finite"),
        ("[0, 0, NaN, 0]", "observation[2] = NaN is not a finite number"),
        ("[0, 0, 0, -Infinity]", "observation[3] = -Infinity is not a finite number"),
        ("[0, 0, 0, 1e39]", "observation[3] = 1e+39 is beyond float32's range"),
        ('["1", 0, 0, 0]', "observation[0] must be a number, got '1'"),
        ("[0, true, 0, 0]", "observation[1] must be a number, got True"),
        ("[[0, 0], [0, 0]]", "observation has shape (2, 2), expected (4,)"),
        ("[0, [0], 0, 0]", "observation[1] must be a number, got [0]"),
    ]:
        with pytest.raises(RequestError) as info:
            codec.observation(observation_of(text))
        assert info.value.status == 400 and message in info.value.message, (text, info.value.message)
    with pytest.raises(RequestError, match=r"observation\[1\] must be a list of 3 entries .*, got 2 entries"):
        CODECS["box-f64-2d"].observation(observation_of("[[0, 0, 0], [0, 0]]"))
    with pytest.raises(RequestError, match=r"observation\[2\] must be an integer in \[0, 10\]"):
        CODECS["box-int"].observation(observation_of("[0, 1, 2.5]"))


@FUZZ
@given(text=json_text)
def test_reward_episode_id_and_flags_are_valid_or_a_4xx(text):
    value = observation_of(text)
    body = {"episode_id": value, "truncated": value}
    for validate in (
        lambda: wire.reward(value),
        lambda: wire.episode_id(body),
        lambda: wire.flag(body, "truncated"),
    ):
        try:
            got = validate()
        except RequestError as exc:
            assert 400 <= exc.status < 500 and exc.message
            continue
        if isinstance(got, float):  # a reward: what the client meant, finite in float32
            assert got == float(json.loads(text)) and abs(got) <= F32_MAX
            assert math.isfinite(float(np.float32(got)))
        elif isinstance(got, str):
            assert 1 <= len(got) <= wire.MAX_ID_LEN
        else:
            assert isinstance(got, bool)


@FUZZ
@given(raw=st.one_of(st.binary(max_size=300), json_text.map(str.encode)))
def test_any_body_bytes_parse_to_an_object_or_a_400(raw):
    try:
        body = wire.parse_body(raw)
    except RequestError as exc:
        assert exc.status == 400 and exc.message.startswith("request body")
        return
    assert isinstance(body, dict)


def test_deeply_nested_and_huge_bodies_are_a_400_not_a_crash():
    for raw in (b"[" * 100_000, b'{"a": ' * 50_000, b"1" * 100_000):
        with pytest.raises(RequestError) as info:
            wire.parse_body(raw)
        assert info.value.status == 400


@pytest.mark.parametrize("name", list(CODECS))
def test_actions_from_the_policy_are_json_values_in_the_action_space(name):
    codec, rng = CODECS[name], np.random.default_rng(0)
    space = codec.action_space
    for _ in range(20):
        discrete = isinstance(space, gym.spaces.Discrete)
        value = codec.action(np.int64(rng.integers(space.n)) if discrete else space.sample())
        json.dumps(value, allow_nan=False)
        assert space.contains(value if discrete else np.asarray(value, space.dtype))
