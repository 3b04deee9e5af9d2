"""Shared by every anchor runner: the workload definitions, the child-side reporter, and the parent that
times a child process and turns what it reports into ONE JSON line.

Every run is a fresh child process, so the wall clock includes interpreter start, imports and (where the
library uses it) Ray start, alike for all libraries. The child reports progress as `BENCH {json}` lines on
stdout, with `t` = seconds since its own process was created (psutil's create_time), so interpreter start
counts. Where a library's own script prints episode returns (CleanRL), the parent parses those lines and
times them itself from the moment it started the child.

Stdlib only at import time (the parent may run under any venv); the child side imports psutil lazily.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHOR_PYTHON = os.path.join(HERE, ".venv", "bin", "python")
RESULTS_DIR = os.path.join(os.path.dirname(HERE), "results")
CURVES_DIR_ENV = "RELAYRL_BENCH_CURVES_DIR"  # run.py names its --out/curves here for the runners it starts
REPLAY_MEMORY_SCRIPT = os.path.join(os.path.dirname(HERE), "replay_memory.py")
PREFIX = "BENCH "


@dataclass(frozen=True)
class Workload:
    name: str
    algo: str
    env: str
    threshold: float | None  # mean return of the last `window` episodes that counts as solved
    window: int
    cap: int  # env steps: the run stops there, solved=False if the threshold was not reached
    what: str


WORKLOADS = {
    "W1": Workload(
        "W1", "ppo", "CartPole-v1", 475.0, 100, 300_000, "PPO CartPole-v1: time to last-100 mean >= 475"
    ),
    "W2": Workload(
        "W2", "dqn", "CartPole-v1", 475.0, 100, 200_000, "DQN CartPole-v1: time to last-100 mean >= 475"
    ),
    "W3": Workload("W3", "random", "CartPole-v1", None, 100, 0, "raw env limit: random actions, env steps/s"),
    "W4": Workload(
        "W4", "ppo", "HalfCheetah-v5", None, 10, 50_000, "PPO HalfCheetah-v5: env steps/s over 50k steps"
    ),
    "W4R": Workload(
        "W4R", "ppo", "HalfCheetah-v5", None, 10, 300_000, "PPO HalfCheetah-v5: return at 300k steps"
    ),
    "W5": Workload(
        "W5", "ppo", "CartPole-v1", None, 100, 0, "time from process start to the first finished iteration"
    ),
    "W6": Workload(
        "W6", "sac", "Pendulum-v1", -200.0, 10, 20_000, "SAC Pendulum-v1: time to last-10 mean >= -200"
    ),
    # Atari: caps count AGENT steps (one agent step = FRAME_SKIP emulator frames); `--cap` changes them.
    "W7": Workload(
        "W7",
        "ppo",
        "ALE/Breakout-v5",
        None,
        100,
        50_000,
        "PPO Breakout, 8 envs: frames/s over 50k agent steps",
    ),
    "W8": Workload(
        "W8",
        "ppo",
        "ALE/Breakout-v5",
        None,
        100,
        1_000_000,
        "PPO Breakout: mean game score of the last 100 games at 1M agent steps (4M frames)",
    ),
    "W9": Workload(
        "W9", "replay", "ALE/Breakout-v5", None, 0, 1_000_000, "DQN replay memory of 1M Atari transitions"
    ),
}

# Issue 17's MuJoCo workloads (W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO): mujoco_workloads.py. `window`
# is the number of evaluation episodes whose mean is the figure.
sys.path.insert(0, HERE)
import mujoco_workloads  # noqa: E402

WORKLOADS.update(
    {
        name: Workload(name, algo, env, None, mujoco_workloads.EVAL_EPISODES, cap, what)
        for name, (algo, env, cap, what) in mujoco_workloads.specs().items()
    }
)

# ------------------------------------------------------------------------------------------------- Atari
# One preprocessing for every library (DeepMind, Mnih et al. 2015, as SB3's AtariWrapper and relayrl's
# `atari` options do it): ALE v5 with sticky actions 0.25 and its 108k-frame limit, made WITHOUT frame skip so
# that the wrappers skip 4 frames and max-pool the last two; up to 30 no-ops after reset; 84x84 grey; 4 frames
# stacked; a lost life ends the learner's episode and rewards are clipped to their sign (training signals
# only: the returns reported are real game scores, except RLlib's, see rllib_runner.py). One difference is
# left as each library has it: SB3's and RLlib's wrappers press FIRE after every reset and lost life,
# relayrl's options have no such step (sb3_runner.py's variant "nofire" runs SB3 without it).
FRAME_SKIP = 4
ALE_KWARGS = dict(
    frameskip=1, repeat_action_probability=0.25, full_action_space=False, max_num_frames_per_episode=108_000
)
ATARI_PREPROCESSING = dict(
    noop_max=30, frame_skip=FRAME_SKIP, screen_size=84, frame_stack=4, episodic_life=True, clip_rewards=True
)
# rl_zoo3 2.9.2 hyperparams/ppo.yml, entry `atari:` (AtariWrapper, frame_stack 4, CnnPolicy, n_envs 8,
# n_steps 128, n_epochs 4, batch_size 256, n_timesteps 1e7, learning_rate lin_2.5e-4, clip_range lin_0.1,
# vf_coef 0.5, ent_coef 0.01); SB3's PPO defaults for the rest (gamma 0.99, gae_lambda 0.95,
# max_grad_norm 0.5, no value clipping). Every library gets these: lr falls linearly to 0 at n_timesteps
# agent steps (the zoo's schedule, not rescaled to the workload's cap), and so does the clip range where the
# library can schedule it (SB3; relayrl and RLlib keep 0.1: it is 0.09 at 1M steps in the zoo's run).
ZOO_PPO_ATARI = dict(
    n_envs=8,
    n_steps=128,
    n_epochs=4,
    batch_size=256,
    n_timesteps=10_000_000,
    learning_rate=2.5e-4,
    clip_range=0.1,
    vf_coef=0.5,
    ent_coef=0.01,
    gamma=0.99,
    gae_lambda=0.95,
    max_grad_norm=0.5,
)


def is_atari(w: Workload) -> bool:
    return w.env.startswith("ALE/")


def register_ale() -> None:
    """gymnasium 1.x no longer finds ale_py's ids by itself."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)


