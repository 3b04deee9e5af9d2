"""`relayrl export CHECKPOINT DIR` and `relayrl evaluate PATH [--env ENV] --episodes N`, and what
`relayrl enjoy` shares with them (loading a checkpoint, the env of a SavedModel).

A checkpoint is data (relayrl/persistence/checkpoint.py): a bad or hostile one is refused with one line naming
the file and exit status 2, and nothing named in it is imported or called. `--env` is the caller supplying
the env (needed when the checkpoint's env was a Python callable, an id gymnasium has not registered or a
`module:EnvId`, which it may be too: the command line is trusted), and `--custom-model module:Class` /
`--custom-critic module:Class` the classes of a custom-model run. A SavedModel records its env and spaces
(data: an env that does not fit is refused in one line); TensorFlow runs its graph, so evaluate only
SavedModels you trust.
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
        help="env id or module:EnvId (default: the checkpoint's; required when it was a Python callable)",
    )
    add_custom_class_args(e)
    e.set_defaults(handler=run_export)
    v = sub.add_parser("evaluate", help="score a checkpoint or an exported SavedModel")
    v.add_argument("path", help="checkpoint directory or SavedModel directory")
    v.add_argument(
        "--env",
        default=None,
        help="env id or module:EnvId (default: the one the checkpoint or SavedModel records; required "
        "when that was a Python callable or a module:EnvId)",
    )
    add_custom_class_args(v)
    v.add_argument("--episodes", type=int, default=100)
    v.add_argument("--seed", type=int, default=None)
    v.add_argument("--json", action="store_true")
    v.set_defaults(handler=run_evaluate)


def add_custom_class_args(p: argparse.ArgumentParser) -> None:
    """--custom-model / --custom-critic: the classes a checkpoint of a custom-model run needs (it stores
    their names only, and never imports them)."""
    for key in CUSTOM_CLASS_KEYS:
        p.add_argument(
            "--" + key.replace("_", "-"),
            default=None,
            metavar="MODULE:CLASS",
            help=f"your {key} class, for a checkpoint of a run that used one",
        )


CUSTOM_CLASS_KEYS = ("custom_model", "custom_critic")


def custom_classes(args: argparse.Namespace) -> dict:
    """{'custom_model': Class, ...} from the flags given; ValueError naming the flag."""
    from relayrl.core.config_io import resolve_callable

    out = {}
    for key in CUSTOM_CLASS_KEYS:
        path = getattr(args, key, None)
        if path is None:
            continue
        flag = "--" + key.replace("_", "-")
        if ":" not in path:
            raise ValueError(f"{flag} {path!r}: allowed: 'package.module:Class'")
        try:
            out[key] = resolve_callable(path)
        except ValueError as exc:
            raise ValueError(f"{flag} {path!r}: {exc}") from None
        if not isinstance(out[key], type):
            raise ValueError(f"{flag} {path!r} is a {type(out[key]).__name__}, not a class")
    return out


def fail(message: str) -> int:
    print(f"relayrl: error: {' '.join(message.split())}", file=sys.stderr)  # one line, whatever the message
    return 2


def load_checkpoint(path: str, env: str | None, classes: dict | None = None):
    """The checkpoint's algorithm on this process (no Ray workers, no log files); ValueError when refused."""
    from relayrl.algorithms.base import Algorithm

    overrides = {"num_rollout_workers": 0, "log_dir": None, **({"env": env} if env else {})}
    return Algorithm.from_checkpoint(path, **(classes or {}), **overrides)


def is_saved_model(path: str) -> bool:
    """A SavedModel directory (a directory with a COMPLETE marker is a checkpoint, loaded as data, even if it
    holds a saved_model.pb)."""
    from relayrl.persistence.checkpoint import MARKER

    return not os.path.lexists(os.path.join(path, MARKER)) and os.path.exists(
        os.path.join(path, "saved_model.pb")
    )


def saved_model_env(path: str, env: str | None):
    """(env, env_config, env_wrappers, metadata) to run a SavedModel on: `env` (yours, checked; a
    module:EnvId is imported) or the one the export records; ValueError when neither is usable."""
    from relayrl.envs.make import check_env_id
    from relayrl.persistence.policy_metadata import read_metadata, recorded_env

    metadata = read_metadata(path)
    if env:
        check_env_id(env)
        return env, {}, [], metadata
    return (*recorded_env(metadata, path), metadata)


def run_export(args: argparse.Namespace) -> int:
    if args.format != "tflite" and args.quantize != "none":
        return fail(f"--quantize {args.quantize}: only with --format tflite")
    try:
        algo = load_checkpoint(args.checkpoint, args.env, custom_classes(args))
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
    if is_saved_model(args.path):
        if args.custom_model or args.custom_critic:
            return fail(
                "--custom-model / --custom-critic: only for a checkpoint (a SavedModel holds its model)"
            )
        from relayrl.persistence.export import evaluate_saved_model

        try:
            env, env_config, wrappers, metadata = saved_model_env(args.path, args.env)
            result = evaluate_saved_model(
                args.path,
                env,
                args.episodes,
                args.seed,
                env_config=env_config,
                wrappers=wrappers,
                metadata=metadata,
            )
        except ValueError as exc:
            return fail(str(exc))
    else:
        try:
            algo = load_checkpoint(args.path, args.env, custom_classes(args))
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
