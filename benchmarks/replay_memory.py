"""DQN replay memory with Atari-shaped transitions ((84, 84, 4) uint8 stacks): resident bytes per transition.

relayrl: a replay of --transitions rows filled through the worker's row code (frame_rows.compact_transitions,
what RolloutWorker._transitions calls with frame_stack = 4) from a synthetic 84x84 frame stream, each frame
stored once. sb3: stable-baselines3's ReplayBuffer (VecFrameStack's channel-last (84, 84, 4) layout), variant
"plain" (optimize_memory_usage=False) or "optimized" (True), filled with as many synthetic transitions; run it
in a venv with stable-baselines3 (benchmarks/anchors/.venv). SB3's 1M buffers need ~56 GB (~28 GB optimised),
more than this machine has: they are measured at --measure-at rows (default 100k) and the 1M figure is an
extrapolation, which the JSON says.

The contract of benchmarks/run.py's workload W9 (benchmarks/anchors/common.py): one JSON line
{"library", "variant", "transitions", "rss_bytes", "bytes_per_transition", "extrapolated_1m_bytes", ...},
where extrapolated_1m_bytes = the process's resident bytes before the fill + bytes_per_transition x 1M (for a
1M-row relayrl run: its RSS at the end).

    python benchmarks/replay_memory.py --library relayrl --transitions 1000000
    benchmarks/anchors/.venv/bin/python benchmarks/replay_memory.py --library sb3 --variant optimized
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

OBS_SHAPE = (84, 84, 4)


def rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def relayrl_buffer(transitions: int, num_envs: int = 64, fragment_length: int = 64) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from relayrl.replay import UniformReplay
    from tests.helpers.frame_envs import TRANSITIONS_SPEC, AtariShapedFrames, FragmentSource

    source = FragmentSource(AtariShapedFrames(num_envs), 0, fragment_length, 3, TRANSITIONS_SPEC, whole=False)
    replay = UniformReplay(transitions, seed=0)
    start = time.perf_counter()
    replay.add(source.fragment()[1])  # allocates the rings (nothing resident until written) and warms malloc
    before, rows_before = rss(), replay.added_total
    while replay.added_total < transitions:
        replay.add(source.fragment()[1])
    after = rss()
    rows = replay.added_total - rows_before
    batch = replay.sample(512)
    assert batch["obs"].shape == (512, *OBS_SHAPE)
    return {
        "library": "relayrl",
        "variant": "",
        "backend": "UniformReplay (frame store)",
        "transitions": rows,
        "frames_held": replay.frames.total,
        "rows_held": len(replay),
        "rss_growth_bytes": after - before,
        "bytes_per_transition": (after - before) / rows,
        "rss_bytes": after,
        "extrapolated_1m_bytes": before + (after - before) / rows * 1_000_000,
        "fill_s": round(time.perf_counter() - start, 1),
    }


def sb3_buffer(transitions: int, optimize: bool, num_envs: int = 16) -> dict:
    """SB3's ReplayBuffer as its DQN builds it for Atari (VecFrameStack: (84, 84, 4) uint8, Discrete)."""
    from gymnasium import spaces
    from stable_baselines3.common.buffers import ReplayBuffer

    obs_space = spaces.Box(0, 255, OBS_SHAPE, np.uint8)
    before = rss()
    buffer = ReplayBuffer(
        transitions,
        obs_space,
        spaces.Discrete(4),
        device="cpu",
        n_envs=num_envs,
        optimize_memory_usage=optimize,
        handle_timeout_termination=False,  # SB3 refuses it together with optimize_memory_usage
    )
    rng = np.random.default_rng(0)
    start, obs = time.perf_counter(), rng.integers(0, 256, (num_envs, *OBS_SHAPE), np.uint8)
    for _ in range(transitions // num_envs):
        next_obs = np.concatenate([obs[..., 1:], rng.integers(0, 256, (num_envs, 84, 84, 1), np.uint8)], -1)
        actions = rng.integers(0, 4, (num_envs, 1))
        buffer.add(obs, next_obs, actions, np.ones(num_envs), np.zeros(num_envs), [{}] * num_envs)
        obs = next_obs
    after = rss()
    rows = transitions // num_envs * num_envs
    per_row = (after - before) / rows
    return {
        "library": "sb3",
        "variant": "optimized" if optimize else "plain",
        "backend": f"ReplayBuffer optimize_memory_usage={optimize}",
        "transitions": rows,
        "rss_growth_bytes": after - before,
        "bytes_per_transition": per_row,
        "rss_bytes": after,
        "extrapolated_1m_bytes": before + per_row * 1_000_000,
        "fill_s": round(time.perf_counter() - start, 1),
        "note": f"measured at {rows} transitions; the 1M figure is an extrapolation",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--library", choices=["relayrl", "sb3"], required=True)
    p.add_argument("--variant", default="", help="sb3: plain (default) or optimized; relayrl: none")
    p.add_argument("--transitions", type=int, default=1_000_000)
    p.add_argument("--measure-at", type=int, default=100_000, help="sb3: rows actually filled (at most)")
    args = p.parse_args()
    allowed = {"relayrl": ("",), "sb3": ("", "plain", "optimized")}[args.library]
    if args.variant not in allowed:
        p.error(f"--variant {args.variant!r} is invalid for {args.library}: allowed: {allowed}")
    if args.library == "relayrl":
        result = relayrl_buffer(args.transitions)
    else:
        result = sb3_buffer(min(args.transitions, args.measure_at), args.variant == "optimized")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
