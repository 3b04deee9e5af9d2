"""Memory soak: PPO on CartPole-v1 with 2 Ray workers for many iterations; fits the slope of driver RSS and
object-store bytes per iteration after a warm-up and prints it (target: no growth).

    python benchmarks/memory_soak.py [--iterations 2000] [--warmup 200]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from relayrl import PPOConfig


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    args = p.parse_args()
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=8)
        .training(train_batch_size=256, sgd_minibatch_size=128, num_sgd_iter=1)
        .debugging(seed=0)
        .build()
    )
    rss, store = [], []
    start = time.time()
    try:
        for _ in range(args.iterations):
            r = algo.train()
            rss.append(r["memory/driver_rss_bytes"])
            store.append(r["memory/object_store_bytes"])
    finally:
        algo.stop()
    x = np.arange(args.warmup, args.iterations)
    rss_slope = float(np.polyfit(x, np.asarray(rss[args.warmup :], float), 1)[0])
    store_slope = float(np.polyfit(x, np.asarray(store[args.warmup :], float), 1)[0])
    print(
        f"{args.iterations} iterations in {time.time() - start:.0f} s; after {args.warmup} warm-up "
        f"iterations: driver RSS slope {rss_slope:+.1f} bytes/iteration "
        f"({rss[args.warmup] / 2**20:.0f} -> {rss[-1] / 2**20:.0f} MiB), "
        f"object store slope {store_slope:+.1f} bytes/iteration ({store[args.warmup]} -> {store[-1]} bytes)"
    )
    print(
        json.dumps(
            {
                "iterations": args.iterations,
                "rss_slope_bytes_per_iter": rss_slope,
                "object_store_slope_bytes_per_iter": store_slope,
                "rss_first": rss[args.warmup],
                "rss_last": rss[-1],
                "store_first": store[args.warmup],
                "store_last": store[-1],
            }
        )
    )


if __name__ == "__main__":
    main()
