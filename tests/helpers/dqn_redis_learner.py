"""A DQN learner process whose replay lives in Redis: trains a few iterations, prints the stored rows and
their checksum as JSON, then waits to be killed (the test sends SIGKILL)."""

import json
import sys
import time

from relayrl import DQNConfig


def main() -> None:
    address, password, prefix = sys.argv[1:4]
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=4, rollout_fragment_length=50)
        .training(
            replay_backend="redis",
            redis_address=address,
            redis_password=password,
            redis_key_prefix=prefix,
            replay_buffer_capacity=100_000,
            learning_starts=400,
            train_batch_size=32,
        )
        .debugging(seed=0)
    )
    algo = config.build()
    for _ in range(5):
        algo.train()
    rows, digest = algo.replay.checksum()
    print(json.dumps({"rows": rows, "checksum": digest, "timesteps_total": algo.timesteps_total}), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
