"""What `.debugging(eager=True)` costs: the learner's update compiled (one tf.function per iteration) against
eager (the same steps op by op, what a breakpoint in a loss needs).

    python benchmarks/eager_overhead.py [--algo ppo] [--env CartPole-v1] [--iterations 2]

Builds the algorithm twice with the same seed and its default config, runs `--iterations` iterations each and
prints the last iteration's learn time (timers/learn_s) of both and the ratio.
"""

from __future__ import annotations

import argparse
import json

from relayrl.algorithms import config_class


def learn_seconds(algo: str, env: str, iterations: int, eager: bool) -> float:
    built = config_class(algo)().environment(env).debugging(seed=0, eager=eager).build()
    try:
        for _ in range(iterations):
            result = built.train()
    finally:
        built.stop()
    return result["timers/learn_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", default="ppo")
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--iterations", type=int, default=2, help="the first iteration includes warm-up")
    args = p.parse_args()
    compiled = learn_seconds(args.algo, args.env, args.iterations, eager=False)
    eager = learn_seconds(args.algo, args.env, args.iterations, eager=True)
    print(
        f"{args.algo} {args.env}: learn per iteration compiled {compiled:.3f} s, eager {eager:.3f} s "
        f"({eager / compiled:.0f}x)"
    )
    print(
        json.dumps({"algo": args.algo, "env": args.env, "compiled_learn_s": compiled, "eager_learn_s": eager})
    )


if __name__ == "__main__":
    main()
