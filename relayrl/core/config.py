"""Config base: a flat typed dataclass per algorithm with RLlib-style builder methods.

Every field is declared once with `knob(default, group, check, doc)`; the builder methods
(`.environment() .rollouts() .resources() .training() .debugging() .reporting()`) are one shared
`_update` that checks the key belongs to the group and the value passes the field's check.
`validate()` re-checks everything (fields can be assigned directly or loaded from YAML) plus the
cross-field rules, so a bad config fails at build time, before any actor starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar

from relayrl.core import checks as C

# Fields never shown or written: check messages say ***; config.json, run records and --print-config drop them.
SECRET_FIELDS = ("redis_password",)
GROUPS = ("environment", "rollouts", "resources", "training", "debugging", "reporting", "fault_tolerance")
_CALLABLE_PREFIX = "callable:"
# Fields saying where to connect, listen or write. A checkpoint's values for them are never used (loading one
# must not join a stranger's Ray cluster, send the Redis password elsewhere or write files where it says):
# they keep their defaults unless the caller sets them.
HOST_FIELDS = (
    "address",
    "dashboard",
    "log_dir",
    "replay_backend",
    "redis_address",
    "redis_password",
    "redis_key_prefix",
    "redis_appendonly",
)


def knob(default: Any, group: str, check: C.Check, doc: str) -> Any:
    """Declare a config field: its builder group, its value check and its documentation."""
    if group not in GROUPS:  # a typo in a knob declaration: fail at import, also under python -O
        raise ValueError(f"config group {group!r} is not one of {GROUPS}")
    meta = {"group": group, "check": check, "doc": doc}
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: json.loads(json.dumps(default)), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


DEFAULT_MODEL = {
    "fcnet_hiddens": [64, 64],
    "fcnet_activation": "tanh",
    "conv_filters": [[16, 8, 4], [32, 4, 2]],
    "vf_share_layers": False,
    # running mean/std observation normalisation inside the network (its statistics travel with the weights)
    "normalize_obs": False,
    # initial log std of PPO's state-independent Gaussian (SB3's zoo uses -2 on MuJoCo: less initial noise)
    "log_std_init": 0.0,
}
MODEL_CHECKS = {
    "fcnet_hiddens": C.int_list(min_len=0),
    "fcnet_activation": C.one_of("tanh", "relu", "elu", "swish"),
    "conv_filters": C.conv_filters(),
    "vf_share_layers": C.boolean(),
    "normalize_obs": C.boolean(),
    "log_std_init": C.number(-20, 5),
}


@dataclass
class Config:
    """Fields every algorithm shares. Subclasses add their own and set `algo_name`."""

    algo_name: ClassVar[str] = ""
    algorithm_class: ClassVar[Any] = None  # set by the Algorithm subclass that declares `config_class = ...`

    # --- environment
    env: Any = knob(
        None, "environment", C.env_spec(), "gymnasium id, or a callable f(env_config) -> gymnasium.Env"
    )
    env_config: dict = knob(
        {},
        "environment",
        C.mapping(),
        "keyword arguments for the env (gym.make kwargs or the callable's argument)",
    )
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
        "0 = step each worker's envs in its own thread; N = step them on N threads, so envs whose step blocks on I/O (remote simulators, APIs) stay in flight together",
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
        "TensorFlow intra-op threads of the learner; 'auto' = 1 for MLPs (small ops run fastest unthreaded), all cores for conv nets",
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
    # --- debugging
    seed: Any = knob(
        None, "debugging", C.optional(C.integer(0)), "base seed: env i of worker w gets seed + 1000 * w + i"
    )
    eager: bool = knob(
        False,
        "debugging",
        C.boolean(),
        "run the learner's update (and tf.functions of its process, e.g. a conv policy's forward pass when sampling in-process) eagerly, op by op: breakpoints and prints inside a loss see concrete values; many times slower",
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
                raise ValueError(
                    f"{type(self).__name__}.{group}(): unknown key {key!r}{_did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}"
                )
            self._check_field(key, value)
            setattr(self, key, _merge_model(value) if key == "model" else value)
        return self

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

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if callable(out["env"]):
            out["env"] = _CALLABLE_PREFIX + f"{out['env'].__module__}:{out['env'].__qualname__}"
        return json.loads(json.dumps(out))

    @classmethod
    def from_dict(cls, data: dict) -> Config:
        """A config from your own, trusted dict or YAML: an env written 'callable:module:name' is imported
        here. A checkpoint's config.json is not trusted input: it goes through from_checkpoint_dict."""

        def resolve(value: Any) -> Any:
            if isinstance(value, str) and value.startswith(_CALLABLE_PREFIX):
                return resolve_callable(value[len(_CALLABLE_PREFIX) :])
            return value

        return cls._from_fields(data, resolve, skip=())

    @classmethod
    def from_checkpoint_dict(cls, data: Any, supplied: Collection[str] = ()) -> Config:
        """A config from a checkpoint's config.json: data from elsewhere, so nothing named in it is imported,
        resolved or called. Its env must be a plain id gymnasium has registered already (a 'module:Env-v0'
        id would import the module, a 'callable:...' reference would run code): any other env is refused
        unless the caller supplies one (`supplied` holds the fields the caller sets; their stored values are
        ignored). Fields saying where to connect, listen or write (HOST_FIELDS) keep their defaults.
        Raises ValueError naming the field."""
        from relayrl.core.saved_state import shown

        if not isinstance(data, dict):
            raise ValueError(f"allowed: a JSON object of field: value, got {type(data).__name__}")
        long_key = next((k for k in data if len(k) > 64), None)
        if long_key is not None:
            raise ValueError(f"{cls.__name__}: unknown key {shown(long_key)}")
        skip = set(supplied) | set(HOST_FIELDS)
        return cls._from_fields(data, registered_env_id, skip)

    @classmethod
    def _from_fields(cls, data: dict, env: Callable[[Any], Any], skip: Collection[str]) -> Config:
        """Defaults, then each field of `data` checked and set (the env through `env`), `skip` left out."""
        config = cls()
        names = [f.name for f in dataclasses.fields(cls)]
        for key, value in data.items():
            if key not in names:
                raise ValueError(
                    f"{cls.__name__}: unknown key {key!r}{_did_you_mean(key, names)}; allowed: {', '.join(names)}"
                )
            if key in skip:
                continue
            if key == "env":
                value = env(value)
            config._check_field(key, value)
            setattr(config, key, _merge_model(value) if key == "model" else value)
        return config

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> Config:
        from relayrl.core import yaml_io

        data = yaml_io.load(text) or {}
        if not isinstance(data, dict):
            raise ValueError(
                f"{cls.__name__}: YAML config must be a mapping of field: value, got {type(data).__name__}"
            )
        return cls.from_dict(data)

    def update_from_dict(self, data: dict) -> Config:
        """Apply {field: value} (e.g. from --set or a YAML file) with the same checks as the builders."""
        for key, value in data.items():
            group = self._group_of(key)
            self._update(group, {key: value})
        return self

    def _group_of(self, key: str) -> str:
        names = {f.name: f.metadata["group"] for f in dataclasses.fields(self)}
        if key not in names:
            raise ValueError(
                f"{type(self).__name__}: unknown key {key!r}{_did_you_mean(key, list(names))}; allowed: {', '.join(names)}"
            )
        return names[key]

    @classmethod
    def from_tuned(cls, env_id: str) -> Config:
        """This algorithm's tuned defaults for `env_id` (relayrl/core/tuned/<algo>-<env>.yaml), env set.
        Raises ValueError when no tuned file exists for the pair."""
        from relayrl.core import tuned

        fields, path = tuned.load(cls.algo_name, env_id)
        if path is None:
            raise ValueError(
                f"no tuned {cls.algo_name} config for {env_id!r}; available: {', '.join(tuned.available(cls.algo_name)) or 'none'}"
            )
        return cls().environment(env_id).update_from_dict(fields)

    def copy(self) -> Config:
        return dataclasses.replace(
            self, env_config=dict(self.env_config), model=json.loads(json.dumps(self.model))
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


def _merge_model(value: dict) -> dict:
    merged = json.loads(json.dumps(DEFAULT_MODEL))
    merged.update(value)
    return merged


def _did_you_mean(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def registered_env_id(value: Any) -> str:
    """`value` when it is a plain id in gymnasium's registry (looking one up imports nothing), else
    ValueError: what a checkpoint may name as its env."""
    import gymnasium as gym

    from relayrl.core.saved_state import shown
    from relayrl.envs import make  # noqa: F401 - registers relayrl's own ids (relayrl/SlowCartPole-v1)

    supply = (
        "a checkpoint never imports or calls code: pass the env yourself (relayrl evaluate/export "
        "--env ID, or Algorithm.from_checkpoint(path, env=...))"
    )
    if isinstance(value, str) and value.startswith(_CALLABLE_PREFIX):
        raise ValueError(f"env = {shown(value)} is a Python callable and {supply}")
    if not isinstance(value, str) or ":" in value or value not in gym.registry:
        raise ValueError(f"env = {shown(value)} is not an env id gymnasium has registered, and {supply}")
    return value


def resolve_callable(path: str) -> Callable:
    """'package.module:Name' -> the object: imports the module. Trusted input only (your own code, config
    files and command lines), never a value read from a checkpoint."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"env callable {path!r} cannot be imported: {exc}") from None
    return obj
