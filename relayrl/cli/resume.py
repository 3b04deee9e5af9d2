"""`relayrl train ALGO ENV --resume DIR|auto`: which checkpoint, and the config the run continues with.

A resumed run continues the checkpoint's own config (its config.json, read as data by
Config.from_checkpoint_dict: nothing named in it is imported, where-to-connect/write fields never taken from
it), then what the user gave explicitly wins: --config < --set < flags. The tuned file is not applied (the
checkpoint already holds what its run used). `changes()` is the one line saying what differs from the
checkpoint.

`--resume auto` looks under --logdir's checkpoints/; without --logdir, for the newest run of the same
algorithm and env under the results root (common.results_root()) that has a complete checkpoint, and the
run continues in that run's directory. Never silently fresh: no such run is a one-line refusal.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from relayrl.cli.common import DICT_FIELDS, apply_fields, check_algo_env, user_fields
from relayrl.cli.run_names import default_logdir, results_root, run_name_pattern

CHECKPOINTS = "checkpoints"  # a run's checkpoints: <log dir>/checkpoints/ckpt-N


def locate(args: argparse.Namespace) -> str | None:
    """The checkpoint --resume names; for 'auto' the newest complete one (None: --logdir has none yet, and
    the run starts there fresh). 'auto' without --logdir sets args.logdir to the run it found. ValueError
    (one line) when 'auto' without --logdir finds nothing."""
    from relayrl.persistence import checkpoint

    if args.resume != "auto":
        run_dir = os.path.join(args.resume, CHECKPOINTS)
        if os.path.isdir(run_dir) and not os.path.lexists(os.path.join(args.resume, checkpoint.MARKER)):
            raise ValueError(
                f"--resume {args.resume} is a run directory, not a checkpoint: pass --resume auto --logdir "
                f"{args.resume}, or a checkpoint such as {checkpoint.latest(run_dir) or run_dir + '/ckpt-N'}"
            )
        return args.resume
    if args.logdir:
        return checkpoint.latest(os.path.join(args.logdir, CHECKPOINTS))
    found = newest_run_checkpoint(results_root(), args.algo, args.env)
    if found is None:
        raise ValueError(
            f"--resume auto: no run of {args.algo} on {args.env} with a complete checkpoint under "
            f"{results_root()}: pass --resume CHECKPOINT_DIR, or --logdir RUN_DIR to resume (or start) there"
        )
    args.logdir = os.path.dirname(os.path.dirname(found))
    return found


def newest_run_checkpoint(root: str, algo: str, env: str) -> str | None:
    """The newest complete checkpoint (by when it was finished) of the runs of (algo, env) under root."""
    from relayrl.persistence import checkpoint

    pattern = run_name_pattern(algo, env)
    try:
        names = [n for n in os.listdir(root) if pattern.fullmatch(n)]
    except OSError:  # no results root yet
        return None
    best: tuple[float, str] | None = None
    for name in names:
        path = checkpoint.latest(os.path.join(root, name, CHECKPOINTS))
        if path is None:
            continue
        finished = os.lstat(os.path.join(path, checkpoint.MARKER)).st_mtime
        if best is None or (finished, path) > best:
            best = (finished, path)
    return best[1] if best else None


def resumed_config(args: argparse.Namespace, path: str):
    """The checkpoint's config with the user's explicit --config, --set and flags over it (ValueError, one
    line, for a checkpoint of another algorithm or env, or a bad one); also sets args.resume_changes."""
    from relayrl.algorithms import algorithm_class
    from relayrl.persistence import checkpoint

    check_algo_env(args)
    layers = user_fields(args)
    checkpoint.verify(path, algo=args.algo)
    checkpoint.check_resume_env(path, args.env)
    stored = checkpoint.read_config(path)
    config = checkpoint_config(path, args.algo, unread(stored, layers), layers)
    config.environment(args.env)
    apply_fields(config, layers)
    config.reporting(log_dir=args.logdir or default_logdir(args.algo, args.env))
    config.validate()
    algorithm_class(args.algo).check_env(config)
    args.resume_changes = changes(stored, config.to_dict())
    return config


def unread(stored: dict, layers: list[dict[str, Any]]) -> dict:
    """config.json less what the user sets: those stored values are never read or checked. For a mapping
    field (model, env_config) only the keys the user sets are left out, the rest continue the checkpoint's
    (a network shape the user leaves alone stays the one its weights have)."""
    out = dict(stored)
    for layer in layers:
        for name, value in layer.items():
            if name in DICT_FIELDS and isinstance(value, dict) and isinstance(out.get(name), dict):
                out[name] = {k: v for k, v in out[name].items() if k not in value}
            elif name not in DICT_FIELDS:
                out.pop(name, None)
    return out


def checkpoint_config(path: str, algo: str, data: dict, layers: list[dict[str, Any]]):
    """The one place a resumed run reads config.json into a Config, as data (from_checkpoint_dict). The
    user's own settings (`layers`) are trusted and go through the ordinary field checks after this; a value
    the checkpoint cannot name by itself (a model class in code) is therefore taken from them: a user who
    sets `model.custom_model` in --config or --set has that key left out of `data` (`unread`)."""
    from relayrl.algorithms import config_class
    from relayrl.core.saved_state import CheckpointError

    supplied = {"env", *(name for layer in layers for name in layer if name not in DICT_FIELDS)}
    try:
        return config_class(algo).from_checkpoint_dict(data, supplied=supplied)
    except CheckpointError:
        raise
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path!r}: config.json: {exc}") from None


def changes(stored: dict, resolved: dict) -> list[str]:
    """'field: old -> new' for each field (each key of model / env_config) the run changes from the
    checkpoint; where to connect or write and secrets are never the checkpoint's, so not listed."""
    from relayrl.core.config_io import HOST_FIELDS
    from relayrl.core.knobs import SECRET_FIELDS
    from relayrl.core.saved_state import shown

    missing = object()
    out = []
    for name, new in resolved.items():
        if name in HOST_FIELDS or name in SECRET_FIELDS:
            continue
        old = stored.get(name, missing)
        if name in DICT_FIELDS and isinstance(new, dict) and isinstance(old, dict):
            pairs = [(f"{name}.{k}", old.get(k, missing), new[k]) for k in new]
        else:
            pairs = [(name, old, new)]
        out += [
            f"{key}: {'(unset)' if was is missing else shown(was, 40)} -> {shown(now, 40)}"
            for key, was, now in pairs
            if was != now
        ]
    return out


def changes_line(path: str, lines: list[str]) -> str:
    if not lines:
        return f"resuming from {path} with its config unchanged"
    return f"resuming from {path}; config changed from the checkpoint: {', '.join(lines)}"
