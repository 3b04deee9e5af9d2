"""`relayrl tune ALGO ENV --search lr=loguniform(1e-4,1e-2) --samples N [--scheduler asha|pbt|fifo]`.

The base config is built as `relayrl train` builds it (tuned yaml defaults, --config, --set); the search
expressions and the searched fields are checked before Ray starts (bad input: one stderr line, exit 2).
The search runs on relayrl's embedded Ray; every trial checkpoints at its end, and the best trial's
checkpoint is a relayrl checkpoint (`relayrl evaluate` / `relayrl export` / `Algorithm.from_checkpoint`).
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub) -> None:
    from relayrl.cli.common import add_run_args, finite_float, int_at_least
    from relayrl.integrations.search_space import SCHEDULERS

    p = sub.add_parser("tune", help="hyper-parameter search with Ray Tune")
    add_run_args(p)
    p.add_argument(
        "--search",
        action="append",
        default=[],
        metavar="KEY=KIND(ARGS)",
        help="a searched field: uniform(a,b), loguniform(a,b), randint(a,b) (b excluded), choice(v1,...), "
        "grid(v1,...); repeat for several fields",
    )
    p.add_argument(
        "--samples", type=int_at_least(1), default=4, help="trials sampled (a grid is repeated per sample)"
    )
    p.add_argument(
        "--scheduler",
        default="fifo",
        choices=SCHEDULERS,
        help="fifo (every trial runs to the end), asha (stops poor "
        "trials early), pbt (clones good trials and perturbs their fields)",
    )
    p.add_argument("--stop-iters", type=int_at_least(1), default=10, help="training iterations per trial")
    p.add_argument(
        "--stop-reward",
        type=finite_float,
        default=None,
        help="stop a trial once episode_reward_mean reaches it",
    )
    p.add_argument("--metric", default="episode_reward_mean", help="result field that ranks the trials")
    p.add_argument(
        "--mode",
        default="max",
        choices=("max", "min"),
        help="whether the best trial maximises or minimises --metric",
    )
    p.add_argument(
        "--perturbation-interval",
        type=int_at_least(1),
        default=2,
        help="pbt: iterations between perturbations",
    )
    p.add_argument(
        "--storage", default=None, help="directory for Tune's results (default ~/relayrl_results/tune)"
    )
    p.add_argument("--name", default=None, help="experiment name (a folder under --storage)")
    p.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2), help="Tune's own progress output")
    p.add_argument(
        "--json", action="store_true", help="last stdout line: trials and best trial as one JSON object"
    )
    p.set_defaults(handler=run_tune)


def fail(message: str) -> int:
    print(f"relayrl: error: {message}", file=sys.stderr)
    return 2


def run_tune(args: argparse.Namespace) -> int:
    from relayrl.cli.common import config_from_args
    from relayrl.integrations import search_space
    from relayrl.integrations.search_space import check_search
    from relayrl.integrations.tune import run_search

    try:
        specs = [search_space.parse(text) for text in args.search]
        base = config_from_args(args)
        check_search(
            base,
            specs,
            args.samples,
            args.scheduler,
            args.stop_iters,
            args.mode,
            args.perturbation_interval,
            args.metric,
        )
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    if getattr(args, "tuned_path", None):
        print(f"relayrl: tuned defaults from {args.tuned_path}", file=sys.stderr)
    try:
        outcome = run_search(
            base,
            specs,
            num_samples=args.samples,
            scheduler=args.scheduler,
            stop_iters=args.stop_iters,
            stop_reward=args.stop_reward,
            metric=args.metric,
            mode=args.mode,
            storage=args.storage,
            name=args.name,
            perturbation_interval=args.perturbation_interval,
            verbose=args.verbose,
        )
    except RuntimeError as exc:
        print(f"relayrl: error: {exc}", file=sys.stderr)
        return 1
    _print_outcome(outcome)
    if args.json:
        print(
            json.dumps(
                {
                    "metric": outcome.metric,
                    "mode": outcome.mode,
                    "experiment_path": outcome.experiment_path,
                    "best": outcome.best,
                    "trials": outcome.trials,
                },
                default=str,
            )
        )
    return 0


def _print_outcome(outcome) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"trials (ranked by {outcome.metric}, {outcome.mode})")
    for column in ["trial", *outcome.searched, "metric", "iters", "env steps", "status"]:
        table.add_column(column, no_wrap=True)
    sign = -1 if outcome.mode == "max" else 1
    rows = sorted(
        outcome.trials, key=lambda t: sign * t[outcome.metric] if _number(t[outcome.metric]) else float("inf")
    )
    for t in rows:
        best = "best" if t["trial_id"] == outcome.best["trial_id"] else ""
        table.add_row(
            t["trial_id"],
            *[_short(t["config"][k]) for k in outcome.searched],
            _short(t[outcome.metric]),
            str(t["training_iteration"]),
            str(t["timesteps_total"]),
            t["error"] or best or "ok",
        )
    console = Console()
    console.print(table)
    b = outcome.best
    console.print(
        f"best trial {b['trial_id']}: {outcome.metric} = {_short(b[outcome.metric])} after "
        f"{b['training_iteration']} iterations",
        highlight=False,
    )
    console.print(f"best config: {json.dumps(b['config'])}", highlight=False)
    console.print(f"best checkpoint: {b['checkpoint']}", highlight=False, soft_wrap=True)
    console.print(f"all results: {outcome.experiment_path}", highlight=False, soft_wrap=True)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and value == value


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
