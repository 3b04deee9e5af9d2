"""Your own tf.keras.Model in relayrl (docs/custom_model.md): adapters with the interface of its networks.

`CustomActorCritic` wraps a model built as `cls(num_outputs, **custom_model_kwargs)` with the interface of
keras_models.ActorCritic (features / head / value / ordered_variables / get_weights / set_weights, log_std,
obs_norm), so workers (TFForward), learners, checkpoints and exports use it unchanged. `CustomTwinQ` builds
SAC's / TD3's twin critics from `critic_cls(**custom_critic_kwargs)` with TwinQ's interface. Each is built on
a batch of zeros when made, and outputs of the wrong kind, shape or dtype are refused there in one line.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from relayrl.models.model_parts import WeightList, network_input, obs_statistics, zeros_batch
from relayrl.models.tf_import import tf

if TYPE_CHECKING:
    from relayrl.models.networks import ModelSpec

# What call(obs) must return, per `CustomSpec.outputs` ({n}: the head width given to the constructor).
EXPECTED = {
    "q": "call(obs) -> Q-values [B, {n}] (DQN / Ape-X with dueling=False)",
    "dueling": "call(obs) -> (advantages [B, {n}], value [B] or [B, 1]) (DQN / Ape-X with dueling=True)",
    "policy_value": "call(obs) -> (dist_inputs [B, {n}], value [B] or [B, 1]) "
    "(PPO, A2C, A3C, IMPALA, REINFORCE)",
    "policy": "call(obs) -> dist_inputs [B, {n}] (SAC: mean and log_std; TD3: the action before tanh)",
}
ROWS = 2  # rows of the build batch: 2, so that a [B] output can't pass for a scalar


class CustomActorCritic(WeightList, tf.Module):
    """Your model behind ActorCritic's interface; call -> (dist_inputs [B, D], values [B])."""

    def __init__(self, spec: ModelSpec, name: str = "custom_model"):
        super().__init__(name=name)
        custom = spec.custom
        assert custom is not None and custom.model_cls is not None, "needs spec.custom.model_cls"
        self.spec = spec
        self.outputs = custom.outputs
        net = built_model(custom.model_cls, (spec.dist_dim,), custom.model_kwargs, custom.model_path)
        self._keras = Untracked(net)
        self.log_std = (
            tf.Variable(tf.fill([spec.action_nvec[0]], spec.log_std_init), name="log_std")
            if spec.action_kind == "gaussian"
            else None
        )
        self.obs_norm = obs_statistics(spec)
        x = self.features(zeros_batch(spec, ROWS))
        try:
            out = self.net(x)
        except Exception as exc:  # noqa: BLE001 - your code: any error is a refusal, one line
            problem = f"calling it on a {describe(x)} failed: {first_line(exc)}"
            raise refusal(custom.model_path, problem) from None
        problem = output_problem(out, self.outputs, spec.dist_dim)
        if problem is not None:
            expected = EXPECTED[self.outputs].format(n=spec.dist_dim)
            raise refusal(custom.model_path, f"call() returned {problem}; expected {expected}")
        self.keras_variables = tracked(net)

    @property
    def net(self) -> tf.keras.Model:
        """Your model (built)."""
        return self._keras.models[0]

    def features(self, obs: tf.Tensor) -> tf.Tensor:
        """Your model's input: float32, images scaled to [0, 1], normalised when model.normalize_obs."""
        return network_input(self.spec, obs, self.obs_norm)

    def _run(self, obs: tf.Tensor, features: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
        out = self.net(self.features(obs) if features is None else features)
        if self.outputs in ("dueling", "policy_value"):
            return out[0], tf.reshape(out[1], [-1])
        if self.outputs == "q":  # a Q head's value is max_a Q (what DQN's exports serve)
            return out, tf.reduce_max(out, axis=1)
        return out, tf.zeros(tf.shape(out)[:1])  # an actor of SAC / TD3 has no value head

    def __call__(self, obs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self._run(obs, None)

    def head(self, obs: tf.Tensor, features: tf.Tensor | None = None) -> tf.Tensor:
        return self._run(obs, features)[0]

    def value(self, obs: tf.Tensor, features: tf.Tensor | None = None) -> tf.Tensor:
        return self._run(obs, features)[1]

    @property
    def policy_variables(self) -> list:
        return list(self.net.trainable_variables)

    @property
    def ordered_variables(self) -> list:
        return self.policy_variables + ([self.log_std] if self.log_std is not None else [])

    @property
    def weight_variables(self) -> list:
        """Trained variables, your model's non-trained ones (e.g. batch-norm statistics), then the
        observation statistics (last, where the driver writes them)."""
        return self.ordered_variables + list(self.net.non_trainable_variables) + self.obs_norm


class CustomTwinQ(WeightList, tf.Module):
    """TwinQ's interface over two of your critics:  q1, q2 = critics(obs, actions)  -> [B], [B]."""

    def __init__(self, spec: ModelSpec, name: str = "twin_q"):
        super().__init__(name=name)
        custom = spec.custom
        assert custom is not None and custom.critic_cls is not None, "needs spec.custom.critic_cls"
        cls, kwargs, path = custom.critic_cls, custom.critic_kwargs, custom.critic_path
        self._keras = Untracked(*(built_model(cls, (), kwargs, path, "custom_critic") for _ in range(2)))
        obs = tf.zeros((ROWS, int(np.prod(spec.obs_shape))))
        actions = tf.zeros((ROWS, spec.action_nvec[0]))
        try:
            out = self.q1(obs, actions)
            self.q2(obs, actions)
        except Exception as exc:  # noqa: BLE001 - your code: any error is a refusal, one line
            where = f"calling it on ({describe(obs)}, {describe(actions)})"
            raise refusal(path, f"{where} failed: {first_line(exc)}", "custom_critic") from None
        if not is_tensor(out) or out.dtype != tf.float32 or tuple(out.shape) not in ((ROWS,), (ROWS, 1)):
            expected = "call(obs, actions) -> float32 Q-values [B] or [B, 1]"
            raise refusal(path, f"call() returned {describe(out)}; expected {expected}", "custom_critic")
        self.keras_variables = tracked(self.q1) + tracked(self.q2)

    @property
    def q1(self) -> tf.keras.Model:
        return self._keras.models[0]

    @property
    def q2(self) -> tf.keras.Model:
        return self._keras.models[1]

    def __call__(self, obs: tf.Tensor, actions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x, a = tf.cast(obs, tf.float32), tf.cast(actions, tf.float32)
        return tf.reshape(self.q1(x, a), [-1]), tf.reshape(self.q2(x, a), [-1])

    @property
    def ordered_variables(self) -> list:
        return list(self.q1.trainable_variables) + list(self.q2.trainable_variables)

    @property
    def weight_variables(self) -> list:
        return self.ordered_variables + list(
            self.q1.non_trainable_variables + self.q2.non_trainable_variables
        )


class Untracked:
    """Holds your Keras models outside TensorFlow's object graph: for SavedModel export, Keras 3 traces a
    `serving_default` of every subclassed Model with one input, which fails for critic(obs, actions).
    The adapters track the models' variables instead (`keras_variables`: checkpoints and SavedModels)."""

    def __init__(self, *models: tf.keras.Model):
        self.models = models


def tracked(model: tf.keras.Model) -> list[tf.Variable]:
    """The TensorFlow variables under a built Keras model's (trained, then non-trained) variables."""
    return [getattr(v, "value", v) for v in model.trainable_variables + model.non_trainable_variables]


def built_model(cls: Any, args: tuple, kwargs: dict, path: str | None, key: str = "custom_model"):
    """cls(*args, **kwargs), refused in one line unless cls is a tf.keras.Model subclass that builds."""
    if not (isinstance(cls, type) and issubclass(cls, tf.keras.Model)):
        raise refusal(path or repr(cls), "is not a tf.keras.Model subclass", key)
    try:
        return cls(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - your code: any error is a refusal, one line
        call = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        raise refusal(path, f"{cls.__name__}({call}) failed: {first_line(exc)}", key) from None


def initial_weights(spec: ModelSpec, seed: int) -> list[np.ndarray]:
    """The custom model's initial weights (its own initialisers), repeatable for a given seed."""
    with python_random_seed(seed):  # Keras 3 draws an unseeded initialiser's seed from `random`
        return CustomActorCritic(spec, name="initial").get_weights()


@contextlib.contextmanager
def python_random_seed(seed: int) -> Iterator[None]:
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def output_problem(out: Any, outputs: str, width: int) -> str | None:
    """None when `out` is what `outputs` asks for on a batch of ROWS, else what came back."""
    pair = outputs in ("dueling", "policy_value")
    if pair and not (isinstance(out, (tuple, list)) and len(out) == 2):
        return describe(out)
    first, value = (out[0], out[1]) if pair else (out, None)
    if not is_tensor(first) or first.dtype != tf.float32 or tuple(first.shape) != (ROWS, width):
        return describe(out)
    if value is not None:
        if (
            not is_tensor(value)
            or value.dtype != tf.float32
            or tuple(value.shape) not in ((ROWS,), (ROWS, 1))
        ):
            return describe(out)
    return None


def is_tensor(x: Any) -> bool:
    return tf.is_tensor(x) and hasattr(x, "dtype") and hasattr(x, "shape")


def describe(x: Any) -> str:
    """One line for what a call returned: 'a float64 tensor [2, 3]', 'a tuple of (...)'."""
    if is_tensor(x):
        return f"a {tf.as_dtype(x.dtype).name} tensor {list(x.shape)}"
    if isinstance(x, (tuple, list)):
        inner = ", ".join(describe(v) for v in x[:4]) + (", ..." if len(x) > 4 else "")
        return f"a {type(x).__name__} of {len(x)} ({inner})"
    return f"a {type(x).__name__}"


def refusal(path: Any, problem: str, key: str = "custom_model") -> ValueError:
    return ValueError(f"model.{key} = {path}: {problem}")


def first_line(exc: BaseException) -> str:
    text = next((line for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {text[:200]}"