def torch_threads(w: Workload) -> int:
    """One torch thread for the MLP workloads (see sb3_runner.py), all cores for Atari's conv nets, as
    relayrl gives TensorFlow (learner_threads 'auto'); ANCHOR_TORCH_THREADS overrides both."""
    default = (os.cpu_count() or 1) if is_atari(w) else 1
    return int(os.environ.get("ANCHOR_TORCH_THREADS", default))


# W9's measurement is benchmarks/replay_memory.py, run in the venv of the library it measures. Its contract:
#   python benchmarks/replay_memory.py --library relayrl|sb3 --variant V --transitions N
# (V for sb3: "plain" = optimize_memory_usage=False, "optimized" = True; "" for relayrl) prints JSON lines;
# the last one is the result: {"library", "variant", "transitions", "rss_bytes", "bytes_per_transition",
# "extrapolated_1m_bytes"}.
MEMORY_FIELDS = ("transitions", "rss_bytes", "bytes_per_transition", "extrapolated_1m_bytes")


def memory_cmd(python: str, library: str, w: Workload, variant: str) -> list[str]:
    if not os.path.exists(REPLAY_MEMORY_SCRIPT):
        raise NotImplementedError("benchmarks/replay_memory.py is missing")
    return [
        python,
        REPLAY_MEMORY_SCRIPT,
        "--library",
        library,
        "--variant",
        variant,
        "--transitions",
        str(w.cap),
    ]


def parse_memory(line: str, now: float, run: Run, window) -> bool:
    """replay_memory.py's JSON lines: the last one wins."""
    if not line.startswith("{"):
        return False
    try:
        result = json.loads(line)
    except json.JSONDecodeError:
        return False
    if isinstance(result, dict):
        run.extra.update({k: result[k] for k in MEMORY_FIELDS if isinstance(result.get(k), (int, float))})
    return False


