"""Config (de)serialisation: dicts, YAML and a checkpoint's config.json.

Your own dicts and YAML are trusted: an env written 'callable:module:name' is imported. A checkpoint's
config.json is not: nothing named in it is imported or called, and the fields saying where to connect,
listen or write (HOST_FIELDS) keep their defaults. `ConfigSerialisation` is mixed into Config
(relayrl/core/config.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Self

from relayrl.core.knobs import CUSTOM_CLASS_KEYS, known_class, unknown_key

if TYPE_CHECKING:
    from relayrl.core.config import Config

CALLABLE_PREFIX = "callable:"
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
    "mlflow_tracking_uri",
)


class ConfigSerialisation:
    """to_dict / from_dict / from_checkpoint_dict / YAML of a Config dataclass (the fields are its own)."""

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if callable(out["env"]):
            out["env"] = CALLABLE_PREFIX + f"{out['env'].__module__}:{out['env'].__qualname__}"
        return json.loads(json.dumps(out))

    @classmethod
    def from_dict(cls, data: dict) -> Self:
        """A config from your own, trusted dict or YAML: an env written 'callable:module:name' is imported
        here. A checkpoint's config.json is not trusted input: it goes through from_checkpoint_dict."""

        def resolve(value: Any) -> Any:
            if isinstance(value, str) and value.startswith(CALLABLE_PREFIX):
                return resolve_callable(value[len(CALLABLE_PREFIX) :])
            return value

        return cls._from_fields(data, resolve, skip=())

    @classmethod
    def from_checkpoint_dict(
        cls, data: Any, supplied: Collection[str] = (), classes: dict[str, type] | None = None
    ) -> Self:
        """A config from a checkpoint's config.json: data from elsewhere, so nothing named in it is imported,
        resolved or called. Its env must be a plain id gymnasium has registered already (a 'module:Env-v0'
        id would import the module, a 'callable:...' reference would run code): any other env is refused
        unless the caller supplies one (`supplied` holds the fields the caller sets; their stored values are
        ignored). Fields saying where to connect, listen or write (HOST_FIELDS) keep their defaults.
        A model naming a custom_model / custom_critic class is refused unless the caller passes that class
        in `classes` ({"custom_model": Class}): it replaces the stored name, which is never imported.
        Raises ValueError naming the field."""
        from relayrl.core.saved_state import shown

        if not isinstance(data, dict):
            raise ValueError(f"allowed: a JSON object of field: value, got {type(data).__name__}")
        long_key = next((k for k in data if len(k) > 64), None)
        if long_key is not None:
            raise ValueError(f"{cls.__name__}: unknown key {shown(long_key)}")
        skip = set(supplied) | set(HOST_FIELDS)
        config = cls._from_fields(data, registered_env_id, skip)
        if "env_wrappers" not in skip:
            from relayrl.envs.wrappers import check_data_wrappers

            check_data_wrappers(config.env_wrappers)  # gymnasium's own only: nothing is imported
        if "model" not in skip:
            config._set_checked("model", checkpoint_model(config.model, classes or {}))
        return config

    @classmethod
    def _from_fields(cls, data: dict, env: Callable[[Any], Any], skip: Collection[str]) -> Self:
        """Defaults, then each field of `data` checked and set (the env through `env`), `skip` left out."""
        config: Config = cls()  # type: ignore[assignment] - mixed into Config only
        names = [f.name for f in dataclasses.fields(config)]
        for key, value in data.items():
            if key not in names:
                raise unknown_key(cls.__name__, key, names)
            if key in skip:
                continue
            config._set_checked(key, env(value) if key == "env" else value)
        return config  # type: ignore[return-value]

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> Self:
        from relayrl.core import yaml_io

        data = yaml_io.load(text) or {}
        if not isinstance(data, dict):
            raise ValueError(
                f"{cls.__name__}: YAML config must be a mapping of field: value, got {type(data).__name__}"
            )
        return cls.from_dict(data)

    @classmethod
    def from_tuned(cls, env_id: str) -> Config:
        """This algorithm's tuned defaults for `env_id` (relayrl/core/tuned/<algo>-<env>.yaml), env set.
        Raises ValueError when no tuned file exists for the pair."""
        from relayrl.core import tuned

        fields, path = tuned.load(cls.algo_name, env_id)
        if path is None:
            available = ", ".join(tuned.available(cls.algo_name)) or "none"
            raise ValueError(f"no tuned {cls.algo_name} config for {env_id!r}; available: {available}")
        return cls().environment(env_id).update_from_dict(fields)


def registered_env_id(value: Any) -> str:
    """`value` when it is a plain id in gymnasium's registry (looking one up imports nothing), else
    ValueError: what a checkpoint may name as its env."""
    import gymnasium as gym

    from relayrl.core.saved_state import shown
    from relayrl.envs import make  # noqa: F401 - registers relayrl's own ids (relayrl/SlowCartPole-v1)
    from relayrl.envs.atari import is_ale_id, register_ale

    supply = (
        "a checkpoint never imports or calls code: pass the env yourself (relayrl evaluate/export "
        "--env ID, or Algorithm.from_checkpoint(path, env=...))"
    )
    if isinstance(value, str) and value.startswith(CALLABLE_PREFIX):
        raise ValueError(f"env = {shown(value)} is a Python callable and {supply}")
    if is_ale_id(value) and ":" not in value and value not in gym.registry:
        register_ale(value)  # imports ale_py, a package relayrl names, never one the file names
    if not isinstance(value, str) or ":" in value or value not in gym.registry:
        raise ValueError(f"env = {shown(value)} is not an env id gymnasium has registered, and {supply}")
    return value


def checkpoint_model(model: dict, classes: dict[str, type]) -> dict:
    """A checkpoint's (already checked) model dict with the caller's classes in place of the class names it
    stores; ValueError naming the key when it names one the caller did not pass, or the other way round."""
    from relayrl.core.saved_state import shown

    model = dict(model)
    for key in CUSTOM_CLASS_KEYS:
        given, stored = classes.get(key), model.get(key)
        if given is None and stored is not None:
            raise ValueError(
                f"model.{key} = {shown(stored)} names a Python class and a checkpoint never imports code: "
                f"pass the class yourself (Python: Algorithm.from_checkpoint(path, {key}=Class), "
                f"CLI: --{key.replace('_', '-')} module:Class)"
            )
        if given is not None and stored is None:
            raise ValueError(f"{key} was passed but this checkpoint's model has no {key}")
        if given is not None:
            model[key] = given
    return model


def custom_class(path: str, key: str) -> type:
    """The class a model dict names: one given as an object in this process (knobs.class_path), else
    imported from 'package.module:Class'. Trusted configs only: a checkpoint's names were replaced by the
    caller's classes before this (checkpoint_model)."""
    found = known_class(path)
    return found if found is not None else resolve_callable(path, f"model.{key}")


def resolve_callable(path: str, what: str = "env callable") -> Callable:
    """'package.module:Name' -> the object: imports the module. Trusted input only (your own code, config
    files and command lines), never a value read from a checkpoint."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what} {path!r} cannot be imported: {exc}") from None
    return obj
