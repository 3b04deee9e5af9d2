"""`relayrl train ALGO ENV ...`: train until a stop rule holds, with progress, checkpoints and a final
summary."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

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
    nonempty,
)
from relayrl.cli.run_names import make_writable_dir


def register(sub) -> None:
    from relayrl.cli.train_help import DESCRIPTION, epilog

    t = sub.add_parser(
        "train",
        help="train an agent",
        description=DESCRIPTION,
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_args(t)
    t.add_argument(
        "--workers",
        type=int_at_least(0),
        default=None,
        metavar="N",
        help="Ray rollout workers (default 0: sample in this process, no Ray; `relayrl scale` measures)",
    )
    add_stop_args(t)
    t.add_argument(
        "--logdir",
        type=nonempty,
        default=None,
        metavar="DIR",
        help="the run's directory: TensorBoard, progress.csv, config.json, run.json, checkpoints/ "
        "(default ~/relayrl_results/ALGO_ENV_TIME_PID)",
    )
    t.add_argument(
        "--dashboard", action="store_true", help="start the Ray dashboard on 127.0.0.1 (needs --workers >= 1)"
    )
    t.add_argument(
        "--json", action="store_true", help="last stdout line: the final result as one JSON object"
    )
    t.add_argument("--quiet", action="store_true", help="no progress lines or notes on stderr")
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
        help="checkpoint every N iterations into LOGDIR/checkpoints (0 = off)",
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
        type=nonempty,
        default=None,
        metavar="DIR|auto",
        help="continue from a checkpoint directory with its config; 'auto': the newest complete one under "
        "--logdir (none there yet: start fresh there), or without --logdir the newest run of ALGO on ENV "
        "under ~/relayrl_results that has one",
    )
    t.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (with --resume: the checkpoint's, with your changes) as YAML "
        "and exit",
    )
    t.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from relayrl.cli import resume

    process_start = psutil.Process().create_time()
    try:  # refuse a missing or bad checkpoint and any bad input before anything starts
        path = resume.locate(args) if args.resume else None
        if path:
            config = resume.resumed_config(args, path)
            args.resume = path
        else:
            config = config_from_args(args)
    except (ValueError, OSError) as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    if args.print_config:
        from relayrl.cli.print_config import render

        print(render(args, config), end="")
        return 0
    new_log_dir = not os.path.exists(config.log_dir)
    try:
        make_writable_dir(config.log_dir, "--logdir")
    except ValueError as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    record_start(args, config.log_dir, path)
    if path and not args.quiet:
        print(f"relayrl: {resume.changes_line(path, args.resume_changes)}", file=sys.stderr, flush=True)
    code = train(args, config, process_start)
    if code == EXIT_BAD_INPUT and new_log_dir:  # refused after the build (a bad learner file): leave no trace
        shutil.rmtree(config.log_dir, ignore_errors=True)
    return code


def record_start(args: argparse.Namespace, log_dir: str, resumed_from: str | None) -> None:
    """run.json: the command line (secrets masked), versions, git revision, the tuned file."""
    from relayrl.cli.print_config import mask_argv
    from relayrl.persistence import run_info

    argv = getattr(args, "argv", None) or ["relayrl", *sys.argv[1:]]
    resumed_from = os.path.abspath(resumed_from) if resumed_from else None
    run_info.write(log_dir, mask_argv(argv), getattr(args, "tuned_path", None), resumed_from)


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
    """The checkpoint to continue from: run() has resolved --resume already (resume.locate); 'auto' is left
    only when --logdir holds no checkpoint yet, and the run starts fresh there."""
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
    """config's Algorithm, restored from `resume` when given; config is the checkpoint's own with the user's
    changes (resume.resumed_config), so the networks match its weights. A bad checkpoint, another algorithm's
    or another env's, is refused (ValueError) before anything starts."""
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
