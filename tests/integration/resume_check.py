"""Run in fresh processes by test_checkpoints.py: train PPO (sync, in-process, fixed seed) and print a hash of
the learner's weights. Modes: straight TOTAL | save N DIR | resume DIR M."""
import hashlib
import json
import sys

from relayrl import PPOConfig
from relayrl.algorithm import Algorithm


def config():
    return (PPOConfig().environment("CartPole-v1").rollouts(num_envs_per_worker=8)
            .training(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=2, lr=1e-3).debugging(seed=0))


def digest(algo) -> str:
    h = hashlib.sha256()
    for w in algo.learner.get_weights():
        h.update(w.tobytes())
    return h.hexdigest()


def main() -> None:
    mode = sys.argv[1]
    if mode == "resume":
        algo = Algorithm.from_checkpoint(sys.argv[2])
        iterations = int(sys.argv[3])
    else:
        algo = config().build()
        iterations = int(sys.argv[2])
    for _ in range(iterations):
        result = algo.train()
    if mode == "save":
        algo.save(sys.argv[3])
    print(json.dumps({"weights": digest(algo), "iteration": result["training_iteration"],
                      "timesteps_total": result["timesteps_total"], "episodes_total": result["episodes_total"]}))
    algo.stop()


if __name__ == "__main__":
    main()
