"""Algorithm: built from a Config; `train()` runs one iteration and returns the flat result dict.

Subclasses implement `training_step()` (sample -> update -> sync, a few lines) and `build_learner()`; they
choose what their workers send with `worker_sampling()` and may bring their own fleet (`make_workers`). The
loop talks to the fleet and the learner only through core.contracts. Checkpoints are in state.py, exports
in exports.py, the result dict in results.py.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import psutil

from relayrl.algorithms.actions import PolicyActions
from relayrl.algorithms.env_check import checked_spaces
from relayrl.algorithms.exports import PolicyExports
from relayrl.algorithms.periodic_evaluation import check_evaluation, evaluation_result
from relayrl.algorithms.results import ResultOutputs, iteration_result
from relayrl.algorithms.state import CheckpointState, built_from_checkpoint
from relayrl.core import contracts
from relayrl.core.config import Config
from relayrl.core.metrics import EpisodeStats, Timers, WorkerStats
from relayrl.core.types import Fragment
from relayrl.learning.placement import build_learner_here, resolve_placement
from relayrl.models import networks, tf_import
from relayrl.models.obs_stats import RunningMoments
from relayrl.persistence.mlflow_logger import mlflow_logger
from relayrl.runtime import make_workers
from relayrl.sampling.settings import SamplerSettings, Sampling


class Algorithm(CheckpointState, PolicyExports, PolicyActions):
    """Loop that uses it:  algo = PPOConfig().environment("CartPole-v1").build(); result = algo.train()."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type[Config]] = Config  # a subclass names its own; Config.build() builds it
    action_kinds: ClassVar[tuple[str, ...]] = ("categorical", "multi_categorical", "gaussian")
    action_space_hint: ClassVar[str] = ""  # appended to the unsupported-action-space error
    continuous_head: ClassVar[str | None] = None  # policy head for Box actions (None: PPO's gaussian)
    uses_tensorflow: ClassVar[bool] = True  # tabular methods don't: no background TF import for them
    # model.normalize_obs: the driver merges workers' observation moments into the broadcast weights
    supports_obs_norm: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "config_class" in cls.__dict__:  # the config builds this class (no registry lookup, no import)
            cls.config_class.algorithm_class = cls

    def __init__(
        self, config: Config, workers_factory: Callable[[SamplerSettings], contracts.SyncFleet] | None = None
    ):
        """`workers_factory(settings)` replaces the local / Ray rollout workers with another runtime (the
        policy server's external episodes): a core.contracts.SyncFleet."""
        self.config = config
        check_evaluation(config, external_episodes=workers_factory is not None)
        self._mlflow = mlflow_logger(config)  # first: a missing mlflow is refused before workers start
        self.obs_space, self.action_space, self.spec = self.check_env(config)
        self.rng = np.random.default_rng(config.seed)
        initial_weights = networks.init_weights(self.spec, self.rng)
        learner_on_driver = resolve_placement(config.learner_placement, config.num_gpus) == "driver"
        if config.num_rollout_workers > 0 and learner_on_driver and self.uses_tensorflow:
            # Start the Ray cluster and the TF-free worker actors while TensorFlow imports on another
            # thread (~2.5 s each on this machine). Ray is imported first: the two share dependencies.
            from relayrl.runtime import ray_workers  # noqa: F401

            tf_import.load_in_background()
        self._update_debt = 0.0  # fractional gradient steps owed by a replay ratio (owed_updates)
        self._eager_was: bool | None = None  # eager=True: this process's run_functions_eagerly before it
        self.workers: contracts.Fleet = (
            self.make_workers() if workers_factory is None else workers_factory(self.sampler_settings())
        )
        self.learner: contracts.LearnerLike | None = None
        try:
            self.learner = self.make_learner()  # traces the update while the actors start
            self.learner.set_weights(initial_weights)
            self.workers.wait_ready()
        except BaseException:
            if isinstance(self.learner, contracts.Stoppable):
                self.learner.stop()
            self.workers.stop()  # never leave actors (or an embedded Ray) behind a failed build
            raise
        self.weights_version = 0
        self.workers.sync_weights(initial_weights, self.weights_version)
        self.timers = Timers()
        self.episodes = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.worker_stats = WorkerStats()
        self._process = psutil.Process()
        self.iteration, self.timesteps_total, self.time_total_s = 0, 0, 0.0
        self.obs_moments = RunningMoments(self.spec.obs_shape) if self.spec.obs_norm else None
        self._outputs = ResultOutputs(config)

    # ------------------------------------------------------------------ to implement
    @staticmethod
    def build_learner(spec: networks.ModelSpec, config: Config, strategy=None):
        """This algorithm's Learner (runs in whichever process hosts the learner)."""
        raise NotImplementedError

    def training_step(self) -> dict[str, float]:
        raise NotImplementedError

    def make_workers(self) -> contracts.Fleet:
        """The worker fleet (local or Ray): a SyncFleet; other algorithms return their own kind of fleet."""
        c = self.config
        workers = make_workers(
            self.sampler_settings(),
            c.num_rollout_workers,
            c.num_cpus_per_worker,
            c.address,
            c.dashboard,
            self.worker_class(),
        )
        return self.with_fault_tolerance(workers)

    def with_fault_tolerance(self, workers: contracts.Fleet) -> contracts.Fleet:
        """Apply the config's fault_tolerance fields to a fleet that restarts workers (Ray fleets do)."""
        c = self.config
        if isinstance(workers, contracts.RestartingFleet):
            workers.set_fault_tolerance(c.max_worker_restarts, c.restart_backoff_s, c.sample_timeout_s)
        return workers

    def sampler_settings(self) -> SamplerSettings:
        """What every worker is built with: the config's env and rollout fields, and worker_sampling()."""
        return SamplerSettings.from_config(self.config, self.spec, self.worker_sampling())

    def worker_sampling(self) -> Sampling:
        """The rows this algorithm's workers send and how they explore (default: GAE rows, lambda 1)."""
        return Sampling()

    def worker_class(self) -> type | None:
        """The Ray actor class of the rollout workers (None: the standard RayRolloutWorker)."""
        return None

    # ------------------------------------------------------------------ shared plumbing
    def make_learner(self):
        """The one place a learner is built: this algorithm's build_learner(spec, config, strategy), on the
        driver or in a Ray actor that holds the GPUs (then the driver never imports TF), with the config's
        num_gpus, learner_threads and eager. A learner without TensorFlow (tabular Q) is built here as it is:
        its config refuses the settings it cannot follow."""
        c = self.config
        factory = functools.partial(type(self).build_learner, self.spec, c)
        if not self.uses_tensorflow:
            return factory()
        if c.eager:
            from relayrl.learning.placement import build_eagerly

            self._eager_was = tf_import.tf.config.functions_run_eagerly()  # restored by stop()
            factory = functools.partial(build_eagerly, factory)
        if resolve_placement(c.learner_placement, c.num_gpus) == "actor":
            from relayrl.runtime.remote_learner import RemoteLearner

            return RemoteLearner(
                factory, c.num_gpus, c.learner_threads, self.spec.numpy_forward_ok, c.address
            )
        return build_learner_here(factory, c.num_gpus, c.learner_threads, self.spec.numpy_forward_ok)

    @classmethod
    def check_env(cls, config: Config) -> tuple[gym.Space, gym.Space, networks.ModelSpec]:
        """Make one env and check its spaces suit this algorithm: (obs_space, action_space, ModelSpec).
        Raises ValueError naming the env and the allowed spaces, before any worker starts."""
        return checked_spaces(
            config,
            cls.name,
            cls.action_kinds,
            cls.action_space_hint,
            cls.continuous_head,
            cls.supports_obs_norm,
        )

    def record_fragments(self, fragments: list[Fragment], latencies: list[float] | None = None) -> None:
        """Count the fragments' env steps and episodes; `latencies` default to the fleet's last round's."""
        if latencies is None:
            latencies = self.workers.last_latencies_s or [f.sample_time_s for f in fragments]
        for fragment, latency in zip(fragments, latencies):
            self.episodes.add(fragment)
            self.worker_stats.add(fragment, latency, self.weights_version)
            self.timesteps_total += fragment.env_steps
            if self.obs_moments is not None and fragment.obs_moments is not None:
                self.obs_moments.merge(*fragment.obs_moments)

    def owed_updates(self, new_env_steps: int, replay_ratio: float) -> int:
        """Whole gradient steps owed at `replay_ratio` steps per env step; the fraction carries over."""
        self._update_debt += replay_ratio * new_env_steps
        num_updates = int(self._update_debt)
        self._update_debt -= num_updates
        return num_updates

    def apply_lr_schedule(self) -> None:
        """Follow config.lr_schedule (piecewise linear in env steps) when one is set."""
        if self.config.lr_schedule:
            from relayrl.core.ops import piecewise_linear

            self.learner.set_lr(piecewise_linear(self.config.lr_schedule, self.timesteps_total))

    def publish_weights(self, new_obs_stats: bool = True) -> None:
        """New version out to the workers (one ray.put on the Ray runtime; a learner actor's weights go
        straight from its process to the object store, never through the driver)."""
        self.weights_version += 1
        if self.obs_moments is not None and new_obs_stats:  # new observation statistics ride with it
            weights = self.learner.get_weights()
            weights[-2:] = [self.obs_moments.mean.astype(np.float32), self.obs_moments.std.astype(np.float32)]
            self.learner.set_weights(weights)
        if isinstance(self.learner, contracts.RemoteWeights) and isinstance(
            self.workers, contracts.WeightRefFleet
        ):
            self.workers.sync_weights_ref(self.learner.weights_ref(), self.weights_version)
        else:
            weights = self.learner.get_weights()
            if not all(np.isfinite(w).all() for w in weights):  # never hand NaN weights to the workers
                raise FloatingPointError(
                    f"learner weights hold NaN or Inf after iteration {self.iteration + 1}; "
                    f"not broadcasting them (lower the learning rate, check rewards)"
                )
            self.workers.sync_weights(weights, self.weights_version)

    def train(self) -> dict[str, Any]:
        start = time.perf_counter()
        steps_before = self.timesteps_total
        learner_metrics = self.training_step()
        elapsed = time.perf_counter() - start
        self.iteration += 1
        self.time_total_s += elapsed
        result = iteration_result(
            iteration=self.iteration,
            timesteps_total=self.timesteps_total,
            steps_before=steps_before,
            elapsed=elapsed,
            time_total_s=self.time_total_s,
            weights_version=self.weights_version,
            episodes=self.episodes,
            timers=self.timers.pop(),
            learner_metrics=learner_metrics,
            workers=self.workers,
            worker_stats=self.worker_stats,
            driver_rss_bytes=self._process.memory_info().rss,
        )
        result.update(evaluation_result(self))  # every config.evaluation_interval iterations
        self._outputs.log(result, self.episodes.pop_iteration_returns())  # popped: nothing accumulates
        self._mlflow.log(result)
        return result

    @classmethod
    def from_checkpoint(cls, checkpoint_dir: str, **overrides: Any) -> Algorithm:
        """Build the algorithm a checkpoint was written by, restore it, and return it. `overrides` are config
        fields to change (e.g. num_rollout_workers=0 to evaluate on one machine). The checkpoint's config.json
        is data (Config.from_checkpoint_dict): an env stored as a Python callable, or an id gymnasium has not
        registered, is refused unless you pass `env=`; where to connect, listen or write (address, dashboard,
        log_dir, Redis) comes from `overrides` or the defaults, never from the checkpoint."""
        return built_from_checkpoint(checkpoint_dir, overrides)

    @property
    def dashboard_url(self) -> str | None:
        """The Ray dashboard's URL when this algorithm started Ray with `dashboard=True`."""
        if self.config.num_rollout_workers == 0:
            return None
        from relayrl.runtime.cluster import dashboard_url

        return dashboard_url()

    def set_deadline(self, deadline: float | None) -> None:
        """The run ends by time.monotonic() == deadline (--stop-time): a train() call that waits on an outside
        service (DQN's Redis replay) gives up by then. None: no end. Nothing waits outside by default."""

    def stop(self) -> None:
        if isinstance(self.learner, contracts.Stoppable):
            self.learner.stop()
        if self._eager_was is False:  # eager=True switched this process to eager: switch back
            tf_import.tf.config.run_functions_eagerly(False)
        self.workers.stop()
        self._outputs.close()
        self._mlflow.close()

    def __enter__(self) -> Algorithm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
