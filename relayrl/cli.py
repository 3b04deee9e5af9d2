"""relayrl command line: `relayrl train ALGO ENV ...`.

Bad input (unknown algorithm or env id, an invalid --set, an unsupported action space) prints one
line to stderr and exits 2, before TensorFlow or Ray start where it can.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, NoReturn

import psutil

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(EXIT_BAD_INPUT, f"relayrl: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="relayrl", description="Distributed deep RL with TensorFlow and Ray")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    t = sub.add_parser("train", help="train an agent")
    t.add_argument("algo", help="algorithm name, e.g. ppo")
    t.add_argument("env", help="gymnasium env id, e.g. CartPole-v1")
    t.add_argument("--workers", type=int, default=None, help="Ray rollout workers (0 = sample in this process)")
    t.add_argument("--envs-per-worker", type=int, default=None)
    t.add_argument("--seed", type=int, default=None)
    t.add_argument("--stop-reward", type=float, default=None)
    t.add_argument("--stop-timesteps", type=int, default=None)
    t.add_argument("--stop-iters", type=int, default=None)
    t.add_argument("--stop-time", type=float, default=None, help="seconds of training")
    t.add_argument("--config", default=None, help="YAML file of config fields")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config field (YAML value)")
    t.add_argument("--logdir", default=None, help="TensorBoard directory (default ~/relayrl_results/ALGO_ENV_TIME)")
    t.add_argument("--address", default=None, help="Ray cluster address to join ('auto')")
    t.add_argument("--json", action="store_true", help="last stdout line: the final result as one JSON object")
    t.add_argument("--quiet", action="store_true", help="no progress lines")
    from relayrl import serve_cli  # `relayrl serve`: its own module and handler (args.handler)

    serve_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    process_start = psutil.Process().create_time()
    args = build_parser().parse_args(argv)
    if getattr(args, "handler", None) is not None:  # subcommands registered from their own modules
        return args.handler(args)
    try:
        config = _config_from_args(args)
    except (ValueError, OSError) as exc:
        return _fail(EXIT_BAD_INPUT, str(exc))
    return _train(args, config, process_start)


def _fail(code: int, message: str) -> int:
    print(f"relayrl: error: {message}", file=sys.stderr)
    return code


def parse_set(items: list[str]) -> dict[str, Any]:
    """['lr=1e-3', 'model.fcnet_hiddens=[32,32]'] -> {'lr': 0.001, 'model': {'fcnet_hiddens': [32, 32]}}."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid --set {item!r}: expected KEY=VALUE, e.g. --set lr=0.001")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"invalid --set {item!r}: value is not valid YAML ({exc.problem})") from None
        if key.startswith("model."):
            out.setdefault("model", {})[key[len("model."):]] = value
        else:
            out[key] = value
    return out


def _config_from_args(args: argparse.Namespace):
    from relayrl import tuned
    from relayrl.algos import REGISTRY, algorithm_class, config_class
    from relayrl.envs import check_env_id

    if args.algo not in REGISTRY:
        raise ValueError(f"unknown algorithm {args.algo!r}; allowed: {', '.join(sorted(REGISTRY))}")
    check_env_id(args.env)
    overrides = parse_set(args.set)
    file_fields: dict = {}
    if args.config:
        import yaml

        with open(args.config) as fh:
            try:
                file_fields = yaml.safe_load(fh) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"--config {args.config} is not valid YAML: {exc}") from None
        if not isinstance(file_fields, dict):
            raise ValueError(f"--config {args.config}: expected a mapping of field: value")
    config = config_class(args.algo)()  # imports TensorFlow
    config.environment(args.env)
    tuned_fields, tuned_path = tuned.load(args.algo, args.env)
    if tuned_fields:
        config.update_from_dict(tuned_fields)
        args.tuned_path = tuned_path
    config.update_from_dict(file_fields)
    model = overrides.pop("model", None)
    if model is not None:
        config.update_from_dict({"model": {**config.model, **model}})
    config.update_from_dict(overrides)
    flags = {"num_rollout_workers": args.workers, "num_envs_per_worker": args.envs_per_worker,
             "seed": args.seed, "address": args.address}
    config.update_from_dict({k: v for k, v in flags.items() if v is not None})
    config.reporting(log_dir=args.logdir or _default_logdir(args.algo, args.env))
    config.validate()
    algorithm_class(args.algo).check_env(config)
    return config


def _default_logdir(algo: str, env: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(os.path.expanduser("~"), "relayrl_results", f"{algo}_{env}_{stamp}_{os.getpid()}")


def _stop_rules(args: argparse.Namespace) -> dict[str, float]:
    rules = {"reward": args.stop_reward, "timesteps": args.stop_timesteps, "iters": args.stop_iters, "time": args.stop_time}
    rules = {k: v for k, v in rules.items() if v is not None}
    if not rules:  # nothing asked: the env's own "solved" threshold, within a million steps
        import gymnasium as gym

        threshold = gym.spec(args.env).reward_threshold
        rules = {"timesteps": 1_000_000}
        if threshold is not None:
            rules["reward"] = float(threshold)
    return rules


def _should_stop(rules: dict[str, float], result: dict[str, Any]) -> bool:
    reward = result["episode_reward_mean"]
    return (
        ("reward" in rules and not math.isnan(reward) and reward >= rules["reward"])
        or ("timesteps" in rules and result["timesteps_total"] >= rules["timesteps"])
        or ("iters" in rules and result["training_iteration"] >= rules["iters"])
        or ("time" in rules and result["time_total_s"] >= rules["time"])
    )


def _train(args: argparse.Namespace, config, process_start: float) -> int:
    from relayrl.progress import Progress
    from relayrl.rollout import EnvError

    rules = _stop_rules(args)
    progress = Progress(enabled=not args.quiet, log_dir=config.log_dir)
    if getattr(args, "tuned_path", None):
        progress.note(f"tuned defaults from {args.tuned_path}")
    try:
        algo = config.build()
    except ValueError as exc:
        return _fail(EXIT_BAD_INPUT, str(exc))
    time_to_solve, result = None, None
    try:
        while True:
            result = algo.train()
            if time_to_solve is None and "reward" in rules and result["episode_reward_mean"] >= rules["reward"]:
                time_to_solve = time.time() - process_start
            progress.update(result)
            if _should_stop(rules, result):
                break
    except KeyboardInterrupt:
        progress.note("interrupted")
    except (FloatingPointError, EnvError) as exc:
        algo.stop()
        return _fail(EXIT_FAILED, f"{type(exc).__name__}: {exc}")
    algo.stop()
    if result is None:
        return 130  # interrupted before the first iteration ended
    final = dict(result)
    final.update({"solved": time_to_solve is not None, "time_to_solve_s": time_to_solve,
                  "wall_time_s": time.time() - process_start, "log_dir": config.log_dir})
    progress.summary(final)
    if args.json:
        print(json.dumps({k: _jsonable(v) for k, v in final.items()}))
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


if __name__ == "__main__":
    sys.exit(main())
