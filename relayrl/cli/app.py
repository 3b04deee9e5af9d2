"""relayrl command line: `relayrl train | scale | serve | export | evaluate | plot | tune | list ...`.

Each command registers its own parser and handler (`args.handler`). Bad input (unknown algorithm or env id, an
invalid --set, an unsupported action space) prints one line to stderr and exits 2, before TensorFlow or Ray
start where it can.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from relayrl.cli import enjoy, listing, persist, plot, scale, serve, train, tune
from relayrl.cli.common import EXIT_BAD_INPUT
from relayrl.core import logs


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(EXIT_BAD_INPUT, f"relayrl: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="relayrl", description="Distributed deep RL with TensorFlow and Ray")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in (train, scale, serve, persist, enjoy, plot, tune, listing):
        command.register(sub)
    for command in sub.choices.values():  # `relayrl tune` has its own --verbose LEVEL (Tune's output)
        if not any("--verbose" in action.option_strings for action in command._actions):
            command.add_argument(
                "--verbose", action="store_true", help="also show TensorFlow's native start-up lines"
            )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = ["relayrl", *argv]  # run.json records the command line
    logs.set_verbose(args.verbose is True)  # `relayrl tune --verbose N` is Tune's own level
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
