"""Concurrent env stepping inside Ray rollout actors (its own module: the 2-CPU session fits one fleet at a
time)."""

from relayrl import PPOConfig


def test_ray_workers_step_their_envs_on_threads(ray_session):
    """num_env_threads reaches the actors: each worker's envs run on a ThreadedVectorEnv there."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4, num_env_threads=4)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1)
        .debugging(seed=2)
    )
    algorithm = config.build()
    try:
        result = algorithm.train()
        assert result["workers/healthy"] == 2 and 120 <= result["env_steps_this_iter"] <= 128
        kinds = ray_session.get(
            [a.__ray_call__.remote(lambda w: type(w.env).__name__) for a in algorithm.workers.actors]
        )
        assert kinds == ["ThreadedVectorEnv", "ThreadedVectorEnv"]
    finally:
        algorithm.stop()
