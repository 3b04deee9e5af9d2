"""benchmarks/run.py's MuJoCo workloads (issue 17: W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO) on small
synthetic CSVs: the return "at least the best incumbent within seed noise", wall time against the fastest
incumbent, a timed-out run left out, group ids expanded; and relayrl's --config covering every field a tuned
file could set (no library is run here)."""

from __future__ import annotations

import importlib.util

import pytest

from relayrl.core import tuned
from tests.helpers.paths import ROOT

RUN_PY = str(ROOT / "benchmarks" / "run.py")
MUJOCO_ENVS = ("HalfCheetah", "Hopper", "Walker2d")
MUJOCO_WORKLOADS = [f"{g}-{e}" for g in ("W10", "W11", "W12") for e in MUJOCO_ENVS]


@pytest.fixture(scope="module")
def run_py():
    spec = importlib.util.spec_from_file_location("bench_run_mujoco", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(lib, workload, seed, **kw):
    return {"library": lib, "workload": workload, "seed": seed, "variant": "", **kw}


def table_lines(run_py, path, rows):
    for r in rows:
        run_py.append_csv(str(path), r)
    md = run_py.table(run_py.summarise(run_py.read_csv(str(path))))
    return {tuple(c.strip() for c in ln.strip("|").split("|")[:2]): ln for ln in md.splitlines()[2:]}


def test_the_nine_workloads_and_their_group_ids(run_py):
    assert {w for w in run_py.METRICS if w.startswith("W1") and "-" in w} == set(MUJOCO_WORKLOADS)
    assert run_py.mujoco_report.expand(["W1", "W11"]) == [
        "W1",
        "W11-HalfCheetah",
        "W11-Hopper",
        "W11-Walker2d",
    ]
    assert run_py.parse_caps(["W12=4096"]) == {f"W12-{e}": 4096 for e in MUJOCO_ENVS}
    assert run_py.DEFAULT_CAP["W10-Hopper"] == 300_000 and run_py.DEFAULT_CAP["W12-Walker2d"] == 1_000_000
    assert ("W10-Hopper", "rllib") in run_py.NOT_APPLICABLE
    assert ("W10-Hopper", "sb3") not in run_py.NOT_APPLICABLE
    # Tianshou: the MuJoCo reference, and only that
    assert ("W10-Hopper", "tianshou") not in run_py.NOT_APPLICABLE and "tianshou" in run_py.INCUMBENTS
    assert {("W1", "tianshou"), ("W8", "tianshou")} <= run_py.NOT_APPLICABLE


def test_the_best_incumbent_may_be_tianshou(run_py, tmp_path):
    rows = [
        row("relayrl", "W10-HalfCheetah", s, final_return=v, wall_s=600) for s, v in enumerate([5000, 5400])
    ]
    rows += [row("sb3", "W10-HalfCheetah", 0, final_return=4000, wall_s=3000)]
    rows += [row("tianshou", "W10-HalfCheetah", 0, final_return=6000, wall_s=2500)]
    lines = table_lines(run_py, tmp_path / "a.csv", rows)
    ret = lines[("W10-HalfCheetah", run_py.METRICS["W10-HalfCheetah"][0][2])]
    assert "vs tianshou" in ret and "MISS" in ret  # -800 against relayrl's seed SD of 283
    wall = lines[("W10-HalfCheetah", run_py.METRICS["W10-HalfCheetah"][1][2])]
    assert "0.24x" in wall and "PASS" in wall  # 600 s against the faster incumbent's 2,500


@pytest.mark.parametrize(
    ("relayrl", "sb3", "verdict", "source"),
    [
        ([3000, 3400], [3300, 3500], "PASS", "pooled"),  # gap -200, pooled SD 224
        ([2000, 2200], [3300, 3500], "MISS", "pooled"),  # gap -1,300, pooled SD 141
        ([3100, 3500], [3500], "PASS", "relayrl's seeds"),  # SB3 run once: gap -200, relayrl's SD 283
        ([2500, 2700], [3500], "MISS", "relayrl's seeds"),  # gap -900, SD 141
        ([3000], [3500], "needs >= 2 relayrl seeds", ""),
    ],
)
def test_return_at_least_the_best_incumbent_within_seed_noise(
    run_py, tmp_path, relayrl, sb3, verdict, source
):
    rows = [row("relayrl", "W10-Hopper", s, final_return=v, wall_s=600) for s, v in enumerate(relayrl)]
    rows += [row("sb3", "W10-Hopper", s, final_return=v, wall_s=3000) for s, v in enumerate(sb3)]
    label = run_py.METRICS["W10-Hopper"][0][2]
    line = table_lines(run_py, tmp_path / "a.csv", rows)[("W10-Hopper", label)]
    assert verdict in line and source in line and ("vs sb3" in line or not source)


def test_wall_time_against_the_fastest_incumbent_and_a_timeout_left_out(run_py, tmp_path):
    rows = [
        row("relayrl", "W12-Walker2d", 0, final_return=3000, wall_s=1000),
        row("relayrl", "W12-Walker2d", 1, final_return=3100, wall_s=1200),
        row("relayrl", "W12-Walker2d", 2, final_return=10, wall_s=14400, error="timeout after 14400 s"),
        row("sb3", "W12-Walker2d", 0, final_return=2800, wall_s=2600),
    ]
    lines = table_lines(run_py, tmp_path / "a.csv", rows)
    wall = lines[("W12-Walker2d", run_py.METRICS["W12-Walker2d"][1][2])]
    assert "1100.0 (n=2)" in wall and "0.42x" in wall and "PASS" in wall


@pytest.mark.parametrize("workload", MUJOCO_WORKLOADS)
def test_relayrl_config_covers_every_tuned_field(run_py, workload):
    """The CLI applies relayrl's tuned file under --config: a field the runner's JSON left out would leak
    relayrl's own tuning into the 'same hyperparameters' run.
    Every MuJoCo workload's pair has a tuned file."""
    mw = run_py.mujoco_report.mw
    algo, env, cap, _ = mw.specs()[workload]
    fields = mw.relayrl_fields(algo, env, cap)
    assert env in tuned.available(algo)
    tuned_fields, _ = tuned.load(algo, env)
    assert set(tuned_fields) <= set(fields)
    assert set(tuned_fields.get("model", {})) <= set(fields["model"])
    assert fields["evaluation_episodes"] == 10 and fields["evaluation_explore"] is False
    if algo == "ppo":  # the zoo's ortho_init: False on HalfCheetah and Hopper; Walker2d keeps SB3's default
        zoo_policy = mw.ZOO_PPO_MUJOCO[env]["policy"]
        expected = "orthogonal" if zoo_policy is None else "uniform_fan_in"
        assert fields["model"]["weight_init"] == expected
    steps = mw.iteration_steps(algo, env)
    assert fields["evaluation_interval"] * steps in (10_000, 10_240)  # SAC/TD3: 1,250 x 8; PPO: 20 x 512
    iters = mw.relayrl_stop_iters(cap, steps)
    assert iters % fields["evaluation_interval"] == 0  # the last iteration evaluates
    # a run shorter than one evaluation interval (a smoke run) evaluates at its end, not 10k steps later
    assert mw.eval_interval(512, 600) == 2 and mw.relayrl_stop_iters(600, 512) == 2


def test_curve_chart_grid_marks_the_pairs_without_a_run(run_py, tmp_path, monkeypatch):
    """The grid is algorithms x envs with any run: a panel of that grid whose pair has no run says so
    instead of showing bare axes, and a panel with runs keeps its legend, a variant's lines named and dashed
    apart from the plain run's and listed after it."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for workload, lib in (("W10-Hopper", "relayrl"), ("W12-HalfCheetah", "sb3")):
        curve = tmp_path / f"{workload}_{lib}.json"
        curve.write_text(json.dumps({"curve": [[1.0, 10_000, 5.0], [2.0, 20_000, 9.0]], "updates": []}))
        rows.append(row(lib, workload, 0, curve_file=curve.name))
    rows.insert(0, dict(rows[0], variant="orthogonal"))  # listed first, drawn second
    monkeypatch.setattr(plt, "close", lambda fig=None: None)  # keep the figure to look at its panels
    path = run_py.mujoco_report.curve_chart(rows, str(tmp_path), str(tmp_path), plt, {}, run_py.variant_style)
    fig = plt.gcf()
    panels = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    monkeypatch.undo()
    plt.close(fig)
    assert path and (tmp_path / "mujoco_curves.png").exists()
    assert set(panels) == {"W10-HalfCheetah", "W10-Hopper", "W12-HalfCheetah", "W12-Hopper"}
    for name, ax in panels.items():
        texts = [t.get_text() for t in ax.texts]
        if name == "W10-Hopper":
            legend = [t.get_text() for t in ax.get_legend().get_texts()]
            assert texts == [] and legend == ["relayrl", "relayrl/orthogonal"]
            plain, variant = (line.get_linestyle() for line in ax.lines)
            assert plain == "-" and variant != "-"
        elif name == "W12-HalfCheetah":
            assert texts == [] and ax.get_legend() is not None and len(ax.lines) == 1
        else:
            assert texts == ["not yet measured"] and ax.get_legend() is None and len(ax.lines) == 0


def test_w11_starts_the_td3_actor_as_sb3_and_the_orthogonal_variant_changes_that_alone(run_py, tmp_path):
    """W11's plain relayrl run starts the actor as SB3's (torch's default, U(+-1/sqrt(fan_in))); its
    relayrl/orthogonal run, the start before stop 39, differs in that alone. The table reports and judges
    both, each against SB3."""
    import json
    import shutil

    import relayrl_runner

    mw = run_py.mujoco_report.mw
    w = relayrl_runner.common.WORKLOADS["W11-Hopper"]
    configs = {}
    for variant in ("", "orthogonal"):
        cmd = relayrl_runner.mujoco_cmd(w, 0, variant)
        shutil.rmtree(relayrl_runner._MUJOCO_LOGDIR[0])  # the run's logdir, made for the run
        with open(cmd[cmd.index("--config") + 1]) as f:
            configs[variant] = json.load(f)
    plain, orthogonal = configs[""], configs["orthogonal"]
    assert plain == mw.relayrl_fields("td3", "Hopper-v5", 300_000)
    assert plain["model"]["weight_init"] == "uniform_fan_in"
    assert orthogonal == dict(plain, model=dict(plain["model"], weight_init="orthogonal"))
    with pytest.raises(NotImplementedError, match="'orthogonal'"):
        relayrl_runner.mujoco_cmd(w, 0, "fan_out")
    with pytest.raises(NotImplementedError, match="variants: ''"):
        relayrl_runner.mujoco_cmd(relayrl_runner.common.WORKLOADS["W10-Hopper"], 0, "orthogonal")

    rows = [row("relayrl", "W11-Hopper", s, final_return=v, wall_s=600) for s, v in enumerate([3300, 3400])]
    rows += [
        dict(row("relayrl", "W11-Hopper", s, final_return=v, wall_s=600), variant="orthogonal")
        for s, v in enumerate([2000, 2200])
    ]
    rows += [row("sb3", "W11-Hopper", s, final_return=v, wall_s=3000) for s, v in enumerate([3350, 3450])]
    line = table_lines(run_py, tmp_path / "a.csv", rows)[("W11-Hopper", run_py.METRICS["W11-Hopper"][0][2])]
    assert "default: 3,350 (n=2)<br>orthogonal: 2,100 (n=2)" in line
    assert "default: PASS" in line and "orthogonal: MISS" in line
