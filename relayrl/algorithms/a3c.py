"""A3C: asynchronous advantage actor-critic (Mnih et al. 2016, arXiv:1602.01783) with a ParameterServer.

Each worker samples a fragment with its local weights, computes the A2C loss gradients on it and sends
them to the ParameterServer actor, which applies them as they arrive (no barrier between workers) and
answers with its newest weights. The staleness of each gradient (server version - the version it was
computed with) is recorded. The driver only collects statistics; it never sits between a worker and
the server.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.a2c import A2C_METRICS, a2c_loss, build_a2c_learner, loss_hparams, prepare_batch
from relayrl.algorithms.base import Algorithm
from relayrl.core import checks as C
from relayrl.core.config import Config
from relayrl.core.knobs import knob
from relayrl.learning.placement import refuse_learner_settings
from relayrl.sampling.settings import Sampling


@dataclass
class A3CConfig(Config):
    algo_name = "a3c"

    lambda_: float = knob(
        1.0, "training", C.number(0, 1), "GAE lambda (1.0 = n-step returns to the fragment end)"
    )
    entropy_coeff: float = knob(0.0, "training", C.number(0), "entropy bonus coefficient")
    vf_loss_coeff: float = knob(0.5, "training", C.number(0), "value loss coefficient")
    normalize_advantages: bool = knob(
        False, "training", C.boolean(), "standardise advantages over each fragment"
    )
    in_flight_per_worker: int = knob(
        2,
        "rollouts",
        C.integer(1),
        "worker steps queued per worker (2 keeps it busy while the driver collects)",
    )
    # A3C's own defaults for shared fields
    num_rollout_workers: int = knob(
        2, "rollouts", C.integer(1), "Ray workers computing gradients (A3C needs at least 1)"
    )
    rollout_fragment_length: Any = knob(
        8, "rollouts", C.auto_or(C.integer(1)), "steps per env per fragment (one gradient each)"
    )
    num_envs_per_worker: int = knob(
        16, "rollouts", C.integer(1), "vectorised envs stepped together by each worker"
    )
    train_batch_size: int = knob(
        2048,
        "training",
        C.batch_size(),
        "env steps reported per training iteration (updates happen per fragment)",
    )
    lr: float = knob(
        2e-3, "training", C.number(0, strict=True), "learning rate (of the parameter server's Adam)"
    )
    gamma: float = knob(0.98, "training", C.number(0, 1), "discount factor")
    grad_clip: Any = knob(
        0.5, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )

    def validate(self) -> None:
        super().validate()
        # the settings of a learner that A3C's cannot follow are refused, never ignored
        refuse_learner_settings(
            self,
            {
                "num_gpus": (0,),
                "learner_placement": ("auto",),
                "learner_threads": ("auto",),
                "eager": (False,),
            },
            "A3C's learner is its parameter server, a CPU Ray actor applying the workers' compiled "
            "gradients as they arrive; the driver keeps a copy of its weights",
        )


class A3C(Algorithm):
    config_class = A3CConfig
    name = "A3C"

    def worker_sampling(self) -> Sampling:
        return Sampling(lambda_=self.config.lambda_)

    def make_workers(self):
        from relayrl.runtime.gradient_fleets import A3CWorkers
        from relayrl.sampling.grad_worker import LossRecipe

        c: A3CConfig = self.config
        recipe = LossRecipe(
            a2c_loss,
            A2C_METRICS,
            loss_hparams(c),
            functools.partial(prepare_batch, normalize=c.normalize_advantages),
        )
        return self.with_fault_tolerance(
            A3CWorkers(
                self.sampler_settings(),
                recipe,
                c.lr,
                c.grad_clip,
                c.num_rollout_workers,
                c.num_cpus_per_worker,
                c.address,
                c.in_flight_per_worker,
            )
        )

    # The driver's copy of the server's weights (for checkpoints, export and evaluation).
    build_learner = staticmethod(build_a2c_learner)

    def training_step(self) -> dict[str, float]:
        with self.timers("sample"):
            fragments, worker_metrics = self.workers.collect(self.config.train_batch_size)
        self.record_fragments(fragments)
        with self.timers("sync"):
            server = self.workers.server_stats()
            weights, self.weights_version = self.workers.latest_weights()
            self.learner.set_weights(weights)
        metrics = {k: float(np.mean([m[k] for m in worker_metrics])) for k in A2C_METRICS}
        metrics.update(
            {
                "updates": float(server["updates"]),
                "staleness_mean": server["staleness_mean"],
                "staleness_max": server["staleness_max"],
                "grad_gnorm": server["grad_gnorm"],
                "policy_lag_mean": server["staleness_mean"],
                "worker_idle_fraction": self.workers.idle_fraction(),
            }
        )
        return metrics
