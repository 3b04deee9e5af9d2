"""Atari sampling against the raw vectorised env rate, on the same cores, measured in the same run.

    python benchmarks/atari_sampling.py [--env ALE/Breakout-v5] [--envs 8] [--seconds 10] [--cores 1]
                                        [--backends gymnasium,envpool]

raw <backend>:     make_vector_env(env, envs) with the default atari preprocessing ((84, 84, 4) uint8),
                   stepped with pre-drawn random actions, no policy.
worker <backend>:  RolloutWorker.sample() on the same envs as PPO's worker samples: one batched Nature-CNN
                   inference per vector step (tf.function), action sampling, and per fragment the value pass
                   and GAE.
inference:         the per-vector-step policy call alone on a batch of `envs` frames (its cost per call).
The process is pinned to `--cores` cores and TensorFlow to as many threads (envpool to as many threads), so
every variant uses the same cores. Raw and worker rounds alternate and medians are reported, so machine noise
hits both alike. One JSON line per variant; `ratio` = worker / raw of the same backend.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def pin(cores: int) -> None:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(cores)
    tf.config.threading.set_inter_op_parallelism_threads(1)


class Raw:
    def __init__(self, env: str, envs: int, backend: str, cores: int):
        from relayrl.envs.make import make_vector_env

        threads = cores if backend == "envpool" else 0
        self.env = make_vector_env(env, {}, envs, num_threads=threads, backend=backend)
        self.env.reset(seed=0)
        rng = np.random.default_rng(0)
        self.actions = rng.integers(0, self.env.single_action_space.n, (64, envs))
        self.envs = envs

    def steps_per_s(self, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in self.actions:
                self.env.step(a)
            steps += len(self.actions) * self.envs
        return steps / (time.perf_counter() - start)


class Worker:
    def __init__(self, env: str, envs: int, backend: str, cores: int, fragment_length: int = 128):
        from relayrl.core.knobs import DEFAULT_MODEL
        from relayrl.envs.make import env_spaces
        from relayrl.models import networks
        from relayrl.sampling.rollout import RolloutWorker
        from relayrl.sampling.settings import SamplerSettings

        spec = networks.spec_from_spaces(*env_spaces(env, {}), DEFAULT_MODEL)
        settings = SamplerSettings(
            env, {}, envs, fragment_length, spec, lambda_=0.95, seed=0, vector_backend=backend,
            num_env_threads=cores if backend == "envpool" else 0,
        )  # fmt: skip
        self.worker = RolloutWorker(settings)
        self.worker.set_weights(networks.init_weights(spec, np.random.default_rng(0)), 0)
        self.worker.sample()  # warm-up: traces the tf.functions
        self.per_fragment = envs * fragment_length

    def steps_per_s(self, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            fragment = self.worker.sample()
            steps += fragment.env_steps
        return steps / (time.perf_counter() - start)

    def inference_us(self, calls: int = 200) -> float:
        policy, obs = self.worker.policy, self.worker.obs
        noise = policy.draw_noise(calls, len(obs))
        start = time.perf_counter()
        for t in range(calls):
            policy.sample_step(obs, noise[t])
        return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--env", default="ALE/Breakout-v5")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10.0, help="per variant, split into alternating rounds")
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--backends", default="gymnasium,envpool")
    args = p.parse_args()
    pin(args.cores)
    rounds = 4
    for backend in args.backends.split(","):
        raw, worker = (
            Raw(args.env, args.envs, backend, args.cores),
            Worker(args.env, args.envs, backend, args.cores),
        )
        raws, ours = [], []
        for _ in range(rounds):
            raws.append(raw.steps_per_s(args.seconds / rounds))
            ours.append(worker.steps_per_s(args.seconds / rounds))
        common = {"env": args.env, "envs": args.envs, "cores": args.cores, "backend": backend}
        raw_rate, worker_rate = float(np.median(raws)), float(np.median(ours))
        print(json.dumps({"variant": f"raw {backend}", **common, "steps_per_s": round(raw_rate)}))
        print(
            json.dumps(
                {
                    "variant": f"worker {backend}",
                    **common,
                    "steps_per_s": round(worker_rate),
                    "ratio": round(worker_rate / raw_rate, 3),
                    "inference_us_per_vector_step": round(worker.inference_us()),
                }
            ),
            flush=True,
        )
        raw.env.close(), worker.worker.stop()


if __name__ == "__main__":
    main()
