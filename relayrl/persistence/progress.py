"""Console progress of a training run (train_until, `relayrl train`, `relayrl serve`): a throttled status
line per iteration on stderr and a final summary.

The line: iteration, env steps, reward mean, episode length, the last evaluation reward (when the run
evaluates), steps/s over the last WINDOW iterations (one iteration's rate jumps with every replay warm-up
and GC pause), elapsed wall time, an ETA and the phase shares. The ETA is given only for the rules a rate
can predict (timesteps, iterations, time) and is the nearest of them; a reward rule has none (a reward curve
does not say when it will cross a line).
"""

from __future__ import annotations

import collections
import math
import sys
import time
from collections.abc import Mapping
from typing import Any

WINDOW = 10  # iterations the steps/s and the ETA are averaged over
EVAL_KEY = "evaluation/episode_reward_mean"


def clock(seconds: float) -> str:
    """1:02:03 / 2:03."""
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Rates:
    """Env steps and training seconds over the last WINDOW iterations: rates and an ETA from them."""

    def __init__(self) -> None:
        self.points: collections.deque = collections.deque(maxlen=WINDOW + 1)

    def add(self, r: Mapping[str, Any]) -> None:
        if not self.points:  # where the first iteration started, so one iteration already has a rate
            self.points.append(
                (r["time_total_s"] - r["time_this_iter_s"], r["timesteps_total"] - r["env_steps_this_iter"])
            )
        self.points.append((r["time_total_s"], r["timesteps_total"]))

    def _span(self) -> tuple[float, float, int]:
        (t0, s0), (t1, s1) = self.points[0], self.points[-1]
        return max(t1 - t0, 1e-9), s1 - s0, len(self.points) - 1

    def steps_per_s(self) -> float:
        if len(self.points) < 2:
            return math.nan
        seconds, steps, _ = self._span()
        return steps / seconds

    def eta_s(self, rules: Mapping[str, float], r: Mapping[str, Any]) -> tuple[float, str] | None:
        """(seconds of training left, the rule) for the nearest rule a rate predicts; None: no such rule."""
        if len(self.points) < 2:
            return None
        seconds, steps, iters = self._span()
        etas = []
        if "time" in rules:
            etas.append((rules["time"] - r["time_total_s"], "time"))
        if "timesteps" in rules and steps > 0:
            etas.append(((rules["timesteps"] - r["timesteps_total"]) * seconds / steps, "timesteps"))
        if "iters" in rules:
            etas.append(((rules["iters"] - r["training_iteration"]) * seconds / iters, "iters"))
        return min(etas) if etas else None


def shown_phases(r: dict[str, Any], key: str) -> tuple[str, ...]:
    """The phases a line shows: "wait" (a learner idle until remote workers deliver) only where the run has
    it, so the shares shown add up to the iteration."""
    return ("sample", "learn", "sync", *(["wait"] if r.get(key.format("wait"), 0.0) > 0 else []))


class Progress:
    def __init__(
        self,
        enabled: bool = True,
        log_dir: str | None = None,
        every_s: float = 0.5,
        rules: Mapping[str, float] | None = None,
    ):
        self.enabled = enabled
        self.every_s = every_s
        self.rules = dict(rules or {})
        self.rates = Rates()
        self.started = time.monotonic()
        self.last_evaluation: float | None = None
        self._last = 0.0
        if log_dir:
            self.note(f"TensorBoard: tensorboard --logdir {log_dir}")

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"relayrl: {text}", file=sys.stderr, flush=True)

    def update(self, r: dict[str, Any]) -> None:
        """Record the iteration (always: the rates need every one); print the line at most every every_s."""
        self.rates.add(r)
        if EVAL_KEY in r:
            self.last_evaluation = r[EVAL_KEY]
        now = time.perf_counter()
        if not self.enabled or now - self._last < self.every_s:
            return
        self._last = now
        print(self.line(r), file=sys.stderr, flush=True)

    def line(self, r: dict[str, Any]) -> str:
        it = max(r["time_this_iter_s"], 1e-9)
        shares = " ".join(
            f"{k}={100 * r.get(f'timers/{k}_s', 0.0) / it:.0f}%" for k in shown_phases(r, "timers/{}_s")
        )
        rate = self.rates.steps_per_s()
        rate = r["env_steps_per_s"] if math.isnan(rate) else rate
        parts = [
            f"iter {r['training_iteration']:>5}",
            f"steps {r['timesteps_total']:>9,}",
            f"reward {r['episode_reward_mean']:8.2f}",
            f"len {r['episode_len_mean']:6.1f}",
        ]
        evaluation = r.get(EVAL_KEY, self.last_evaluation)
        if evaluation is not None:
            parts.append(f"eval {evaluation:8.2f}")
        parts += [f"{rate:>9,.0f} steps/s", f"elapsed {clock(time.monotonic() - self.started)}"]
        eta = self.rates.eta_s(self.rules, r)
        if eta is not None:
            parts.append(f"ETA {clock(eta[0])} ({eta[1]})")
        return "  ".join(parts + [shares])

    def summary(self, r: dict[str, Any]) -> None:
        """The last iteration's line, then a table of the run (rich renders it; plain text off a TTY)."""
        if not self.enabled:
            return
        from rich.console import Console
        from rich.table import Table

        solved = f"solved in {r['time_to_solve_s']:.2f} s" if r.get("solved") else "not solved"
        print(self.line(r), file=sys.stderr)
        table = Table(title="relayrl run", show_header=False)
        table.add_column("what")
        table.add_column("value", overflow="fold")
        evaluation = r.get(EVAL_KEY, self.last_evaluation)
        rows = [
            ("result", f"{solved}, episode_reward_mean {r['episode_reward_mean']:.2f}"),
            *(
                [("last evaluation", f"episode_reward_mean {evaluation:.2f}")]
                if evaluation is not None
                else []
            ),
            ("iterations / env steps", f"{r['training_iteration']:,} / {r['timesteps_total']:,}"),
            ("episodes", f"{r['episodes_total']:,}"),
            ("training / wall time", f"{r['time_total_s']:.2f} s / {r['wall_time_s']:.2f} s"),
            (
                "time shares (run)",
                " ".join(f"{k} {r.get(f'run/{k}_frac', 0.0):.0%}" for k in shown_phases(r, "run/{}_frac")),
            ),
            (
                "last iteration",
                " ".join(
                    f"{k} {r.get(f'timers/{k}_s', 0.0) * 1e3:.1f} ms" for k in shown_phases(r, "run/{}_frac")
                ),
            ),
            ("TensorBoard", r.get("log_dir") or "off"),
        ]
        for name, value in rows:
            table.add_row(name, value)
        console = Console(stderr=True)
        console.print(table)
        console.print(f"relayrl: {r['diagnosis']}", highlight=False)
