"""Network specs from gymnasium spaces and their numpy initialisation (the forward pass: numpy_forward.py).

TensorFlow-free on purpose: rollout workers with MLP policies run the forward pass in numpy and never
import TensorFlow. `keras_models.py` builds the Keras model from the same `ModelSpec`, with weights in the
same order; a unit test checks that both give the same outputs.

Weights layout (a flat list of arrays, the unit of exchange between learner and workers):
  torso layers (shared; conv + dense when the torso is shared) -> policy branch -> [log_std] -> value branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from relayrl.models.image_torso import image_torso


@dataclass(frozen=True)
class Layer:
    kind: str  # "dense" | "conv"
    shape: tuple  # kernel shape: (in, out) or (k, k, in, out)
    activation: str | None
    gain: float  # orthogonal-init gain (sqrt 2 for hidden, 0.01 policy head, 1 value head)
    stride: int = 1


@dataclass(frozen=True)
class CustomSpec:
    """Your own Keras classes (model dict keys custom_model, custom_critic and their kwargs), resolved on the
    driver: the spec ships them to workers and learner actors (Ray pickles a __main__ class by value).
    outputs: what call() returns, set by the algorithm: "q" | "dueling" | "policy_value" | "policy"."""

    model_cls: type | None
    model_kwargs: dict
    critic_cls: type | None
    critic_kwargs: dict
    outputs: str
    model_path: str | None = None  # as the config names it, for messages
    critic_path: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    obs_kind: str  # "box" | "discrete" | "image"
    obs_shape: tuple  # network input shape for one observation (after one-hot / flatten)
    action_kind: (
        str  # "categorical" | "multi_categorical" | "gaussian" | "squashed_gaussian" | "deterministic"
    )
    action_nvec: tuple  # categorical sizes, or (action_dim,) for the continuous kinds
    torso: tuple
    pi: tuple
    vf: tuple
    # normalise observations by running mean/std: two more arrays (mean, std) at the end of the weights list
    obs_norm: bool = False
    log_std_init: float = 0.0  # initial value of the gaussian head's free log_std
    custom: CustomSpec | None = None  # your own tf.keras.Model / critic class (docs/custom_model.md)
    compute_dtype: str = "float32"  # the torso's arithmetic; "bfloat16": mixed precision (keras_models.py)
    weight_init: str = "orthogonal"  # "orthogonal" | "uniform_fan_in" (init_weights; model's "auto" resolved)

    @property
    def numpy_forward_ok(self) -> bool:
        if self.custom is not None and self.custom.model_cls is not None:
            return False  # numpy cannot run your model: workers use keras_models.TFForward
        if self.compute_dtype != "float32":
            return False  # workers act with the learner's arithmetic, which numpy does not have
        return all(layer.kind == "dense" for layer in self.torso + self.pi + self.vf)

    @property
    def dist_dim(self) -> int:
        """Width of the policy head: logits, means, or [means, log_stds] for the squashed gaussian."""
        return int(sum(self.action_nvec)) * (2 if self.action_kind == "squashed_gaussian" else 1)


# Continuous heads an algorithm can ask for instead of PPO's diagonal gaussian with a free log_std:
# SAC's tanh-squashed gaussian with state-dependent log_std, TD3's deterministic tanh policy.
CONTINUOUS_HEADS = ("gaussian", "squashed_gaussian", "deterministic")


def spec_from_spaces(
    obs_space: gym.Space, action_space: gym.Space, model: dict, head: str | None = None
) -> ModelSpec:
    obs_kind, obs_shape = _obs_layout(obs_space)
    action_kind, nvec = action_layout(action_space)
    if head is not None and action_kind == "gaussian":
        if head not in CONTINUOUS_HEADS:
            raise ValueError(f"policy head {head!r} is not one of {CONTINUOUS_HEADS}")
        action_kind = head
    act = model["fcnet_activation"]
    hiddens = list(model["fcnet_hiddens"])
    torso: list[Layer] = []
    width = int(np.prod(obs_shape))
    if obs_kind == "image":
        filters_list, hiddens, act = image_torso(model, obs_shape)
        channels, side = obs_shape[-1], np.array(obs_shape[:2])
        for filters, kernel, stride in filters_list:
            torso.append(Layer("conv", (kernel, kernel, channels, filters), "relu", np.sqrt(2), stride))
            channels, side = filters, (side - kernel) // stride + 1  # "valid" padding
            if np.any(side < 1):
                raise ValueError(
                    f"model.conv_filters = {model['conv_filters']} shrink the {obs_shape} image below 1 pixel"
                )
        width = int(channels * side[0] * side[1])
    shared = obs_kind == "image" or model["vf_share_layers"]
    if shared:
        for h in hiddens:
            torso.append(Layer("dense", (width, h), act, np.sqrt(2)))
            width = h
        pi_in = vf_in = width
        pi, vf = [], []
    else:
        pi, pi_in = _dense_stack(width, hiddens, act)
        vf, vf_in = _dense_stack(width, hiddens, act)
    dist_dim = int(sum(nvec)) * (2 if action_kind == "squashed_gaussian" else 1)
    pi.append(Layer("dense", (pi_in, dist_dim), None, 0.01))
    vf.append(Layer("dense", (vf_in, 1), None, 1.0))
    obs_norm = bool(model.get("normalize_obs", False))
    if obs_norm and obs_kind != "box":
        raise ValueError(
            f"model.normalize_obs needs a Box observation space (this one is {obs_kind}: {obs_space})"
        )
    # relayrl's own networks' options, which a custom_model decides itself: (the values that leave the choice
    # to it, what it does instead). weight_init "orthogonal" was the default in configs saved before "auto".
    own_networks_only = {
        "compute_dtype": (
            ("float32",),
            "picks its own (a Keras dtype policy, e.g. dtype='mixed_bfloat16' on its layers)",
        ),
        "weight_init": (("auto", "orthogonal"), "initialises its own layers (their kernel_initializer)"),
    }
    for key, (unset, instead) in own_networks_only.items():
        if model.get(key, unset[0]) not in unset and model.get("custom_model") is not None:
            raise ValueError(
                f"model.{key} is for relayrl's own networks; a custom_model {instead}: remove one"
            )
    return ModelSpec(
        obs_kind,
        obs_shape,
        action_kind,
        nvec,
        tuple(torso),
        tuple(pi),
        tuple(vf),
        obs_norm,
        float(model.get("log_std_init", 0.0)),
        custom_spec(model, action_kind),
        model.get("compute_dtype", "float32"),
        resolved_weight_init(model.get("weight_init", "auto"), action_kind),
    )


def resolved_weight_init(weight_init: str, action_kind: str) -> str:
    """model.weight_init "auto": TD3's deterministic actor starts as SB3, CleanRL and the TD3 paper's code
    start it (torch's nn.Linear default: uniform_fan_in), every other network built here orthogonal.
    SAC/TD3's TwinQ critics (models/actor_critic_models.py) always start uniform_fan_in, as SB3's do."""
    if weight_init != "auto":
        return weight_init
    return "uniform_fan_in" if action_kind == "deterministic" else "orthogonal"


def custom_spec(model: dict, action_kind: str) -> CustomSpec | None:
    """The model dict's custom classes, resolved (imported when named by path: trusted configs only), or
    None. A policy of SAC / TD3 returns its dist inputs alone; every other head also a value."""
    from relayrl.core.config_io import custom_class
    from relayrl.core.knobs import CUSTOM_CLASS_KEYS

    paths = model.get("custom_model"), model.get("custom_critic")
    if paths == (None, None):
        return None
    model_cls, critic_cls = (
        None if p is None else custom_class(p, k) for p, k in zip(paths, CUSTOM_CLASS_KEYS)
    )
    outputs = "policy" if action_kind in ("squashed_gaussian", "deterministic") else "policy_value"
    if critic_cls is not None and outputs != "policy":
        raise ValueError("model.custom_critic is used by SAC and TD3 only (their twin critics): remove it")
    kwargs = dict(model.get("custom_model_kwargs") or {}), dict(model.get("custom_critic_kwargs") or {})
    return CustomSpec(model_cls, kwargs[0], critic_cls, kwargs[1], outputs, *paths)


def _dense_stack(width: int, hiddens: Sequence[int], act: str) -> tuple[list[Layer], int]:
    layers = []
    for h in hiddens:
        layers.append(Layer("dense", (width, h), act, np.sqrt(2)))
        width = h
    return layers, width


def _obs_layout(space: gym.Space) -> tuple[str, tuple]:
    if isinstance(space, gym.spaces.Discrete):
        return "discrete", (int(space.n),)
    if isinstance(space, gym.spaces.Box):
        if len(space.shape) == 3:
            return "image", tuple(int(x) for x in space.shape)
        return "box", (int(np.prod(space.shape)),)
    raise ValueError(
        f"observation space {space} is not supported: allowed Box (vector or HxWxC image) or Discrete"
    )


def action_layout(space: gym.Space) -> tuple[str, tuple]:
    if isinstance(space, gym.spaces.Discrete):
        return "categorical", (int(space.n),)
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return "multi_categorical", tuple(int(n) for n in space.nvec)
    if (
        isinstance(space, gym.spaces.Box)
        and len(space.shape) == 1
        and np.issubdtype(space.dtype, np.floating)
    ):
        return "gaussian", (int(space.shape[0]),)
    raise ValueError(f"action space {space} is not supported")


def preprocess_obs(spec: ModelSpec, obs: np.ndarray) -> np.ndarray:
    """Batch of raw observations -> network input: one-hot for Discrete, float32 vectors for Box;
    images stay uint8 (4x smaller to ship) and are scaled inside the network."""
    if spec.obs_kind == "discrete":
        return np.eye(spec.obs_shape[0], dtype=np.float32)[np.asarray(obs, dtype=np.int64)]
    if spec.obs_kind == "image":
        return np.asarray(obs)
    return np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)


def all_layers(spec: ModelSpec) -> list[Layer]:
    return list(spec.torso) + list(spec.pi) + list(spec.vf)


def init_weights(spec: ModelSpec, rng: np.random.Generator) -> list[np.ndarray]:
    """model.weight_init's kernels and biases, log_std = model.log_std_init (0 as in CleanRL / SB3):
    "orthogonal": orthogonal kernels with per-layer gains, zero biases; "uniform_fan_in": kernels and
    biases U(+-1/sqrt(fan_in)). A custom model's are its own initialisers' (built here with TensorFlow,
    seeded from `rng`)."""
    if spec.custom is not None and spec.custom.model_cls is not None:
        from relayrl.models.custom_models import initial_weights

        return initial_weights(spec, int(rng.integers(2**31)))
    weights: list[np.ndarray] = []
    for i, layer in enumerate(all_layers(spec)):
        fan_in, fan_out = int(np.prod(layer.shape[:-1])), layer.shape[-1]
        if spec.weight_init == "uniform_fan_in":
            bound = 1.0 / np.sqrt(fan_in)
            kernel = rng.uniform(-bound, bound, (fan_in, fan_out))
            bias = rng.uniform(-bound, bound, fan_out).astype(np.float32)
        else:
            flat = rng.standard_normal((fan_in, fan_out))
            q, r = np.linalg.qr(flat if fan_in >= fan_out else flat.T)
            q = q * np.sign(np.diag(r))
            kernel = layer.gain * (q if fan_in >= fan_out else q.T)
            bias = np.zeros(fan_out, np.float32)
        weights += [kernel.reshape(layer.shape).astype(np.float32), bias]
        if spec.action_kind == "gaussian" and i == len(spec.torso) + len(spec.pi) - 1:
            weights.append(
                np.full(spec.action_nvec[0], spec.log_std_init, np.float32)
            )  # log_std, state-independent
    if spec.obs_norm:
        weights += [
            np.zeros(spec.obs_shape, np.float32),
            np.ones(spec.obs_shape, np.float32),
        ]  # obs mean, std
    return weights
