"""Algorithm: built from a Config; `train()` runs one iteration and returns the flat result dict.

Subclasses implement `training_step()` (sample -> update -> sync, a few lines) and `build_learner()`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import psutil

from relayrl.core.config import Config
from relayrl.core.metrics import EpisodeStats, Timers, WorkerStats
from relayrl.core.saved_state import CheckpointError, cause, read_npz
from relayrl.core.types import Fragment
from relayrl.envs.make import env_name, env_spaces
from relayrl.learning.placement import build_learner_here, resolve_placement
from relayrl.models import networks, tf_import
from relayrl.models.obs_stats import RunningMoments
from relayrl.runtime import make_workers
from relayrl.sampling.rollout import SamplerSettings


class Algorithm:
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

    def __init__(self, config: Config, workers_factory: Callable[[SamplerSettings], Any] | None = None):
        """`workers_factory(settings)` replaces the local / Ray rollout workers with another runtime
        (the policy server's external episodes); it needs sample / sync_weights / healthy / stop."""
        self.config = config
        self.obs_space, self.action_space, self.spec = self.check_env(config)
        self.rng = np.random.default_rng(config.seed)
        initial_weights = networks.init_weights(self.spec, self.rng)
        learner_on_driver = resolve_placement(config.learner_placement, config.num_gpus) == "driver"
        if config.num_rollout_workers > 0 and learner_on_driver and self.uses_tensorflow:
            # Start the Ray cluster and the TF-free worker actors while TensorFlow imports on another
            # thread (~2.5 s each on this machine). Ray is imported first: the two share dependencies.
            from relayrl.runtime import ray_workers  # noqa: F401

            tf_import.load_in_background()
        if workers_factory is None:
            self.workers = self.make_workers()
        else:
            self.workers = workers_factory(self.sampler_settings())
        try:
            self.learner = self.make_learner()  # traces the update while the actors start
            self.learner.set_weights(initial_weights)
            self.workers.wait_ready()
        except BaseException:
            if hasattr(getattr(self, "learner", None), "stop"):
                self.learner.stop()
            self.workers.stop()  # never leave actors (or an embedded Ray) behind a failed build
            raise
        self.weights_version = 0
        self.workers.sync_weights(initial_weights, self.weights_version)
        self.timers = Timers()
        self.episodes = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self.worker_stats = WorkerStats()
        self._process = psutil.Process()
        self.iteration = 0
        self.timesteps_total = 0
        self.time_total_s = 0.0
        self.obs_moments = RunningMoments(self.spec.obs_shape) if self.spec.obs_norm else None
        self._logger = None
        if config.log_dir:
            from relayrl.persistence.logger import TensorBoardLogger

            self._logger = TensorBoardLogger(config.log_dir)
        self._record = None  # config.json, progress.csv, learning_curve.png in the log dir
        if config.log_dir:
            from relayrl.persistence.run_record import RunRecord

            self._record = RunRecord(config.log_dir, config.algo_name, config.to_dict())

    # ------------------------------------------------------------------ to implement
    @staticmethod
    def build_learner(spec: networks.ModelSpec, config: Config, strategy=None):
        """This algorithm's Learner (runs in whichever process hosts the learner)."""
        raise NotImplementedError

    def training_step(self) -> dict[str, float]:
        raise NotImplementedError

    def make_workers(self):
        """The worker fleet (local or Ray); asynchronous algorithms return their own fleet."""
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

    def with_fault_tolerance(self, workers):
        """Apply the config's fault_tolerance fields to a fleet that restarts workers (Ray fleets do)."""
        c = self.config
        if hasattr(workers, "set_fault_tolerance"):
            workers.set_fault_tolerance(c.max_worker_restarts, c.restart_backoff_s, c.sample_timeout_s)
        return workers

    def sampler_settings(self) -> SamplerSettings:
        c = self.config
        return SamplerSettings(
            env=c.env,
            env_config=c.env_config,
            num_envs=c.num_envs_per_worker,
            fragment_length=c.resolved_fragment_length(),
            spec=self.spec,
            gamma=c.gamma,
            lambda_=getattr(c, "lambda_", 1.0),
            seed=c.seed,
            num_env_threads=c.num_env_threads,
            recreate_failed_envs=c.recreate_failed_envs,
            **self.sampler_extras(),
        )

    def worker_class(self) -> type | None:
        """The Ray actor class of the rollout workers (None: the standard RayRolloutWorker)."""
        return None

    def sampler_extras(self) -> dict[str, Any]:
        """Off-policy algorithms: {"postprocess": "transitions", "n_step": n, "explore": {...}}."""
        return {}

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
            from relayrl.runtime.ray_workers import RemoteLearner

            return RemoteLearner(
                factory, c.num_gpus, c.learner_threads, self.spec.numpy_forward_ok, c.address
            )
        return build_learner_here(factory, c.num_gpus, c.learner_threads, self.spec.numpy_forward_ok)

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
            allowed = {
                "categorical": "Discrete",
                "multi_categorical": "MultiDiscrete",
                "gaussian": "Box (1-D float)",
            }
            raise ValueError(
                f"{cls.name} does not support the action space {action_space} of env "
                f"{env_name(config.env)!r}; allowed: {', '.join(allowed[k] for k in cls.action_kinds)}"
                f"{cls.action_space_hint}"
            )
        try:
            spec = networks.spec_from_spaces(obs_space, action_space, config.model, head=cls.continuous_head)
        except ValueError as exc:
            raise ValueError(f"{cls.name} cannot use env {env_name(config.env)!r}: {exc}") from None
        if spec.obs_norm and not cls.supports_obs_norm:
            raise ValueError(
                f"model.normalize_obs = True is not supported by {cls.name}; allowed with: ppo, a2c, "
                f"reinforce (set it to False)"
            )
        return obs_space, action_space, spec

    def record_fragments(self, fragments: list[Fragment], latencies: list[float] | None = None) -> None:
        """Count the fragments' env steps and episodes; `latencies` default to the fleet's last round's."""
        if latencies is None:
            latencies = getattr(self.workers, "last_latencies_s", None) or [
                f.sample_time_s for f in fragments
            ]
        for fragment, latency in zip(fragments, latencies):
            self.episodes.add(fragment)
            self.worker_stats.add(fragment, latency, self.weights_version)
            self.timesteps_total += fragment.env_steps
            if self.obs_moments is not None and fragment.obs_moments is not None:
                self.obs_moments.merge(*fragment.obs_moments)

    def owed_updates(self, new_env_steps: int, replay_ratio: float) -> int:
        """Whole gradient steps owed at `replay_ratio` steps per env step; the fraction carries over."""
        self._update_debt = getattr(self, "_update_debt", 0.0) + replay_ratio * new_env_steps
        num_updates = int(self._update_debt)
        self._update_debt -= num_updates
        return num_updates

    def apply_lr_schedule(self) -> None:
        """Follow config.lr_schedule (piecewise linear in env steps) when one is set."""
        if self.config.lr_schedule:
            from relayrl.core.ops import piecewise_linear

            self.learner.set_lr(piecewise_linear(self.config.lr_schedule, self.timesteps_total))

    def publish_weights(self) -> None:
        """New version out to the workers (one ray.put on the Ray runtime; a learner actor's weights go
        straight from its process to the object store, never through the driver)."""
        self.weights_version += 1
        if self.obs_moments is not None:  # the new observation statistics ride with this version
            weights = self.learner.get_weights()
            weights[-2:] = [self.obs_moments.mean.astype(np.float32), self.obs_moments.std.astype(np.float32)]
            self.learner.set_weights(weights)
        weights_ref = getattr(self.learner, "weights_ref", None)
        if weights_ref is not None and self.config.num_rollout_workers > 0:
            self.workers.sync_weights_ref(weights_ref(), self.weights_version)
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
            **{f"timers/{k}_frac": v / max(elapsed, 1e-9) for k, v in timers.items()},
            **{f"learner/{k}": v for k, v in learner_metrics.items()},
            "workers/healthy": self.workers.healthy(),
            "workers/restarts": getattr(self.workers, "restarts_total", 0),
            "workers/lost_fragments": getattr(self.workers, "lost_fragments", 0),
            **self.worker_stats.pop(elapsed),
            "memory/driver_rss_bytes": self._process.memory_info().rss,
            "memory/object_store_bytes": getattr(self.workers, "object_store_bytes", lambda: 0)(),
        }
        iteration_returns = (
            self.episodes.pop_iteration_returns()
        )  # popped every iteration: nothing accumulates
        if self._logger is not None:
            self._logger.log(result, histograms={"episode_reward_hist": iteration_returns})
        if self._record is not None:
            self._record.log(result)
        return result

    # ------------------------------------------------------------------ checkpoints and export
    def get_state(self) -> dict[str, Any]:
        """The driver-side state a checkpoint needs (JSON-able): counters, RNG, episode window, workers."""
        get_states = getattr(self.workers, "get_states", None)
        return {
            "iteration": self.iteration,
            "timesteps_total": self.timesteps_total,
            "time_total_s": self.time_total_s,
            "weights_version": self.weights_version,
            "rng": self.rng.bit_generator.state,
            "episodes": {
                "returns": list(self.episodes.returns),
                "lengths": list(self.episodes.lengths),
                "total": self.episodes.episodes_total,
            },
            "workers": get_states() if get_states is not None else None,
            "obs_moments": self.obs_moments.state() if self.obs_moments is not None else None,
            "extra": self.extra_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore get_state()'s output. From a checkpoint, `state` has passed checkpoint.verify's schema;
        worker and algorithm-specific parts are checked here against the live objects (CheckpointError)."""
        from relayrl.core.saved_state import CheckpointError, cause
        from relayrl.sampling import state_io

        if self.obs_moments is not None and state.get("obs_moments"):
            state_io.restore_moments(self.obs_moments, state["obs_moments"], "state.json: obs_moments")
        state_io.set_generator_state(self.rng, state["rng"], "state.json: rng")
        self.iteration, self.timesteps_total = state["iteration"], state["timesteps_total"]
        self.time_total_s, self.weights_version = state["time_total_s"], state["weights_version"]
        self.episodes.returns.extend(state["episodes"]["returns"])
        self.episodes.lengths.extend(state["episodes"]["lengths"])
        self.episodes.episodes_total = state["episodes"]["total"]
        set_states = getattr(self.workers, "set_states", None)
        if state.get("workers") and set_states is not None:
            try:
                set_states(state["workers"])
            except CheckpointError as exc:  # from this process, or a worker actor's (unwrapped: one line)
                raise CheckpointError(f"state.json: workers: {cause(exc)}") from None
            except ValueError:
                pass  # another worker count: workers start from fresh envs (the resume is then not bit-exact)
        self.set_extra_state(state.get("extra") or {})

    def extra_state(self) -> dict[str, Any]:
        """Algorithm-specific JSON-able state (e.g. DQN's fractional update debt)."""
        return {}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        pass

    def replay_state(self) -> dict[str, np.ndarray] | None:
        """Arrays of a replay buffer held in this process, for replay.npz (None: no such buffer)."""
        return None

    def load_replay_state(self, state: dict[str, np.ndarray]) -> None:
        pass

    def save_learner(self, directory: str) -> None:
        self.learner.save_checkpoint(directory)

    def save(self, checkpoint_dir: str) -> str:
        """Write a complete checkpoint (config, state, learner, replay) atomically; returns its path."""
        from relayrl.persistence import checkpoint

        self._check_weights_finite("checkpoint")
        return checkpoint.save(self, checkpoint_dir)

    def restore(self, checkpoint_dir: str) -> None:
        """Load a checkpoint written by save() into this (identically configured) algorithm. The checkpoint is
        data: verified first (manifest, files, schema), nothing in it is imported or called. Raises
        CheckpointError naming the file; after one, this algorithm is half-restored: build a new one."""
        import os

        from relayrl.persistence import checkpoint

        state = checkpoint.verify(checkpoint_dir, algo=self.config.algo_name)
        try:
            self.learner.restore_checkpoint(os.path.join(checkpoint_dir, "learner"))
            replay_file = os.path.join(checkpoint_dir, "replay.npz")
            if os.path.exists(replay_file):  # listed in the manifest and checked by verify, or refused there
                self.load_replay_state(read_npz(replay_file, "replay.npz"))
            self.set_state(state)
        except CheckpointError as exc:  # a learner actor's error arrives wrapped in Ray's
            raise CheckpointError(f"checkpoint {checkpoint_dir!r}: {cause(exc)}") from None
        self.workers.sync_weights(self.learner.get_weights(), self.weights_version)

    @classmethod
    def from_checkpoint(cls, checkpoint_dir: str, **overrides: Any) -> Algorithm:
        """Build the algorithm a checkpoint was written by, restore it, and return it. `overrides` are config
        fields to change (e.g. num_rollout_workers=0 to evaluate on one machine). The checkpoint's config.json
        is data (Config.from_checkpoint_dict): an env stored as a Python callable, or an id gymnasium has not
        registered, is refused unless you pass `env=`; where to connect, listen or write (address, dashboard,
        log_dir, Redis) comes from `overrides` or the defaults, never from the checkpoint."""
        from relayrl.algorithms import config_class
        from relayrl.persistence import checkpoint

        state = checkpoint.verify(checkpoint_dir)
        try:
            config = config_class(state["algo"]).from_checkpoint_dict(
                checkpoint.read_config(checkpoint_dir), supplied=overrides
            )
        except CheckpointError:
            raise
        except ValueError as exc:
            raise CheckpointError(f"checkpoint {checkpoint_dir!r}: config.json: {exc}") from None
        config.update_from_dict(overrides)
        try:
            algo = config.build()
        except Exception as exc:  # noqa: BLE001 - e.g. env kwargs the env does not take: a refusal, one line
            given = f" with {', '.join(sorted(overrides))} from you" if overrides else ""
            raise CheckpointError(
                f"checkpoint {checkpoint_dir!r}: the config in config.json"
                f"{given} does not build: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            algo.restore(checkpoint_dir)
        except BaseException:
            algo.stop()
            raise
        return algo

    def export_model(self):
        """A tf.Module on this process with head(obs) -> dist inputs and value(obs), holding the current
        weights: what export_policy serves."""
        from relayrl.models.keras_models import ActorCritic

        model = ActorCritic(self.spec)
        model.set_weights(self.learner.get_weights())
        return model

    def export_policy(self, export_dir: str) -> str:
        """A SavedModel with `serving_default` (observation -> deterministic action) and `value`; loading it
        needs TensorFlow only."""
        from relayrl.persistence.export import export_saved_model

        self._check_weights_finite("export")
        return export_saved_model(
            self.export_model(), self.spec, self.obs_space, self.action_space, export_dir
        )

    def export_tflite(self, path: str, quantize: str = "none") -> str:
        """A .tflite file (`path`, or path/policy.tflite for a directory) with the SavedModel's two signatures;
        quantize: "none" (float32), "float16" or "int8" (post-training, calibrated on env observations)."""
        from relayrl.persistence.tflite_export import export_tflite

        return export_tflite(self, path, quantize).path

    def _check_weights_finite(self, what: str) -> None:
        for i, w in enumerate(self.learner.get_weights()):
            if not np.all(np.isfinite(w)):
                raise FloatingPointError(
                    f"refusing to {what}: weight array {i} holds NaN or Inf (iteration {self.iteration})"
                )

    def evaluate(
        self, num_episodes: int = 100, seed: int | None = None, explore: bool = False
    ) -> dict[str, float]:
        """Episodes with the current weights and deterministic actions (greedy / mean) on fresh envs here."""
        from relayrl.sampling.evaluation import evaluate

        return evaluate(
            self.config.env,
            self.config.env_config,
            self.spec,
            self.learner.get_weights(),
            num_episodes,
            seed=seed,
            explore=explore,
        )

    @property
    def dashboard_url(self) -> str | None:
        """The Ray dashboard's URL when this algorithm started Ray with `dashboard=True`."""
        if self.config.num_rollout_workers == 0:
            return None
        from relayrl.runtime.ray_workers import dashboard_url

        return dashboard_url()

    def set_deadline(self, deadline: float | None) -> None:
        """The run ends by time.monotonic() == deadline (the CLI's --stop-time): a train() call that waits on an
        outside service (DQN's Redis replay) gives up by then. None: no end. Nothing waits outside by default."""

    def stop(self) -> None:
        if hasattr(self.learner, "stop"):
            self.learner.stop()
        if (
            getattr(self, "_eager_was", None) is False
        ):  # eager=True switched this process to eager: switch back
            tf_import.tf.config.run_functions_eagerly(False)
        self.workers.stop()
        if self._logger is not None:
            self._logger.close()
        if self._record is not None:
            self._record.close()  # draws learning_curve.png
            self._record = None

    def __enter__(self) -> Algorithm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class InProcessReplayCheckpoint:
    """Checkpoint support for algorithms holding `self.replay` in this process (DQN, SAC, TD3): the buffer
    goes to replay.npz, its sampling RNG and the replay-ratio debt to state.json. Redis replay already
    outlives the process and is left where it is. Listed before Algorithm in the bases."""

    def extra_state(self) -> dict[str, Any]:
        rng = getattr(self.replay, "rng", None)
        return {
            **super().extra_state(),
            "update_debt": getattr(self, "_update_debt", 0.0),
            "replay_rng": rng.bit_generator.state if rng is not None else None,
        }

    def set_extra_state(self, state: dict[str, Any]) -> None:
        from relayrl.core.saved_state import CheckpointError, shown
        from relayrl.sampling import state_io

        debt = state.get("update_debt", 0.0)
        if not isinstance(debt, (int, float)) or isinstance(debt, bool) or not 0 <= debt < 1:
            # the fraction of a gradient step carried over: a huge one would run that many steps at once
            raise CheckpointError(
                f"state.json: extra.update_debt = {shown(debt)}: allowed: a number in [0, 1)"
            )
        rng_state = state.get("replay_rng")
        if rng_state and hasattr(self.replay, "rng"):
            state_io.set_generator_state(self.replay.rng, rng_state, "state.json: extra.replay_rng")
        super().set_extra_state(state)
        self._update_debt = float(debt)

    def replay_state(self) -> dict[str, np.ndarray] | None:
        from relayrl.replay import UniformReplay

        return self.replay.state() if isinstance(self.replay, UniformReplay) else None

    def load_replay_state(self, state: dict[str, np.ndarray]) -> None:
        from relayrl.replay import PrioritizedReplay, UniformReplay

        if isinstance(self.replay, UniformReplay):
            prioritized = isinstance(self.replay, PrioritizedReplay)
            check_replay_arrays(state, self.replay.capacity, self.spec, prioritized, "replay.npz")
            self.replay.load_state(state)


def check_replay_arrays(
    arrays: dict[str, np.ndarray], capacity: int, spec: networks.ModelSpec, prioritized: bool, where: str
) -> None:
    """Refuse (CheckpointError naming `where`) replay arrays that do not fit a buffer of `capacity` rows of
    the transitions this algorithm's workers send (rollout.batch_spec)."""
    from relayrl.core.saved_state import CheckpointError, replay_problem
    from relayrl.sampling.rollout import batch_spec

    num_actions = int(spec.action_nvec[0]) if spec.action_kind == "categorical" else None
    problem = replay_problem(arrays, capacity, batch_spec(spec, "transitions"), prioritized, num_actions)
    if problem is not None:
        raise CheckpointError(f"{where}: {problem}")
