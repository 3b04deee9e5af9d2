"""An environment whose every step waits 50 ms, like a remote simulator or an API / LLM tool call, and
how one rollout worker keeps 32 of them in flight with `num_env_threads`.

    python examples/slow_api_env.py            # PPO on CartPole behind a 50 ms "API", 32 envs on 32 threads

The env is a plain blocking gymnasium env (nothing async about it): the dynamics are CartPole's, each
`step` then sleeps `latency_s` (a socket read would block the same way, with the GIL released).
"""

from __future__ import annotations

import time

import gymnasium as gym


class SlowApiEnv(gym.Wrapper):
    """`env_id`'s dynamics, with `latency_s` of waiting in every step and reset (env_config keys:
    env_id, latency_s, jitter_s: uniform extra wait in [0, jitter_s))."""

    def __init__(self, env_config: dict | None = None):
        cfg = dict(env_config or {})
        super().__init__(gym.make(cfg.get("env_id", "CartPole-v1")))
        self.latency_s = float(cfg.get("latency_s", 0.05))
        self.jitter_s = float(cfg.get("jitter_s", 0.0))

    def _wait(self) -> None:
        extra = self.np_random.uniform(0.0, self.jitter_s) if self.jitter_s > 0 else 0.0
        time.sleep(self.latency_s + extra)

    def step(self, action):
        self._wait()
        return self.env.step(action)

    def reset(self, **kwargs):
        self._wait()
        return self.env.reset(**kwargs)


def main() -> None:
    from relayrl import PPOConfig

    config = (
        PPOConfig()
        .environment(SlowApiEnv, env_config={"latency_s": 0.05})
        .rollouts(num_envs_per_worker=32, num_env_threads=32)  # 32 envs in flight in one worker
        .training(train_batch_size=1024, sgd_minibatch_size=256, lr=2e-3)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(5):
            r = algo.train()
            print(
                f"iter {r['training_iteration']}: {r['env_steps_per_s']:.0f} env steps/s "
                f"(one 50 ms env alone: <= 20 steps/s), reward {r['episode_reward_mean']:.1f}"
            )
    finally:
        algo.stop()


if __name__ == "__main__":
    main()
