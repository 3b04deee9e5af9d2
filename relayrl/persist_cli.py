"""`relayrl export CHECKPOINT DIR` and `relayrl evaluate PATH --env ENV --episodes N`."""
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
    e.add_argument("--quantize", choices=["none", "float16", "int8"], default="none",
                   help="post-training quantisation of a tflite export (int8: calibrated on env observations)")
    e.set_defaults(handler=run_export)
    v = sub.add_parser("evaluate", help="score a checkpoint or an exported SavedModel")
    v.add_argument("path", help="checkpoint directory or SavedModel directory")
    v.add_argument("--env", default=None, help="env id (default: the checkpoint's; required for a SavedModel)")
    v.add_argument("--episodes", type=int, default=100)
    v.add_argument("--seed", type=int, default=None)
    v.add_argument("--json", action="store_true")
    v.set_defaults(handler=run_evaluate)


def _fail(message: str) -> int:
    print(f"relayrl: error: {message}", file=sys.stderr)
    return 2


def run_export(args: argparse.Namespace) -> int:
    from relayrl.algorithm import Algorithm

    if args.format != "tflite" and args.quantize != "none":
        return _fail(f"--quantize {args.quantize}: only with --format tflite")
    try:
        algo = Algorithm.from_checkpoint(args.checkpoint, num_rollout_workers=0, log_dir=None)
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    try:
        if args.format == "tflite":
            from relayrl.tflite_export import export_tflite

            report = export_tflite(algo, args.export_dir, args.quantize)
            path = report.path
            print(report.summary())
        else:
            path = algo.export_policy(args.export_dir)
    except ValueError as exc:
        return _fail(str(exc))
    finally:
        algo.stop()
    print(f"exported {path}")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        return _fail(f"--episodes {args.episodes}: allowed: an integer >= 1")
    if os.path.exists(os.path.join(args.path, "saved_model.pb")):
        if not args.env:
            return _fail("--env is required to evaluate a SavedModel (it holds the policy, not the environment)")
        from relayrl.envs import check_env_id
        from relayrl.export import evaluate_saved_model

        try:
            check_env_id(args.env)
            result = evaluate_saved_model(args.path, args.env, args.episodes, seed=args.seed)
        except ValueError as exc:
            return _fail(str(exc))
    else:
        from relayrl.algorithm import Algorithm

        overrides = {"num_rollout_workers": 0, "log_dir": None, **({"env": args.env} if args.env else {})}
        try:
            algo = Algorithm.from_checkpoint(args.path, **overrides)
        except (ValueError, OSError) as exc:
            return _fail(str(exc))
        try:
            result = algo.evaluate(args.episodes, seed=args.seed)
        finally:
            algo.stop()
    print(json.dumps(result) if args.json else
          f"{args.path}: episode_reward_mean {result['episode_reward_mean']:.2f} over {result['episodes']} episodes")
    return 0
