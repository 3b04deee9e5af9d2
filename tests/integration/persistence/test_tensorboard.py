"""TensorBoard event files read back: every documented scalar is there, plus the return histogram."""

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from relayrl import PPOConfig

DOCUMENTED = [
    "training_iteration",
    "timesteps_total",
    "episodes_total",
    "episode_reward_mean",
    "episode_reward_min",
    "episode_reward_max",
    "episode_len_mean",
    "time_this_iter_s",
    "time_total_s",
    "env_steps_per_s",
    "timers/sample_s",
    "timers/learn_s",
    "timers/sync_s",
    "timers/wait_s",
    "timers/sample_frac",
    "timers/learn_frac",
    "learner/total_loss",
    "learner/policy_loss",
    "learner/vf_loss",
    "learner/entropy",
    "learner/kl",
    "learner/clip_frac",
    "learner/grad_gnorm",
    "workers/healthy",
    "workers/sample_latency_p50_s",
    "workers/sample_latency_p99_s",
    "workers/policy_lag_mean",
    "workers/idle_frac",
    "workers/0/steps_per_s",
    "workers/0/cpu_util",
    "memory/driver_rss_bytes",
    "memory/object_store_bytes",
]


def test_event_files_hold_every_documented_scalar_and_histogram(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=8)
        .training(train_batch_size=512, sgd_minibatch_size=128, num_sgd_iter=2)
        .reporting(log_dir=str(tmp_path))
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    missing = [t for t in DOCUMENTED if t not in tags]
    assert not missing, missing
    steps = [e.step for e in acc.Scalars("episode_reward_mean")]
    assert steps == [r["timesteps_total"] for r in results]
    assert [e.value for e in acc.Scalars("training_iteration")] == [1.0, 2.0, 3.0]
    assert "episode_reward_hist" in acc.Tags()["histograms"]
