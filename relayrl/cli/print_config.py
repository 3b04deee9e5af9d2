"""`relayrl train ALGO ENV --print-config`: the fully resolved config as YAML, without training.

Resolution order (later wins): the algorithm's defaults < relayrl/core/tuned/<algo>-<env>.yaml < --config FILE
< --set KEY=VALUE < flags (--seed, --workers, ...); with --resume the checkpoint's config.json takes the place
of the defaults and the tuned file (cli/resume.py). The header comments name the tuned file and its `_result`
record (or the checkpoint); the body loads back with `--config`. Secrets (checkpoint.SECRET_FIELDS, e.g.
redis_password) never appear: `***` in the `# --set:` line and run.json's argv (mask_argv), null in the body.
"""

from __future__ import annotations

import argparse

from relayrl.core.knobs import SECRET_FIELDS


def mask_set_item(item: str) -> str:
    """'redis_password=hunter2' -> 'redis_password=***': a --set item as it may be shown anywhere."""
    key, sep, _ = item.partition("=")
    return f"{key}{sep}***" if sep and key.strip() in SECRET_FIELDS else item


def mask_argv(argv: list[str]) -> list[str]:
    """A command line as run.json records it: the value of a secret --set (`--set KEY=V` or `--set=KEY=V`)
    masked."""
    out = []
    for item in argv:
        flag, sep, rest = item.partition("=")
        out.append(f"{flag}={mask_set_item(rest)}" if flag == "--set" and sep else mask_set_item(item))
    return out


def render(args: argparse.Namespace, config) -> str:
    from relayrl.core import tuned

    lines = [
        f"# relayrl train {args.algo} {args.env}: resolved config "
        "(defaults < tuned file < --config < --set < flags)"
    ]
    tuned_path = getattr(args, "tuned_path", None)
    if getattr(args, "resume_changes", None) is not None:  # set by resume.resumed_config
        lines[0] = (
            f"# relayrl train {args.algo} {args.env}: resolved config (checkpoint < --config < --set < flags)"
        )
        lines.append(f"# resumed from: {args.resume} (no tuned file)")
    elif tuned_path:
        lines.append(f"# tuned: {tuned_path}")
        for key, value in tuned.notes(tuned_path).items():
            lines.append(f"# {key}: {value}")
    else:
        others = tuned.available(args.algo)
        lines.append(
            f"# tuned: none for {args.algo} on {args.env} (tuned envs for {args.algo}: "
            f"{', '.join(others) or 'none'})"
        )
    if args.config:
        lines.append(f"# --config: {args.config}")
    if args.set:
        lines.append(f"# --set: {' '.join(mask_set_item(item) for item in args.set)}")
    data = config.to_dict()
    data["log_dir"] = args.logdir  # the CLI picks a fresh directory per run unless --logdir is given
    for secret in SECRET_FIELDS:  # null, not ***: the body loads back with --config (None: the env variable)
        if data.get(secret):
            data[secret] = None
    import yaml

    return "\n".join(lines) + "\n" + yaml.safe_dump(data, sort_keys=False)
