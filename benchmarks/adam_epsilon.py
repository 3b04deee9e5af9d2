"""Adam's epsilon, 1e-5 (relayrl's) against 1e-8 (PyTorch's, which SB3 and CleanRL use for DQN, SAC and
TD3): env steps to solve with each tuned file, one fresh process per run (issue 17, defect 6).

    python benchmarks/adam_epsilon.py --algo td3 --seeds 0 1 2 3 4 5 6 7 8 9
    python benchmarks/adam_epsilon.py --algo dqn --seeds 0 1 2

Solved: SAC/TD3 Pendulum-v1 mean of the last 10 episodes >= -200 (cap 20k env steps); DQN CartPole-v1 mean
of the last 100 >= 475 (cap 200k). Prints one JSON line per run, then the mean and SD per epsilon.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

TASKS = {"sac": ("Pendulum-v1", -200.0, 10, 20_000), "td3": ("Pendulum-v1", -200.0, 10, 20_000)}
TASKS["dqn"] = ("CartPole-v1", 475.0, 100, 200_000)


def one_run(algo: str, epsilon: float, seed: int) -> dict:
    """In this (child) process: the learner's Adam built with `epsilon`, then train until solved."""
    from relayrl.learning import optimizer

    # the Adam default is the only way in: relayrl has no config field for it (see docs/algorithms/td3.md)
    optimizer.Adam.__init__.__defaults__ = (0.9, 0.999, epsilon)
    from relayrl.algorithms import config_class

    env, threshold, window, cap = TASKS[algo]
    config = config_class(algo).from_tuned(env).debugging(seed=seed)
    with config.reporting(metrics_num_episodes_for_smoothing=window).build() as trainer:
        while True:
            r = trainer.train()
            solved = r["episodes_total"] >= window and r["episode_reward_mean"] >= threshold
            if solved or r["timesteps_total"] >= cap:
                break
    steps = r["timesteps_total"]
    return {"algo": algo, "epsilon": epsilon, "seed": seed, "solved": solved, "env_steps": steps}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--algo", choices=sorted(TASKS), required=True)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epsilons", type=float, nargs="+", default=[1e-5, 1e-8])
    p.add_argument("--child", nargs=2, metavar=("EPSILON", "SEED"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(one_run(args.algo, float(args.child[0]), int(args.child[1]))))
        return
    steps: dict[float, list[int]] = {e: [] for e in args.epsilons}
    for seed in args.seeds:
        for eps in args.epsilons:
            cmd = [sys.executable, __file__, "--algo", args.algo, "--child", repr(eps), str(seed)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(json.dumps(row), flush=True)
            steps[eps].append(row["env_steps"])
    for eps, s in steps.items():
        sd = statistics.stdev(s) if len(s) > 1 else 0.0
        print(f"{args.algo} epsilon {eps:g}: env steps {s}, mean {statistics.mean(s):,.0f} ± {sd:,.0f}")


if __name__ == "__main__":
    main()