# ----------------------------------------------------------------------------------------------- child side
class Reporter:
    """Used inside the child: tracks episode returns and prints BENCH lines (progress at most every 0.25 s,
    `solved` once, `done` at the end). `t` is seconds since this process was created."""

    def __init__(self, workload: Workload, every_s: float = 0.25):
        import psutil

        self.start = psutil.Process().create_time()
        self.w = workload
        self.returns: deque[float] = deque(maxlen=workload.window)
        self.every_s = every_s
        self._last = -1.0
        self.solved = False
        self.steps = 0
        self.updates = 0

    def elapsed(self) -> float:
        return time.time() - self.start

    def mean(self) -> float | None:
        return sum(self.returns) / len(self.returns) if self.returns else None

    def episode(self, ret: float) -> None:
        self.returns.append(float(ret))

    def emit(self, **fields) -> None:
        print(PREFIX + json.dumps(fields), flush=True)

    def progress(
        self, steps: int, updates: int | None = None, mean: float | None = None, force: bool = False
    ) -> bool:
        """Record the step/update counts; returns True once the threshold is reached (stop training)."""
        self.steps = int(steps)
        if updates is not None:
            self.updates = int(updates)
        mean = self.mean() if mean is None else mean
        now = self.elapsed()
        if force or now - self._last >= self.every_s:
            self._last = now
            self.emit(t=now, steps=self.steps, ret=mean, updates=self.updates)
        if not self.solved and self.w.threshold is not None and mean is not None and mean >= self.w.threshold:
            self.solved = True
            self.emit(event="solved", t=now, steps=self.steps, ret=mean, updates=self.updates)
        return self.solved

    def first_iteration(self) -> None:
        self.emit(event="first_iteration", t=self.elapsed(), steps=self.steps)


# ---------------------------------------------------------------------------------------------- parent side
@dataclass
class Run:
    library: str
    version: str
    workload: str
    seed: int
    variant: str = ""
    curve: list[list[float]] = field(default_factory=list)  # [wall_s, env_steps, return]
    updates: list[list[float]] = field(default_factory=list)  # [wall_s, updates]
    solved_t: float | None = None
    solved_steps: int | None = None
    first_iter_s: float | None = None
    extra: dict = field(default_factory=dict)
    error: str = ""


def steady_rate(points: list[list[float]], col: int = 1, skip_frac: float = 0.1) -> float | None:
    """Units per second between the first point past `skip_frac` of the final count and the last point:
    start-up (imports, Ray, tracing, learning_starts warm-up) is left out, alike for every library."""
    if len(points) < 2:
        return None
    final = points[-1][col]
    start = next((p for p in points if p[col] > skip_frac * final), points[0])
    dt = points[-1][0] - start[0]
    if start[col] >= final:  # one measurement (a run of one iteration): no rate, rather than 0
        return None
    return (final - start[col]) / dt if dt > 0 else None


