"""`relayrl export CHECKPOINT DIR` and `relayrl evaluate PATH --env ENV --episodes N`.

A checkpoint is data (relayrl/persistence/checkpoint.py): a bad or hostile one is refused with one line naming
the file and exit status 2, and nothing named in it is imported or called. `--env` is the caller supplying
the env (needed when the checkpoint's env was a Python callable or an id gymnasium has not registered).
A SavedModel is different: TensorFlow runs its graph, so evaluate only SavedModels you trust.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def register(sub) -> None:
    e = sub.add_parser("export", help="export a checkpoint's policy as a SavedModel or a TFLite file")
    e.add_argument("checkpoint", help="checkpoint directory (written by --checkpoint-every / algo.save)")
    e.add_argument("export_dir", help="directory to write (the SavedModel, or DIR/policy.tflite)")
    e.add_argument("--format", choices=["savedmodel", "tflite"], default="savedmodel")
    e.add_argument(
        "--quantize",
        choices=["none", "float16", "int8"],
        default="none",
        help="post-training quantisation of a tflite export (int8: calibrated on env observations)",
    )
    e.add_argument(
        "--env",
        default=None,
        help="env id (default: the checkpoint's; required when it was a Python callable)",
    )
    e.set_defaults(handler=run_export)
    v = sub.add_parser("evaluate", help="score a checkpoint or an exported SavedModel")
    v.add_argument("path", help="checkpoint directory or SavedModel directory")
    v.add_argument(
        "--env",
        default=None,
        help="env id (default: the checkpoint's; required for a SavedModel, or when the "
        "checkpoint's env was a Python callable)",
    )
    v.add_argument("--episodes", type=int, default=100)
    v.add_argument("--seed", type=int, default=None)
    v.add_argument("--json", action="store_true")
    v.set_defaults(handler=run_evaluate)


def fail(message: str) -> int:
    print(f"relayrl: error: {' '.join(message.split())}", file=sys.stderr)  # one line, whatever the message
    return 2


def _load(path: str, env: str | None):
    """The checkpoint's algorithm on this process (no Ray workers, no log files); ValueError when refused."""
    from relayrl.algorithms.base import Algorithm

    overrides = {"num_rollout_workers": 0, "log_dir": None, **({"env": env} if env else {})}
    return Algorithm.from_checkpoint(path, **overrides)


def run_export(args: argparse.Namespace) -> int:
    if args.format != "tflite" and args.quantize != "none":
        return fail(f"--quantize {args.quantize}: only with --format tflite")
    try:
        algo = _load(args.checkpoint, args.env)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    try:
        if args.format == "tflite":
            from relayrl.persistence.tflite_export import export_tflite

            report = export_tflite(algo, args.export_dir, args.quantize)
            path = report.path
            print(report.summary())
        else:
            path = algo.export_policy(args.export_dir)
    except ValueError as exc:
        return fail(str(exc))
    finally:
        algo.stop()
    print(f"exported {path}")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        return fail(f"--episodes {args.episodes}: allowed: an integer >= 1")
    from relayrl.persistence.checkpoint import MARKER

    # a directory with a COMPLETE marker is a checkpoint, loaded as data, even if it holds a saved_model.pb
    saved_model = not os.path.lexists(os.path.join(args.path, MARKER))
    if saved_model and os.path.exists(os.path.join(args.path, "saved_model.pb")):
        if not args.env:
            return fail(
                "--env is required to evaluate a SavedModel (it holds the policy, not the environment)"
            )
        from relayrl.envs.make import check_env_id
        from relayrl.persistence.export import evaluate_saved_model

        try:
            check_env_id(args.env)
            result = evaluate_saved_model(args.path, args.env, args.episodes, seed=args.seed)
        except ValueError as exc:
            return fail(str(exc))
    else:
        try:
            algo = _load(args.path, args.env)
        except (ValueError, OSError) as exc:
            return fail(str(exc))
        try:
            result = algo.evaluate(args.episodes, seed=args.seed)
        finally:
            algo.stop()
    print(
        json.dumps(result)
        if args.json
        else f"{args.path}: episode_reward_mean {result['episode_reward_mean']:.2f} over "
        f"{result['episodes']} episodes"
    )
    return 0
