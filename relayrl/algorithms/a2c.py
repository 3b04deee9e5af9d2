"""A2C: synchronous advantage actor-critic (Mnih et al. 2016, arXiv:1602.01783; the synchronous variant
OpenAI Baselines named A2C), one gradient step per batch with n-step / GAE advantages computed on the
rollout workers. `a2c_loss` is also the loss of REINFORCE, A3C and IMPALA (with V-trace targets)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.base import Algorithm
from relayrl.core import checks as C
from relayrl.core.config import Config
from relayrl.core.knobs import knob
from relayrl.core.types import concat_fragments
from relayrl.learning.placement import refuse_actor_learner
from relayrl.models import tf_distributions as tfd
from relayrl.models.tf_import import tf
from relayrl.sampling.settings import Sampling

A2C_METRICS = ("total_loss", "policy_loss", "vf_loss", "entropy")


@dataclass
class A2CConfig(Config):
    algo_name = "a2c"

    lambda_: float = knob(
        1.0, "training", C.number(0, 1), "GAE lambda (1.0 = n-step returns to the fragment end)"
    )
    entropy_coeff: float = knob(0.0, "training", C.number(0), "entropy bonus coefficient")
    vf_loss_coeff: float = knob(0.5, "training", C.number(0), "value loss coefficient")
    normalize_advantages: bool = knob(
        False, "training", C.boolean(), "standardise advantages over each batch"
    )
    update_mode: str = knob(
        "samples",
        "training",
        C.one_of("samples", "gradients"),
        "'samples': workers ship fragments, the learner computes the gradient; 'gradients': "
        "each Ray worker computes the gradient of its own fragment and the learner applies "
        "their row-weighted mean (parameter-server style; needs num_rollout_workers >= 1)",
    )
    # A2C's own defaults for shared fields: many small synchronous updates
    train_batch_size: int = knob(128, "training", C.batch_size(), "env steps per training iteration")
    lr: float = knob(1e-3, "training", C.number(0, strict=True), "learning rate")
    grad_clip: Any = knob(
        0.5, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )

    def validate(self) -> None:
        super().validate()
        if self.update_mode == "gradients" and self.num_rollout_workers < 1:
            raise ValueError(
                f"{type(self).__name__}.update_mode = 'gradients' is invalid with num_rollout_workers = 0: "
                f"allowed: 'samples', or num_rollout_workers >= 1"
            )
        if self.update_mode == "gradients":
            refuse_actor_learner(self, "update_mode = 'gradients': the driver applies the workers' gradients")


def a2c_loss(model, mb: dict, hp: dict) -> tuple[tf.Tensor, dict]:
    """Policy gradient with a learned baseline on M rows: -log pi(a|s) A + c_v (V(s) - target)^2 - c_e H."""
    dist_inputs, values = model(mb["obs"])  # [M, D], [M]
    logp = tfd.log_prob(model.spec, dist_inputs, model.log_std, mb["actions"])  # [M]
    adv = mb["advantages"]  # [M], computed with the behaviour weights: a constant here
    policy_loss = -tf.reduce_mean(logp * adv)
    vf_loss = tf.reduce_mean(tf.square(values - mb["value_targets"]))
    entropy = tf.reduce_mean(tfd.entropy(model.spec, dist_inputs, model.log_std))
    total = policy_loss + hp["vf_loss_coeff"] * vf_loss - hp["entropy_coeff"] * entropy
    return total, {"total_loss": total, "policy_loss": policy_loss, "vf_loss": vf_loss, "entropy": entropy}


def loss_hparams(config: Config) -> dict[str, float]:
    return {"entropy_coeff": config.entropy_coeff, "vf_loss_coeff": config.vf_loss_coeff}


def prepare_batch(
    batch: dict[str, np.ndarray], normalize: bool, use_baseline: bool = True
) -> dict[str, np.ndarray]:
    """Advantages to train on: GAE / n-step (or, without a baseline, the returns themselves), optionally
    standardised over the batch."""
    adv = batch["advantages"] if use_baseline else batch["value_targets"]
    if normalize:
        adv = ((adv - adv.mean()) / (adv.std() + 1e-8)).astype(np.float32)
    return dict(batch, advantages=adv)


def build_a2c_learner(spec, c: Config, strategy=None, batch_fn=None):
    """One step of the A2C loss on the whole batch: the learner of A2C, REINFORCE, IMPALA (batch_fn: its
    V-trace) and A3C (the driver's copy of its parameter server's weights)."""
    from relayrl.learning.learner import Learner
    from relayrl.learning.spec import LearnerSpec
    from relayrl.sampling.settings import batch_spec

    learner = LearnerSpec(
        a2c_loss, A2C_METRICS, c.lr, batch_spec(spec), None, c.grad_clip, loss_hparams(c), batch_fn=batch_fn
    )
    return Learner(spec, learner, strategy)


def whole_batch(num_rows: int) -> np.ndarray:
    """Minibatch indices [1, num_rows]: one gradient step on every row."""
    return np.arange(num_rows, dtype=np.int32)[None]


class A2C(Algorithm):
    config_class = A2CConfig
    name = "A2C"
    supports_obs_norm = True

    build_learner = staticmethod(build_a2c_learner)

    def worker_sampling(self) -> Sampling:
        return Sampling(lambda_=self.config.lambda_)

    def make_workers(self):
        if self.config.update_mode == "gradients":
            from relayrl.runtime.gradient_fleets import GradientWorkers

            c = self.config
            return self.with_fault_tolerance(
                GradientWorkers(
                    self.sampler_settings(),
                    self.loss_recipe(),
                    c.num_rollout_workers,
                    c.num_cpus_per_worker,
                    c.address,
                )
            )
        return super().make_workers()

    def loss_recipe(self):
        from relayrl.sampling.grad_worker import LossRecipe

        # workers never standardise their own fragment: that is the driver's, over the whole batch
        prepare = self.batch_preparation(normalize=False)
        return LossRecipe(a2c_loss, A2C_METRICS, loss_hparams(self.config), prepare)

    def batch_preparation(self, normalize: bool | None = None) -> Callable[[dict], dict]:
        """The advantage post-processing applied to every batch (REINFORCE overrides it); picklable, so
        gradient workers apply exactly the same. normalize None: the config's normalize_advantages."""
        normalize = self.config.normalize_advantages if normalize is None else normalize
        return functools.partial(prepare_batch, normalize=normalize)

    def training_step(self) -> dict[str, float]:
        c: A2CConfig = self.config
        self.apply_lr_schedule()
        if c.update_mode == "gradients" and c.normalize_advantages:
            metrics = self._standardised_gradient_step()
        elif c.update_mode == "gradients":  # one round trip: sample and gradients in the same call
            with self.timers("sample"):
                fragments, grads, metrics = self.workers.gradients()
            self.record_fragments(fragments)
            with self.timers("learn"):
                metrics["grad_gnorm"] = self.learner.apply_gradients(grads)
        else:
            with self.timers("sample"):
                fragments = self.workers.sample()
            self.record_fragments(fragments)
            batch = self.batch_preparation()(concat_fragments(fragments))
            with self.timers("learn"):
                metrics = self.learner.update(batch, whole_batch(len(batch["obs"])))
        with self.timers("sync"):
            self.publish_weights()
        return metrics

    def _standardised_gradient_step(self) -> dict[str, float]:
        """Gradients mode with advantages standardised over the whole batch, as the sample-shipping learner
        does: the workers keep their fragments and send their advantages, the driver sends back the batch's
        mean and std with the request for gradients (two round trips instead of one)."""
        with self.timers("sample"):
            fragments, rows = self.workers.sample_and_keep()
        advantages = np.concatenate([f.data.pop("advantages") for f in fragments]).astype(np.float64)
        self.record_fragments(fragments)
        with self.timers("learn"):
            every_row = [np.arange(n) for n in rows]
            stats = (float(advantages.mean()), float(advantages.std()))
            grads, metrics = self.workers.minibatch_gradients(every_row, stats)
            metrics["grad_gnorm"] = self.learner.apply_gradients(grads)
        resampled = self.workers.pop_resampled()
        self.record_fragments(resampled, [f.sample_time_s for f in resampled])
        return metrics
