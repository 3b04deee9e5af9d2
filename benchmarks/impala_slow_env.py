"""IMPALA throughput when every env step sleeps 5 ms (a stand-in for a slow simulator or a remote API):
8 workers against 1 worker on this machine's cores, measured in the same run.

    python benchmarks/impala_slow_env.py [--workers 1 8] [--seconds 20] [--sleep-ms 5]

A worker steps its envs one after another, so one worker tops out near 1000 / sleep_ms env steps/s
whatever its CPU share; the sleeping leaves the CPUs free, so 8 workers should scale close to 8x on
2 cores (the issue asks >= 6x). Each worker count runs in a fresh process; throughput = env steps
consumed by the learner per second after a warm-up iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import gymnasium as gym

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


class SlowCartPole(gym.Wrapper):
    """CartPole-v1 whose step() sleeps `sleep_ms` first."""

    def __init__(self, env_config: dict):
        super().__init__(gym.make("CartPole-v1"))
        self.sleep_s = env_config.get("sleep_ms", 5.0) / 1000.0

    def step(self, action):
        time.sleep(self.sleep_s)
        return self.env.step(action)


def one_run(workers: int, seconds: float, sleep_ms: float) -> dict:
    from relayrl import IMPALAConfig

    cpus = max(0.01, min(1.0, 2.0 / workers))  # all the workers fit on the 2 cores Ray sees
    config = (
        IMPALAConfig()
        .environment(SlowCartPole, env_config={"sleep_ms": sleep_ms})
        .rollouts(num_rollout_workers=workers, num_envs_per_worker=4, rollout_fragment_length=16)
        .resources(num_cpus_per_worker=cpus)
        .training(train_batch_size=256)
        .debugging(seed=0)
    )  # 4 fragments per update: a light learner
    algo = config.build()
    try:
        algo.train()  # warm-up: first fragments, first weights
        steps0, start = algo.timesteps_total, time.perf_counter()
        while time.perf_counter() - start < seconds:
            result = algo.train()
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return {
        "workers": workers,
        "steps_per_s": (algo.timesteps_total - steps0) / elapsed,
        "policy_lag": result["learner/policy_lag_mean"],
        "worker_idle": result["learner/worker_idle_fraction"],
        "cores": os.cpu_count(),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, nargs="+", default=[1, 8])
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--sleep-ms", type=float, default=5.0)
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one is not None:
        print(json.dumps(one_run(args.one, args.seconds, args.sleep_ms)))
        return
    rows = []
    for workers in args.workers:
        cmd = [
            sys.executable,
            __file__,
            "--one",
            str(workers),
            "--seconds",
            str(args.seconds),
            "--sleep-ms",
            str(args.sleep_ms),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 300)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(
            f"workers={workers}: {r['steps_per_s']:.0f} env steps/s  policy_lag={r['policy_lag']:.2f}  "
            f"worker_idle={r['worker_idle']:.2f}  ({r['cores']} cores)",
            flush=True,
        )
    base = rows[0]["steps_per_s"]
    for r in rows[1:]:
        print(
            f"speed-up {r['workers']} workers / {rows[0]['workers']}: {r['steps_per_s'] / base:.2f}x "
            f"(issue target >= 6x for 8 / 1)"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