def run_child(
    run: Run,
    cmd: list[str],
    workload: Workload,
    timeout_s: float,
    line_parser: Callable[[str, float, Run, _EpisodeWindow], bool] | None = None,
    cwd: str | None = None,
    env: dict | None = None,
) -> dict:
    """Start the child, read its stdout line by line, stop it once it reports `solved` (or the parser says
    so), and return the one-line result dict."""
    window = _EpisodeWindow(workload)
    load_before = os.getloadavg()[0]
    start = time.time()
    child_env = dict(os.environ, PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", TF_CPP_MIN_LOG_LEVEL="3")
    child_env.update(env or {})
    tail: deque[str] = deque(maxlen=40)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        cwd=cwd,
        env=child_env,
        start_new_session=True,
    )
    stop = False
    try:
        for line in proc.stdout:
            now = time.time() - start
            if now > timeout_s:
                run.error = f"timeout after {timeout_s:.0f} s"
                break
            if line.startswith(PREFIX):
                ev = json.loads(line[len(PREFIX) :])
                kind = ev.get("event")
                if kind is None:
                    run.curve.append([ev["t"], ev["steps"], ev["ret"]])
                    run.updates.append([ev["t"], ev.get("updates", 0)])
                elif kind == "solved":
                    run.solved_t, run.solved_steps = ev["t"], ev["steps"]
                    run.curve.append([ev["t"], ev["steps"], ev["ret"]])
                    run.updates.append([ev["t"], ev.get("updates", 0)])
                    stop = True
                elif kind == "first_iteration":
                    run.first_iter_s = ev["t"]
                    stop = workload.name == "W5"
                elif kind == "done":
                    run.extra.update({k: v for k, v in ev.items() if k != "event"})
                elif kind == "error":
                    run.error = ev.get("message", "error")
            else:
                tail.append(line.rstrip())
                if line_parser is not None:
                    stop = line_parser(line, now, run, window) or stop
            if stop:
                break
    finally:
        if proc.poll() is None:
            _terminate(proc)
        proc.wait()
    wall = time.time() - start
    if (
        proc.returncode not in (0, None)
        and not stop
        and not run.error
        and run.solved_t is None
        and not run.curve
    ):
        run.error = f"exit {proc.returncode}: " + " | ".join(list(tail)[-6:])
    elif proc.returncode not in (0, None, -15, -9) and not stop and not run.error:
        run.error = f"exit {proc.returncode}: " + " | ".join(list(tail)[-3:])
    return finish(run, workload, wall, load_before)


def _terminate(proc: subprocess.Popen) -> None:
    """Stop the child and everything it started (Ray's raylet/workers live in its session)."""
    import signal

    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class _EpisodeWindow:
    """Parent-side rolling mean for children that print one line per finished episode (CleanRL)."""

    def __init__(self, workload: Workload):
        self.w = workload
        self.returns: deque[float] = deque(maxlen=workload.window)
        self._last = -1.0

    def add(self, now: float, steps: int, ret: float, run: Run) -> bool:
        self.returns.append(ret)
        mean = sum(self.returns) / len(self.returns)
        if now - self._last >= 0.25:
            self._last = now
            run.curve.append([now, steps, mean])
        if self.w.threshold is not None and mean >= self.w.threshold and run.solved_t is None:
            run.solved_t, run.solved_steps = now, steps
            run.curve.append([now, steps, mean])
            return True
        return False


def finish(run: Run, workload: Workload, wall: float, load_before: float) -> dict:
    curve_file = ""
    if run.curve:
        curves_dir = os.environ.get(CURVES_DIR_ENV) or os.path.join(RESULTS_DIR, "curves")
        os.makedirs(curves_dir, exist_ok=True)
        tag = f"{run.workload}_{run.library}{'_' + run.variant if run.variant else ''}_s{run.seed}"
        curve_file = os.path.join(curves_dir, f"{tag}.json")
        with open(curve_file, "w") as f:
            json.dump({"curve": run.curve, "updates": run.updates}, f)
    last = run.curve[-1] if run.curve else [None, run.extra.get("env_steps"), None]
    steps = run.solved_steps if run.solved_steps is not None else last[1]
    upd = steady_rate(run.updates) if run.updates and run.updates[-1][1] else None
    out = {
        "library": run.library,
        "version": run.version,
        "workload": run.workload,
        "variant": run.variant,
        "seed": run.seed,
        "solved": run.solved_t is not None,
        "time_to_solve_s": round(run.solved_t, 3) if run.solved_t is not None else None,
        "first_iter_s": round(run.first_iter_s, 3) if run.first_iter_s is not None else None,
        "env_steps": int(steps) if steps is not None else None,
        "steps_per_s": _round(run.extra.get("steps_per_s", steady_rate(run.curve))),
        "updates_per_s": _round(run.extra.get("updates_per_s", upd)),
        "final_return": _round(last[2]),
        "wall_s": round(wall, 3),
        "load1_before": round(load_before, 2),
        "load1_after": round(os.getloadavg()[0], 2),
        "curve_file": _curve_reference(curve_file),
        "error": run.error,
        "cap": workload.cap,
    }
    if is_atari(workload) and out["steps_per_s"] is not None and workload.name != "W9":
        out["frames_per_s"] = round(out["steps_per_s"] * FRAME_SKIP, 2)  # agent steps x frame skip
    out.update({k: v for k, v in run.extra.items() if k not in out and k not in ("env_steps",)})
    if run.extra.get("library"):  # W3: the raw env rows are gymnasium's, run from relayrl's runner
        out["library"] = run.extra["library"]
    return out


