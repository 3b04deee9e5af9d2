"""Action distributions in numpy, for sampling on rollout workers (the learner's TF twins live in
keras_models.py). `dist_inputs` are logits (categorical kinds) or means (gaussian)."""

from __future__ import annotations

import numpy as np

LOG_2PI = float(np.log(2.0 * np.pi))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _splits(nvec: tuple) -> list[int]:
    return list(np.cumsum(nvec)[:-1])


CONTINUOUS = ("gaussian", "squashed_gaussian", "deterministic")
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SAC's clamp of the predicted log std


def draw_noise(kind: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Exploration noise for many steps at once (one RNG call per fragment instead of one per step):
    Gumbel(0, 1) for categoricals (Gumbel-max sampling), N(0, 1) for the continuous kinds.
    shape = (..., width) with width the number of logits or action dimensions."""
    if kind in CONTINUOUS:
        return rng.standard_normal(shape, dtype=np.float32)
    return -np.log(-np.log(rng.random(shape, dtype=np.float32) + 1e-20) + 1e-20)


def sample(
    kind: str, nvec: tuple, dist_inputs: np.ndarray, log_std: np.ndarray | None, noise: np.ndarray | None
) -> np.ndarray:
    """Actions from dist inputs and pre-drawn noise (None = deterministic: argmax / mean).
    squashed_gaussian: dist_inputs = [mean, log_std], action tanh(mean + std * noise) in [-1, 1] (SAC);
    deterministic: tanh(dist_inputs) + exp(log_std) * noise clipped to [-1, 1] (TD3's exploration)."""
    if kind == "gaussian":
        return dist_inputs if noise is None else dist_inputs + np.exp(log_std) * noise
    if kind == "squashed_gaussian":
        mean, log_std_out = np.split(dist_inputs, 2, axis=-1)
        if noise is None:
            return np.tanh(mean)
        return np.tanh(mean + np.exp(np.clip(log_std_out, LOG_STD_MIN, LOG_STD_MAX)) * noise)
    if kind == "deterministic":
        action = np.tanh(dist_inputs)
        return action if noise is None else np.clip(action + np.exp(log_std) * noise, -1.0, 1.0)
    if noise is not None:
        dist_inputs = dist_inputs + noise
    if kind == "categorical":
        return dist_inputs.argmax(axis=-1)
    return np.stack([part.argmax(axis=-1) for part in np.split(dist_inputs, _splits(nvec), axis=-1)], axis=-1)


def log_prob(
    kind: str, nvec: tuple, dist_inputs: np.ndarray, log_std: np.ndarray | None, actions: np.ndarray
) -> np.ndarray:
    """log pi(a|s) for a batch, [B] float32."""
    if kind == "gaussian":
        z = (actions - dist_inputs) / np.exp(log_std)
        return (-0.5 * (z * z + LOG_2PI) - log_std).sum(axis=-1).astype(np.float32)
    if kind == "categorical":
        logp = _log_softmax(dist_inputs)
        return np.take_along_axis(logp, actions.reshape(-1, 1).astype(np.int64), axis=-1)[:, 0]
    parts = np.split(dist_inputs, _splits(nvec), axis=-1)
    total = np.zeros(len(dist_inputs), np.float32)
    for i, part in enumerate(parts):
        total += np.take_along_axis(_log_softmax(part), actions[:, i : i + 1].astype(np.int64), axis=-1)[:, 0]
    return total
