"""Scaling on a latency-bound env: CartPole whose step sleeps 10 ms (relayrl/SlowCartPole-v1), one env per
worker, 1..8 Ray workers on this machine's cores. Runs `relayrl scale` and prints
throughput(8) / throughput(1).

    python benchmarks/scale_latency_bound.py [--workers 1,2,4,8] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", default="1,2,4,8")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="relayrl-scale-")
    cmd = [
        sys.executable,
        "-m",
        "relayrl.cli",
        "scale",
        "ppo",
        "relayrl/SlowCartPole-v1",
        "--workers",
        args.workers,
        "--envs-per-worker",
        "1",
        "--iterations",
        "3",
        "--set",
        "train_batch_size=320",
        "--set",
        "sgd_minibatch_size=64",
        "--out",
        out,
    ]
    subprocess.run(cmd, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    with open(os.path.join(out, "scale.csv")) as fh:
        rows = list(csv.DictReader(fh))
    first, last = rows[0], rows[-1]
    ratio = float(last["env_steps_per_s"]) / float(first["env_steps_per_s"])
    print(
        f"{last['workers']} workers: {float(last['env_steps_per_s']):.0f} steps/s vs {first['workers']}: "
        f"{float(first['env_steps_per_s']):.0f} steps/s -> {ratio:.2f}x (target >= 6x); plot: {out}/scale.png"
    )


if __name__ == "__main__":
    main()
