"""Resident memory of the frame-stacking replay: 100k transitions of a synthetic 84x84 uint8 image env with
4-frame stacks, made into rows by the worker's code (frame_rows.compact_transitions) and added fragment by
fragment, must cost at most ~8 KB of resident memory each (whole obs + next_obs stacks would cost 56 KB)."""

import numpy as np
import psutil

from relayrl.replay import UniformReplay
from tests.helpers.frame_envs import TRANSITIONS_SPEC, AtariShapedFrames, FragmentSource

TRANSITIONS = 100_000


def test_100k_atari_shaped_transitions_cost_at_most_8_kb_resident_each():
    source = FragmentSource(AtariShapedFrames(num_envs=16), 0, 32, 3, TRANSITIONS_SPEC, whole=False)
    replay = UniformReplay(TRANSITIONS, seed=0)
    replay.add(source.fragment()[1])  # allocates the rings (np.empty: nothing resident yet)
    process = psutil.Process()
    before, added_before = process.memory_info().rss, replay.added_total
    while replay.added_total < TRANSITIONS:
        replay.add(source.fragment()[1])
    per_row = (process.memory_info().rss - before) / (replay.added_total - added_before)
    held = replay.frames.frames[: replay.frames.total].nbytes + sum(v.nbytes for v in replay.columns.values())
    assert 7_056 <= per_row <= 8_192, per_row  # one 84x84 frame per transition, and little else
    assert held / len(replay) <= 8_192 and replay.frames.total <= 1.01 * replay.added_total
    batch = replay.sample(256)
    assert batch["obs"].shape == (256, 84, 84, 4) and batch["next_obs"].dtype == np.uint8
