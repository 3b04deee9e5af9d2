"""`relayrl scale`'s recommendation on hand-made measurements: 0 (in-process) compared like any count, no
count recommended that the cores cannot serve, differences within the noise keep the fewest."""

import math

import pytest

from relayrl.cli import app as cli
from relayrl.cli.scale import add_ratios, default_counts, knee, mark_cores, significant
from relayrl.cli.scale_runs import MIN_SAMPLES, summarise


def row(workers, sps, se=0.0, cpu=1.0, learn=0.5, sync=0.0):
    return {
        "workers": workers, "env_steps_per_s": sps, "env_steps_per_s_se": se, "worker_cpu_util": cpu,
        "learn_frac": learn, "sync_frac": sync,
    }  # fmt: skip


def test_in_process_zero_is_compared_like_any_count():
    assert knee([row(0, 100), row(1, 130), row(2, 135)]) == (1, "gain")
    assert knee([row(0, 100), row(1, 105)]) == (0, "gain")
    out = add_ratios([row(0, 100), row(1, 150), row(2, 240)])
    assert [r["speedup"] for r in out] == [1.0, 1.5, 2.4]
    assert math.isnan(out[0]["efficiency"]) and out[2]["efficiency"] == pytest.approx(0.8)


def test_a_gain_within_the_noise_keeps_the_fewest():
    # +30% looks like a gain, but 2 standard errors of the difference are ~42 steps/s
    assert knee([row(0, 100, se=15), row(1, 130, se=15)]) == (0, "noise")
    assert knee([row(0, 100, se=5), row(1, 130, se=5)]) == (1, "end")
    assert not significant(row(0, 100, se=math.nan), row(1, 500, se=math.nan))  # too few samples to tell


def test_counts_the_cores_cannot_serve_are_never_recommended():
    # CPU-bound: each worker uses a whole core, the learner half of one: 2 workers need 2.5 of 2 cores
    rows = [row(0, 100), row(1, 180, cpu=0.99), row(2, 260, cpu=0.9)]
    notes = mark_cores(rows, cores=2)
    assert [r["servable"] for r in rows] == [True, True, False]
    assert notes == [
        "2 workers need ~2.5 cores (0.99 per worker, measured at 1, + 0.50 for the learner) and 2 are "
        "here: not recommended"
    ]
    assert knee(rows) == (1, "cores")
    # latency-bound (the env sleeps): 8 workers at 0.1 core each fit on 2 cores
    slow = [row(1, 100, cpu=0.1, learn=0.2), row(8, 700, cpu=0.05, learn=0.3)]
    assert mark_cores(slow, cores=2) == [] and knee(slow) == (8, "end")


def test_the_standard_error_needs_enough_measured_iterations():
    sample = {
        "steps": 100,
        "seconds": 0.1,
        "sample": 0.05,
        "learn": 0.04,
        "sync": 0.01,
        "worker_cpu_util": 1.0,
    }
    few = summarise(1, [sample] * (MIN_SAMPLES - 1))
    assert few["env_steps_per_s"] == pytest.approx(1000) and math.isnan(few["env_steps_per_s_se"])
    varied = [dict(sample, seconds=s) for s in (0.1, 0.2, 0.1, 0.2)]
    enough = summarise(1, varied)
    # rates 1000, 500, 1000, 500: sample std sqrt(4 * 250**2 / 3), over sqrt(4)
    assert enough["env_steps_per_s_se"] == pytest.approx((4 * 250**2 / 3) ** 0.5 / 2)
    assert enough["env_steps_per_s"] == pytest.approx(400 / 0.6)


def test_default_counts_include_in_process_and_stop_at_the_cores():
    counts = default_counts()
    assert counts[0] == 0 and counts[1] == 1 and all(b == 2 * a for a, b in zip(counts[1:], counts[2:]))


@pytest.mark.parametrize("text", ["-1", "1,x", "", "5000", ","])
def test_bad_worker_lists_are_one_line_exit_2(capsys, text):
    with pytest.raises(SystemExit) as exc:
        cli.main(["scale", "ppo", "CartPole-v1", "--workers", text])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "allowed: comma-separated worker counts from 0 to 4096, e.g. 0,1,2,4" in err[0]


def test_a_count_the_batch_cannot_feed_is_refused_before_measuring(capsys, tmp_path):
    argv = ["scale", "ppo", "CartPole-v1", "--workers", "0,64", "--set", "train_batch_size=64"]
    argv += ["--set", "sgd_minibatch_size=32"]
    assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "train_batch_size = 64 is too small for 64 worker(s)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
