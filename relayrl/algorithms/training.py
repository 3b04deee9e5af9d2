"""Train until a stop rule holds: the one loop behind `relayrl train` and the Python API's train_until.

Loop that uses it:
    algo = PPOConfig().environment("CartPole-v1").evaluation(evaluation_interval=5).build()
    final = train_until(algo, stop={"reward": 475, "timesteps": 200_000},
                        checkpoints=CheckpointPlan("runs/ppo/checkpoints", every=10, keep_best=True))

Each iteration: algo.train(), the progress line, the checkpoint plan, the stop rules. The algorithm is left
running (the caller stops it); an error from train() propagates. Ctrl-C ends the loop after the iteration
in progress, and the summary says so (None when no iteration finished).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relayrl.algorithms.checkpointing import Checkpointer, CheckpointPlan
from relayrl.algorithms.stop_rules import reward_reached, should_stop, stop_rules
from relayrl.core.metrics import PHASES, RunFacts, diagnose
from relayrl.models.networks import all_layers
from relayrl.persistence.progress import Progress


def run_facts(algo: Any, phase_totals: Mapping[str, float], iterations: int) -> RunFacts:
    """What diagnose() judges: this run's time shares and the algorithm's config and model."""
    total = max(phase_totals["all"], 1e-9)
    config = algo.config
    return RunFacts(
        shares={k: v / total for k, v in phase_totals.items() if k != "all"},
        iterations=iterations,
        training_s=phase_totals["all"],
        fields=config.to_dict(),
        groups={f.name: f.metadata["group"] for f in dataclasses.fields(config)},
        model_params=int(sum(np.prod(layer.shape) for layer in all_layers(algo.spec))),
        conv=algo.spec.obs_kind == "image",
        gpu_capable=algo.uses_tensorflow,
    )


def run_summary(
    result: dict[str, Any],
    facts: RunFacts,
    time_to_solve: float | None,
    wall_time_s: float,
    syntax: str = "python",
) -> dict[str, Any]:
    """The last result plus whether and when the run solved, each phase's share of the time and the
    diagnosis (advice in `syntax`: "python" or "cli")."""
    return {
        **result,
        "solved": time_to_solve is not None,
        "time_to_solve_s": time_to_solve,
        "wall_time_s": wall_time_s,
        "log_dir": facts.fields.get("log_dir"),
        **{f"run/{k}_frac": v for k, v in facts.shares.items()},
        "diagnosis": diagnose(facts, syntax),
    }


def train_until(
    algo: Any,
    stop: Mapping[str, Any] | None = None,
    *,
    checkpoints: CheckpointPlan | None = None,
    progress: bool | Progress = True,
    started_at: float | None = None,
    syntax: str = "python",
    on_checkpoint: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """Call algo.train() until a stop rule holds; returns the final result with the run summary (solved,
    time_to_solve_s, wall_time_s, run/<phase>_frac, diagnosis, interrupted), None when interrupted before
    the first iteration ended.

    stop: {"reward": r, "timesteps": n, "iters": n, "time": seconds}, any one ends the run (None: the env's
    reward_threshold within a million steps). checkpoints: when to save (CheckpointPlan). progress: a status
    line on stderr (or the Progress to use). started_at: the time.time() the solve time counts from (default:
    now). on_checkpoint(path): told of each checkpoint written (default: a progress note)."""
    rules = stop_rules(stop, algo.config.env)
    if checkpoints is not None:
        checkpoints.check(algo.config)
    started_at = time.time() if started_at is None else started_at
    if not isinstance(progress, Progress):
        progress = Progress(enabled=bool(progress), rules=rules)
    progress.rules = rules
    saver = Checkpointer(checkpoints, algo) if checkpoints is not None else None
    notify = on_checkpoint or (lambda path: progress.note(f"checkpoint {path}"))
    if "time" in rules:  # train() ends in time even if a service it waits on hangs
        algo.set_deadline(time.monotonic() + rules["time"] - algo.time_total_s)
    time_to_solve, result, interrupted, iterations = None, None, False, 0
    totals = dict.fromkeys((*PHASES, "all"), 0.0)
    try:
        while True:
            result = algo.train()
            iterations += 1
            totals["all"] += result["time_this_iter_s"]
            for phase in PHASES:
                totals[phase] += result.get(f"timers/{phase}_s", 0.0)
            if time_to_solve is None and reward_reached(rules, result):
                time_to_solve = time.time() - started_at
            progress.update(result)
            stopping = should_stop(rules, result)
            for path in saver.after(result, stopping) if saver is not None else []:
                notify(path)
            if stopping:
                break
    except KeyboardInterrupt:
        progress.note("interrupted")
        interrupted = True
    if result is None:
        return None
    final = run_summary(
        result, run_facts(algo, totals, iterations), time_to_solve, time.time() - started_at, syntax
    )
    final["interrupted"] = interrupted
    return final
