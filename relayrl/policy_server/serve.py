"""The policy server as a whole: an Algorithm whose runtime is the external episodes, behind HTTP.

    served = ServedAlgorithm(PPOConfig.from_tuned("CartPole-v1"), port=0).start()
    while True:
        result = served.train()   # waits for train_batch_size steps from the clients, updates, publishes
    served.stop()

The algorithm is the registered one, unchanged (PPO's loss, learner and training_step); only its
`workers` differ. The env (id or callable) is made once, for its spaces; Text spaces are replaced
by the codec's encoded spaces for the network.

Client data cannot end training: the episodes runtime drops steps that would overflow the update, and
as a last guard an iteration whose update still turns out non-finite (FloatingPointError: a NaN loss,
gradient or weight) is undone: the learner's weights and optimiser state are put back, the batch is
dropped with a logged warning, and train() goes on with the next batch; clients keep the last good
weights meanwhile.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

import gymnasium as gym
import numpy as np

from relayrl.algorithms import algorithm_class
from relayrl.core.config import Config
from relayrl.envs.make import env_spaces
from relayrl.envs.text import TextCodec, encoded_spaces
from relayrl.learning.learner import Learner
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.http_server import PolicyServer
from relayrl.policy_server.limits import ServerLimits
from relayrl.policy_server.wire import SpaceCodec

STATUS_KEYS = (
    "training_iteration",
    "timesteps_total",
    "episodes_total",
    "episode_reward_mean",
    "episode_len_mean",
    "weights_version",
    "time_total_s",
)


class SpacesOnlyEnv(gym.Env):
    """Carries the spaces the network is built for; the external simulator does the stepping."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space):
        self.observation_space, self.action_space = observation_space, action_space

    def step(self, action):
        raise RuntimeError(
            "this env only describes spaces: external simulators step through the policy server"
        )

    def reset(self, *, seed=None, options=None):
        raise RuntimeError(
            "this env only describes spaces: external simulators step through the policy server"
        )


class ServedAlgorithm:
    """An Algorithm trained by the episodes that clients drive over HTTP."""

    def __init__(
        self,
        config: Config,
        codec: TextCodec | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        max_wait_s: float = 0.002,
        limits: ServerLimits = ServerLimits(),
    ):
        config = config.copy()
        config.validate()
        raw_obs_space, raw_action_space = env_spaces(
            config.env, config.env_config, config.env_wrappers, config.atari
        )
        net_obs_space, net_action_space = encoded_spaces(raw_obs_space, raw_action_space, codec)
        if (net_obs_space, net_action_space) != (raw_obs_space, raw_action_space):
            spaces_only = lambda _cfg: SpacesOnlyEnv(
                net_obs_space, net_action_space
            )  # wrappers applied already
            config.environment(spaces_only, env_config={}, env_wrappers=[])

        def episodes_runtime(settings) -> ExternalEpisodes:
            self.episodes = ExternalEpisodes(
                settings.spec,
                net_action_space,
                config.train_batch_size,
                settings.gamma,
                settings.lambda_,
                settings.seed,
                limits.max_episodes,
                max_wait_s,
                limits.episode_timeout_s,
            )
            return self.episodes

        self.episodes: ExternalEpisodes
        self.algo = algorithm_class(config.algo_name)(config, workers_factory=episodes_runtime)
        try:
            wire_codec = SpaceCodec(raw_obs_space, raw_action_space, self.algo.spec, codec)
            self.server = PolicyServer(
                self.episodes, wire_codec, host, port, token, status=self._status, limits=limits
            )
        except BaseException:
            self.algo.stop()
            raise
        self.last_result: dict[str, Any] = {}
        self.dropped_batches = 0  # iterations undone because their update was not finite
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> ServedAlgorithm:
        self.server.start()
        return self

    def train(self) -> dict[str, Any]:
        """One iteration (blocks until the clients produced train_batch_size steps); an update that turns
        non-finite is undone and the next batch tried. Raises episodes.ServerStopped when stop() is called."""
        while True:
            before = self._learner_state()
            try:
                result = self.algo.train()
                break
            except FloatingPointError as exc:
                self._undo(before, exc)
        with self._lock:
            self.last_result = result
        return result

    def _learner_state(self) -> tuple[int, list[np.ndarray], list[np.ndarray]]:
        """What an update changes: the weights version, the learner's weights, and its optimiser's step count
        and moments (not the learning rate: the user may set that meanwhile)."""
        return (
            self.algo.weights_version,
            self.algo.learner.get_weights(),
            [v.numpy() for v in self._optimizer_variables()],
        )

    def _undo(self, state: tuple[int, list[np.ndarray], list[np.ndarray]], error: FloatingPointError) -> None:
        self.algo.weights_version, weights, optimizer_values = state
        self.algo.learner.set_weights(weights)
        for variable, value in zip(self._optimizer_variables(), optimizer_values):
            variable.assign(value)
        self.algo.timers.pop()  # the undone iteration's phase times must not add to the next one's
        self.dropped_batches += 1
        logging.getLogger("relayrl.policy_server").warning(
            "policy server: iteration %d's update was not finite (%s); its batch is dropped and the previous "
            "weights restored",
            self.algo.iteration + 1,
            error,
        )

    def _optimizer_variables(self) -> list:
        """The Adam state of a learner in this process (a learner actor keeps its own: weights only then)."""
        learner = self.algo.learner
        if not isinstance(learner, Learner):
            return []
        optimizers = [group.optimizer for group in learner.optimizer_groups()]
        return [v for opt in optimizers for v in (opt.step, *opt.m, *opt.v)]

    def _status(self) -> dict:
        with self._lock:
            r = dict(self.last_result)
        status = {
            k: None if isinstance(r.get(k), float) and not math.isfinite(r[k]) else r.get(k)
            for k in STATUS_KEYS
        }
        return {**status, "dropped_batches": self.dropped_batches}

    def stop(self) -> None:
        self.server.stop()
        self.algo.stop()  # stops the episodes runtime: a waiting train() raises ServerStopped
