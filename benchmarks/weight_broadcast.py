"""Weight broadcast to many workers: by value (the arrays serialised into every call) against relayrl's
way (one ray.put per version; each worker receives the ObjectRef and reads the arrays zero-copy).

    python benchmarks/weight_broadcast.py [--mb 100] [--workers 16] [--rounds 5]

Each round ends when every worker has received the weights and touched every array.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import ray

from relayrl.runtime.cluster import init_ray


@ray.remote(num_cpus=0.01)
class Receiver:
    def __init__(self) -> None:
        self.weights = None

    def set_by_value(self, weights: list) -> float:
        self.weights = weights
        return float(sum(w[0] for w in weights))

    def set_by_ref(self, box: list) -> float:
        self.weights = ray.get(box[0])  # the same pull RayRolloutWorker.sample_with does
        return float(sum(w[0] for w in self.weights))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=100.0)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    init_ray()
    n_arrays = 25  # layer-sized pieces, like a real model's variable list
    per = int(args.mb * 2**20 / 4 / n_arrays)
    weights = [np.random.default_rng(i).standard_normal(per, dtype=np.float32) for i in range(n_arrays)]
    actors = [Receiver.remote() for _ in range(args.workers)]
    ray.get([a.set_by_value.remote([np.zeros(1, np.float32)]) for a in actors])  # all actors up
    by_value, by_ref = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        ray.get([a.set_by_value.remote(weights) for a in actors])
        by_value.append(time.perf_counter() - start)
        start = time.perf_counter()
        ref = ray.put(weights)
        ray.get([a.set_by_ref.remote([ref]) for a in actors])
        by_ref.append(time.perf_counter() - start)
        del ref
    v, r = float(np.median(by_value)), float(np.median(by_ref))
    print(
        f"{args.mb:.0f} MB to {args.workers} workers: by value {v * 1e3:8.1f} ms   "
        f"one ray.put + ObjectRef {r * 1e3:8.1f} ms   speed-up {v / r:.1f}x"
    )
    print(
        json.dumps(
            {
                "mb": args.mb,
                "workers": args.workers,
                "by_value_ms": round(v * 1e3, 1),
                "object_ref_ms": round(r * 1e3, 1),
                "speedup": round(v / r, 1),
            }
        )
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
