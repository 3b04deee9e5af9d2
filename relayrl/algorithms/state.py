"""Checkpoints of an Algorithm: the driver-side state (counters, RNG, episode window, the workers' envs),
the learner's files and an in-process replay buffer, written and read back as data (never pickle).

Loop that uses it:  path = algo.save(dir)  ...  algo = Algorithm.from_checkpoint(path)  (base.py)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relayrl.core.config import Config
from relayrl.core.contracts import Fleet, LearnerLike, WorkerStates
from relayrl.core.knobs import CUSTOM_CLASS_KEYS
from relayrl.core.metrics import EpisodeStats
from relayrl.core.saved_state import CheckpointError, cause, read_npz, replay_problem, shown
from relayrl.models import networks
from relayrl.models.obs_stats import RunningMoments
from relayrl.sampling.settings import batch_spec


class CheckpointState:
    """Mixed into Algorithm: get_state / set_state, save / restore, and the hooks an
    algorithm with more state overrides (extra_state, replay_state and their loaders)."""

    config: Config
    workers: Fleet
    learner: LearnerLike
    rng: np.random.Generator
    episodes: EpisodeStats
    obs_moments: RunningMoments | None
    iteration: int
    timesteps_total: int
    time_total_s: float
    weights_version: int

    def get_state(self) -> dict[str, Any]:
        """The driver-side state a checkpoint needs (JSON-able): counters, RNG, episode window, workers."""
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
            "workers": self.workers.get_states() if isinstance(self.workers, WorkerStates) else None,
            "obs_moments": self.obs_moments.state() if self.obs_moments is not None else None,
            "extra": self.extra_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore get_state()'s output. From a checkpoint, `state` has passed checkpoint.verify's schema;
        worker and algorithm-specific parts are checked here against the live objects (CheckpointError)."""
        from relayrl.sampling import state_io

        if self.obs_moments is not None and state.get("obs_moments"):
            state_io.restore_moments(self.obs_moments, state["obs_moments"], "state.json: obs_moments")
        state_io.set_generator_state(self.rng, state["rng"], "state.json: rng")
        self.iteration, self.timesteps_total = state["iteration"], state["timesteps_total"]
        self.time_total_s, self.weights_version = state["time_total_s"], state["weights_version"]
        self.episodes.returns.extend(state["episodes"]["returns"])
        self.episodes.lengths.extend(state["episodes"]["lengths"])
        self.episodes.episodes_total = state["episodes"]["total"]
        if state.get("workers") and isinstance(self.workers, WorkerStates):
            try:
                self.workers.set_states(state["workers"])
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
        self._action_policy_key = ()  # compute_actions: the restored weights, even with equal counters


def built_from_checkpoint(checkpoint_dir: str, overrides: dict[str, Any]) -> Any:
    """Algorithm.from_checkpoint: the algorithm the checkpoint names, built from its (checked) config.json
    with `overrides`, restored; CheckpointError (one line) for anything in the files that does not fit.
    overrides custom_model= / custom_critic= (a class, or your 'module:Class') are the classes a checkpoint
    of a custom-model run needs: it stores their names only, and never imports them."""
    from relayrl.algorithms import config_class
    from relayrl.persistence import checkpoint

    overrides = dict(overrides)
    classes = {key: supplied_class(key, overrides.pop(key)) for key in CUSTOM_CLASS_KEYS if key in overrides}
    state = checkpoint.verify(checkpoint_dir)
    try:
        config = config_class(state["algo"]).from_checkpoint_dict(
            checkpoint.read_config(checkpoint_dir), supplied=overrides, classes=classes
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


def supplied_class(key: str, value: Any) -> type:
    """The caller's class for model[key]: a class, or your own 'package.module:Class' (imported: the
    caller's input, never the checkpoint's)."""
    from relayrl.core.config_io import resolve_callable

    cls = resolve_callable(value, key) if isinstance(value, str) else value
    if not isinstance(cls, type):
        raise ValueError(f"{key} = {shown(value)}: allowed: a tf.keras.Model subclass or 'module:Class'")
    return cls


class InProcessReplayCheckpoint:
    """Checkpoint support for algorithms holding `self.replay` in this process (DQN, SAC, TD3): the buffer
    goes to replay.npz, its sampling RNG and the replay-ratio debt to state.json. Redis replay already
    outlives the process and is left where it is (its sampling RNG is still saved). Listed before Algorithm
    in the bases. Every replay here (uniform, prioritised, Redis, Ape-X's shards) samples with `rng`."""

    replay: Any
    spec: networks.ModelSpec
    _update_debt: float

    def extra_state(self) -> dict[str, Any]:
        return {
            **super().extra_state(),
            "update_debt": self._update_debt,
            "replay_rng": self.replay.rng.bit_generator.state,
        }

    def set_extra_state(self, state: dict[str, Any]) -> None:
        from relayrl.sampling import state_io

        debt = state.get("update_debt", 0.0)
        if not isinstance(debt, (int, float)) or isinstance(debt, bool) or not 0 <= debt < 1:
            # the fraction of a gradient step carried over: a huge one would run that many steps at once
            raise CheckpointError(
                f"state.json: extra.update_debt = {shown(debt)}: allowed: a number in [0, 1)"
            )
        rng_state = state.get("replay_rng")
        if rng_state:
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
    the transitions this algorithm's workers send (sampling.settings.batch_spec)."""

    num_actions = int(spec.action_nvec[0]) if spec.action_kind == "categorical" else None
    problem = replay_problem(arrays, capacity, batch_spec(spec, "transitions"), prioritized, num_actions)
    if problem is not None:
        raise CheckpointError(f"{where}: {problem}")
