"""IMPALA: importance-weighted actor-learner architecture with V-trace off-policy correction
(Espeholt et al. 2018, arXiv:1802.01561).

Workers sample continuously (their next sample calls are queued, so they never wait for the learner) and
pull weights through a WeightClient; finished fragments enter a bounded learner queue. The learner
re-evaluates each batch with its current network, corrects for the lag with V-trace (clipped importance
weights rho-bar / c-bar against the behaviour log-probs stamped on the fragments) and takes one
policy-gradient step with the A2C loss on the V-trace targets and advantages.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.a2c import build_a2c_learner, whole_batch
from relayrl.algorithms.base import Algorithm
from relayrl.core import checks as C
from relayrl.core import ops
from relayrl.core.config import Config
from relayrl.core.knobs import knob
from relayrl.models import distributions
from relayrl.sampling.settings import Sampling


@dataclass
class IMPALAConfig(Config):
    algo_name = "impala"

    vtrace_rho_bar: float = knob(
        1.0,
        "training",
        C.number(0, strict=True),
        "V-trace clip of the importance weight in the targets and the policy gradient (rho-bar)",
    )
    vtrace_c_bar: float = knob(
        1.0, "training", C.number(0, strict=True), "V-trace clip of the trace-cutting coefficients (c-bar)"
    )
    entropy_coeff: float = knob(0.0, "training", C.number(0), "entropy bonus coefficient")
    vf_loss_coeff: float = knob(0.5, "training", C.number(0), "value loss coefficient")
    learner_queue_size: int = knob(8, "training", C.integer(1), "fragments the learner queue holds")
    queue_full: str = knob(
        "drop",
        "training",
        C.one_of("drop", "block"),
        "full learner queue: 'drop' the oldest fragment, or 'block' the workers that deliver",
    )
    broadcast_interval: int = knob(1, "training", C.integer(1), "learner updates between weight publications")
    weight_pull_every: int = knob(
        1,
        "rollouts",
        C.integer(1),
        "worker pulls newer weights every K fragments (ignored with weight_pull_background)",
    )
    weight_pull_background: bool = knob(
        False, "rollouts", C.boolean(), "pull weights in a background thread on each worker instead"
    )
    weight_ema_tau: Any = knob(
        None,
        "rollouts",
        C.optional(C.number(0, 1, strict=True)),
        "soft update of the worker copy w <- tau w_new + (1 - tau) w (None = replace)",
    )
    in_flight_per_worker: int = knob(
        2,
        "rollouts",
        C.integer(1),
        "sample calls queued per worker (2 keeps it busy while the driver collects)",
    )
    # IMPALA's own defaults for shared fields
    rollout_fragment_length: Any = knob(
        32,
        "rollouts",
        C.auto_or(C.integer(1)),
        "steps per env per fragment; 'auto' = train_batch_size / (workers * envs)",
    )
    train_batch_size: int = knob(
        512, "training", C.batch_size(), "env steps per learner update (whole fragments)"
    )
    # 2e-3 collapsed to a deterministic wrong policy (episode mean ~9) in 4 of 26 CartPole seeds; 1e-3: none
    lr: float = knob(1e-3, "training", C.number(0, strict=True), "learning rate")
    gamma: float = knob(0.98, "training", C.number(0, 1), "discount factor")
    grad_clip: Any = knob(
        0.5, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )

    def fragments_per_update(self) -> int:
        return max(1, self.train_batch_size // (self.resolved_fragment_length() * self.num_envs_per_worker))


class IMPALA(Algorithm):
    config_class = IMPALAConfig
    name = "IMPALA"
    dropped_total = 0  # fragments dropped from a full learner queue

    def worker_sampling(self) -> Sampling:
        return Sampling("sequences")  # time-major, with behaviour log-probs: V-trace runs on the learner

    def make_workers(self):
        c: IMPALAConfig = self.config
        if c.num_rollout_workers == 0:
            from relayrl.runtime.local import SerialQueue

            return SerialQueue(self.sampler_settings())
        from relayrl.runtime.ray_async import LearnerQueue

        pull = {
            "every_k": c.weight_pull_every,
            "background": c.weight_pull_background,
            "ema_tau": c.weight_ema_tau,
        }
        return self.with_fault_tolerance(
            LearnerQueue(
                self.sampler_settings(),
                c.num_rollout_workers,
                c.num_cpus_per_worker,
                c.address,
                c.learner_queue_size,
                c.queue_full,
                pull,
                c.in_flight_per_worker,
            )
        )

    @staticmethod
    def build_learner(spec, c: IMPALAConfig, strategy=None):
        """The A2C learner, which computes the V-trace targets itself, with its current network (where it
        runs: on its GPU when it has one)."""
        vtrace = functools.partial(vtrace_rows, gamma=c.gamma, rho_bar=c.vtrace_rho_bar, c_bar=c.vtrace_c_bar)
        return build_a2c_learner(spec, c, strategy, batch_fn=vtrace)

    def training_step(self) -> dict[str, float]:
        c: IMPALAConfig = self.config
        # in-process (no workers) the take samples; with workers the learner only waits for their fragments
        with self.timers("sample" if c.num_rollout_workers == 0 else "wait"):
            fragments = self.workers.take(c.fragments_per_update())
        dropped = self.workers.pop_dropped()
        self.dropped_total += len(dropped)
        self.record_fragments(fragments + dropped)
        lags = [self.weights_version - f.version for f in fragments]
        with self.timers("learn"):
            self.apply_lr_schedule()
            seq = {k: np.concatenate([f.data[k] for f in fragments], axis=1) for k in fragments[0].data}
            metrics = self.learner.update(seq, whole_batch(int(seq["valid"].sum())))  # rows V-trace keeps
        if self.iteration % c.broadcast_interval == 0:
            with self.timers("sync"):
                self.publish_weights()
        metrics.update(
            {
                "policy_lag_mean": float(np.mean(lags)),
                "policy_lag_max": float(max(lags)),
                "rho_mean": metrics.pop("rho_mean"),
                "queue_dropped": float(self.dropped_total),
                "worker_idle_fraction": self.workers.idle_fraction(),
            }
        )
        return metrics


def vtrace_rows(
    learner, seq: dict[str, np.ndarray], gamma: float, rho_bar: float, c_bar: float
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The learner's batch_fn: flat training rows from time-major sequences [T(+1), N] (fragments joined
    along N), with the learner's values and log-probs on them, V-trace targets (value_targets) and
    advantages; reset steps dropped. Also returns the mean importance weight (rho_mean)."""
    spec = learner.spec
    T, N = seq["rewards"].shape
    obs = seq["obs"].reshape((T + 1) * N, *seq["obs"].shape[2:])
    dist_inputs, values = learner.forward(obs)
    values = values.reshape(T + 1, N)
    actions = seq["actions"].reshape(T * N, *seq["actions"].shape[2:])
    log_std = learner.model.log_std.numpy() if spec.action_kind == "gaussian" else None
    logp = distributions.log_prob(
        spec.action_kind,
        spec.action_nvec,
        dist_inputs.reshape(T + 1, N, -1)[:-1].reshape(T * N, -1),
        log_std,
        actions,
    )
    log_rhos = logp.reshape(T, N) - seq["logp"]  # log pi_learner(a|s) - log mu_behaviour(a|s)
    vs, pg_adv = ops.vtrace(
        seq["rewards"],
        values[:-1],
        values[1:],
        seq["terminated"],
        seq["dones"],
        log_rhos,
        gamma,
        rho_bar,
        c_bar,
    )
    keep = seq["valid"].reshape(-1)
    batch = {
        "obs": obs[: T * N][keep],
        "actions": actions[keep],
        "logp": seq["logp"].reshape(-1)[keep],
        "vf_preds": values[:-1].reshape(-1)[keep],
        "advantages": pg_adv.reshape(-1)[keep],
        "value_targets": vs.reshape(-1)[keep],
    }
    rho_mean = float(np.exp(log_rhos).reshape(-1)[keep].mean())
    return batch, {"rho_mean": rho_mean}
