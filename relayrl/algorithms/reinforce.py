"""REINFORCE: Monte-Carlo policy gradient (Williams 1992), optionally with a learned state-value
baseline (Sutton & Barto 2018, sec. 13.4).

Returns are Monte-Carlo (lambda = 1) up to the episode end. An episode still running at the end of a
fragment is treated like a gymnasium truncation: its return bootstraps from the learned V(s_T). The
value head is therefore always trained; `use_baseline` decides whether it is also subtracted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relayrl.algorithms.a2c import A2C, A2CConfig, prepare_batch
from relayrl.core import checks as C
from relayrl.core.knobs import knob


@dataclass
class REINFORCEConfig(A2CConfig):
    algo_name = "reinforce"

    lambda_: float = knob(1.0, "training", C.number(1, 1), "fixed at 1.0: Monte-Carlo returns")
    use_baseline: bool = knob(True, "training", C.boolean(), "subtract the learned V(s) from the return")
    normalize_advantages: bool = knob(True, "training", C.boolean(), "standardise advantages over each batch")
    # whole episodes of CartPole fit in one fragment of 500 steps x 4 envs
    train_batch_size: int = knob(2000, "training", C.batch_size(), "env steps per training iteration")
    num_envs_per_worker: int = knob(
        4, "rollouts", C.integer(1), "vectorised envs stepped together by each worker"
    )
    lr: float = knob(3e-3, "training", C.number(0, strict=True), "learning rate")
    grad_clip: Any = knob(
        None, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )


class REINFORCE(A2C):
    config_class = REINFORCEConfig
    name = "REINFORCE"

    def batch_preparation(self, normalize: bool | None = None) -> Callable[[dict], dict]:
        c: REINFORCEConfig = self.config
        normalize = c.normalize_advantages if normalize is None else normalize
        return functools.partial(prepare_batch, normalize=normalize, use_baseline=c.use_baseline)
