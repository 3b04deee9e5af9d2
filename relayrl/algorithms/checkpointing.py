"""Checkpoints during a training run (train_until, `relayrl train`): every N iterations, at the end, the
newest K kept, and with keep_best the one with the best evaluation/episode_reward_mean in DIR/best.

The best score so far is kept beside it in DIR/best.json ({"evaluation/episode_reward_mean": x,
"training_iteration": n}), so a resumed run only replaces `best` with a better one. A fresh run (iteration 0)
ignores an earlier run's best.json; an unreadable one counts as no best yet.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from relayrl.algorithms.periodic_evaluation import PREFIX

BEST_DIR, BEST_FILE = "best", "best.json"
BEST_KEY = PREFIX + "episode_reward_mean"


@dataclass(frozen=True)
class CheckpointPlan:
    """directory: where checkpoints go; every: iterations between them (0 = off); at_end: one when the run
    stops; keep: the newest K periodic ones kept; keep_best: DIR/best holds the best evaluated one."""

    directory: str
    every: int = 0
    at_end: bool = False
    keep: int = 3
    keep_best: bool = False

    def check(self, config: Any) -> None:
        """ValueError (one line) for a plan this config cannot follow."""
        for name, low in (("every", 0), ("keep", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"checkpoint {name} = {value!r} is invalid: allowed: an integer >= {low}")
        if self.keep_best and config.evaluation_interval is None:
            raise ValueError(
                "keep_best needs evaluation while training; allowed: set evaluation_interval "
                "(--set evaluation_interval=N, or config.evaluation(evaluation_interval=N))"
            )


class Checkpointer:
    """Follows a CheckpointPlan for one algorithm; `after(result, stopping)` returns the paths it wrote."""

    def __init__(self, plan: CheckpointPlan, algo: Any):
        self.plan, self.algo = plan, algo
        self.best = -math.inf
        if plan.keep_best and algo.iteration > 0:  # resumed: beat the best of the run so far
            self.best = read_best(os.path.join(plan.directory, BEST_FILE))

    def after(self, result: dict[str, Any], stopping: bool) -> list[str]:
        p, written = self.plan, []
        if (p.every and result["training_iteration"] % p.every == 0) or (stopping and p.at_end):
            written.append(self._save(f"ckpt-{self.algo.iteration:07d}"))
            from relayrl.persistence import checkpoint

            checkpoint.prune(p.directory, p.keep)
        score = result.get(BEST_KEY)
        if p.keep_best and score is not None and math.isfinite(score) and score > self.best:
            self.best = score
            written.append(self._save(BEST_DIR))
            record = {BEST_KEY: score, "training_iteration": result["training_iteration"]}
            tmp = os.path.join(p.directory, f"{BEST_FILE}.tmp")
            with open(tmp, "w") as fh:
                json.dump(record, fh)
            os.replace(tmp, os.path.join(p.directory, BEST_FILE))
        return written

    def _save(self, name: str) -> str:
        os.makedirs(self.plan.directory, exist_ok=True)
        return self.algo.save(os.path.join(self.plan.directory, name))


def read_best(path: str) -> float:
    """The score in a best.json, or -inf when there is none or it is not one finite number (it is data)."""
    try:
        with open(path) as fh:
            score = json.load(fh).get(BEST_KEY)
    except (OSError, ValueError, AttributeError, RecursionError):
        return -math.inf
    number = isinstance(score, (int, float)) and not isinstance(score, bool)
    return float(score) if number and math.isfinite(score) else -math.inf
