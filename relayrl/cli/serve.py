"""`relayrl serve ALGO --env ENV_ID`: train ALGO from external simulators that call in over HTTP.

The env id (or `module:EnvId`, imported first) only supplies the observation and action spaces.
Config comes from the tuned file for (ALGO, env), then --config, then --set, as for `relayrl train`.
The URL served on is printed to stderr as `relayrl: serving ALGO on http://HOST:PORT`; with --json the
last stdout line is the final result. A shared-secret token is read from $RELAYRL_SERVER_TOKEN.
Every limit of `ServerLimits` is a flag (--max-episodes, --episode-timeout-s, --max-connections,
--read-timeout-s); a bad value exits 2 with one line naming the flag and what is allowed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from relayrl.core import checks
from relayrl.policy_server.client import TOKEN_ENV
from relayrl.policy_server.limits import ServerLimits, flag


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `serve` subcommand (cli.py calls this; `args.handler` runs it)."""
    from relayrl.cli.common import add_stop_args, int_at_least

    s = sub.add_parser("serve", help="serve a policy to external simulators over HTTP and train it")
    s.add_argument("algo", help="algorithm name, e.g. ppo")
    s.add_argument(
        "--env",
        required=True,
        help="gymnasium env id whose spaces the clients use (module:EnvId imports module)",
    )
    s.add_argument("--config", default=None, help="YAML file of config fields")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (YAML value)",
    )
    s.add_argument("--port", type=int, default=9900, help="TCP port (0 = any free port)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind; anything but loopback needs a token")
    s.add_argument(
        "--codec", default=None, metavar="MODULE:CLASS", help="TextCodec for Text observation / action spaces"
    )
    s.add_argument("--seed", type=int_at_least(0), default=None)
    s.add_argument(
        "--batch-wait-ms",
        type=_checked(float, checks.number(0, 1000)),
        default=2.0,
        help="longest wait to batch inference requests",
    )
    for f in dataclasses.fields(ServerLimits):
        parse = {"int": int, "float": float}[f.type]
        s.add_argument(
            flag(f.name),
            type=_checked(parse, ServerLimits.CHECKS[f.name]),
            default=f.default,
            help=f"{ServerLimits.HELP[f.name]} (default {f.default:g})",
        )
    add_stop_args(s)
    s.add_argument("--logdir", default=None, help="TensorBoard directory (default: none)")
    s.add_argument(
        "--json", action="store_true", help="last stdout line: the final result as one JSON object"
    )
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(handler=run)


def _checked(parse: Callable[[str], Any], check: checks.Check) -> Callable[[str], Any]:
    """An argparse type: parse, then a config-style check with its bounds (argparse names the flag)."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            value = text
        problem = check(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{text!r} is invalid: {problem}")
        return value

    convert.__name__ = parse.__name__
    return convert


# Algorithms whose training path takes the server's on-policy fragments (GAE columns)
SERVABLE = ("ppo",)


def _build_config(args: argparse.Namespace):
    from relayrl.algorithms import REGISTRY, config_class
    from relayrl.cli.common import parse_set
    from relayrl.core import tuned
    from relayrl.core.config_io import resolve_callable
    from relayrl.envs.make import check_env_id, registry_id

    if args.algo not in SERVABLE:
        kind = "cannot serve" if args.algo in REGISTRY else "unknown algorithm"
        raise ValueError(
            f"{kind} {args.algo!r}; allowed: {', '.join(SERVABLE)} (on-policy episodes feed its GAE path)"
        )
    if args.port < 0 or args.port > 65535:
        raise ValueError(f"--port {args.port}: allowed 0..65535")
    check_env_id(args.env)  # 'module:EnvId' imports module (a command line is trusted input)
    codec = resolve_callable(args.codec)() if args.codec else None
    config = config_class(args.algo)().environment(args.env)
    config.update_from_dict(tuned.load(args.algo, registry_id(args.env))[0])
    if args.config:
        from relayrl.core import yaml_io

        with open(args.config) as fh:
            config.update_from_dict(yaml_io.load(fh) or {})
    overrides = parse_set(args.set)
    if "model" in overrides:
        overrides["model"] = {**config.model, **overrides["model"]}
    config.update_from_dict(overrides)
    flags = {"seed": args.seed, "log_dir": args.logdir}
    config.update_from_dict({"num_rollout_workers": 0, **{k: v for k, v in flags.items() if v is not None}})
    return config, codec


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    from relayrl.algorithms.stop_rules import should_stop
    from relayrl.cli.common import EXIT_BAD_INPUT, fail, jsonable
    from relayrl.persistence.progress import Progress
    from relayrl.policy_server.episodes import ServerStopped
    from relayrl.policy_server.serve import ServedAlgorithm

    start = time.time()
    try:
        config, codec = _build_config(args)
        limits = ServerLimits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ServerLimits)})
        served = ServedAlgorithm(
            config,
            codec,
            args.host,
            args.port,
            os.environ.get(TOKEN_ENV) or None,
            max_wait_s=args.batch_wait_ms / 1000.0,
            limits=limits,
        ).start()
    except (ValueError, OSError) as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    progress = Progress(enabled=not args.quiet)
    print(f"relayrl: serving {args.algo} on {served.url} (spaces of {args.env})", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as cleanly as Ctrl-C
    rules = {
        k: v
        for k, v in {
            "reward": args.stop_reward,
            "timesteps": args.stop_timesteps,
            "iters": args.stop_iters,
            "time": args.stop_time,
        }.items()
        if v is not None
    }
    if "time" in rules:  # an idle server waits in train(): a timer ends that wait
        import threading

        timer = threading.Timer(rules["time"], served.episodes.stop)
        timer.daemon = True  # must not keep the process alive once training stopped for another reason
        timer.start()
    result = None
    try:
        while True:
            result = served.train()
            progress.update(result)
            if rules and should_stop(rules, result):
                break
    except (KeyboardInterrupt, ServerStopped):
        progress.note("stopping")
    finally:
        served.stop()
    if args.json and result is not None:
        final = dict(result, wall_time_s=time.time() - start, url=served.url)
        print(json.dumps({k: jsonable(v) for k, v in final.items()}))
    return 0
