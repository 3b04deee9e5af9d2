"""`relayrl train ALGO ENV --print-config`: the fully resolved config as YAML, without training.

Resolution order (later wins): the algorithm's defaults < relayrl/tuned/<algo>-<env>.yaml < --config FILE
< --set KEY=VALUE < flags (--seed, --workers, ...). The header comments name the tuned file and its `_result`
record; the body loads back with `--config`.
"""
from __future__ import annotations

import argparse

from relayrl.checkpoint import SECRET_FIELDS


def render(args: argparse.Namespace, config) -> str:
    from relayrl import tuned

    lines = [f"# relayrl train {args.algo} {args.env}: resolved config "
             "(defaults < tuned file < --config < --set < flags)"]
    tuned_path = getattr(args, "tuned_path", None)
    if tuned_path:
        lines.append(f"# tuned: {tuned_path}")
        for key, value in tuned.notes(tuned_path).items():
            lines.append(f"# {key}: {value}")
    else:
        others = tuned.available(args.algo)
        lines.append(f"# tuned: none for {args.algo} on {args.env} (tuned envs for {args.algo}: "
                     f"{', '.join(others) or 'none'})")
    if args.config:
        lines.append(f"# --config: {args.config}")
    if args.set:
        lines.append(f"# --set: {' '.join(args.set)}")
    data = config.to_dict()
    data["log_dir"] = args.logdir  # the CLI picks a fresh directory per run unless --logdir is given
    for secret in SECRET_FIELDS:
        if data.get(secret):
            data[secret] = None
    import yaml

    return "\n".join(lines) + "\n" + yaml.safe_dump(data, sort_keys=False)