def _curve_reference(path: str) -> str:
    """How a CSV row names its curve file: relative to benchmarks/ when it lies there (committed results
    stay valid in any checkout), else absolute (read_curve's os.path.join keeps an absolute path)."""
    if not path:
        return ""
    path = os.path.abspath(path)
    relative = os.path.relpath(path, os.path.dirname(RESULTS_DIR))
    return path if relative.startswith("..") else relative


def read_curve(base_dir: str, row: dict) -> list[list[float]]:
    """The points with a return of a CSV row's curve file (written by finish(); its path is relative to
    base_dir, or absolute); [] when the row has none or the file is gone."""
    path = os.path.join(base_dir, row.get("curve_file") or "")
    if not row.get("curve_file") or not os.path.exists(path):
        return []
    with open(path) as f:
        return [p for p in json.load(f)["curve"] if p[2] is not None]


def _round(x):
    return None if x is None else round(float(x), 2)


def cli(
    library: str,
    make_cmd: Callable,
    version: Callable[[], str],
    default_timeout: float = 900.0,
    variants: dict[str, list[str]] | None = None,
    line_parser=None,
    child_main: Callable | None = None,
) -> None:
    """The shared command line of every runner: `--workload W --seed S [--variant V]` runs the child and
    prints one JSON line; `--child ...` is the child itself."""
    import argparse

    p = argparse.ArgumentParser(description=f"{library} anchor runner")
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", default="")
    p.add_argument("--timeout", type=float, default=default_timeout)
    p.add_argument("--cap", type=int, default=None, help="step cap instead of the workload's (agent steps)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    w = WORKLOADS[args.workload]
    if args.cap is not None:
        if args.cap < 1:
            p.error(f"--cap must be >= 1 (got {args.cap})")
        w = dataclasses.replace(w, cap=args.cap)
    if args.child:
        child_main(w, args.seed, args.variant)
        return
    run = Run(library, version(), w.name, args.seed, args.variant)
    try:
        cmd, cwd = make_cmd(w, args.seed, args.variant)
    except NotImplementedError as exc:
        print(
            json.dumps(
                {
                    "library": library,
                    "workload": w.name,
                    "variant": args.variant,
                    "seed": args.seed,
                    "solved": False,
                    "error": f"not run: {exc}",
                }
            )
        )
        return
    with tempfile.TemporaryDirectory(prefix=f"anchor_{library}_") as tmp:
        result = run_child(run, cmd, w, args.timeout, line_parser=line_parser, cwd=cwd or tmp)
    print(json.dumps(result), flush=True)


def anchor_version(module: str, python: str = ANCHOR_PYTHON) -> str:
    """A package's version inside the anchors venv (or `python`'s), without importing it here."""
    try:
        out = subprocess.run(
            [python, "-c", f"import importlib.metadata as m; print(m.version('{module}'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def self_cmd(script: str, w: Workload, seed: int, variant: str, python: str = ANCHOR_PYTHON) -> list[str]:
    return [
        python,
        os.path.abspath(script),
        "--child",
        "--workload",
        w.name,
        "--seed",
        str(seed),
        "--variant",
        variant,
        "--cap",
        str(w.cap),
    ]


if __name__ == "__main__":
    sys.exit("common.py is a library; run one of the *_runner.py scripts")
