"""A checkpoint is data: the schemas of COMPLETE, state.json, config.json, replay.npz and learner files.

Property-based (hypothesis) tests mutate real small checkpoints the way anyone who edits one can (drop keys,
change types, huge or negative numbers, strange paths, truncated or random bytes; the manifest recomputed so
the checksums match) and assert that loading gives a valid result or CheckpointError, never another
exception and never a hang. The rest pins each refusal and the legitimate paths that must keep working."""

from __future__ import annotations

import copy as copy_module
import io
import json
import os
import shutil
import sys
import tempfile
import zipfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from relayrl import DQNConfig, PPOConfig, QLearningConfig
from relayrl.algorithms.base import Algorithm
from relayrl.core.saved_state import CheckpointError
from relayrl.persistence import checkpoint
from relayrl.sampling import state_io
from tests.helpers.checkpoint_edits import copy, edit_json, read_json, reseal, time_limit, write_json
from tests.helpers.fakes import CountdownEnv

FUZZ = settings(
    max_examples=120,
    deadline=timedelta(seconds=10),
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
STRANGE_PATHS = [
    "../../etc/hostname",
    "/etc/hostname",
    "learner/../../x",
    "learner/./learner.index",
    "COMPLETE",
    "learner",
    "learner/",
    "",
    ".",
    "state.json/x",
    "a\\b",
    "learner/a\0b",
    "x" * 2000,
    "learner//x",
    "replay.npz",
    "notes.txt",
    "learner/learner.data-00001-of-00002",
]
KEYS = st.text(max_size=8) | st.sampled_from(STRANGE_PATHS)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([10**400, -1, 0, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(STRANGE_PATHS),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=8,
)


def _small_ppo():
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=2)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def ppo(tmp_path_factory):
    """A real checkpoint (PPO, CartPole, no Ray) and a live algorithm built like it, to restore into."""
    base = tmp_path_factory.mktemp("ppo")
    algo = _small_ppo().build()
    algo.train()
    path = algo.save(str(base / "good"))
    yield path, algo
    algo.stop()


@pytest.fixture(scope="module")
def qlearning(tmp_path_factory):
    base = tmp_path_factory.mktemp("qlearning")
    algo = (
        QLearningConfig().environment("FrozenLake-v1").rollouts(num_envs_per_worker=2).debugging(seed=0)
    ).build()
    algo.train()
    path = algo.save(str(base / "good"))
    yield path, algo
    algo.stop()


@pytest.fixture(scope="module")
def dqn(tmp_path_factory):
    base = tmp_path_factory.mktemp("dqn")
    algo = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=2)
        .training(
            replay_buffer_capacity=64, learning_starts=10_000, train_batch_size=16, prioritized_replay=True
        )
        .debugging(seed=0)
    ).build()
    for _ in range(3):
        algo.train()
    path = algo.save(str(base / "good"))
    yield path, algo
    algo.stop()


# ------------------------------------------------------------------------------------------ mutations
def _paths(doc, prefix=()):
    yield prefix
    children = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in children:
        yield from _paths(value, prefix + (key,))


@st.composite
def mutated(draw, doc, hot_keys=()):
    """`doc` with 1-3 edits: a value replaced, a key or item dropped, a key renamed (to a strange path too),
    a key added. `hot_keys` are edited more often (e.g. the manifest's file paths)."""
    doc = copy_module.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        hot = [p for p in paths if p and p[-1] in hot_keys]
        path = draw(st.sampled_from(hot)) if hot and draw(st.booleans()) else draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "drop", "rename", "add"]))
        if not path:
            doc = draw(JSON_VALUES) if op == "replace" else doc
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if op == "replace":
            parent[key] = draw(JSON_VALUES)
        elif op == "drop":
            del parent[key]
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(KEYS)] = parent.pop(key)
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][draw(KEYS)] = draw(JSON_VALUES)
    return doc


def _fresh(src: str) -> str:
    return copy(src, os.path.join(tempfile.mkdtemp(prefix="ckpt-fuzz-"), "ckpt"))


def _loads_or_refuses(load) -> None:
    """`load()` returns, or raises CheckpointError: nothing else, never a hang."""
    try:
        with time_limit(20):
            load()
        event("loaded")
    except CheckpointError as exc:
        assert "\n" not in str(exc) and str(exc)
        event("refused: " + ": ".join(str(exc).split(": ")[1:3])[:50])  # which file and field


