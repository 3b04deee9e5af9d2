"""Evaluation while training (SB3's EvalCallback, RLlib's evaluation_interval): every
config.evaluation_interval iterations Algorithm.train() runs config.evaluation_episodes episodes with the
current weights, here on the driver, and adds `evaluation/...` keys to that iteration's result.

Seeding: the evaluation envs get `config.seed + EVALUATION_SEED_OFFSET` (env i: + i), far past the training
envs' seed + 1000 * worker + i, so no evaluation episode replays a training env's stream. Every round uses
the same seeds, so two rounds differ only by the policy (what --keep-best compares). With seed None each
round draws fresh random seeds.

Its time is reported as evaluation/time_s and is not part of time_this_iter_s or time_total_s: those (and
env_steps_per_s, --stop-time) stay about training.
"""

from __future__ import annotations

import time
from typing import Any

from relayrl.algorithms.epsilon_greedy import EpsilonGreedyConfig
from relayrl.core.config import Config

EVALUATION_SEED_OFFSET = 10_000_019  # a prime past any training env's seed offset (1000 * worker + env)
PREFIX = "evaluation/"


def evaluation_seed(seed: int | None) -> int | None:
    """The evaluation envs' base seed for a run seeded with `seed` (None: random)."""
    return None if seed is None else seed + EVALUATION_SEED_OFFSET


def check_evaluation(config: Config, external_episodes: bool) -> None:
    """Refuse (ValueError, one line) evaluation an algorithm cannot run: with episodes from external
    clients (the policy server) there is no env of the training's own to evaluate on."""
    if external_episodes and config.evaluation_interval is not None:
        raise ValueError(
            f"evaluation_interval = {config.evaluation_interval} is invalid for a policy server: its "
            f"episodes come from external clients, there is no env here to evaluate on; allowed: None"
        )


def evaluation_due(config: Config, iteration: int) -> bool:
    interval = config.evaluation_interval
    return interval is not None and iteration % interval == 0


def exploration_now(algo: Any) -> dict[str, float]:
    """How the training workers explore at this point (Policy.set_explore's argument): epsilon-greedy
    algorithms at their current epsilon, others as their first worker (Ape-X's epsilon_1, TD3's noise)."""
    explore = algo.worker_sampling().explore
    settings = explore.for_worker(1).policy_settings()
    if isinstance(algo.config, EpsilonGreedyConfig) and explore.epsilon_alpha is None:  # a decaying epsilon
        settings["epsilon"] = algo.config.epsilon_at(algo.timesteps_total)
    return settings


def evaluate_now(
    algo: Any, num_episodes: int, seed: int | None = None, explore: bool = False
) -> dict[str, float]:
    """`num_episodes` episodes with algo's current weights on fresh envs in this process."""
    from relayrl.sampling.evaluation import evaluate

    c = algo.config
    return evaluate(
        c.env,
        c.env_config,
        algo.spec,
        algo.learner.get_weights(),
        num_episodes,
        seed=seed,
        explore=explore,
        exploration=exploration_now(algo) if explore else None,
        wrappers=c.env_wrappers,
        atari=c.atari,
    )


def evaluation_result(algo: Any) -> dict[str, float]:
    """The `evaluation/...` keys when this iteration is an evaluation one, else {}: episode_reward_mean,
    _min, _max, _std, episode_len_mean, episodes, time_s."""
    c = algo.config
    if not evaluation_due(c, algo.iteration):
        return {}
    start = time.perf_counter()
    summary = evaluate_now(algo, c.evaluation_episodes, evaluation_seed(c.seed), c.evaluation_explore)
    summary["time_s"] = time.perf_counter() - start
    return {PREFIX + k: v for k, v in summary.items()}
