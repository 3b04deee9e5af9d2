"""Time-to-solve in fresh processes: `relayrl train ALGO ENV --stop-reward R --json` per seed (wall clock
from process start, imports included), with the tuned defaults.

    python benchmarks/time_to_solve.py ppo CartPole-v1 [--seeds 0 1 2] [--workers 0 2]
    python benchmarks/time_to_solve.py dqn CartPole-v1 --window 20

Prints each run, the median per worker count and its ratio to the issues' reference figures for the same
workload (measured on this kind of machine, not in this run: benchmarks/anchors runs them side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

# (algo, env, workers) -> (what, seconds): the best incumbent figure the issues quote for that workload
REFERENCE = {
    ("ppo", "CartPole-v1", 0): ("Stable-Baselines3 PPO zoo, best", 13.6),
    ("ppo", "CartPole-v1", 2): ("RLlib 2.60 PPO, 2 env runners, best", 40.0),
    ("dqn", "CartPole-v1", 0): ("CleanRL dqn.py median (last-20 mean)", 46.0),
}


def run(
    algo: str,
    env_id: str,
    seed: int,
    workers: int,
    stop_reward: float,
    window: int | None,
    max_steps: int,
    sets: list[str],
) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "relayrl.cli",
        "train",
        algo,
        env_id,
        "--stop-reward",
        str(stop_reward),
        "--stop-timesteps",
        str(max_steps),
        "--seed",
        str(seed),
        "--workers",
        str(workers),
        "--json",
        "--quiet",
    ]
    if window:
        cmd += ["--set", f"metrics_num_episodes_for_smoothing={window}"]
    for item in sets:
        cmd += ["--set", item]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("algo")
    p.add_argument("env")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--workers", type=int, nargs="+", default=[0])
    p.add_argument("--stop-reward", type=float, default=475.0)
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help="episodes in episode_reward_mean (default: the config's, 100)",
    )
    p.add_argument("--max-steps", type=int, default=400_000)
    p.add_argument("--set", action="append", default=[])
    args = p.parse_args()
    summary = {}
    for workers in args.workers:
        times = []
        for seed in args.seeds:
            r = run(
                args.algo, args.env, seed, workers, args.stop_reward, args.window, args.max_steps, args.set
            )
            t = r["time_to_solve_s"] if r["solved"] else float("inf")
            times.append(t)
            print(
                f"{args.algo} {args.env} workers={workers} seed={seed}: solved={r['solved']} "
                f"time_to_solve_s={t:.2f} "
                f"steps={r['timesteps_total']} iterations={r['training_iteration']} ({r['diagnosis']})",
                flush=True,
            )
        median = statistics.median(times)
        summary[workers] = {"median_s": median, "max_s": max(times)}
        ref = REFERENCE.get((args.algo, args.env, workers))
        ratio = f"   ratio vs {ref[0]} ({ref[1]} s, reference): {median / ref[1]:.2f}" if ref else ""
        print(f"workers={workers}: median {median:.2f} s, worst {max(times):.2f} s{ratio}", flush=True)
    print(json.dumps({"algo": args.algo, "env": args.env, "time_to_solve": summary}))


if __name__ == "__main__":
    main()
