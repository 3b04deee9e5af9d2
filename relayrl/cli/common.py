"""What every `relayrl` command shares: exit codes, one-line errors, flag types, --set parsing, the config
built from the command line (defaults < tuned file < --config < --set < flags) and the stop rules."""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from typing import Any

from relayrl.cli.run_names import default_logdir

EXIT_BAD_INPUT = 2


EXIT_FAILED = 1


def add_run_args(p: argparse.ArgumentParser) -> None:
    """Arguments every command that builds an algorithm takes."""
    p.add_argument("algo", help="algorithm name, e.g. ppo (`relayrl list` shows them all)")
    p.add_argument("env", help="gymnasium env id, e.g. CartPole-v1")
    p.add_argument(
        "--envs-per-worker",
        type=int_at_least(1),
        default=None,
        metavar="K",
        help="envs each worker steps together in one batched policy call (config num_envs_per_worker)",
    )
    p.add_argument(
        "--seed",
        type=int_at_least(0),
        default=None,
        help="seed of networks, envs and sampling (default: none, every run differs)",
    )
    p.add_argument("--config", type=nonempty, default=None, metavar="FILE", help="YAML file of config fields")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (YAML value; repeatable; model.KEY / env_config.KEY set one key)",
    )
    p.add_argument(
        "--address", default=None, help="Ray cluster address to join ('auto': the one this machine is in)"
    )


def add_stop_args(p: argparse.ArgumentParser) -> None:
    """--stop-reward / --stop-timesteps / --stop-iters / --stop-time (train and serve)."""
    p.add_argument(
        "--stop-reward",
        type=finite_float,
        default=None,
        metavar="R",
        help="stop once episode_reward_mean reaches R",
    )
    p.add_argument(
        "--stop-timesteps",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="stop after N env steps in total",
    )
    p.add_argument(
        "--stop-iters", type=int_at_least(1), default=None, metavar="N", help="stop after N iterations"
    )
    p.add_argument(
        "--stop-time",
        type=positive_float,
        default=None,
        metavar="S",
        help="stop after S seconds of training",
    )


# Flags are bounded like config fields: past this an integer flag is a typo, not a plan.
MAX_INT_FLAG = 2**53


def int_at_least(low: int):
    """argparse type: an integer in [low, 2**53]; the error names what is allowed (argparse adds the flag)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= MAX_INT_FLAG:
            raise argparse.ArgumentTypeError(f"{text!r} is invalid: allowed: an integer >= {low}")
        return value

    parse.__name__ = "integer"
    return parse


def nonempty(text: str) -> str:
    """argparse type of a path: an empty one is a mistake (an unset shell variable), never the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: allowed: a non-empty path")
    return text


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: allowed: a finite number")
    return value


def positive_float(text: str) -> float:
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: allowed: a number > 0")
    return value


def fail(code: int, message: str) -> int:
    print(f"relayrl: error: {message}", file=sys.stderr)
    return code


DICT_FIELDS = ("model", "env_config", "atari")  # mappings: `--set FIELD.KEY=VALUE` sets one key


def parse_set(items: list[str]) -> dict[str, Any]:
    """['lr=1e-3', 'model.fcnet_hiddens=[32,32]'] -> {'lr': 0.001, 'model': {'fcnet_hiddens': [32, 32]}}.
    A mapping field given whole (`--set model={...}`) is merged key by key like its dotted form."""
    import yaml

    from relayrl.cli.print_config import mask_set_item
    from relayrl.core import yaml_io

    out: dict[str, Any] = {}
    for item in items:
        shown = mask_set_item(item)  # what the messages below may echo: never a secret
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid --set {shown!r}: expected KEY=VALUE, e.g. --set lr=0.001")
        try:
            value = yaml_io.load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(
                f"invalid --set {shown!r}: value is not valid YAML ({getattr(exc, 'problem', None) or exc})"
            ) from None
        name, dot, sub = key.partition(".")
        if dot and (name not in DICT_FIELDS or not sub):
            raise ValueError(
                f"invalid --set {shown!r}: only {', '.join(DICT_FIELDS)} take a dotted key "
                f"(e.g. --set model.fcnet_hiddens=[32,32])"
            )
        if name in DICT_FIELDS:
            if not dot and not isinstance(value, dict):
                raise ValueError(
                    f"invalid --set {shown!r}: {name} is a mapping: set one key with "
                    f"--set {name}.KEY=VALUE, or give a mapping such as {name}={{key: value}}"
                )
            out.setdefault(name, {}).update({sub: value} if dot else value)
        else:
            out[name] = value
    return out