# ------------------------------------------------------------------------------------------ fuzz
@FUZZ
@given(data=st.data())
def test_fuzzed_manifest_verifies_or_is_refused(ppo, data):
    path, _ = ppo
    manifest = read_json(path, "COMPLETE")
    ckpt = _fresh(path)
    try:
        write_json(ckpt, "COMPLETE", data.draw(mutated(manifest, hot_keys=set(manifest["files"]))))
        _loads_or_refuses(lambda: checkpoint.verify(ckpt))
    finally:
        shutil.rmtree(os.path.dirname(ckpt))


@FUZZ
@given(data=st.data())
def test_fuzzed_state_restores_or_is_refused(ppo, data):
    """state.json mutated and resealed, restored into a live algorithm: counters, RNG states, episodes,
    obs moments, worker observations and env snapshots all come from the file."""
    path, live = ppo
    state = read_json(path, "state.json")
    ckpt = _fresh(path)
    try:
        edit_json(ckpt, "state.json", lambda _: data.draw(mutated(state)))
        _loads_or_refuses(lambda: live.restore(ckpt))
    finally:
        shutil.rmtree(os.path.dirname(ckpt))


@FUZZ
@given(data=st.data(), which=st.sampled_from(["COMPLETE", "state.json", "config.json"]))
def test_truncated_or_random_json_files_are_refused(ppo, data, which):
    path, _ = ppo
    ckpt = _fresh(path)
    try:
        original = Path(ckpt, which).read_bytes()
        cut = data.draw(st.integers(0, len(original) - 1))
        garbage = data.draw(
            st.sampled_from(
                [
                    original[:cut],
                    b"[" * 100_000,
                    b"1" * 5000,
                    b'{"a": NaN}',
                    b"\xff\xfe" + original,
                    data.draw(st.binary(max_size=64)),
                ]
            )
        )
        Path(ckpt, which).write_bytes(garbage)
        if which != "COMPLETE":
            reseal(ckpt)
        with pytest.raises(CheckpointError):
            with time_limit(20):
                Algorithm.from_checkpoint(ckpt)
    finally:
        shutil.rmtree(os.path.dirname(ckpt))


@FUZZ
@given(data=st.data())
def test_fuzzed_config_never_imports_anything(ppo, data):
    """config.json read from a checkpoint: a Config or a refusal, and no module is imported, whatever it
    names (the env check looks ids up in gymnasium's registry only)."""
    path, _ = ppo
    config = read_json(path, "config.json")
    config["env"] = data.draw(
        st.sampled_from(
            [
                "callable:os:system",
                "antigravity:Fly-v0",
                "CartPole-v1",
                "no_such_module:Env-v0",
                "callable:subprocess:Popen",
            ]
        )
    )
    fuzzed = data.draw(mutated(config, hot_keys={"env", "env_config", "model"}))
    before = set(sys.modules)
    try:
        result = PPOConfig.from_checkpoint_dict(fuzzed)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert result.env is None or result.env in __import__("gymnasium").registry
    assert set(sys.modules) == before


# ------------------------------------------------------------------------------------------ manifest
@pytest.mark.parametrize("rel", STRANGE_PATHS[:12] + ["learner/" + "a" * 300])
def test_manifest_paths_outside_the_layout_are_refused(ppo, tmp_path, rel):
    path, _ = ppo
    ckpt = copy(path, str(tmp_path / "ckpt"))
    manifest = read_json(ckpt, "COMPLETE")
    manifest["files"][rel] = manifest["files"]["config.json"]
    write_json(ckpt, "COMPLETE", manifest)
    with pytest.raises(CheckpointError, match=r"COMPLETE: path .* is refused: allowed: "):
        checkpoint.verify(ckpt)


def test_sizes_are_checked_against_the_limits_before_hashing(ppo, tmp_path, monkeypatch):
    path, _ = ppo
    ckpt = copy(path, str(tmp_path / "ckpt"))
    monkeypatch.setattr(checkpoint, "MAX_FILE_BYTES", 100)
    monkeypatch.setattr(checkpoint, "hash_regular", lambda *a: pytest.fail("hashed before the size check"))
    with pytest.raises(
        CheckpointError,
        match=r"COMPLETE: .*: bytes = \d+: allowed: an integer from 0 to 100 "
        r"\(checkpoint.MAX_FILE_BYTES\)",
    ):
        checkpoint.verify(ckpt)


