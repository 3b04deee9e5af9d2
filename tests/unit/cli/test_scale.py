"""The knee rule of `relayrl scale` on hand-made measurements."""

from relayrl.cli.scale import add_ratios, recommend


def rows(*pairs):
    return [{"workers": w, "env_steps_per_s": s} for w, s in pairs]


def test_knee_is_where_one_more_worker_adds_less_than_ten_percent():
    # 1 -> 2: +90% (90%/worker); 2 -> 4: +22% (11%/worker); 4 -> 8: +6% over 4 workers (1.5%/worker)
    assert recommend(rows((1, 100), (2, 190), (4, 232), (8, 246))) == 4
    assert recommend(rows((1, 100), (2, 100), (4, 90))) == 1  # CPU-bound on 2 cores: no gain from the start
    assert recommend(rows((1, 100), (2, 199), (4, 390), (8, 700))) == 8  # latency-bound: still scaling


def test_speedup_and_efficiency():
    out = add_ratios(rows((1, 100), (4, 300)))
    assert out[1]["speedup"] == 3.0 and out[1]["efficiency"] == 0.75
