"""The progress line: elapsed time, an ETA only for rules a rate predicts, steps/s over the last iterations,
episode length and the last evaluation reward."""

from __future__ import annotations

from relayrl.persistence.progress import WINDOW, Progress, clock


def result(i: int, seconds_per_iter: float = 2.0, steps: int = 1000, **extra) -> dict:
    return {
        "training_iteration": i,
        "timesteps_total": i * steps,
        "time_total_s": i * seconds_per_iter,
        "time_this_iter_s": seconds_per_iter,
        "env_steps_this_iter": steps,
        "env_steps_per_s": steps / seconds_per_iter,
        "episode_reward_mean": 12.5,
        "episode_len_mean": 33.0,
        "timers/sample_s": 1.0,
        "timers/learn_s": 0.5,
        "timers/sync_s": 0.1,
        **extra,
    }


def test_line_shows_length_rate_elapsed_and_timestep_eta():
    p = Progress(enabled=False, rules={"timesteps": 100_000})
    for i in range(1, 4):
        p.update(result(i))
    line = p.line(result(3))
    assert "len   33.0" in line and "500 steps/s" in line and "elapsed 0:00" in line
    assert "ETA 3:14 (timesteps)" in line  # 97,000 steps at 500/s = 194 s
    assert "sample=50% learn=25% sync=5%" in line and "eval" not in line


def test_rate_is_smoothed_over_the_window():
    p = Progress(enabled=False)
    for i in range(1, 30):
        p.update(result(i, seconds_per_iter=2.0))
    slow = result(30, seconds_per_iter=20.0)  # one slow iteration (a GC pause, replay warm-up)
    slow["time_total_s"] = 29 * 2.0 + 20.0
    p.update(slow)
    rate = 10 * 1000 / (9 * 2.0 + 20.0)  # the last WINDOW iterations, not the slow one alone (50/s)
    assert WINDOW == 10 and f"{rate:,.0f} steps/s" in p.line(slow)


def test_eta_is_the_nearest_predictable_rule_and_none_for_reward():
    p = Progress(enabled=False, rules={"iters": 10, "time": 1000.0, "reward": 400.0})
    for i in range(1, 3):
        p.update(result(i))
    assert "ETA 0:16 (iters)" in p.line(result(2))  # 8 iterations x 2 s, before the 996 s time rule
    reward_only = Progress(enabled=False, rules={"reward": 400.0})
    reward_only.update(result(1))
    assert "ETA" not in reward_only.line(result(1))


def test_evaluation_reward_is_shown_and_kept_between_evaluations():
    p = Progress(enabled=False)
    p.update(result(1, **{"evaluation/episode_reward_mean": 321.5}))
    p.update(result(2))
    assert "eval   321.50" in p.line(result(2))


def test_clock():
    assert clock(5) == "0:05" and clock(125) == "2:05" and clock(3723) == "1:02:03" and clock(-3) == "0:00"


def test_a_learner_that_waits_for_workers_shows_its_wait():
    waiting = result(1, **{"timers/sample_s": 0.0, "timers/wait_s": 1.4})
    assert "sample=0% learn=25% sync=5% wait=70%" in Progress(enabled=False).line(waiting)
    assert "wait" not in Progress(enabled=False).line(result(1))  # algorithms without it: three phases