def test_a_link_named_like_a_checkpoint_is_not_the_latest(ppo, tmp_path):
    path, _ = ppo
    runs = tmp_path / "checkpoints"
    runs.mkdir()
    copy(path, str(runs / "ckpt-0000001"))
    os.symlink(path, runs / "ckpt-0000009")
    assert checkpoint.latest(str(runs)).endswith("ckpt-0000001")
    assert checkpoint.verify(str(runs / "ckpt-0000009"))["iteration"] == 1  # a path the caller names may link


# ------------------------------------------------------------------------------------------ config.json
def test_callable_env_checkpoint_needs_the_callers_env(tmp_path):
    """A run on a Python callable stores a reference to it; loading refuses it unless the caller passes the
    env, then restores exactly. Where to connect or write is never taken from the checkpoint."""
    algo = (
        PPOConfig()
        .environment(CountdownEnv, env_config={"terminate_at": 4})
        .rollouts(num_envs_per_worker=2)
        .debugging(seed=0)
        .training(train_batch_size=32, sgd_minibatch_size=16, num_sgd_iter=1)
    ).build()
    algo.train()
    path = algo.save(str(tmp_path / "ckpt"))
    weights = algo.learner.get_weights()
    algo.stop()
    assert read_json(path, "config.json")["env"] == "callable:tests.helpers.fakes:CountdownEnv"
    with pytest.raises(
        CheckpointError,
        match=r"config.json: env = 'callable:tests.helpers.fakes:CountdownEnv' is a "
        r"Python callable and a checkpoint never imports or calls "
        r"code: pass the env",
    ):
        Algorithm.from_checkpoint(path)
    edit_json(
        path,
        "config.json",
        lambda c: c.update(address="ray://203.0.113.9:10001", dashboard=True, log_dir=str(tmp_path / "x")),
    )
    loaded = Algorithm.from_checkpoint(path, env=CountdownEnv)
    try:
        assert loaded.config.env_config == {"terminate_at": 4}
        assert (loaded.config.address, loaded.config.log_dir, loaded.config.dashboard) == (None, None, False)
        assert all((a == b).all() for a, b in zip(loaded.learner.get_weights(), weights))
    finally:
        loaded.stop()
    assert not (tmp_path / "x").exists()


def test_only_registered_plain_env_ids_come_from_a_checkpoint():
    base = _small_ppo().to_dict()
    assert PPOConfig.from_checkpoint_dict(base).env == "CartPole-v1"
    for env in ["callable:os:system", "os:CartPole-v1", "Unregistered-v9", 7, None, ["CartPole-v1"]]:
        with pytest.raises(ValueError, match="pass the env yourself"):
            PPOConfig.from_checkpoint_dict({**base, "env": env})
    assert PPOConfig.from_checkpoint_dict({**base, "env": "callable:os:system"}, supplied={"env"}).env is None
    with pytest.raises(ValueError, match="unknown key 'xxxxxxx"):
        PPOConfig.from_checkpoint_dict({**base, "x" * 10_000: 1})
    with pytest.raises(ValueError, match="allowed: a JSON object"):
        PPOConfig.from_checkpoint_dict(["env", "CartPole-v1"])


# ------------------------------------------------------------------------------------------ env snapshots
def test_env_snapshot_writes_only_captured_attributes_with_their_types(ppo):
    path, live = ppo
    live.restore(path)
    env = live.workers.worker.env
    good = state_io.capture(env)
    before = json.dumps(state_io.capture(env), sort_keys=True)

    def with_value(key, value):
        snap = copy_module.deepcopy(good)
        snap["values"][key] = value
        return snap

    bad = {
        "method": with_value("step", 1),
        "dunder": with_value("__class__", "x"),
        "unknown": with_value("nope", 1),
        "dtype": with_value("state", {**good["values"]["state"], "dtype": "<f4"}),
        "object dtype": with_value("state", {**good["values"]["state"], "dtype": "|O"}),
        "shape": with_value("state", {"__ndarray__": [1.0], "dtype": "<f8", "shape": [1]}),
        "ragged": with_value("state", {**good["values"]["state"], "__ndarray__": [[1.0], [2.0, 3.0]]}),
        "str for number": with_value("gravity", "9.8"),
        "list for number": with_value("gravity", [9.8]),
        "other bit generator": with_value("_np_random", {"__generator__": np.random.MT19937(0).state}),
        "bad generator state": with_value(
            "_np_random", {"__generator__": {"bit_generator": "PCG64", "state": 1}}
        ),
        "child count": {**good, "children": {"nope": []}},
        "not a snapshot": [1, 2],
    }
    for name, snap in bad.items():
        with pytest.raises(CheckpointError):
            state_io.restore(env, snap)
        assert json.dumps(state_io.capture(env), sort_keys=True) == before, f"{name}: written before refusing"
    state_io.restore(env, with_value("steps_beyond_terminated", 3))  # a number where gymnasium had None
    state_io.restore(env, good)
    assert json.dumps(state_io.capture(env), sort_keys=True) == before


