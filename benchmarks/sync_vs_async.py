"""Sync (A2C, PPO) against async (A3C, IMPALA) on the same CartPole-v1 budget with 1, 2 and 4 Ray workers.

    python benchmarks/sync_vs_async.py [--algos a2c ppo a3c impala] [--workers 1 2 4] [--budget 300000]
                                       [--time-limit 90] [--seed 0]

Each run is a fresh process (Ray, TensorFlow and actors started inside, wall clock from process start):
tuned CartPole defaults where they exist, until episode_reward_mean (last 100 episodes) >= 475 or the
budget of env steps or seconds runs out. Printed per run:
  steps/s           env steps / training seconds (start-up excluded)
  time_to_solve_s   wall clock from process start to 475 (inf = not within the budget)
  policy_lag        mean over updates of (learner version - version the data was sampled with);
                    0 by construction for the sync modes, A3C's is the gradient staleness
  worker_idle       share of the workers' wall time not spent sampling (or computing gradients):
                    sync workers wait for every update, async ones should not
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
PROCESS_START = time.time()


def one_run(algo: str, workers: int, budget: int, time_limit: float, seed: int) -> dict:
    from relayrl.algorithms import config_class

    cls = config_class(algo)
    try:
        config = cls.from_tuned("CartPole-v1")
    except ValueError:
        config = cls().environment("CartPole-v1")
    config.rollouts(num_rollout_workers=workers).debugging(seed=seed)
    # every worker must fit on the machine's cores (Ray would otherwise wait for CPUs that never free up)
    config.resources(num_cpus_per_worker=min(1.0, (os.cpu_count() or 1) / workers))
    algo_obj = config.build()
    sample_s = [0.0]
    record = algo_obj.record_fragments

    def record_and_time(fragments):  # worker-side sampling time of every fragment (sync modes' idle share)
        sample_s[0] += sum(f.sample_time_s for f in fragments)
        record(fragments)

    algo_obj.record_fragments = record_and_time
    lags, solved_at, train_start = [], None, time.perf_counter()
    try:
        while True:
            r = algo_obj.train()
            lags.append(r.get("learner/policy_lag_mean", 0.0))
            if r["episode_reward_mean"] >= 475:
                solved_at = time.time() - PROCESS_START
                break
            if r["timesteps_total"] >= budget or time.perf_counter() - train_start >= time_limit:
                break
        wall = time.perf_counter() - train_start
        idle = (
            algo_obj.workers.idle_fraction()
            if hasattr(algo_obj.workers, "idle_fraction")
            else max(0.0, 1.0 - sample_s[0] / (wall * workers))
        )
    finally:
        algo_obj.stop()
    return {
        "algo": algo,
        "workers": workers,
        "steps_per_s": r["timesteps_total"] / r["time_total_s"],
        "time_to_solve_s": solved_at if solved_at is not None else math.inf,
        "steps": r["timesteps_total"],
        "reward": r["episode_reward_mean"],
        "policy_lag": sum(lags) / len(lags),
        "worker_idle": idle,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--algos", nargs="+", default=["a2c", "ppo", "a3c", "impala"])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--budget", type=int, default=300_000)
    p.add_argument("--time-limit", type=float, default=90.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--one", nargs=2, metavar=("ALGO", "WORKERS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        out = one_run(args.one[0], int(args.one[1]), args.budget, args.time_limit, args.seed)
        print(json.dumps(out))
        return
    print(
        f"{'algo':8}{'mode':7}{'workers':>8}{'steps/s':>10}{'solve_s':>9}{'steps':>9}{'reward':>8}{'lag':>7}{'idle':>7}"
    )
    rows = []
    for algo in args.algos:
        for workers in args.workers:
            cmd = [
                sys.executable,
                __file__,
                "--one",
                algo,
                str(workers),
                "--budget",
                str(args.budget),
                "--time-limit",
                str(args.time_limit),
                "--seed",
                str(args.seed),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.time_limit + 240)
            if proc.returncode != 0:
                print(f"{algo} x{workers}: failed: {proc.stderr[-1500:]}", flush=True)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(r)
            mode = "async" if algo in ("a3c", "impala") else "sync"
            print(
                f"{algo:8}{mode:7}{workers:>8}{r['steps_per_s']:>10.0f}{r['time_to_solve_s']:>9.1f}{r['steps']:>9}"
                f"{r['reward']:>8.1f}{r['policy_lag']:>7.2f}{r['worker_idle']:>7.2f}",
                flush=True,
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
