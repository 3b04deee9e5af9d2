"""`relayrl list`: the algorithms (one line each) and the tuned configs with the results they recorded.

Descriptions are the first sentence of each algorithm module's docstring, read from its source (no module
is imported, so listing starts no TensorFlow).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import textwrap

MAX_LINE = 110


def register(sub) -> None:
    p = sub.add_parser(
        "list",
        help="the algorithms and the tuned configs (with their recorded results)",
        description="The algorithms `relayrl train` takes, and the tuned configs it applies to an "
        "(algorithm, env) pair, each with the result it recorded.",
    )
    p.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace) -> int:
    print(render(), end="")
    return 0


def render() -> str:
    from relayrl.algorithms import REGISTRY
    from relayrl.core import tuned

    width = max(len(name) for name in REGISTRY)
    lines = ["algorithms:"]
    for name in sorted(REGISTRY):
        text = textwrap.shorten(summary(REGISTRY[name][0]), MAX_LINE - 4 - width, placeholder=" ...")
        lines.append(f"  {name:<{width}}  {text}")
    lines.append("")
    lines.append(f"tuned configs ({tuned.HERE}; `relayrl train ALGO ENV` applies the one for its pair):")
    pairs = [(algo, env) for algo in sorted(REGISTRY) for env in tuned.available(algo)]
    env_width = max((len(env) for _, env in pairs), default=0)
    for algo, env in pairs:
        result = tuned.notes(tuned.path_for(algo, env)).get("_result", "no result recorded")
        indent = " " * (6 + width + env_width)
        first = f"  {algo:<{width}}  {env:<{env_width}}  "
        lines += textwrap.wrap(str(result), MAX_LINE, initial_indent=first, subsequent_indent=indent)
    return "\n".join(lines) + "\n"


def summary(module: str) -> str:
    """The first sentence of the module's docstring, without its parenthesised references."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as fh:
        doc = ast.get_docstring(ast.parse(fh.read())) or ""
    text = " ".join(doc.split())
    while True:  # nested parentheses: innermost first
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            break
        text = shorter
    return re.split(r"(?<=[A-Za-z0-9\]])\.(?:\s|$)", text, maxsplit=1)[0].rstrip(".") + "."