def check_algo_env(args: argparse.Namespace) -> None:
    """An algorithm relayrl has and an env id gymnasium knows, else ValueError (before TensorFlow starts)."""
    from relayrl.algorithms import REGISTRY
    from relayrl.envs.make import check_env_id

    if args.algo not in REGISTRY:
        close = difflib.get_close_matches(args.algo, list(REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown algorithm {args.algo!r}{hint}; allowed: {', '.join(sorted(REGISTRY))}")
    check_env_id(args.env)


def user_fields(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The config fields the user gave explicitly, in the order they apply: --config, --set, the flags."""
    overrides = parse_set(args.set)
    file_fields = read_config_file(args.config) if args.config else {}
    flags = {"num_envs_per_worker": args.envs_per_worker, "seed": args.seed, "address": args.address}
    if args.command == "train":
        flags.update(
            num_rollout_workers=args.workers,
            dashboard=True if args.dashboard else None,
            eager=True if args.eager else None,
        )
    return [file_fields, overrides, {k: v for k, v in flags.items() if v is not None}]


def read_config_file(path: str) -> dict[str, Any]:
    """--config FILE: a YAML mapping of field: value (the user's own file: trusted)."""
    import yaml

    from relayrl.core import yaml_io

    try:
        with open(path) as fh:
            fields = yaml_io.load(fh) or {}
    except OSError as exc:
        raise ValueError(f"--config {path}: cannot read it ({exc.strerror or exc})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(
            f"--config {path} is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}"
        ) from None
    if not isinstance(fields, dict):
        raise ValueError(f"--config {path}: expected a mapping of field: value")
    return fields


def apply_fields(config, layers: list[dict[str, Any]]):
    """Apply each layer of fields in turn; a mapping field (model, env_config) is merged key by key into
    what the layers below set (the tuned file's or the checkpoint's network), never reset to defaults."""
    for layer in layers:
        layer = dict(layer)
        for name in DICT_FIELDS:
            if isinstance(layer.get(name), dict):
                config.update_from_dict({name: {**getattr(config, name), **layer.pop(name)}})
        config.update_from_dict(layer)
    return config


def config_from_args(args: argparse.Namespace):
    """defaults < tuned file < --config < --set < flags; the log dir is --logdir or a fresh one."""
    from relayrl.algorithms import algorithm_class, config_class
    from relayrl.core import tuned

    check_algo_env(args)
    layers = user_fields(args)
    config = config_class(args.algo)()  # imports TensorFlow
    config.environment(args.env)
    tuned_fields, tuned_path = tuned.load(args.algo, args.env)
    if tuned_fields:
        config.update_from_dict(tuned_fields)
        args.tuned_path = tuned_path
    apply_fields(config, layers)
    if args.command == "train":
        config.reporting(log_dir=args.logdir or default_logdir(args.algo, args.env))
    config.validate()
    algorithm_class(args.algo).check_env(config)
    if tuned_path is None and not getattr(args, "quiet", False):  # after the checks: a refusal stays one line
        print(
            f"relayrl: no tuned config for {args.algo} on {args.env}: using defaults; see `relayrl list`",
            file=sys.stderr,
        )
    return config


def jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
