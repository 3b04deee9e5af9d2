"""TFLite export for mobile and embedded targets: the SavedModel of `relayrl.persistence.export`, converted.

The `.tflite` file keeps both signatures of the SavedModel: `serving_default` (observation -> deterministic
action, with the same preprocessing and post-processing) and `value` (observation -> value). Quantisation is
post-training:
- "none": float32 weights and arithmetic; actions match the SavedModel's.
- "float16": weights stored as float16 (half the file), computed in float32.
- "int8": weights and activations int8 where the converter can, calibrated on observations drawn from the env
  with the policy's own (exploring) actions; the observation input and the action/value outputs stay in
  their float / integer types, so the calling code is the same for every variant.
export_tflite then runs the file and the SavedModel on fresh env observations and reports how often the
actions agree: quantisation flips the action only where the policy is nearly indifferent (near-equal logits or
Q-values), so a decisive trained policy keeps ~all of them, an untrained one far fewer.

Runs with `tf.lite.Interpreter` (deprecated in TF 2.21 in favour of LiteRT's `ai_edge_litert`, which
`interpreter()` prefers when installed; the file format is the same).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relayrl.models.tf_import import tf

QUANTIZE = ("none", "float16", "int8")
CALIBRATION_OBSERVATIONS = 1000
CHECK_OBSERVATIONS = 500
FILE_NAME = "policy.tflite"
SIGNATURES = ("serving_default", "value")


def check_quantize(quantize: str) -> None:
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize {quantize!r}: allowed: {', '.join(QUANTIZE)}")


def convert(saved_model_dir: str, quantize: str = "none", calibration: np.ndarray | None = None) -> bytes:
    """A SavedModel with `serving_default` and `value` signatures -> .tflite bytes with the same two."""
    check_quantize(quantize)
    with tempfile.TemporaryDirectory(prefix="relayrl-tflite-") as plain_dir:
        # Re-saved through tf.saved_model.load: the Keras layers' own save/restore functions (which assign the
        # variables) are gone, so the converter sees the weights as constants and folds them in. Converted
        # directly, the variables stay variables the TFLite interpreter never initialises (garbage actions).
        loaded = tf.saved_model.load(saved_model_dir)
        tf.saved_model.save(loaded, plain_dir, signatures={k: loaded.signatures[k] for k in SIGNATURES})
        converter = tf.lite.TFLiteConverter.from_saved_model(plain_dir, signature_keys=list(SIGNATURES))
        _quantisation(converter, quantize, calibration)
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # int8 calibration builds a tf.lite.Interpreter: its deprecation notice
            return converter.convert()


def _quantisation(converter, quantize: str, calibration: np.ndarray | None) -> None:
    if quantize == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quantize == "int8":
        if calibration is None or not len(calibration):
            raise ValueError("int8 quantisation needs calibration observations (a representative dataset)")

        def representative():  # both signatures see the same observations, in batches of 100
            for start in range(0, len(calibration), 100):
                for key in SIGNATURES:
                    yield key, {"observation": calibration[start : start + 100]}

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative


def policy_observations(
    env,
    env_config: dict,
    spec,
    action_space,
    weights: list[np.ndarray],
    count: int = CALIBRATION_OBSERVATIONS,
    seed: int | None = 0,
    num_envs: int = 8,
    explore: dict | None = None,
    wrappers: list | tuple = (),
    atari: dict | None = None,
) -> np.ndarray:
    """`count` raw observations visited by the policy (sampled, exploring actions with the algorithm's
    exploration settings `explore`, e.g. TD3's sigma) on fresh envs."""
    from relayrl.envs.make import make_vector_env
    from relayrl.models.networks import preprocess_obs
    from relayrl.models.policy import Policy

    vec = make_vector_env(env, env_config, num_envs, wrappers=wrappers, atari=atari)
    try:
        policy = Policy(spec, action_space, seed=seed, explore=explore)
        policy.set_weights(weights, 0)
        obs, _ = vec.reset(seed=seed)
        seen = []
        while sum(len(o) for o in seen) < count:
            seen.append(np.array(obs))
            actions = policy.compute_actions(preprocess_obs(spec, obs), explore=True)
            obs, *_ = vec.step(policy.env_actions(actions))
    finally:
        vec.close()
    return np.concatenate(seen)[:count]


def observation_explore(algo) -> dict:
    """The exploration settings `policy_observations` needs for `algo`'s policy. A deterministic head (TD3)
    explores only with its sigma. Epsilon is left out: DQN's starts at 1 (random actions, start states only);
    without it a Q head samples from its Gumbel-perturbed Q-values."""
    explore = algo.worker_sampling().explore
    return {} if explore is None or explore.sigma is None else {"sigma": explore.sigma}


@dataclass
class TFLiteExport:
    """What export_tflite wrote, and how closely it follows the SavedModel on env observations."""

    path: str
    quantize: str
    size_bytes: int
    observations: (
        int  # env observations the check ran on (drawn with the policy, another seed than calibration)
    )
    action_agreement: float  # share of observations with the same action (discrete: every component equal)
    action_max_abs_diff: float  # largest action difference (0 for discrete actions that agree)
    value_max_abs_diff: float

    def summary(self) -> str:
        return (
            f"{self.quantize}: {self.size_bytes / 1024:.1f} KiB; actions equal to the SavedModel's on "
            f"{self.action_agreement:.1%} of {self.observations} env observations (max |diff| "
            f"{self.action_max_abs_diff:.3g}), value max |diff| {self.value_max_abs_diff:.3g}"
        )


def export_tflite(
    algo,
    path: str,
    quantize: str = "none",
    calibration_count: int = CALIBRATION_OBSERVATIONS,
    check_count: int = CHECK_OBSERVATIONS,
) -> TFLiteExport:
    """Write `algo`'s policy as a .tflite file (`path` itself when it ends in .tflite, else
    path/policy.tflite) and compare it with the SavedModel on `check_count` fresh env observations."""
    check_quantize(quantize)
    file_path = os.path.abspath(path if path.endswith(".tflite") else os.path.join(path, FILE_NAME))
    c = algo.config
    weights = algo.learner.get_weights()
    seed = 0 if c.seed is None else c.seed

    explore = observation_explore(algo)

    def observations(count: int, offset: int) -> np.ndarray:
        return policy_observations(
            c.env,
            c.env_config,
            algo.spec,
            algo.action_space,
            weights,
            count,
            seed + offset,
            explore=explore,
            wrappers=c.env_wrappers,
            atari=c.atari,
        )

    calibration = observations(calibration_count, 0) if quantize == "int8" else None
    with tempfile.TemporaryDirectory(prefix="relayrl-tflite-") as saved_model_dir:
        algo.export_policy(saved_model_dir)
        try:
            data = convert(saved_model_dir, quantize, calibration)
        except Exception as exc:  # the converter raises its own ConverterError types
            raise ValueError(
                f"TFLite conversion with quantize={quantize!r} failed for this {algo.spec.obs_kind} "
                f"policy: {type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
            ) from exc
        os.makedirs(os.path.dirname(file_path), exist_ok=True)
        tmp = f"{file_path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, file_path)
        from relayrl.persistence.export import load_policy

        reference = load_policy(saved_model_dir)
        obs = observations(check_count, 1)
        agree, action_diff, value_diff = compare(reference, load_tflite(file_path), obs)
    return TFLiteExport(file_path, quantize, len(data), len(obs), agree, action_diff, value_diff)


def compare(reference, candidate, obs: np.ndarray) -> tuple[float, float, float]:
    """(action agreement, action max |diff|, value max |diff|) of two (act, value) pairs on observations."""
    ref_action, action = reference[0](obs), candidate[0](obs)
    equal = (ref_action == action).reshape(len(obs), -1).all(axis=-1)
    action_diff = np.abs(ref_action.astype(np.float64) - action).max()
    value_diff = np.abs(reference[1](obs) - candidate[1](obs)).max()
    return float(equal.mean()), float(action_diff), float(value_diff)


def interpreter(path: str):
    """A TFLite interpreter for the file: LiteRT's (`ai_edge_litert`) when installed, else
    `tf.lite.Interpreter` (deprecated in TF 2.21 in favour of LiteRT, still shipped and working)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecation notice, printed on every construction
            return tf.lite.Interpreter(model_path=path)
    return Interpreter(model_path=path)


def load_tflite(path: str) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """(predict_action, predict_value) over numpy batches, from a .tflite file written by export_tflite."""
    runner = interpreter(path)
    serve, value = runner.get_signature_runner("serving_default"), runner.get_signature_runner("value")
    return (
        lambda obs: serve(observation=np.asarray(obs))["action"],
        lambda obs: value(observation=np.asarray(obs))["value"],
    )
