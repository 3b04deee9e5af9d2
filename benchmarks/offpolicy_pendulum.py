"""SAC and TD3 on Pendulum-v1: time to a mean of the last 10 episodes >= -200, wall clock from process start
(imports included), and gradient updates/s, over several seeds, each run a fresh
`relayrl train ALGO Pendulum-v1 --stop-reward -200` process with the tuned defaults.

    python benchmarks/offpolicy_pendulum.py [--algos sac td3] [--seeds 0 1] [--no-sb3-size]

Per run it prints: time to solve, env steps, gradient updates, updates/s over the training loop (sampling
included: how Stable-Baselines3's figure is counted) and updates/s of the compiled update alone. Then, in
fresh processes, the update rate at Stable-Baselines3's zoo network size (256x256 actor and critics, batch
256), which is the like-for-like comparison for the updates/s figure. Ratios are against the issue's
reference figures (SB3 zoo SAC 33.8 s and 134 updates/s, TD3 43.5 s), measured on this kind of machine but
not in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REFERENCE_S = {"sac": ("Stable-Baselines3 zoo", 33.8), "td3": ("Stable-Baselines3 zoo", 43.5)}
REFERENCE_UPDATES = {"sac": ("Stable-Baselines3 zoo", 134.0)}
TARGET_S = {"sac": 15.0, "td3": 20.0}


def run(algo: str, seed: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "relayrl.cli",
        "train",
        algo,
        "Pendulum-v1",
        "--stop-reward",
        "-200",
        "--stop-timesteps",
        "20000",
        "--seed",
        str(seed),
        "--set",
        "metrics_num_episodes_for_smoothing=10",
        "--json",
        "--quiet",
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def update_rate_at_sb3_size(algo: str, threads: int, steps: int = 64, repeats: int = 5) -> float:
    """Gradient updates/s of the compiled update with SB3's zoo sizes, K = steps updates per call, on
    `threads` TensorFlow intra-op threads (set once per process: run it in a fresh one)."""
    import gymnasium as gym
    import numpy as np

    from relayrl.algorithms import algorithm_class, config_class
    from relayrl.learning.placement import configure_tensorflow
    from relayrl.models import networks

    configure_tensorflow(0, threads, True)
    cls = algorithm_class(algo)
    config = (
        config_class(algo)()
        .training(
            model={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"},
            critic_hiddens=[256, 256],
            train_batch_size=256,
        )
        .debugging(seed=0)
    )
    env = gym.make("Pendulum-v1")
    spec = networks.spec_from_spaces(
        env.observation_space, env.action_space, config.model, head=cls.continuous_head
    )
    learner = cls.build_learner(spec, config)
    rng, n = np.random.default_rng(0), steps * 256
    batch = {
        "obs": rng.normal(size=(n, 3)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "next_obs": rng.normal(size=(n, 3)).astype(np.float32),
        "discounts": np.full(n, 0.99, np.float32),
        "weights": np.ones(n, np.float32),
    }
    idx = np.arange(n).reshape(steps, 256)
    learner.update(batch, idx)  # first call: graph optimisation
    start = time.perf_counter()
    for _ in range(repeats):
        learner.update(batch, idx)
    return steps * repeats / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--algos", nargs="+", default=["sac", "td3"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument(
        "--no-sb3-size", action="store_true", help="skip the update-rate measurement at SB3's network size"
    )
    p.add_argument(
        "--sb3-size-rate", nargs=2, metavar=("ALGO", "THREADS"), help=argparse.SUPPRESS
    )  # child process
    args = p.parse_args()
    if args.sb3_size_rate:
        print(update_rate_at_sb3_size(args.sb3_size_rate[0], int(args.sb3_size_rate[1])))
        return
    summary = {}
    for algo in args.algos:
        times, loop_rates, update_rates = [], [], []
        for seed in args.seeds:
            r = run(algo, seed)
            t = r["time_to_solve_s"] if r["solved"] else float("inf")
            updates = r["learner/num_updates_total"]
            loop_rate = updates / r["time_total_s"]
            update_rate = updates / r["learner/update_time_total_s"]
            times.append(t), loop_rates.append(loop_rate), update_rates.append(update_rate)
            print(
                f"{algo} seed={seed}: solved={r['solved']} time_to_solve_s={t:.2f} "
                f"(training loop {r['time_total_s']:.2f} s) "
                f"steps={r['timesteps_total']} updates={updates:.0f} updates/s: {loop_rate:.0f} over the "
                f"training loop, "
                f"{update_rate:.0f} in the compiled update; reward={r['episode_reward_mean']:.1f}",
                flush=True,
            )
        median, loop_rate = statistics.median(times), statistics.median(loop_rates)
        ref_name, ref = REFERENCE_S[algo]
        line = (
            f"{algo}: median time_to_solve_s {median:.2f} (target <= {TARGET_S[algo]:.0f} s)   "
            f"ratio vs {ref_name} ({ref} s, reference): {median / ref:.2f}   "
            f"median updates/s over the training loop {loop_rate:.0f}"
        )
        if algo in REFERENCE_UPDATES:
            ref_rate = REFERENCE_UPDATES[algo][1]
            line += f" (ratio vs {ref_rate:.0f}/s: {loop_rate / ref_rate:.2f})"
        print(line, flush=True)
        summary[algo] = {
            "median_time_to_solve_s": median,
            "median_loop_updates_per_s": loop_rate,
            "median_update_only_per_s": statistics.median(update_rates),
        }
    if not args.no_sb3_size:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        for algo in args.algos:
            for threads in (1, 2):  # relayrl's default for MLP learners is 1 (learner_threads="auto")
                proc = subprocess.run(
                    [sys.executable, __file__, "--sb3-size-rate", algo, str(threads)],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=600,
                )
                rate = float(proc.stdout.strip().splitlines()[-1])
                ratio = (
                    f" (ratio vs SB3 zoo {REFERENCE_UPDATES[algo][1]:.0f}/s, target >= 270/s: "
                    f"{rate / REFERENCE_UPDATES[algo][1]:.2f})"
                    if algo in REFERENCE_UPDATES
                    else ""
                )
                print(
                    f"{algo}: compiled update at SB3 zoo size (256x256, batch 256, 64 updates per call), "
                    f"{threads} thread(s): "
                    f"{rate:.0f} updates/s{ratio}",
                    flush=True,
                )
                summary[algo][f"sb3_size_update_only_per_s_{threads}_threads"] = rate
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
