"""Config fields shared by the value-based algorithms that act epsilon-greedily (DQN, tabular Q-learning)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relayrl.core import checks as C
from relayrl.core.config import Config
from relayrl.core.knobs import knob
from relayrl.core.ops import piecewise_linear


@dataclass
class EpsilonGreedyConfig(Config):
    rollout_fragment_length: Any = knob(
        4, "rollouts", C.integer(1), "env steps per env per iteration (then the learner trains)"
    )
    exploration_initial_eps: float = knob(1.0, "training", C.number(0, 1), "epsilon at the start")
    exploration_final_eps: float = knob(0.02, "training", C.number(0, 1), "epsilon after the schedule")
    exploration_timesteps: int = knob(
        10_000, "training", C.integer(1), "env steps over which epsilon decays linearly"
    )

    def resolved_fragment_length(self) -> int:
        return int(self.rollout_fragment_length)

    def epsilon_at(self, timesteps: int, final: float | None = None) -> float:
        """Epsilon after `timesteps` env steps: exploration_initial_eps falling linearly over
        exploration_timesteps to `final` (exploration_final_eps when None), then flat."""
        end = self.exploration_final_eps if final is None else final
        points = [[0, self.exploration_initial_eps], [self.exploration_timesteps, end]]
        return piecewise_linear(points, timesteps)
