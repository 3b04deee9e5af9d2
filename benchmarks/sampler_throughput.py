"""Sampler throughput against the raw vectorised env limit, measured in the same run.

    python benchmarks/sampler_throughput.py [--env CartPole-v1] [--envs 16] [--seconds 3] [--ray-workers 2]

raw:      gym.make_vec(env, envs) stepped with pre-drawn random actions (no policy at all)
relayrl:  RolloutWorker.sample() with the same envs: numpy policy forward + action sampling every step,
          then behaviour log-probs, values and GAE per fragment (everything a PPO worker does).
Both count env.step() calls x envs. Prints steps/s and the ratio relayrl / raw.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings


class RawLoop:
    """The env alone: pre-drawn random actions, no policy."""

    def __init__(self, env_id: str, num_envs: int):
        self.env = gym.make_vec(env_id, num_envs=num_envs)
        self.env.reset(seed=0)
        self.actions = [
            np.stack([self.env.single_action_space.sample() for _ in range(num_envs)]) for _ in range(64)
        ]
        self.num_envs = num_envs

    def steps_per_s(self, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in self.actions:
                self.env.step(a)
            steps += 64 * self.num_envs
        return steps / (time.perf_counter() - start)


def settings(env_id: str, num_envs: int, fragment_length: int) -> SamplerSettings:
    probe = gym.make(env_id)
    spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, DEFAULT_MODEL)
    return SamplerSettings(
        env=env_id,
        env_config={},
        num_envs=num_envs,
        fragment_length=fragment_length,
        spec=spec,
        gamma=0.99,
        lambda_=0.95,
        seed=0,
    )


class WorkerLoop:
    """A RolloutWorker sampling fragments, as PPO's in-process runtime does."""

    def __init__(self, env_id: str, num_envs: int, fragment_length: int = 256):
        s = settings(env_id, num_envs, fragment_length)
        self.worker = RolloutWorker(s)
        self.worker.set_weights(networks.init_weights(s.spec, np.random.default_rng(0)), 0)
        self.worker.sample()  # warm-up
        self.per_fragment = fragment_length * num_envs

    def steps_per_s(self, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.worker.sample()
            steps += self.per_fragment
        return steps / (time.perf_counter() - start)


def ray_steps_per_s(
    env_id: str, num_envs: int, seconds: float, workers: int, fragment_length: int = 256
) -> float:
    from relayrl.runtime.ray_workers import RayWorkers

    s = settings(env_id, num_envs, fragment_length)
    fleet = RayWorkers(s, workers, 1, None)
    fleet.wait_ready()
    fleet.sync_weights(networks.init_weights(s.spec, np.random.default_rng(0)), 0)
    fleet.sample()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fleet.sample()
        steps += fragment_length * num_envs * workers
    rate = steps / (time.perf_counter() - start)
    fleet.stop()
    return rate


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--seconds", type=float, default=5.0, help="per side, split into 5 alternating rounds")
    p.add_argument("--ray-workers", type=int, default=0, help="also measure N Ray workers (0 = skip)")
    args = p.parse_args()
    # Alternate A B A B ... and take medians, so machine noise hits both sides alike.
    raw_loop, worker_loop = RawLoop(args.env, args.envs), WorkerLoop(args.env, args.envs)
    rounds = 5
    raws, ours_all = [], []
    for _ in range(rounds):
        raws.append(raw_loop.steps_per_s(args.seconds / rounds))
        ours_all.append(worker_loop.steps_per_s(args.seconds / rounds))
    raw, ours = float(np.median(raws)), float(np.median(ours_all))
    out = {
        "env": args.env,
        "envs": args.envs,
        "raw_steps_per_s": round(raw),
        "relayrl_steps_per_s": round(ours),
        "ratio": round(ours / raw, 3),
    }
    print(f"raw vector env ({args.envs} envs):      {raw:>12,.0f} steps/s")
    print(f"relayrl RolloutWorker ({args.envs} envs): {ours:>12,.0f} steps/s   ratio {ours / raw:.2f}")
    if args.ray_workers:
        fleet = ray_steps_per_s(args.env, args.envs, args.seconds, args.ray_workers)
        out.update(
            ray_workers=args.ray_workers,
            ray_steps_per_s=round(fleet),
            ray_ratio_vs_one_raw=round(fleet / raw, 3),
        )
        print(
            f"relayrl {args.ray_workers} Ray workers x {args.envs} envs: {fleet:>12,.0f} steps/s   "
            f"ratio vs one raw {fleet / raw:.2f}"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
