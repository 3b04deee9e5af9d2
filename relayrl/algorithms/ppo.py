"""PPO: Proximal Policy Optimization with the clipped surrogate objective (Schulman et al. 2017,
arXiv:1707.06347) and GAE advantages computed on the rollout workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.base import Algorithm
from relayrl.core import checks as C
from relayrl.core import ops
from relayrl.core.config import Config
from relayrl.core.knobs import knob
from relayrl.core.types import concat_fragments
from relayrl.learning.placement import refuse_actor_learner
from relayrl.models import tf_distributions as tfd
from relayrl.models.tf_import import tf
from relayrl.sampling.settings import Sampling


@dataclass
class PPOConfig(Config):
    algo_name = "ppo"

    lambda_: float = knob(0.95, "training", C.number(0, 1), "GAE lambda")
    clip_param: float = knob(0.2, "training", C.number(0, strict=True), "PPO surrogate clip epsilon")
    vf_clip_param: Any = knob(
        None,
        "training",
        C.optional(C.number(0, strict=True)),
        "clip of the squared value error, as in RLlib (None = off)",
    )
    entropy_coeff: float = knob(0.0, "training", C.number(0), "entropy bonus coefficient")
    vf_loss_coeff: float = knob(0.5, "training", C.number(0), "value loss coefficient")
    sgd_minibatch_size: int = knob(64, "training", C.integer(1), "minibatch size of each SGD step")
    num_sgd_iter: int = knob(10, "training", C.integer(1), "epochs over each train batch")
    update_mode: str = knob(
        "samples",
        "training",
        C.one_of("samples", "gradients"),
        "'samples': workers ship fragments to the learner; 'gradients': Ray workers keep their "
        "fragments and compute each SGD step's gradient on their share of the minibatch, the "
        "learner applies the row-weighted mean (needs num_rollout_workers >= 1)",
    )
    # PPO's own defaults for shared fields (Stable-Baselines3's, which work across classic control and MuJoCo)
    train_batch_size: int = knob(2048, "training", C.batch_size(), "env steps per training iteration")
    grad_clip: Any = knob(
        0.5, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )
    scale_rewards: bool = knob(
        False,
        "training",
        C.boolean(),
        "divide rewards by the running std of each worker's discounted return, clipped to +-10 "
        "(gymnasium's NormalizeReward, as CleanRL / SB3 use on MuJoCo); "
        "episode returns are reported unscaled",
    )

    def validate(self) -> None:
        super().validate()
        if self.sgd_minibatch_size > self.train_batch_size:
            raise ValueError(
                f"PPOConfig.sgd_minibatch_size = {self.sgd_minibatch_size} is invalid: allowed: at most "
                f"train_batch_size ({self.train_batch_size})"
            )
        if self.update_mode == "gradients" and self.num_rollout_workers < 1:
            raise ValueError(
                "PPOConfig.update_mode = 'gradients' is invalid with num_rollout_workers = 0: "
                "allowed: 'samples', or num_rollout_workers >= 1"
            )
        if self.update_mode == "gradients":
            refuse_actor_learner(self, "update_mode = 'gradients': the driver applies the workers' gradients")


PPO_METRICS = ("total_loss", "policy_loss", "vf_loss", "entropy", "kl", "clip_frac")


def ppo_hparams(c: PPOConfig) -> dict[str, float]:
    hparams = {"clip_param": c.clip_param, "entropy_coeff": c.entropy_coeff, "vf_loss_coeff": c.vf_loss_coeff}
    if c.vf_clip_param is not None:
        hparams["vf_clip_param"] = c.vf_clip_param
    return hparams


def ppo_prepare(mb: dict) -> dict:
    """Per-minibatch advantage normalisation, over the whole minibatch (before any split across replicas)."""
    adv = mb["advantages"]
    return {**mb, "advantages": (adv - tf.reduce_mean(adv)) / (tf.math.reduce_std(adv) + 1e-8)}


def ppo_loss(model, mb: dict, hp: dict) -> tuple[tf.Tensor, dict]:
    """Clipped surrogate + value regression - entropy bonus on one minibatch of M rows (advantages
    already normalised by `ppo_prepare`)."""
    dist_inputs, values = model(mb["obs"])  # [M, D], [M]
    logp = tfd.log_prob(model.spec, dist_inputs, model.log_std, mb["actions"])  # [M]
    log_ratio = logp - mb["logp"]  # log pi_new(a|s) - log pi_behaviour(a|s)
    ratio = tf.exp(log_ratio)
    adv = mb["advantages"]
    clip = hp["clip_param"]
    surrogate = tf.minimum(ratio * adv, tf.clip_by_value(ratio, 1.0 - clip, 1.0 + clip) * adv)
    policy_loss = -tf.reduce_mean(surrogate)
    vf_err = tf.square(values - mb["value_targets"])  # [M]
    if hp.get("vf_clip_param") is not None:
        vf_err = tf.minimum(vf_err, hp["vf_clip_param"])
    vf_loss = tf.reduce_mean(vf_err)
    entropy = tf.reduce_mean(tfd.entropy(model.spec, dist_inputs, model.log_std))
    total = policy_loss + hp["vf_loss_coeff"] * vf_loss - hp["entropy_coeff"] * entropy
    metrics = {
        "total_loss": total,
        "policy_loss": policy_loss,
        "vf_loss": vf_loss,
        "entropy": entropy,
        "kl": tf.reduce_mean((ratio - 1.0) - log_ratio),  # the low-variance k3 estimator of KL(old || new)
        "clip_frac": tf.reduce_mean(tf.cast(tf.abs(ratio - 1.0) > clip, tf.float32)),
    }
    return total, metrics


class PPO(Algorithm):
    config_class = PPOConfig
    name = "PPO"
    supports_obs_norm = True

    @staticmethod
    def build_learner(spec, c: PPOConfig, strategy=None):
        from relayrl.learning.learner import Learner
        from relayrl.learning.spec import LearnerSpec
        from relayrl.sampling.settings import batch_spec

        learner = LearnerSpec(
            ppo_loss,
            PPO_METRICS,
            c.lr,
            batch_spec(spec),
            c.sgd_minibatch_size,
            c.grad_clip,
            ppo_hparams(c),
            prepare_fn=ppo_prepare,
        )
        return Learner(spec, learner, strategy)

    def worker_sampling(self) -> Sampling:
        c: PPOConfig = self.config
        return Sampling(lambda_=c.lambda_, scale_rewards=c.scale_rewards)

    def make_workers(self):
        c: PPOConfig = self.config
        if c.update_mode != "gradients":
            return super().make_workers()
        from relayrl.runtime.gradient_fleets import GradientWorkers
        from relayrl.sampling.grad_worker import LossRecipe, no_preparation

        # no per-worker minibatch_prepare: the driver sends each minibatch's advantage statistics
        recipe = LossRecipe(ppo_loss, PPO_METRICS, ppo_hparams(c), no_preparation)
        return self.with_fault_tolerance(
            GradientWorkers(
                self.sampler_settings(), recipe, c.num_rollout_workers, c.num_cpus_per_worker, c.address
            )
        )

    def training_step(self) -> dict[str, float]:
        c: PPOConfig = self.config
        if c.update_mode == "gradients":
            return self._gradient_aggregation_step()
        with self.timers("sample"):
            fragments = self.workers.sample()
        self.record_fragments(fragments)
        batch = concat_fragments(fragments)
        with self.timers("learn"):
            self.apply_lr_schedule()
            metrics = self.learner.update(batch, self._minibatch_indices(len(batch["obs"])))
            metrics["explained_variance"] = ops.explained_variance(batch["vf_preds"], batch["value_targets"])
        with self.timers("sync"):
            self.publish_weights()
        return metrics

    def _gradient_aggregation_step(self) -> dict[str, float]:
        """The same SGD steps as the sample-shipping path, but each step's gradient is computed by the
        workers on their own rows of the minibatch (parameter-server style): one round trip per step."""
        with self.timers("sample"):
            fragments, rows = self.workers.sample_and_keep()
        advantages = np.concatenate([f.data.pop("advantages") for f in fragments])  # in row order
        self.record_fragments(fragments)
        starts = np.cumsum([0] + rows)
        sums: dict[str, float] = {}
        with self.timers("learn"):
            self.apply_lr_schedule()
            steps = self._minibatch_indices(int(starts[-1]))
            for k, minibatch in enumerate(steps):
                shares = [
                    minibatch[(minibatch >= lo) & (minibatch < hi)] - lo for lo, hi in zip(starts, starts[1:])
                ]
                adv = advantages[minibatch].astype(np.float64)
                grads, metrics = self.workers.minibatch_gradients(
                    shares, (float(adv.mean()), float(adv.std()))
                )
                metrics["grad_gnorm"] = self.learner.apply_gradients(grads)
                for name, v in metrics.items():
                    sums[name] = sums.get(name, 0.0) + v
                # the next step's gradients are taken at the new weights; the iteration's new observation
                # statistics ride only with its last version (the batch was sampled with the old ones)
                self.publish_weights(new_obs_stats=k == len(steps) - 1)
        resampled = self.workers.pop_resampled()  # by workers restarted during the SGD steps
        self.record_fragments(resampled, [f.sample_time_s for f in resampled])
        return {k: v / len(steps) for k, v in sums.items()}

    def _minibatch_indices(self, batch_size: int) -> np.ndarray:
        """[epochs * minibatches, M]: a fresh permutation per epoch, padded with random rows when the
        batch is a little short of a whole number of minibatches (e.g. after dropped reset steps), so
        M stays fixed and the compiled update is traced once."""
        c: PPOConfig = self.config
        m = c.sgd_minibatch_size
        n_mb = max(1, int(round(batch_size / m)))
        epochs = []
        for _ in range(c.num_sgd_iter):
            perm = self.rng.permutation(batch_size)
            if len(perm) < n_mb * m:
                perm = np.concatenate([perm, self.rng.integers(0, batch_size, n_mb * m - len(perm))])
            epochs.append(perm[: n_mb * m].reshape(n_mb, m))
        return np.concatenate(epochs)
