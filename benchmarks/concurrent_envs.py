"""Slow (I/O-bound) envs: one worker with many envs in flight against one env stepped sequentially.

    python benchmarks/concurrent_envs.py [--latency 0.05] [--jitter 0] [--envs 32] [--seconds 5]

sequential: one SlowApiEnv (CartPole dynamics, every step waits `latency` s) stepped in a loop with
            random actions: the most one blocking env can do (<= 1 / latency steps/s).
threaded:   RolloutWorker.sample() over `envs` SlowApiEnvs with num_env_threads = envs: numpy policy,
            log-probs, values and GAE included; counts the env steps kept in the fragments.
Prints steps/s of both and the ratio, with the cores this process may use. With --jitter the threaded
worker's lock-step vector step waits for the slowest of its envs each step, so its gain shrinks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from slow_api_env import SlowApiEnv  # noqa: E402

from relayrl.core.knobs import DEFAULT_MODEL  # noqa: E402
from relayrl.models import networks
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings


def sequential_steps_per_s(env_config: dict, seconds: float) -> float:
    env = SlowApiEnv(env_config)
    env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        steps += 1
        if term or trunc:
            env.reset()
    env.close()
    return steps / (time.perf_counter() - start)


def threaded_steps_per_s(env_config: dict, num_envs: int, seconds: float) -> float:
    probe = SlowApiEnv(dict(env_config, latency_s=0.0))
    spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, DEFAULT_MODEL)
    settings = SamplerSettings(
        env=SlowApiEnv,
        env_config=env_config,
        num_envs=num_envs,
        fragment_length=16,
        spec=spec,
        seed=0,
        num_env_threads=num_envs,
    )
    worker = RolloutWorker(settings)
    worker.set_weights(networks.init_weights(spec, np.random.default_rng(0)), 0)
    worker.sample()  # warm-up: thread pool started, first fragment
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += worker.sample().env_steps
    elapsed = time.perf_counter() - start
    worker.stop()
    return steps / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--jitter", type=float, default=0.0, help="extra uniform wait in [0, jitter) s per step")
    args = p.parse_args()
    env_config = {"env_id": "CartPole-v1", "latency_s": args.latency, "jitter_s": args.jitter}
    seq = sequential_steps_per_s(env_config, args.seconds)
    thr = threaded_steps_per_s(env_config, args.envs, args.seconds)
    cores = len(os.sched_getaffinity(0))
    print(
        f"cores available: {cores}; env step latency {args.latency * 1000:.0f} ms + "
        f"U[0, {args.jitter * 1000:.0f}) ms"
    )
    print(f"sequential, 1 env:                      {seq:8.1f} steps/s")
    print(f"threaded, 1 worker, {args.envs} envs in flight:   {thr:8.1f} steps/s")
    print(f"ratio threaded / sequential:            {thr / seq:8.1f}x")
    print(
        json.dumps(
            {
                "sequential_steps_per_s": seq,
                "threaded_steps_per_s": thr,
                "ratio": thr / seq,
                "envs": args.envs,
                "latency_s": args.latency,
                "cores": cores,
            }
        )
    )


if __name__ == "__main__":
    main()
