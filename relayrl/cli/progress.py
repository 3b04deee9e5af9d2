"""Console progress for the CLI: a throttled status line per iteration on stderr and a final summary."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(self, enabled: bool = True, log_dir: str | None = None, every_s: float = 0.5):
        self.enabled = enabled
        self.every_s = every_s
        self._last = 0.0
        if log_dir:
            self.note(f"TensorBoard: tensorboard --logdir {log_dir}")

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"relayrl: {text}", file=sys.stderr, flush=True)

    def update(self, r: dict[str, Any]) -> None:
        now = time.perf_counter()
        if not self.enabled or now - self._last < self.every_s:
            return
        self._last = now
        print(self.line(r), file=sys.stderr, flush=True)

    @staticmethod
    def line(r: dict[str, Any]) -> str:
        it = max(r["time_this_iter_s"], 1e-9)
        shares = " ".join(
            f"{k}={100 * r.get(f'timers/{k}_s', 0.0) / it:.0f}%" for k in ("sample", "learn", "sync")
        )
        return (
            f"iter {r['training_iteration']:>5}  steps {r['timesteps_total']:>9,}  "
            f"reward {r['episode_reward_mean']:8.2f}  {r['env_steps_per_s']:>9,.0f} steps/s  {shares}"
        )

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
        rows = [
            ("result", f"{solved}, episode_reward_mean {r['episode_reward_mean']:.2f}"),
            ("iterations / env steps", f"{r['training_iteration']:,} / {r['timesteps_total']:,}"),
            ("episodes", f"{r['episodes_total']:,}"),
            ("training / wall time", f"{r['time_total_s']:.2f} s / {r['wall_time_s']:.2f} s"),
            (
                "time shares (run)",
                " ".join(f"{k} {r.get(f'run/{k}_frac', 0.0):.0%}" for k in ("sample", "learn", "sync")),
            ),
            (
                "last iteration",
                " ".join(
                    f"{k} {r.get(f'timers/{k}_s', 0.0) * 1e3:.1f} ms" for k in ("sample", "learn", "sync")
                ),
            ),
            ("TensorBoard", r.get("log_dir") or "off"),
        ]
        for name, value in rows:
            table.add_row(name, value)
        console = Console(stderr=True)
        console.print(table)
        console.print(f"relayrl: {r['diagnosis']}", highlight=False)
