"""Config base: a flat typed dataclass per algorithm with RLlib-style builder methods.

Every field is declared once with `knob(default, group, check, doc)`; the builder methods
(`.environment() .rollouts() .resources() .training() .debugging() .reporting()`) are one shared
`_update` that checks the key belongs to the group and the value passes the field's check.
`validate()` re-checks everything (fields can be assigned directly or loaded from YAML) plus the
cross-field rules, so a bad config fails at build time, before any actor starts.
Field declaration lives in relayrl/core/knobs.py, (de)serialisation in relayrl/core/config_io.py.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from relayrl.core import checks as C
from relayrl.core.config_io import ConfigSerialisation
from relayrl.core.env_fields import EnvironmentFields
from relayrl.core.knobs import (
    DEFAULT_MODEL,
    MODEL_CHECKS,
    SECRET_FIELDS,
    knob,
    merge_atari,
    merge_model,
    unknown_key,
)


@dataclass
class Config(EnvironmentFields, ConfigSerialisation):
    """Fields every algorithm shares. Subclasses add their own and set `algo_name`."""

    algo_name: ClassVar[str] = ""
    algorithm_class: ClassVar[Any] = None  # set by the Algorithm subclass that declares `config_class = ...`

    # --- rollouts
    num_rollout_workers: int = knob(
        0, "rollouts", C.integer(0), "Ray rollout worker actors; 0 samples in the driver with no Ray"
    )
    num_envs_per_worker: int = knob(
        8, "rollouts", C.integer(1, C.MAX_ENVS), "vectorised envs stepped together by each worker"
    )
    num_env_threads: int = knob(
        0,
        "rollouts",
        C.integer(0),
        "0 = step each worker's envs in its own thread; N = step them on N threads, so envs whose step "
        "blocks on I/O (remote simulators, APIs) stay in flight together",
    )
    vector_backend: str = knob(
        "gymnasium",
        "rollouts",
        C.one_of("gymnasium", "envpool"),
        "how a worker steps its envs: gymnasium vector envs, or envpool's C++ thread pool (ALE ids, the "
        "'envpool' extra)",
    )
    rollout_fragment_length: Any = knob(
        "auto",
        "rollouts",
        C.auto_or(C.integer(1)),
        "steps per env per fragment; 'auto' = train_batch_size / (workers * envs)",
    )
    # --- resources
    num_gpus: float = knob(
        0,
        "resources",
        C.number(0),
        "GPUs for the learner (0 = CPU, hides GPUs from it; 1 = needs a visible GPU)",
    )
    num_cpus_per_worker: float = knob(
        1, "resources", C.number(0, strict=True), "CPUs reserved per rollout worker actor"
    )
    learner_placement: str = knob(
        "auto",
        "resources",
        C.one_of("auto", "driver", "actor"),
        "where the learner runs: 'auto' = a Ray actor holding the GPUs when num_gpus > 0, else the driver",
    )
    learner_threads: Any = knob(
        "auto",
        "resources",
        C.auto_or(C.integer(1)),
        "TensorFlow intra-op threads of the learner; 'auto' = 1 for MLPs (small ops run fastest "
        "unthreaded), all cores for conv nets",
    )
    dashboard: bool = knob(
        False, "resources", C.boolean(), "start the Ray dashboard (bound to 127.0.0.1) with the embedded Ray"
    )
    address: Any = knob(
        None,
        "resources",
        C.optional(C.ray_address()),
        "Ray address to join ('auto' or host:port); None starts an embedded Ray",
    )
    # --- training (shared)
    lr: float = knob(3e-4, "training", C.number(0, strict=True), "learning rate")
    lr_schedule: Any = knob(
        None, "training", C.optional(C.schedule()), "[[timestep, lr], ...] piecewise-linear; overrides lr"
    )
    gamma: float = knob(0.99, "training", C.number(0, 1), "discount factor")
    grad_clip: Any = knob(
        None, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )
    train_batch_size: int = knob(4000, "training", C.batch_size(), "env steps per training iteration")
    model: dict = knob(
        DEFAULT_MODEL, "training", C.model(MODEL_CHECKS), "network options: " + ", ".join(DEFAULT_MODEL)
    )
    # --- evaluation while training
    evaluation_interval: Any = knob(
        None,
        "evaluation",
        C.optional(C.integer(1)),
        "evaluate every N training iterations on separately seeded envs (None = never)",
    )
    evaluation_episodes: int = knob(10, "evaluation", C.integer(1, 100_000), "episodes per evaluation")
    evaluation_explore: bool = knob(
        False, "evaluation", C.boolean(), "evaluate the exploring policy (default: deterministic actions)"
    )
    # --- debugging
    seed: Any = knob(
        None, "debugging", C.optional(C.integer(0)), "base seed: env i of worker w gets seed + 1000 * w + i"
    )
    eager: bool = knob(
        False,
        "debugging",
        C.boolean(),
        "run the learner's update (and tf.functions of its process, e.g. a conv policy's forward pass "
        "when sampling in-process) eagerly, op by op: breakpoints and prints inside a loss see concrete "
        "values; many times slower",
    )
    # --- fault tolerance
    max_worker_restarts: int = knob(
        3,
        "fault_tolerance",
        C.integer(0),
        "restarts allowed per rollout worker before the run stops with WorkerFailedError",
    )
    restart_backoff_s: float = knob(
        1.0,
        "fault_tolerance",
        C.number(0),
        "wait before a worker's k-th consecutive restart: restart_backoff_s * 2^(k-1)",
    )
    sample_timeout_s: Any = knob(
        300.0,
        "fault_tolerance",
        C.optional(C.number(0, strict=True)),
        "a worker that has not returned its fragment by then is restarted (None = wait forever)",
    )
    recreate_failed_envs: bool = knob(
        False,
        "fault_tolerance",
        C.boolean(),
        "rebuild a worker's envs in place when one raises, instead of restarting the worker",
    )
    # --- reporting
    log_dir: Any = knob(
        None, "reporting", C.optional(C.string()), "directory for TensorBoard scalars (None = no files)"
    )
    mlflow_tracking_uri: Any = knob(
        None,
        "reporting",
        C.optional(C.string()),
        "also log params and metrics to MLflow at this tracking URI (e.g. 'file:./mlruns'); None = off",
    )
    mlflow_experiment: str = knob("relayrl", "reporting", C.string(), "MLflow experiment name")
    metrics_num_episodes_for_smoothing: int = knob(
        100, "reporting", C.integer(1), "completed episodes averaged in episode_reward_mean"
    )

    # ------------------------------------------------------------------ builder methods
    def environment(self, env: Any = None, **kwargs: Any) -> Config:
        if env is not None:
            kwargs["env"] = env
        return self._update("environment", kwargs)

    def rollouts(self, **kwargs: Any) -> Config:
        return self._update("rollouts", kwargs)

    def resources(self, **kwargs: Any) -> Config:
        return self._update("resources", kwargs)

    def training(self, **kwargs: Any) -> Config:
        return self._update("training", kwargs)

    def evaluation(self, **kwargs: Any) -> Config:
        return self._update("evaluation", kwargs)

    def debugging(self, **kwargs: Any) -> Config:
        return self._update("debugging", kwargs)

    def fault_tolerance(self, **kwargs: Any) -> Config:
        return self._update("fault_tolerance", kwargs)

    def reporting(self, **kwargs: Any) -> Config:
        return self._update("reporting", kwargs)

    def _update(self, group: str, kwargs: dict) -> Config:
        allowed = [f.name for f in dataclasses.fields(self) if f.metadata["group"] == group]
        for key, value in kwargs.items():
            if key not in allowed:
                raise unknown_key(f"{type(self).__name__}.{group}()", key, allowed)
            self._set_checked(key, value)
        return self

    def _set_checked(self, name: str, value: Any) -> None:
        """Check `value` for field `name`, then set it; a model or atari dict completes the field default."""
        self._check_field(name, value)
        merge = {"model": merge_model, "atari": merge_atari}.get(name)
        setattr(self, name, merge(value, self._field(name).default_factory()) if merge else value)

    # ------------------------------------------------------------------ validation
    def _check_field(self, name: str, value: Any) -> None:
        check: C.Check = self._field(name).metadata["check"]
        problem = check(value)
        if problem is not None:
            shown = "***" if name in SECRET_FIELDS else repr(value)
            raise ValueError(f"{type(self).__name__}.{name} = {shown} is invalid: {problem}")

    def _field(self, name: str) -> dataclasses.Field:
        return {f.name: f for f in dataclasses.fields(self)}[name]

    def validate(self) -> None:
        """Check every field and the cross-field rules; raise ValueError naming the field."""
        for f in dataclasses.fields(self):
            self._check_field(f.name, getattr(self, f.name))
        if self.env is None:
            raise ValueError(
                f"{type(self).__name__}.env is not set: call .environment('CartPole-v1') or pass a callable"
            )
        if isinstance(self.env, str):
            from relayrl.envs.make import check_env_id

            try:
                check_env_id(self.env)
            except ValueError as exc:
                raise ValueError(f"{type(self).__name__}.env = {self.env!r} is invalid: {exc}") from None
        from relayrl.envs.atari import is_ale_id

        if self.vector_backend == "envpool" and not is_ale_id(self.env):
            raise ValueError(
                f"{type(self).__name__}.vector_backend = 'envpool' is invalid for env {self.env!r}: allowed: "
                "'gymnasium' (envpool runs ALE ids, e.g. 'ALE/Breakout-v5')"
            )
        fragment = self.resolved_fragment_length()
        if fragment < 1:
            raise ValueError(
                f"{type(self).__name__}.train_batch_size = {self.train_batch_size} is too small for "
                f"{self.num_workers_effective()} worker(s) x {self.num_envs_per_worker} envs: it must be >= "
                f"{self.num_workers_effective() * self.num_envs_per_worker}"
            )

    def num_workers_effective(self) -> int:
        return max(1, self.num_rollout_workers)

    def resolved_fragment_length(self) -> int:
        """Steps per env per fragment, so that all workers together fill train_batch_size."""
        if self.rollout_fragment_length != "auto":
            return int(self.rollout_fragment_length)
        return self.train_batch_size // (self.num_workers_effective() * self.num_envs_per_worker)

    # ------------------------------------------------------------------ field updates
    def update_from_dict(self, data: dict) -> Config:
        """Apply {field: value} (e.g. from --set or a YAML file) with the same checks as the builders."""
        for key, value in data.items():
            group = self._group_of(key)
            self._update(group, {key: value})
        return self

    def _group_of(self, key: str) -> str:
        names = {f.name: f.metadata["group"] for f in dataclasses.fields(self)}
        if key not in names:
            raise unknown_key(type(self).__name__, key, names)
        return names[key]

    def copy(self) -> Config:
        return dataclasses.replace(
            self,
            env_config=dict(self.env_config),
            env_wrappers=json.loads(json.dumps(self.env_wrappers)),
            model=json.loads(json.dumps(self.model)),
            atari=dict(self.atari),
        )

    def build(self):
        """Validate and return the Algorithm (imports TensorFlow only now)."""
        if self.algorithm_class is None:
            raise TypeError(
                f"{type(self).__name__} has no Algorithm: declare `config_class = "
                f"{type(self).__name__}` on the Algorithm subclass"
            )
        self.validate()
        return self.algorithm_class(self.copy())

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}
