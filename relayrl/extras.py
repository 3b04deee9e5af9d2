"""relayrl's optional parts and the pip extra that installs each (pyproject.toml's optional-dependencies).

A leaf module (standard library only), so every layer can use it: a missing optional package is named in one
line with the command that installs it, when the part that needs it is used, never at import time.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# the module that is missing -> the extra that installs it
EXTRAS = {
    "Box2D": "box2d",
    "mujoco": "mujoco",
    "ale_py": "atari",
    "envpool": "envpool",
    "redis": "redis",
    "ray.tune": "tune",
    "mlflow": "mlflow",
    "moviepy": "video",
}


class MissingExtraError(ImportError, ValueError):
    """An optional package is not installed: the message names the extra and the pip command (a ValueError
    too, so the CLI refuses it in one line with exit status 2)."""


def install_hint(extra: str) -> str:
    return f"needs the '{extra}' extra: pip install 'relayrl[{extra}]'"


def extra_for(module: str | None) -> str | None:
    """The extra that installs `module` (or a module inside it), None when it is not an optional part."""
    while module:
        if module in EXTRAS:
            return EXTRAS[module]
        module = module.rpartition(".")[0]
    return None


def require(module: str, what: str) -> ModuleType:
    """import `module` (one of EXTRAS), or MissingExtraError: "`what` needs the 'redis' extra: pip ..."."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = extra_for(module)
        if extra is None:
            raise
        raise MissingExtraError(f"{what} {install_hint(extra)} ({exc})") from None
