"""Run in fresh processes by test_checkpoints.py: train (sync, in-process, fixed seed) and print a hash of
the learner's weights. Usage: VARIANT straight TOTAL | VARIANT save N DIR | VARIANT resume DIR M, where
VARIANT is ppo (CartPole), ppo_norm (Pendulum with observation normalisation and reward scaling: their
running statistics must come back) or sac (Pendulum: the replay buffer, its RNG and the update debt must
come back)."""

import hashlib
import json
import sys

from relayrl import PPOConfig, SACConfig
from relayrl.algorithms.base import Algorithm


def config(variant: str):
    if variant == "sac":
        return (
            SACConfig()
            .environment("Pendulum-v1")
            .rollouts(num_envs_per_worker=2, rollout_fragment_length=50)
            .training(learning_starts=100, train_batch_size=64, replay_ratio=0.25)
            .debugging(seed=0)
        )
    if variant == "ppo_norm":
        return (
            PPOConfig()
            .environment("Pendulum-v1")
            .rollouts(num_envs_per_worker=4)
            .training(
                train_batch_size=256,
                sgd_minibatch_size=64,
                num_sgd_iter=2,
                lr=1e-3,
                scale_rewards=True,
                model={"normalize_obs": True},
            )
            .debugging(seed=0)
        )
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=8)
        .training(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=2, lr=1e-3)
        .debugging(seed=0)
    )


def digest(algo) -> str:
    h = hashlib.sha256()
    for w in algo.learner.get_weights():
        h.update(w.tobytes())
    return h.hexdigest()


def main() -> None:
    variant, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "resume":
        algo = Algorithm.from_checkpoint(args[0])
        iterations = int(args[1])
    else:
        algo = config(variant).build()
        iterations = int(args[0])
    for _ in range(iterations):
        result = algo.train()
    if mode == "save":
        algo.save(args[1])
    print(
        json.dumps(
            {
                "weights": digest(algo),
                "iteration": result["training_iteration"],
                "timesteps_total": result["timesteps_total"],
                "episodes_total": result["episodes_total"],
            }
        )
    )
    algo.stop()


if __name__ == "__main__":
    main()
