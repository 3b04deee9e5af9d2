"""A rollout worker's state in a checkpoint: envs (see state_io), current observations, episode
accumulators, lives, return statistics and the action-noise RNG. JSON-able, no pickle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from relayrl.models.obs_stats import RunningMoments
from relayrl.sampling import state_io

if TYPE_CHECKING:
    from relayrl.sampling.rollout import RolloutWorker

ARRAYS = ("obs", "prev_done", "ep_return", "ep_length", "disc_return")


def capture(worker: RolloutWorker) -> dict:
    """Everything that makes the worker's next fragment what it will be."""
    return {
        **{name: state_io.encode(getattr(worker, name)) for name in ARRAYS},
        **({"lives": state_io.encode(worker.signals.lives)} if worker.signals.tracks_lives else {}),
        "return_moments": worker.return_moments.state(),
        "policy_rng": worker.policy.rng.bit_generator.state,
        "env": state_io.capture(worker.env),
    }


def restore(worker: RolloutWorker, state: dict) -> None:
    """Restore capture()'s output, read from a checkpoint file: every value must have the type, dtype and
    shape of the one it replaces (state_io.conform); all are checked before any is written. Raises
    CheckpointError naming the field. The attribute names are the worker's, never the file's."""
    from relayrl.core.saved_state import CheckpointError

    missing = sorted((set(ARRAYS) | {"return_moments", "policy_rng", "env"}) - set(state))
    if missing:
        raise CheckpointError(f"worker state lacks {missing}")
    values = {name: state_io.conform(getattr(worker, name), state[name], name) for name in ARRAYS}
    signals = worker.signals
    lives = state_io.conform(signals.lives, state["lives"], "lives") if "lives" in state else None
    return_moments = RunningMoments(())
    state_io.restore_moments(return_moments, state["return_moments"], "return_moments")
    rng = state_io.conform(worker.policy.rng, {"__generator__": state["policy_rng"]}, "policy_rng")
    state_io.restore(worker.env, state["env"])  # checks the whole env snapshot before writing any of it
    for name, value in values.items():
        setattr(worker, name, value)
    worker.return_moments = return_moments
    signals.lives = signals.lives if lives is None else lives  # older files: no lives
    worker.policy.rng.bit_generator.state = rng.bit_generator.state
