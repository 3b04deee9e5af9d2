"""The house limit ruff cannot check: no module of the package over 300 lines (ruff checks line length and
statements per function)."""

from __future__ import annotations

from pathlib import Path

import relayrl

MAX_MODULE_LINES = 300


def test_every_module_has_at_most_300_lines():
    package = Path(relayrl.__file__).parent
    modules = sorted(package.rglob("*.py"))
    assert len(modules) > 20  # the whole package was found, not an empty folder
    too_long = [
        f"{path.relative_to(package.parent)}: {count} lines"
        for path in modules
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not too_long, (
        f"modules over {MAX_MODULE_LINES} lines (split them by responsibility): " + "; ".join(too_long)
    )
