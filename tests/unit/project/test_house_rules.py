"""House rules ruff cannot check: no module of the package over 300 lines (ruff checks line length and
statements per function), and every Ray actor is made through runtime.cluster.remote_class."""

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


def test_every_actor_is_made_through_remote_class():
    """remote_class turns Ray's per-call task events off: left on, they grew gcs_server ~7 KB per PPO
    iteration (docs/fault_tolerance.md). A plain ray.remote elsewhere would bring that back."""
    package = Path(relayrl.__file__).parent
    home = package / "runtime" / "cluster.py"
    plain = [
        str(path.relative_to(package.parent))
        for path in sorted(package.rglob("*.py"))
        if path != home and "ray.remote(" in path.read_text(encoding="utf-8")
    ]
    assert "ray.remote(" in home.read_text(encoding="utf-8")
    assert not plain, f"use relayrl.runtime.cluster.remote_class instead of ray.remote in: {plain}"
