"""`relayrl enjoy CHECKPOINT_OR_SAVEDMODEL`: watch a trained policy play, in a window (--render) or a video
(--video DIR), and print each episode's return and length, then their mean ± std.

Actions are deterministic (greedy / the mean) unless --stochastic (a checkpoint only: a SavedModel serves
deterministic actions). The env is the checkpoint's or the one the SavedModel records, or --env; a checkpoint
is loaded as data, as by `relayrl evaluate` (relayrl/cli/persist.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from relayrl.cli.common import int_at_least
from relayrl.cli.persist import (
    add_custom_class_args,
    custom_classes,
    fail,
    is_saved_model,
    load_checkpoint,
    saved_model_env,
)
from relayrl.extras import install_hint

Act = Callable[[Any], Any]  # one observation -> one env action


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("enjoy", help="play a checkpoint's or SavedModel's policy (window, video, returns)")
    p.add_argument("path", help="checkpoint directory or SavedModel directory")
    p.add_argument(
        "--env",
        default=None,
        help="env id or module:EnvId (default: the one the checkpoint or SavedModel records)",
    )
    p.add_argument("--episodes", type=int_at_least(1), default=5)
    p.add_argument("--render", action="store_true", help="show the episodes in a window (needs a display)")
    p.add_argument("--video", default=None, metavar="DIR", help="record every episode as DIR/*.mp4")
    p.add_argument("--stochastic", action="store_true", help="sample actions (default: deterministic)")
    p.add_argument("--seed", type=int_at_least(0), default=None)
    add_custom_class_args(p)
    p.set_defaults(handler=run)


def _render_mode(args: argparse.Namespace) -> str | None:
    """The env's render_mode for the flags; ValueError when they cannot be honoured here."""
    if args.render and args.video:
        raise ValueError("--render and --video: choose one (an env renders to a window or to frames)")
    if args.render:
        if sys.platform.startswith("linux") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        ):
            raise ValueError(
                "--render needs a display (DISPLAY is not set): use --video DIR to record instead"
            )
        return "human"
    return "rgb_array" if args.video else None


def _checkpoint_policy(args: argparse.Namespace) -> tuple[Act, Any, dict, list, dict | None]:
    """(act, env, env_config, env_wrappers, atari) of a checkpoint's policy, weights copied out of the
    learner."""
    from relayrl.models.networks import preprocess_obs
    from relayrl.models.policy import Policy

    algo = load_checkpoint(args.path, args.env, custom_classes(args))
    try:
        c, spec = algo.config, algo.spec
        policy = Policy(spec, algo.action_space, seed=args.seed)
        policy.set_weights(algo.learner.get_weights(), 0)
    finally:
        algo.stop()

    def act(obs: Any) -> Any:
        actions = policy.compute_actions(preprocess_obs(spec, np.asarray(obs)[None]), explore=args.stochastic)
        return policy.env_actions(actions)[0]

    return act, c.env, dict(c.env_config), list(c.env_wrappers), dict(c.atari)


def _saved_model_policy(args: argparse.Namespace) -> tuple[Act, Any, dict, list, dict | None]:
    """(act, env, env_config, env_wrappers, atari) of a SavedModel, its env checked against the policy first
    (an ALE id with the standard atari options: the export records none)."""
    from relayrl.envs.make import env_spaces
    from relayrl.persistence.export import check_policy_fits, load_policy

    if args.stochastic:
        raise ValueError("--stochastic: a SavedModel serves deterministic actions only (enjoy a checkpoint)")
    if args.custom_model or args.custom_critic:
        raise ValueError(
            "--custom-model / --custom-critic: only for a checkpoint (a SavedModel holds its model)"
        )
    env, env_config, wrappers, metadata = saved_model_env(args.path, args.env)
    check_policy_fits(args.path, metadata, *env_spaces(env, env_config, wrappers), env)
    act_batch, _ = load_policy(args.path)
    return (lambda obs: act_batch(np.asarray(obs)[None])[0]), env, env_config, wrappers, None


def _make_env(
    env: Any, env_config: dict, wrappers: list, atari: dict | None, mode: str | None, video_dir: str | None
):
    import gymnasium as gym

    from relayrl.envs.make import make_single_env

    if mode is not None and not isinstance(env, str):
        raise ValueError(
            "--render / --video need a gymnasium env id (--env ID): a callable takes no render_mode"
        )
    made = make_single_env(env, {**env_config, **({"render_mode": mode} if mode else {})}, wrappers, atari)
    if mode is not None and made.render_mode != mode:
        made.close()
        raise ValueError(
            f"env {env!r} cannot render as {mode!r} (its render modes: "
            f"{made.metadata.get('render_modes', [])})"
        )
    if video_dir is None:
        return made
    try:
        return gym.wrappers.RecordVideo(
            made, video_dir, episode_trigger=lambda _: True, name_prefix="policy", disable_logger=True
        )
    except gym.error.DependencyNotInstalled:
        made.close()
        raise ValueError(f"--video {install_hint('video')}") from None
    except OSError as exc:  # e.g. DIR is a file, or not writable
        made.close()
        raise ValueError(f"--video {video_dir}: {exc.strerror or exc}") from None


def play(act: Act, env, episodes: int, seed: int | None) -> list[tuple[float, int]]:
    """(return, length) of each episode; the first reset is seeded, the next ones continue its RNG."""
    out = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed if episode == 0 else None)
        total, length, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, length, done = total + float(reward), length + 1, bool(terminated or truncated)
        out.append((total, length))
        print(f"episode {episode + 1}: return {total:.2f}, length {length}", flush=True)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        mode = _render_mode(args)
        policy = _saved_model_policy if is_saved_model(args.path) else _checkpoint_policy
        act, env_id, env_config, wrappers, atari = policy(args)
        env = _make_env(env_id, env_config, wrappers, atari, mode, args.video)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    try:
        results = play(act, env, args.episodes, args.seed)
    finally:
        env.close()  # RecordVideo writes the last episode's file here
    returns, lengths = np.array([r for r, _ in results]), np.array([n for _, n in results])
    print(
        f"mean return {returns.mean():.2f} ± {returns.std():.2f}, length {lengths.mean():.1f} ± "
        f"{lengths.std():.1f} over {len(results)} episodes"
    )
    if args.video:
        print(f"videos in {os.path.abspath(args.video)}")
    return 0
