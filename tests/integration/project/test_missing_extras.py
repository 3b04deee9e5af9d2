"""A part used without its optional package says which extra installs it, in one line. The package is made
missing the way Python sees a missing module (sys.modules[name] = None makes `import name` raise
ImportError), in a subprocess for the CLI and with monkeypatch here; nothing is uninstalled."""

import os
import subprocess
import sys

import pytest

from relayrl.extras import MissingExtraError, require


def forget(monkeypatch, missing: str, *loaded_prefixes: str) -> None:
    """`import missing` fails from now on, and modules already imported that import it are imported afresh."""
    monkeypatch.setitem(sys.modules, missing, None)
    for name in [n for n in sys.modules if n.startswith(loaded_prefixes)] if loaded_prefixes else []:
        monkeypatch.delitem(sys.modules, name)


def test_the_cli_names_the_box2d_extra_in_one_line():
    code = (
        "import sys; sys.modules['Box2D'] = None\n"
        "from relayrl.cli.app import main\n"
        "sys.exit(main(['train', 'ppo', 'LunarLander-v3', '--stop-iters', '1']))\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 2
    assert proc.stderr == (
        "relayrl: error: env 'LunarLander-v3' needs the 'box2d' extra: pip install 'relayrl[box2d]'\n"
    )


def test_mujoco_and_atari_envs_name_their_extras(monkeypatch):
    from relayrl.envs.make import check_env_id, make_single_env

    forget(monkeypatch, "mujoco", "gymnasium.envs.mujoco")
    with pytest.raises(
        MissingExtraError, match="^env 'HalfCheetah-v5' needs the 'mujoco' extra: pip install"
    ):
        make_single_env("HalfCheetah-v5", {})
    forget(monkeypatch, "ale_py")
    with pytest.raises(
        ValueError, match="^env 'ale_py:ALE/Pong-v5' needs the 'atari' extra: pip install 'relayrl"
    ):
        check_env_id("ale_py:ALE/Pong-v5")


def test_redis_replay_names_the_redis_extra(monkeypatch):
    from relayrl.replay.redis_replay import RedisReplay

    forget(monkeypatch, "redis")
    with pytest.raises(ValueError, match="^replay_backend = 'redis' needs the 'redis' extra: pip install"):
        RedisReplay("127.0.0.1:1", None, capacity=10)


def test_a_tune_search_names_the_tune_extra(monkeypatch):
    from relayrl import PPOConfig
    from relayrl.integrations.search_space import check_search, parse

    forget(monkeypatch, "ray.tune")
    with pytest.raises(
        ValueError, match="^a Ray Tune search needs the 'tune' extra: pip install 'relayrl\\[tune"
    ):
        check_search(
            PPOConfig().environment("CartPole-v1"),
            [parse("lr=loguniform(1e-4,1e-2)")],
            2,
            "fifo",
            2,
            "max",
            2,
        )


@pytest.mark.parametrize(
    "module, extra", [("mlflow", "mlflow"), ("moviepy", "video"), ("envpool", "envpool")]
)
def test_require_names_each_extra(monkeypatch, module, extra):
    forget(monkeypatch, module)
    with pytest.raises(
        ImportError, match=f"^it needs the '{extra}' extra: pip install 'relayrl\\[{extra}\\]'"
    ):
        require(module, "it")


def test_every_extra_named_is_declared_in_pyproject():
    import tomllib

    from relayrl.extras import EXTRAS
    from tests.helpers.paths import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(declared)
    everything = declared["all"][0]
    assert all(extra in everything for extra in set(declared) - {"all", "test", "envpool"})
