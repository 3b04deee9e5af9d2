"""`relayrl train ALGO ENV ...`: train until a stop rule holds, with progress, checkpoints and a final
summary."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile

import psutil

from relayrl.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    add_run_args,
    add_stop_args,
    config_from_args,
    fail,
    int_at_least,
    jsonable,
)


def register(sub) -> None:
    t = sub.add_parser("train", help="train an agent")
    add_run_args(t)
    t.add_argument(
        "--workers",
        type=int_at_least(0),
        default=None,
        help="Ray rollout workers (0 = sample in this process)",
    )
    add_stop_args(t)
    t.add_argument(
        "--logdir", default=None, help="TensorBoard directory (default ~/relayrl_results/ALGO_ENV_TIME)"
    )
    t.add_argument(
        "--dashboard", action="store_true", help="start the Ray dashboard on 127.0.0.1 (needs --workers >= 1)"
    )
    t.add_argument(
        "--json", action="store_true", help="last stdout line: the final result as one JSON object"
    )
    t.add_argument("--quiet", action="store_true", help="no progress lines")
    t.add_argument(
        "--eager",
        action="store_true",
        help="debugging: run the learner's update eagerly (breakpoints in a loss see values; slow)",
    )
    t.add_argument(
        "--checkpoint-every",
        type=int_at_least(0),
        default=0,
        metavar="N",
        help="checkpoint every N iterations (0 = off)",
    )
    t.add_argument("--checkpoint-at-end", action="store_true", help="checkpoint when training stops")
    t.add_argument(
        "--keep-checkpoints",
        type=int_at_least(1),
        default=3,
        metavar="K",
        help="keep the newest K checkpoints",
    )
    t.add_argument(
        "--keep-best",
        action="store_true",
        help="keep the checkpoint with the best evaluation/episode_reward_mean in LOGDIR/checkpoints/best "
        "(needs --set evaluation_interval=N)",
    )
    t.add_argument(
        "--resume",
        default=None,
        metavar="DIR|auto",
        help="continue from a checkpoint directory, or 'auto': the newest complete one under --logdir",
    )
    t.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (defaults + tuned file + --config + --set) as YAML and exit",
    )
    t.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    process_start = psutil.Process().create_time()
    try:
        config = config_from_args(args)
    except (ValueError, OSError) as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    if args.print_config:
        from relayrl.cli.print_config import render

        print(render(args, config), end="")
        return 0
    new_log_dir = not os.path.exists(config.log_dir)
    try:  # refuse a missing or bad checkpoint and an unwritable log dir before anything starts
        if args.resume not in (None, "auto"):
            from relayrl.persistence import checkpoint

            checkpoint.verify(args.resume, algo=args.algo)
            checkpoint.check_resume_env(args.resume, config.env)
        make_log_dir(config.log_dir)
    except ValueError as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    code = train(args, config, process_start)
    if code == EXIT_BAD_INPUT and new_log_dir:  # refused after the build (a bad learner file): leave no trace
        shutil.rmtree(config.log_dir, ignore_errors=True)
    return code


def make_log_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ValueError(
            f"--logdir {path}: cannot write there ({exc.strerror or exc}); allowed: a directory "
            f"this user can create and write"
        ) from None


def train(args: argparse.Namespace, config, process_start: float) -> int:
    """Build (or resume) the algorithm and run the one training loop (algorithms.training.train_until)."""
    from relayrl.algorithms.checkpointing import CheckpointPlan
    from relayrl.algorithms.training import train_until
    from relayrl.persistence.progress import Progress
    from relayrl.replay.redis_retry import ReplayUnavailableError
    from relayrl.sampling.settings import EnvError, WorkerFailedError

    plan = CheckpointPlan(
        os.path.join(config.log_dir, "checkpoints"),
        every=args.checkpoint_every,
        at_end=args.checkpoint_at_end,
        keep=args.keep_checkpoints,
        keep_best=args.keep_best,
    )
    stop = {"reward": args.stop_reward, "timesteps": args.stop_timesteps, "iters": args.stop_iters}
    stop["time"] = args.stop_time  # none set: the env's reward_threshold within a million steps
    try:
        plan.check(config)
    except ValueError as exc:
        return fail(EXIT_BAD_INPUT, str(exc).replace("keep_best", "--keep-best", 1))
    progress = Progress(enabled=not args.quiet, log_dir=config.log_dir)
    if getattr(args, "tuned_path", None):
        progress.note(f"tuned defaults from {args.tuned_path}")
    try:
        algo = build_resumed(config, resume_path(args.resume, plan.directory, progress))
    except ValueError as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    if algo.dashboard_url:
        progress.note(f"Ray dashboard: {algo.dashboard_url} (token auth: see ~/.ray/auth_token)")
    elif config.dashboard:
        progress.note("no Ray dashboard: it needs --workers >= 1 and a Ray started by relayrl")
    try:
        final = train_until(
            algo,
            stop,
            checkpoints=plan,
            progress=progress,
            started_at=process_start,
            syntax="cli",
        )
    except (FloatingPointError, EnvError, WorkerFailedError, ReplayUnavailableError) as exc:
        return fail(EXIT_FAILED, f"{type(exc).__name__}: {exc}")
    finally:
        algo.stop()
    if final is None:
        return 130  # interrupted before the first iteration ended
    progress.summary(final)
    if args.json:
        print(json.dumps({k: jsonable(v) for k, v in final.items()}))
    return 0


def resume_path(resume: str | None, ckpt_dir: str, progress) -> str | None:
    """The checkpoint --resume names; 'auto' is the newest complete one under ckpt_dir, if any."""
    from relayrl.persistence import checkpoint

    if resume != "auto":
        return resume
    resume = checkpoint.latest(ckpt_dir)
    progress.note(
        f"resuming from {resume}"
        if resume
        else f"--resume auto: no checkpoint under {ckpt_dir}, starting fresh"
    )
    return resume


def build_resumed(config, resume: str | None):
    """config's Algorithm, restored from `resume` when given; a bad checkpoint, another algorithm's or another
    env's, is refused (ValueError) before anything starts."""
    from relayrl.persistence import checkpoint

    if resume:
        checkpoint.verify(resume, algo=config.algo_name)
        checkpoint.check_resume_env(resume, config.env)
    algo = config.build()
    if resume:
        try:
            algo.restore(resume)
        except ValueError:
            algo.stop()
            raise
    return algo
