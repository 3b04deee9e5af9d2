"""relayrl command line: `relayrl train ALGO ENV ...`.

Bad input (unknown algorithm or env id, an invalid --set, an unsupported action space) prints one
line to stderr and exits 2, before TensorFlow or Ray start where it can.
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Any, NoReturn

import psutil

from relayrl import tf_import

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(EXIT_BAD_INPUT, f"relayrl: error: {message}\n")


def _add_run_args(p: argparse.ArgumentParser) -> None:
    """Arguments every command that builds an algorithm takes."""
    p.add_argument("algo", help="algorithm name, e.g. ppo")
    p.add_argument("env", help="gymnasium env id, e.g. CartPole-v1")
    p.add_argument("--envs-per-worker", type=int_at_least(1), default=None)
    p.add_argument("--seed", type=int_at_least(0), default=None)
    p.add_argument("--config", default=None, help="YAML file of config fields")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config field (YAML value)")
    p.add_argument("--address", default=None, help="Ray cluster address to join ('auto')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="relayrl", description="Distributed deep RL with TensorFlow and Ray")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    t = sub.add_parser("train", help="train an agent")
    _add_run_args(t)
    t.add_argument("--workers", type=int_at_least(0), default=None,
                   help="Ray rollout workers (0 = sample in this process)")
    add_stop_args(t)
    t.add_argument("--logdir", default=None, help="TensorBoard directory (default ~/relayrl_results/ALGO_ENV_TIME)")
    t.add_argument("--dashboard", action="store_true", help="start the Ray dashboard on 127.0.0.1 (needs --workers >= 1)")
    t.add_argument("--json", action="store_true", help="last stdout line: the final result as one JSON object")
    t.add_argument("--quiet", action="store_true", help="no progress lines")
    t.add_argument("--eager", action="store_true",
                   help="debugging: run the learner's update eagerly (breakpoints in a loss see values; slow)")
    t.add_argument("--checkpoint-every", type=int_at_least(0), default=0, metavar="N",
                   help="checkpoint every N iterations (0 = off)")
    t.add_argument("--checkpoint-at-end", action="store_true", help="checkpoint when training stops")
    t.add_argument("--keep-checkpoints", type=int_at_least(1), default=3, metavar="K",
                   help="keep the newest K checkpoints")
    t.add_argument("--resume", default=None, metavar="DIR|auto",
                   help="continue from a checkpoint directory, or 'auto': the newest complete one under --logdir")
    t.add_argument("--print-config", action="store_true",
                   help="print the resolved config (defaults + tuned file + --config + --set) as YAML and exit")
    s = sub.add_parser("scale", help="env steps/s and time per iteration against the number of workers")
    _add_run_args(s)
    s.add_argument("--workers", type=_int_list, default=[1, 2, 4, 8], help="comma-separated worker counts, e.g. 1,2,4,8")
    s.add_argument("--iterations", type=int_at_least(1), default=5,
                   help="measured iterations per worker count (after one warm-up)")
    s.add_argument("--cpus-per-worker", type=positive_float, default=None,
                   help="CPUs reserved per worker actor (default: 1, or less so that the largest count fits the cluster)")
    s.add_argument("--out", default=None, help="directory for scale.csv and scale.png (default ./relayrl_scale/ALGO_ENV_TIME)")
    from relayrl import serve_cli  # `relayrl serve`: its own module and handler (args.handler)

    serve_cli.register(sub)
    from relayrl import persist_cli  # `relayrl export` / `relayrl evaluate`

    persist_cli.register(sub)
    from relayrl import plot  # `relayrl plot RUN_DIR ...`

    plot.register(sub)
    from relayrl import tune_cli  # `relayrl tune`

    tune_cli.register(sub)
    for command in sub.choices.values():  # `relayrl tune` has its own --verbose LEVEL (Tune's output)
        if not any("--verbose" in action.option_strings for action in command._actions):
            command.add_argument("--verbose", action="store_true",
                                 help="also show TensorFlow's native start-up lines")
    return parser


def add_stop_args(p: argparse.ArgumentParser) -> None:
    """--stop-reward / --stop-timesteps / --stop-iters / --stop-time (train and serve)."""
    p.add_argument("--stop-reward", type=finite_float, default=None, help="stop at this episode_reward_mean")
    p.add_argument("--stop-timesteps", type=int_at_least(1), default=None, help="stop after this many env steps")
    p.add_argument("--stop-iters", type=int_at_least(1), default=None, help="stop after this many iterations")
    p.add_argument("--stop-time", type=positive_float, default=None, help="stop after this many seconds of training")


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


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected worker counts >= 1, got {text!r}")
    return sorted(set(values))


def main(argv: list[str] | None = None) -> int:
    process_start = psutil.Process().create_time()
    args = build_parser().parse_args(argv)
    if args.verbose is True:  # read by relayrl.tf_import in this process and in the Ray workers it starts
        os.environ[tf_import.VERBOSE_ENV] = "1"
    if getattr(args, "handler", None) is not None:  # subcommands registered from their own modules
        return args.handler(args)
    try:
        config = _config_from_args(args)
    except (ValueError, OSError) as exc:
        return _fail(EXIT_BAD_INPUT, str(exc))
    if args.command == "scale":
        return _scale(args, config)
    if args.print_config:  # relayrl/print_config.py
        from relayrl.print_config import render

        print(render(args, config), end="")
        return 0
    new_log_dir = not os.path.exists(config.log_dir)
    try:  # refuse a missing or bad checkpoint and an unwritable log dir before anything starts
        if args.resume not in (None, "auto"):
            from relayrl import checkpoint

            checkpoint.verify(args.resume, algo=args.algo)
            checkpoint.check_resume_env(args.resume, config.env)
        _make_log_dir(config.log_dir)
    except ValueError as exc:
        return _fail(EXIT_BAD_INPUT, str(exc))
    code = _train(args, config, process_start)
    if code == EXIT_BAD_INPUT and new_log_dir:  # refused after the build (e.g. a bad learner file): leave no trace
        shutil.rmtree(config.log_dir, ignore_errors=True)
    return code


def _make_log_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ValueError(f"--logdir {path}: cannot write there ({exc.strerror or exc}); allowed: a directory "
                         f"this user can create and write") from None


def _fail(code: int, message: str) -> int:
    print(f"relayrl: error: {message}", file=sys.stderr)
    return code


DICT_FIELDS = ("model", "env_config")  # mappings: `--set FIELD.KEY=VALUE` sets one key


def parse_set(items: list[str]) -> dict[str, Any]:
    """['lr=1e-3', 'model.fcnet_hiddens=[32,32]'] -> {'lr': 0.001, 'model': {'fcnet_hiddens': [32, 32]}}.
    A mapping field given whole (`--set model={...}`) is merged key by key like its dotted form."""
    import yaml

    from relayrl import yaml_io

    from relayrl.print_config import mask_set_item

    out: dict[str, Any] = {}
    for item in items:
        shown = mask_set_item(item)  # what the messages below may echo: never a secret
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid --set {shown!r}: expected KEY=VALUE, e.g. --set lr=0.001")
        try:
            value = yaml_io.load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"invalid --set {shown!r}: value is not valid YAML "
                             f"({getattr(exc, 'problem', None) or exc})") from None
        name, dot, sub = key.partition(".")
        if dot and (name not in DICT_FIELDS or not sub):
            raise ValueError(f"invalid --set {shown!r}: only {' and '.join(DICT_FIELDS)} take a dotted key "
                             f"(e.g. --set model.fcnet_hiddens=[32,32])")
        if name in DICT_FIELDS:
            if not dot and not isinstance(value, dict):
                raise ValueError(f"invalid --set {shown!r}: {name} is a mapping: set one key with "
                                 f"--set {name}.KEY=VALUE, or give a mapping such as {name}={{key: value}}")
            out.setdefault(name, {}).update({sub: value} if dot else value)
        else:
            out[name] = value
    return out


def _config_from_args(args: argparse.Namespace):
    from relayrl import tuned
    from relayrl.algos import REGISTRY, algorithm_class, config_class
    from relayrl.envs import check_env_id

    if args.algo not in REGISTRY:
        close = difflib.get_close_matches(args.algo, list(REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown algorithm {args.algo!r}{hint}; allowed: {', '.join(sorted(REGISTRY))}")
    check_env_id(args.env)
    overrides = parse_set(args.set)
    file_fields: dict = {}
    if args.config:
        import yaml

        from relayrl import yaml_io

        try:
            with open(args.config) as fh:
                file_fields = yaml_io.load(fh) or {}
        except OSError as exc:
            raise ValueError(f"--config {args.config}: cannot read it ({exc.strerror or exc})") from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ValueError(f"--config {args.config} is not valid YAML{where}: "
                             f"{getattr(exc, 'problem', None) or exc}") from None
        if not isinstance(file_fields, dict):
            raise ValueError(f"--config {args.config}: expected a mapping of field: value")
    config = config_class(args.algo)()  # imports TensorFlow
    config.environment(args.env)
    tuned_fields, tuned_path = tuned.load(args.algo, args.env)
    if tuned_fields:
        config.update_from_dict(tuned_fields)
        args.tuned_path = tuned_path
    config.update_from_dict(file_fields)
    for name in DICT_FIELDS:  # merged into what the tuned file and --config set
        if name in overrides:
            config.update_from_dict({name: {**getattr(config, name), **overrides.pop(name)}})
    config.update_from_dict(overrides)
    flags = {"num_envs_per_worker": args.envs_per_worker, "seed": args.seed, "address": args.address}
    if args.command == "train":
        flags.update(num_rollout_workers=args.workers, dashboard=True if args.dashboard else None,
                     eager=True if args.eager else None)
        config.reporting(log_dir=args.logdir or _default_logdir(args.algo, args.env))
    config.update_from_dict({k: v for k, v in flags.items() if v is not None})
    config.validate()
    algorithm_class(args.algo).check_env(config)
    return config


def _run_name(algo: str, env: str) -> str:
    return f"{algo}_{env.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}_{os.getpid()}"


def _default_logdir(algo: str, env: str) -> str:
    return os.path.join(os.path.expanduser("~"), "relayrl_results", _run_name(algo, env))


def _scale(args: argparse.Namespace, config) -> int:
    from relayrl import scale

    out = args.out or os.path.join("relayrl_scale", _run_name(args.algo, args.env))
    largest = max(args.workers)

    def make_config(workers: int):
        from relayrl.runtime.ray_workers import cluster_cpus

        cpus = args.cpus_per_worker or min(1.0, cluster_cpus() / largest)
        return config.copy().update_from_dict({"num_rollout_workers": workers, "num_cpus_per_worker": cpus})

    def report(line: str) -> None:
        print(f"relayrl: {line}", file=sys.stderr, flush=True)

    rows, best = scale.run(make_config, args.workers, args.iterations, out, f"relayrl scale {args.algo} {args.env}",
                           config.address, report)
    print(f"wrote {os.path.join(out, 'scale.csv')} and {os.path.join(out, 'scale.png')}")
    why = (f"each worker past it adds < {scale.KNEE_GAIN:.0%} throughput" if best < rows[-1]["workers"]
           else "throughput still grew at the largest count: try more workers")
    print(f"recommended workers: {best} ({why}; {rows[-1]['workers']} workers ran at {rows[-1]['speedup']:.2f}x "
          f"the throughput of {rows[0]['workers']})")
    return 0


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
    from relayrl.metrics import diagnose
    from relayrl.progress import Progress
    from relayrl.replay.redis_replay import ReplayUnavailableError
    from relayrl.rollout import EnvError, WorkerFailedError

    rules = _stop_rules(args)
    progress = Progress(enabled=not args.quiet, log_dir=config.log_dir)
    if getattr(args, "tuned_path", None):
        progress.note(f"tuned defaults from {args.tuned_path}")
    from relayrl import checkpoint

    ckpt_dir = os.path.join(config.log_dir, "checkpoints")
    resume = args.resume
    if resume == "auto":
        resume = checkpoint.latest(ckpt_dir)
        progress.note(f"resuming from {resume}" if resume else f"--resume auto: no checkpoint under {ckpt_dir}, starting fresh")
    try:
        if resume:  # refuse a bad checkpoint, another algorithm's or another env's, before anything starts
            checkpoint.verify(resume, algo=config.algo_name)
            checkpoint.check_resume_env(resume, config.env)
        algo = config.build()
    except ValueError as exc:
        return _fail(EXIT_BAD_INPUT, str(exc))
    if resume:
        try:
            algo.restore(resume)
        except ValueError as exc:
            algo.stop()
            return _fail(EXIT_BAD_INPUT, str(exc))
    if algo.dashboard_url:
        progress.note(f"Ray dashboard: {algo.dashboard_url} (token auth: see ~/.ray/auth_token)")
    elif config.dashboard:
        progress.note("no Ray dashboard: it needs --workers >= 1 and a Ray started by relayrl")
    if "time" in rules:  # train() ends in time even if a service it waits on hangs
        algo.set_deadline(time.monotonic() + rules["time"] - algo.time_total_s)
    time_to_solve, result = None, None
    phase_totals = dict.fromkeys(("sample", "learn", "sync", "wait", "all"), 0.0)
    try:
        while True:
            result = algo.train()
            for phase in phase_totals:
                phase_totals[phase] += result["time_this_iter_s"] if phase == "all" else result[f"timers/{phase}_s"]
            if time_to_solve is None and "reward" in rules and result["episode_reward_mean"] >= rules["reward"]:
                time_to_solve = time.time() - process_start
            progress.update(result)
            stop = _should_stop(rules, result)
            if (args.checkpoint_every and result["training_iteration"] % args.checkpoint_every == 0) or (
                    stop and args.checkpoint_at_end):
                _checkpoint(algo, ckpt_dir, args.keep_checkpoints, progress)
            if stop:
                break
    except KeyboardInterrupt:
        progress.note("interrupted")
    except (FloatingPointError, EnvError, WorkerFailedError, ReplayUnavailableError) as exc:
        algo.stop()
        return _fail(EXIT_FAILED, f"{type(exc).__name__}: {exc}")
    algo.stop()
    if result is None:
        return 130  # interrupted before the first iteration ended
    final = dict(result)
    shares = {k: v / max(phase_totals["all"], 1e-9) for k, v in phase_totals.items() if k != "all"}
    final.update({"solved": time_to_solve is not None, "time_to_solve_s": time_to_solve,
                  "wall_time_s": time.time() - process_start, "log_dir": config.log_dir,
                  **{f"run/{k}_frac": v for k, v in shares.items()}, "diagnosis": diagnose(shares)})
    progress.summary(final)
    if args.json:
        print(json.dumps({k: _jsonable(v) for k, v in final.items()}))
    return 0


def _checkpoint(algo, ckpt_dir: str, keep: int, progress) -> None:
    from relayrl import checkpoint

    os.makedirs(ckpt_dir, exist_ok=True)
    path = algo.save(os.path.join(ckpt_dir, f"ckpt-{algo.iteration:07d}"))
    checkpoint.prune(ckpt_dir, keep)
    progress.note(f"checkpoint {path}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


if __name__ == "__main__":
    sys.exit(main())
