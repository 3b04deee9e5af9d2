"""Importing the user's own modules named on a command line or in their own config: `module:EnvId` envs and
`module:Class` wrappers. Trusted input only; a checkpoint's or a SavedModel's metadata never gets here with
a module name (relayrl/core/config_io.py `registered_env_id`).

The current folder is searched too, after everything else: `python -m relayrl.cli` puts it on sys.path but
the `relayrl` console script does not, and both must find `myenv.py` next to where they run. Ray workers
started by this process see the same folder: Ray adds the driver's working directory to their sys.path.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

from relayrl.extras import MissingExtraError, extra_for, install_hint

HOW_TO_IMPORT = "run relayrl from the folder that holds it, or add that folder to PYTHONPATH"


def import_user_module(module: str, what: str) -> ModuleType:
    """Import `module` (the current folder searched last); ValueError in one line naming `what` (e.g.
    "env 'myenv:GoRight-v0'") and how to make the module importable when it is not found."""
    if not module or not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(f"{what}: {module!r} is not a Python module name (allowed: package.module)")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        extra = extra_for(missing)
        if extra is not None:  # e.g. 'ale_py:ALE/Pong-v5' without ale_py
            raise MissingExtraError(f"{what} {install_hint(extra)}") from None
        own = missing is not None and module.split(".")[0] == missing.split(".")[0]
        hint = f"; {HOW_TO_IMPORT}" if own else ""
        raise ValueError(f"{what}: cannot import {module!r} ({exc}){hint}") from None
