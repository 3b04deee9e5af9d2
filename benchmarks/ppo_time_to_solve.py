"""PPO CartPole-v1 time-to-solve: `relayrl train ppo CartPole-v1 --stop-reward 475 --json` in fresh
processes (wall clock from process start, imports included), over several seeds.

    python benchmarks/ppo_time_to_solve.py [--seeds 0 1 2] [--workers 0 2]

Prints each run, the median per worker count, and the ratio against the issue's reference figures
(Stable-Baselines3 PPO zoo 13.6-16.9 s, RLlib 2.60 PPO 40-83 s with 2 env runners), which were measured
on this kind of machine but not in this run: issue 7's harness runs the incumbents side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

REFERENCE = {0: ("Stable-Baselines3 best", 13.6), 2: ("RLlib 2.60 best, 2 env runners", 40.0)}


def run(seed: int, workers: int) -> dict:
    cmd = [sys.executable, "-m", "relayrl.cli", "train", "ppo", "CartPole-v1", "--stop-reward", "475",
           "--stop-timesteps", "400000", "--seed", str(seed), "--workers", str(workers), "--json", "--quiet"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = p.parse_args()
    summary = {}
    for workers in args.workers:
        times = []
        for seed in args.seeds:
            r = run(seed, workers)
            t = r["time_to_solve_s"] if r["solved"] else float("inf")
            times.append(t)
            print(f"workers={workers} seed={seed}: solved={r['solved']} time_to_solve_s={t:.2f} "
                  f"steps={r['timesteps_total']} iterations={r['training_iteration']} "
                  f"learn={r['timers/learn_s']:.4f}s/iter sample={r['timers/sample_s']:.4f}s/iter", flush=True)
        median = statistics.median(times)
        summary[workers] = median
        ref_name, ref = REFERENCE.get(workers, (None, None))
        ratio = f"   ratio vs {ref_name} ({ref} s, reference): {median / ref:.2f}" if ref else ""
        print(f"workers={workers}: median time_to_solve_s {median:.2f}{ratio}", flush=True)
    print(json.dumps({"median_time_to_solve_s": summary}))


if __name__ == "__main__":
    main()
