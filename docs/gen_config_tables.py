"""Regenerate the generated parts of the docs from the code, so they cannot drift:

- each `docs/algorithms/<algo>.md`: the config table (fields the algorithm adds or whose default it changes
  from the shared `Config`) and the tuned results (`_result` lines of
  `relayrl/core/tuned/[NAMESPACE/]<algo>-*.yaml`);
- `docs/configuration.md`: the table of the fields every algorithm shares.

    python docs/gen_config_tables.py           # rewrite the marked regions in place
    python docs/gen_config_tables.py --check   # exit 1 and name the stale pages
                                               # (tests/unit/project/test_docs_tables.py)

A region is the text between `<!-- BEGIN generated:KIND:NAME -->` and `<!-- END generated -->`.
Importing the config classes does not import TensorFlow.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
TUNED = os.path.join(os.path.dirname(DOCS), "relayrl", "core", "tuned")
REGION = re.compile(r"(<!-- BEGIN generated:(\w+):(\w+) -->\n)(.*?)(<!-- END generated -->)", re.S)


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()


def _show(value) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict)) else repr(value)
    return f"`{text}`"


def _rows(fields: list[dataclasses.Field]) -> str:
    lines = ["| field | builder | default | meaning |", "| --- | --- | --- | --- |"]
    for f in fields:
        doc = f.metadata["doc"].replace("|", "\\|")
        lines.append(f"| `{f.name}` | `.{f.metadata['group']}()` | {_show(_default(f))} | {doc} |")
    return "\n".join(lines) + "\n"


def config_table(name: str) -> str:
    from relayrl.algorithms import config_class
    from relayrl.core.config import Config

    if name == "common":
        return _rows(list(dataclasses.fields(Config)))
    base = {f.name: f for f in dataclasses.fields(Config)}
    own = [
        f
        for f in dataclasses.fields(config_class(name))
        if f.name not in base
        or _default(f) != _default(base[f.name])
        or f.metadata["doc"] != base[f.name].metadata["doc"]
    ]
    intro = (
        f"Fields of `{config_class(name).__name__}` that are new or differ from the shared defaults "
        f"([configuration.md](../configuration.md)); every other field keeps its shared default.\n\n"
    )
    return intro + _rows(own)


def tuned_results(name: str) -> str:
    if not os.path.isdir(TUNED):  # a moved folder must fail loudly, not render "no tuned config"
        raise FileNotFoundError(f"tuned configs folder {TUNED} is missing")
    from relayrl.core import tuned  # the CLI's own lookup: namespaced ids (ALE/...) live in subfolders

    lines = []
    for env in tuned.available(name):
        path = tuned.path_for(name, env)
        result = tuned.notes(path).get("_result")
        shown = os.path.relpath(path, os.path.dirname(DOCS))
        lines.append(f"- `{env}` (`{shown}`): {result or 'no result recorded'}")
    if not lines:
        return "No tuned config yet: `relayrl train` uses the defaults above.\n"
    return "\n".join(lines) + "\n"


GENERATORS = {"config": config_table, "tuned": tuned_results}


def render(text: str) -> str:
    return REGION.sub(lambda m: m.group(1) + GENERATORS[m.group(2)](m.group(3)) + m.group(5), text)


def pages() -> list[str]:
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


def stale_pages() -> list[str]:
    out = []
    for page in pages():
        with open(page) as fh:
            text = fh.read()
        if render(text) != text:
            out.append(os.path.relpath(page, DOCS))
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_pages()
        if stale:
            print(
                f"stale generated docs: {', '.join(stale)} (run python docs/gen_config_tables.py)",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for page in pages():
        with open(page) as fh:
            text = fh.read()
        new = render(text)
        if new != text:
            with open(page, "w") as fh:
                fh.write(new)
            print(f"updated {os.path.relpath(page, DOCS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
