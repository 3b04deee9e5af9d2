"""`relayrl plot RUN_DIR [RUN_DIR ...]`: overlay learning curves of run directories."""

from __future__ import annotations

import argparse
import sys

from relayrl.persistence.plot import compare


# ---------------------------------------------------------------------- `relayrl plot`
def register(sub) -> None:
    p = sub.add_parser(
        "plot", help="overlay learning curves of run directories (mean and spread across seeds)"
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="--logdir of relayrl train runs")
    p.add_argument(
        "--out", default="learning_curves.png", help="PNG to write (default ./learning_curves.png)"
    )
    p.add_argument(
        "--x",
        choices=["steps", "time", "both"],
        default="both",
        help="x axis: env steps, training time, or both side by side (default)",
    )
    p.add_argument(
        "--group-by",
        default="algo,env",
        help="comma-separated keys that make runs one curve: algo, run (each its own), or any config "
        "field such as env, lr, seed (default algo,env: seeds of one setup)",
    )
    p.add_argument(
        "--spread", choices=["minmax", "std"], default="minmax", help="shaded band across a group's runs"
    )
    p.add_argument("--title", default=None)
    p.set_defaults(handler=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    keys = [k.strip() for k in args.group_by.split(",") if k.strip()]
    if not keys:
        print("relayrl: error: --group-by: expected comma-separated keys, e.g. algo,env", file=sys.stderr)
        return 2
    try:
        out = compare(args.run_dirs, args.out, x=args.x, group_by=keys, spread=args.spread, title=args.title)
    except ValueError as exc:
        print(f"relayrl: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
