"""RolloutWorker._transitions with frame_stack = k ships each frame once: two real workers on the same seeds,
one with frame_stack = 4 and one with whole stacks, produce the same transitions once the compact rows are
expanded, and a replay fed the compact fragments holds far fewer bytes."""

import numpy as np

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.replay import UniformReplay
from relayrl.sampling import frame_rows
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings
from tests.helpers.frame_envs import stacked

CONFIG = {"k": 4, "height": 10, "width": 9, "min_len": 1, "max_len": 8}


def worker(frame_stack: int) -> RolloutWorker:
    probe = stacked(CONFIG)
    model = {**DEFAULT_MODEL, "conv_filters": [[4, 3, 2]], "fcnet_hiddens": [8]}
    spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, model)
    settings = SamplerSettings(
        env=stacked,
        env_config=CONFIG,
        num_envs=3,
        fragment_length=4,
        spec=spec,
        seed=11,
        postprocess="transitions",
        n_step=3,
        frame_stack=frame_stack,
    )
    w = RolloutWorker(settings, worker_index=2)
    w.set_weights(networks.init_weights(spec, np.random.default_rng(0)), 1)
    return w


def test_a_frame_stacking_worker_sends_the_same_transitions_with_each_frame_once():
    compact_worker, whole_worker = worker(4), worker(0)
    compact_replay, whole_replay = UniformReplay(200, seed=1), UniformReplay(200, seed=1)
    for _ in range(12):
        compact, whole = compact_worker.sample(), whole_worker.sample()
        assert len(compact) == len(whole) and compact.env_steps == whole.env_steps
        assert set(compact.data) == {
            "obs_ref",
            "actions",
            "rewards",
            "discounts",
            *frame_rows.FRAME_COLUMNS,
            "next_ref",
        }
        expanded = frame_rows.expand(compact.data)
        assert sorted(expanded) == sorted(whole.data)
        for key, column in whole.data.items():
            np.testing.assert_array_equal(expanded[key], column, err_msg=key)
            assert expanded[key].dtype == column.dtype
        compact_replay.add(compact.data)
        whole_replay.add(whole.data)
    every = np.arange(whole_replay.size)
    for key, column in whole_replay._gather(every).items():
        np.testing.assert_array_equal(compact_replay._gather(every)[key], column, err_msg=key)
    held = compact_replay.frames.frames[: compact_replay.frames.total].nbytes
    assert held < whole_replay.columns["obs"][: whole_replay.size].nbytes / 2
