"""Algorithm: built from a Config; `train()` runs one iteration and returns the flat result dict.

Subclasses implement `training_step()` (sample -> update -> sync, a few lines) and `make_learner()`.
"""
from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import psutil

from relayrl import networks, tf_import
from relayrl.config import Config
from relayrl.envs import env_name, env_spaces
from relayrl.metrics import EpisodeStats, Timers
from relayrl.rollout import SamplerSettings
from relayrl.runtime import make_workers
from relayrl.types import Fragment


class Algorithm:
    """Loop that uses it:  algo = PPOConfig().environment("CartPole-v1").build(); result = algo.train()."""

    name: ClassVar[str] = ""
    action_kinds: ClassVar[tuple[str, ...]] = ("categorical", "multi_categorical", "gaussian")

    def __init__(self, config: Config):
        self.config = config
        self.obs_space, self.action_space, self.spec = self.check_env(config)
        self.rng = np.random.default_rng(config.seed)
        initial_weights = networks.init_weights(self.spec, self.rng)
        if config.num_rollout_workers > 0:
            # Start the Ray cluster and the TF-free worker actors while TensorFlow imports on another
            # thread (~2.5 s each on this machine). Ray is imported first: the two share dependencies.
            from relayrl.runtime import ray_workers  # noqa: F401

            tf_import.load_in_background()
        self.workers = self.make_workers()
        try:
            self._configure_tensorflow()
            self.learner = self.make_learner()  # traces the update while the actors start
            self.learner.set_weights(initial_weights)
            self.workers.wait_ready()
        except BaseException:
            self.workers.stop()  # never leave actors (or an embedded Ray) behind a failed build
            raise
        self.weights_version = 0
        self.workers.sync_weights(initial_weights, self.weights_version)
        self.timers = Timers()
        self.episodes = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.iteration = 0
        self.timesteps_total = 0
        self.time_total_s = 0.0
        self._logger = None
        if config.log_dir:
            from relayrl.logger import TensorBoardLogger

            self._logger = TensorBoardLogger(config.log_dir)

    # ------------------------------------------------------------------ to implement
    def make_learner(self):
        raise NotImplementedError

    def training_step(self) -> dict[str, float]:
        raise NotImplementedError

    def make_workers(self):
        """The worker fleet (local or Ray); asynchronous algorithms return their own fleet."""
        c = self.config
        return make_workers(self.sampler_settings(), c.num_rollout_workers, c.num_cpus_per_worker, c.address)

    def sampler_settings(self) -> SamplerSettings:
        c = self.config
        return SamplerSettings(env=c.env, env_config=c.env_config, num_envs=c.num_envs_per_worker,
                               fragment_length=c.resolved_fragment_length(), spec=self.spec,
                               gamma=c.gamma, lambda_=getattr(c, "lambda_", 1.0), seed=c.seed)

    # ------------------------------------------------------------------ shared plumbing
    def _configure_tensorflow(self) -> None:
        """Learner device and threads. num_gpus=0 hides GPUs so the learner runs where it was asked to;
        num_gpus >= 1 needs that many visible GPUs."""
        tf = tf_import.load()
        gpus = tf.config.list_physical_devices("GPU")
        wanted = self.config.num_gpus
        if wanted > 1:
            raise ValueError(f"{type(self.config).__name__}.num_gpus = {wanted}: more than one learner GPU "
                             f"(MirroredStrategy) is not supported yet; allowed: 0 or 1")
        if wanted > len(gpus):
            raise ValueError(f"{type(self.config).__name__}.num_gpus = {wanted} but TensorFlow sees "
                             f"{len(gpus)} GPU(s) on this machine; allowed: 0..{len(gpus)}")
        try:
            if wanted == 0 and gpus:
                tf.config.set_visible_devices([], "GPU")
        except RuntimeError:
            pass  # TensorFlow already initialised its devices in this process
        threads = self.config.learner_threads
        if threads == "auto":
            threads = 1 if self.spec.numpy_forward_ok else 0  # 0 = TensorFlow's default (all cores)
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(min(threads, 2) if threads else 0)
        except RuntimeError:
            pass  # TensorFlow already ran ops in this process (a second algorithm): its pools are fixed now

    @classmethod
    def check_env(cls, config: Config):
        """Make one env and check its spaces suit this algorithm: (obs_space, action_space, ModelSpec).
        Raises ValueError naming the env and the allowed spaces, before any worker starts."""
        obs_space, action_space = env_spaces(config.env, config.env_config)
        try:
            kind, _ = networks.action_layout(action_space)
        except ValueError:
            kind = None
        if kind not in cls.action_kinds:
            allowed = {"categorical": "Discrete", "multi_categorical": "MultiDiscrete", "gaussian": "Box (1-D float)"}
            raise ValueError(f"{cls.name} does not support the action space {action_space} of env "
                             f"{env_name(config.env)!r}; allowed: {', '.join(allowed[k] for k in cls.action_kinds)}")
        try:
            spec = networks.spec_from_spaces(obs_space, action_space, config.model)
        except ValueError as exc:
            raise ValueError(f"{cls.name} cannot use env {env_name(config.env)!r}: {exc}") from None
        return obs_space, action_space, spec

    def record_fragments(self, fragments: list[Fragment]) -> None:
        for fragment in fragments:
            self.episodes.add(fragment)
            self.timesteps_total += fragment.env_steps

    def publish_weights(self) -> None:
        """New version out to the workers (one ray.put on the Ray runtime)."""
        self.weights_version += 1
        self.workers.sync_weights(self.learner.get_weights(), self.weights_version)

    def train(self) -> dict[str, Any]:
        start = time.perf_counter()
        steps_before = self.timesteps_total
        learner_metrics = self.training_step()
        elapsed = time.perf_counter() - start
        self.iteration += 1
        self.time_total_s += elapsed
        timers = self.timers.pop()
        result: dict[str, Any] = {
            "training_iteration": self.iteration,
            "timesteps_total": self.timesteps_total,
            **self.episodes.summary(),
            "time_this_iter_s": elapsed,
            "time_total_s": self.time_total_s,
            "env_steps_this_iter": self.timesteps_total - steps_before,
            "env_steps_per_s": (self.timesteps_total - steps_before) / max(elapsed, 1e-9),
            "weights_version": self.weights_version,
            **{f"timers/{k}_s": v for k, v in timers.items()},
            **{f"learner/{k}": v for k, v in learner_metrics.items()},
            "workers/healthy": self.workers.healthy(),
            "memory/driver_rss_bytes": psutil.Process().memory_info().rss,
        }
        if self._logger is not None:
            self._logger.log(result)
        return result

    def stop(self) -> None:
        self.workers.stop()
        if self._logger is not None:
            self._logger.close()

    def __enter__(self) -> "Algorithm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
