"""Tabular Q-learning (Watkins & Dayan 1992): Q(s,a) <- Q(s,a) + alpha [r + gamma max_a' Q(s',a') - Q(s,a)]
for Discrete observation spaces, epsilon-greedy with a linear decay. Workers sample in parallel; the
learner applies their transitions in order to one table.

The table is the policy network with no hidden layer: one-hot(s) @ Q is the row of Q-values, so rollout
workers act on it with the same numpy forward pass and epsilon-greedy head as DQN. No TensorFlow here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relayrl.algorithms.base import Algorithm
from relayrl.algorithms.epsilon_greedy import EpsilonGreedyConfig
from relayrl.core import checks as C
from relayrl.core.knobs import DEFAULT_MODEL, MODEL_CHECKS, knob
from relayrl.envs.make import env_name
from relayrl.learning.placement import refuse_learner_settings
from relayrl.sampling.settings import Exploration, Sampling


@dataclass
class QLearningConfig(EpsilonGreedyConfig):
    algo_name = "qlearning"

    lr: float = knob(0.1, "training", C.number(0, 1), "step size alpha of the tabular update")
    model: dict = knob(
        {**DEFAULT_MODEL, "fcnet_hiddens": []},
        "training",
        C.model(MODEL_CHECKS),
        "fixed for tabular Q: no hidden layers (the kernel is the table)",
    )
    exploration_timesteps: int = knob(
        100_000, "training", C.integer(1), "env steps over which epsilon decays linearly"
    )
    exploration_final_eps: float = knob(0.05, "training", C.number(0, 1), "epsilon after the schedule")

    def validate(self) -> None:
        super().validate()
        if self.model.get("fcnet_hiddens"):
            raise ValueError(
                f"QLearningConfig.model['fcnet_hiddens'] = {self.model['fcnet_hiddens']} is invalid: "
                f"allowed: [] (the table has no hidden layers)"
            )
        refuse_learner_settings(
            self,
            {
                "num_gpus": (0,),
                "learner_placement": ("auto", "driver"),
                "learner_threads": ("auto",),
                "eager": (False,),
            },
            "tabular Q-learning updates a numpy table on the driver: no TensorFlow, devices or threads",
        )


class QTable:
    """The Learner interface over a numpy Q-table."""

    def __init__(self, n_states: int, n_actions: int, lr: float, gamma: float):
        self.q = np.zeros((n_states, n_actions), np.float64)
        self.lr, self.gamma = lr, gamma

    def get_weights(self) -> list[np.ndarray]:
        """[Q kernel, Q bias, value kernel, value bias]: the policy-network layout workers read (copies, so a
        worker never sees the table change under a version)."""
        n_s, n_a = self.q.shape
        return [
            self.q.astype(np.float32),
            np.zeros(n_a, np.float32),
            np.zeros((n_s, 1), np.float32),
            np.zeros(1, np.float32),
        ]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.q = np.array(weights[0], np.float64)

    def set_lr(self, lr: float) -> None:
        self.lr = lr

    def save_checkpoint(self, directory: str) -> None:
        import os

        os.makedirs(directory, exist_ok=True)
        np.savez(os.path.join(directory, "table.npz"), q=self.q)

    def restore_checkpoint(self, directory: str) -> None:
        """learner/table.npz back: one float64 table of this env's shape, finite (else CheckpointError)."""
        import os

        from relayrl.core.saved_state import CheckpointError, read_npz

        path = os.path.join(directory, "table.npz")
        if not os.path.isfile(path):
            raise CheckpointError("learner/table.npz is missing")
        arrays = read_npz(path, "learner/table.npz", kinds="f")
        q = arrays.get("q")
        if (
            set(arrays) != {"q"}
            or q.dtype != np.float64
            or q.shape != self.q.shape
            or not np.isfinite(q).all()
        ):
            raise CheckpointError(
                f"learner/table.npz: allowed: one finite float64 array 'q' of shape "
                f"{self.q.shape} (states x actions of this env)"
            )
        self.q = q.copy()

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """Apply transitions in order (the tabular update is order-dependent)."""
        s = batch["obs"].argmax(axis=1)
        s_next = batch["next_obs"].argmax(axis=1)
        a, r, disc = (
            batch["actions"],
            batch["rewards"],
            batch["discounts"],
        )  # disc = gamma, or 0 after termination
        q, lr = self.q, self.lr
        td_sum = 0.0
        for i in range(len(s)):
            td = r[i] + disc[i] * q[s_next[i]].max() - q[s[i], a[i]]
            q[s[i], a[i]] += lr * td
            td_sum += abs(td)
        return {"td_abs_mean": td_sum / max(len(s), 1), "q_max": float(q.max())}


class QLearning(Algorithm):
    config_class = QLearningConfig
    name = "QLearning"
    action_kinds = ("categorical",)
    action_space_hint = " (tabular Q-learning needs discrete actions)"
    uses_tensorflow = False

    @classmethod
    def check_env(cls, config):
        obs_space, action_space, spec = super().check_env(config)
        if spec.obs_kind != "discrete":
            raise ValueError(
                f"QLearning needs a Discrete observation space (a table row per state), env "
                f"{env_name(config.env)!r} has {obs_space}; allowed: Discrete (use dqn for Box observations)"
            )
        return obs_space, action_space, spec

    @staticmethod
    def build_learner(spec, c: QLearningConfig, strategy=None) -> QTable:
        return QTable(spec.obs_shape[0], spec.action_nvec[0], c.lr, c.gamma)

    def worker_sampling(self) -> Sampling:
        c: QLearningConfig = self.config
        return Sampling("transitions", n_step=1, explore=Exploration(epsilon=c.exploration_initial_eps))

    def training_step(self) -> dict[str, float]:
        c: QLearningConfig = self.config
        epsilon = c.epsilon_at(self.timesteps_total)
        with self.timers("sample"):
            fragments = self.workers.sample(explore=Exploration(epsilon=epsilon))
        self.record_fragments(fragments)
        with self.timers("learn"):
            self.apply_lr_schedule()
            metrics = {}
            for (
                fragment
            ) in fragments:  # merge the workers' experience, one worker's transitions after another
                metrics = self.learner.update(fragment.data)
        with self.timers("sync"):
            self.publish_weights()
        return {**metrics, "epsilon": epsilon}