# ------------------------------------------------------------------------------------------ npz files
def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _lying_header_npz(shape: tuple) -> bytes:
    """An .npz whose one member claims `shape` but holds 16 bytes (numpy would allocate the claim first)."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": shape})
    member.write(b"\0" * 16)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("q.npy", member.getvalue())
    return buffer.getvalue()


def _compressed_npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def test_tabular_learner_file_is_checked_before_loading(qlearning, tmp_path):
    path, live = qlearning
    q = read_npz_q(path)
    cases = {
        "pickled objects": _npz(q=np.array([{"a": 1}], dtype=object)),
        "wrong shape": _npz(q=q[:3]),
        "int dtype": _npz(q=q.astype(np.int64)),
        "nan": _npz(q=np.full_like(q, np.nan)),
        "extra array": _npz(q=q, more=q),
        "no q": _npz(table=q),
        "compressed": _compressed_npz(q=q),
        "lying header": _lying_header_npz((10**12,)),
        "garbage": b"PK\x03\x04garbage",
        "empty": b"",
    }
    for name, content in cases.items():
        ckpt = copy(path, str(tmp_path / name))
        Path(ckpt, "learner", "table.npz").write_bytes(content)
        reseal(ckpt)
        with pytest.raises(CheckpointError, match="learner/table.npz"):
            live.restore(ckpt)
    live.restore(path)
    np.testing.assert_array_equal(live.learner.q, q)


def read_npz_q(path: str) -> np.ndarray:
    with np.load(os.path.join(path, "learner", "table.npz")) as data:
        return data["q"]


def test_replay_file_is_checked_against_the_buffer(dqn, tmp_path):
    path, live = dqn
    with np.load(os.path.join(path, "replay.npz")) as data:
        good = {k: data[k] for k in data.files}
    size = int(good["meta"][2])
    assert size > 0 and good["priorities"].shape == (size,)

    def changed(**arrays):
        return {**good, **arrays}

    obs = good["col/obs"]
    cases = {
        "pickled objects": changed(**{"col/obs": np.array([None] * size, dtype=object)}),
        "obs dtype": changed(**{"col/obs": obs.astype(np.float64)}),
        "obs rows": changed(**{"col/obs": obs[:-1]}),
        "obs width": changed(**{"col/obs": obs[:, :2]}),
        "nan reward": changed(**{"col/rewards": np.full(size, np.nan, np.float32)}),
        "action out of range": changed(**{"col/actions": np.full(size, 7, np.int64)}),
        "capacity": changed(meta=np.array([10**9, 0, size, size], np.int64)),
        "size past capacity": changed(meta=np.array([64, 0, 65, 65], np.int64)),
        "meta dtype": changed(meta=good["meta"].astype(np.float64)),
        "negative priority": changed(priorities=-good["priorities"]),
        "inf priority": changed(priorities=np.full(size, np.inf)),
        "no priorities": {k: v for k, v in good.items() if k != "priorities"},
        "unknown column": changed(**{"col/evil": obs}),
        "unknown key": changed(extra=obs),
    }
    for name, arrays in cases.items():
        ckpt = copy(path, str(tmp_path / name.replace(" ", "_")))
        Path(ckpt, "replay.npz").write_bytes(_npz(**arrays))
        reseal(ckpt)
        with pytest.raises(CheckpointError, match="replay.npz"):
            live.restore(ckpt)
    live.restore(path)
    assert len(live.replay) == size
