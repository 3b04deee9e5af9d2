"""The policy server as a whole: an Algorithm whose runtime is the external episodes, behind HTTP.

    served = ServedAlgorithm(PPOConfig.from_tuned("CartPole-v1"), port=0).start()
    while True:
        result = served.train()          # waits for train_batch_size steps from the clients, updates, publishes
    served.stop()

The algorithm is the registered one, unchanged (PPO's loss, learner and training_step); only its
`workers` differ. The env (id or callable) is made once, for its spaces; Text spaces are replaced
by the codec's encoded spaces for the network.
"""
from __future__ import annotations

import math
import threading
from typing import Any

import gymnasium as gym

from relayrl.algos import algorithm_class
from relayrl.config import Config
from relayrl.envs import env_spaces
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.http_server import PolicyServer
from relayrl.policy_server.wire import SpaceCodec
from relayrl.text_spaces import TextCodec, encoded_spaces

STATUS_KEYS = ("training_iteration", "timesteps_total", "episodes_total", "episode_reward_mean",
               "episode_len_mean", "weights_version", "time_total_s")


class SpacesOnlyEnv(gym.Env):
    """Carries the spaces the network is built for; the external simulator does the stepping."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space):
        self.observation_space, self.action_space = observation_space, action_space

    def step(self, action):
        raise RuntimeError("this env only describes spaces: external simulators step through the policy server")

    def reset(self, *, seed=None, options=None):
        raise RuntimeError("this env only describes spaces: external simulators step through the policy server")


class ServedAlgorithm:
    """An Algorithm trained by the episodes that clients drive over HTTP."""

    def __init__(self, config: Config, codec: TextCodec | None = None, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, max_wait_s: float = 0.002, max_episodes: int = 10_000):
        config = config.copy()
        config.validate()
        raw_obs_space, raw_action_space = env_spaces(config.env, config.env_config)
        net_obs_space, net_action_space = encoded_spaces(raw_obs_space, raw_action_space, codec)
        if (net_obs_space, net_action_space) != (raw_obs_space, raw_action_space):
            config.environment(lambda _cfg: SpacesOnlyEnv(net_obs_space, net_action_space), env_config={})

        def episodes_runtime(settings) -> ExternalEpisodes:
            self.episodes = ExternalEpisodes(settings.spec, net_action_space, config.train_batch_size, settings.gamma,
                                             settings.lambda_, settings.seed, max_episodes, max_wait_s)
            return self.episodes

        self.episodes: ExternalEpisodes
        self.algo = algorithm_class(config.algo_name)(config, workers_factory=episodes_runtime)
        try:
            wire_codec = SpaceCodec(raw_obs_space, raw_action_space, self.algo.spec, codec)
            self.server = PolicyServer(self.episodes, wire_codec, host, port, token, status=self._status)
        except BaseException:
            self.algo.stop()
            raise
        self.last_result: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> "ServedAlgorithm":
        self.server.start()
        return self

    def train(self) -> dict[str, Any]:
        """One iteration (blocks until the clients produced train_batch_size steps).
        Raises episodes.ServerStopped when stop() is called meanwhile."""
        result = self.algo.train()
        with self._lock:
            self.last_result = result
        return result

    def _status(self) -> dict:
        with self._lock:
            r = dict(self.last_result)
        return {k: (None if isinstance(r.get(k), float) and math.isnan(r[k]) else r.get(k)) for k in STATUS_KEYS}

    def stop(self) -> None:
        self.server.stop()
        self.algo.stop()  # stops the episodes runtime: a waiting train() raises ServerStopped
