"""relayrl side of the anchors: runs `relayrl train ALGO ENV ... --json` in a fresh process (so the wall clock
includes interpreter start, imports, TF and Ray start, as for the incumbents) with relayrl's tuned defaults
(relayrl/core/tuned/<algo>-<env>.yaml, applied by the CLI), and prints one JSON line (see common.py).

    .venv/bin/python benchmarks/anchors/relayrl_runner.py --workload W1 --seed 0 [--variant w2]

Variants: "" = in-process sampling (--workers 0); "w2" = 2 Ray rollout workers.
W3 (raw env limit) runs here too, in relayrl's venv: variants raw1 (one gymnasium env, random actions),
raw16 (gym.make_vec, 16 envs, random actions) and worker16 (relayrl's RolloutWorker, 16 envs: numpy policy
forward, action sampling and GAE every fragment). Each is measured for a few seconds after a warm-up.

Atari (W7, W8): `python -m relayrl.cli train ppo ALE/Breakout-v5 --config FILE ...` where FILE (written to
benchmarks/results/configs/ before the run) holds the SB3 zoo's Atari recipe on relayrl's fields
(atari_fields(): common.ZOO_PPO_ATARI, the Nature CNN, the `atari` options of common.ATARI_PREPROCESSING),
so relayrl's tuned defaults play no part. Its episode returns are real game scores (relayrl/envs/atari.py:
episodic life and reward clipping are the learner's signals only). Variants: "" (8 envs in-process), "w2"
(2 Ray workers x 4 envs), "envpool" (in-process, vector_backend envpool: envpool's own ALE build and C++
preprocessing with the same options; reported as not run where envpool is not importable), "envpool_bf16"
(envpool, and the torso computing in bfloat16 on float32 weights: model.compute_dtype).
W9 runs benchmarks/replay_memory.py in relayrl's venv.

MuJoCo (issue 17: W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO): `python -m relayrl.cli train ALGO ENV
--config FILE --stop-iters N` with the zoo's hyperparameters on relayrl's fields and evaluation every
~10k env steps (mujoco_workloads.relayrl_fields); the curve is read from the run's progress.csv at its end.

The learning curve comes from the CLI's progress lines (stderr, at most every 0.5 s), timed by this parent
from the moment it started the child; time_to_solve_s is the CLI's own figure (time since the child process
was created, psutil's create_time).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import mujoco_workloads  # noqa: E402

REPO = os.path.dirname(os.path.dirname(common.HERE))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
PROGRESS = re.compile(r"^iter\s+(\d+)\s+steps\s+([\d,]+)\s+reward\s+(\S+)")


def relayrl_python() -> str:
    own = os.path.join(VENV_BIN, "python")
    return own if os.path.exists(own) else sys.executable


def relayrl_version() -> str:
    import subprocess

    out = subprocess.run(
        [relayrl_python(), "-c", "import importlib.metadata as m; print(m.version('relayrl'))"],
        capture_output=True,
        text=True,
    )
    rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return f"{out.stdout.strip() or '?'}+{rev.stdout.strip() or '?'}"


ATARI_VARIANTS = ("", "w2", "envpool", "envpool_bf16")


def atari_workers(variant: str) -> int:
    """Ray rollout workers of an Atari variant: 2 for w2, else in-process."""
    return 2 if "w2" in variant.split("_") else 0


def atari_fields(variant: str) -> dict:
    """relayrl's config fields for the zoo's Atari PPO recipe (common.ZOO_PPO_ATARI)."""
    hp, pre = common.ZOO_PPO_ATARI, common.ATARI_PREPROCESSING
    parts = variant.split("_")
    workers = atari_workers(variant)
    return {
        "num_envs_per_worker": hp["n_envs"] // max(workers, 1),  # 8 envs in all, as every library
        "vector_backend": "envpool" if "envpool" in parts else "gymnasium",
        "train_batch_size": hp["n_envs"] * hp["n_steps"],
        "rollout_fragment_length": hp["n_steps"],
        "scale_rewards": False,
        "sgd_minibatch_size": hp["batch_size"],
        "num_sgd_iter": hp["n_epochs"],
        "lr_schedule": [[0, hp["learning_rate"]], [hp["n_timesteps"], 0.0]],
        "clip_param": hp["clip_range"],
        "entropy_coeff": hp["ent_coef"],
        "vf_loss_coeff": hp["vf_coef"],
        "gamma": hp["gamma"],
        "lambda_": hp["gae_lambda"],
        "grad_clip": hp["max_grad_norm"],
        "vf_clip_param": None,
        # SB3's CnnPolicy: NatureCNN (valid padding) -> 512 relu, shared by the policy and value heads
        "model": {
            "conv_filters": [[32, 8, 4], [64, 4, 2], [64, 3, 1]],
            "fcnet_hiddens": [512],
            "fcnet_activation": "relu",
            "vf_share_layers": True,
            # bf16: the torso computes in bfloat16 on float32 weights (model.compute_dtype)
            "compute_dtype": "bfloat16" if "bf16" in parts else "float32",
        },
        "atari": {
            "preprocess": True,
            "noop_max": pre["noop_max"],
            "frame_skip": pre["frame_skip"],
            "screen_size": pre["screen_size"],
            "grayscale": True,
            "frame_stack": pre["frame_stack"],
            "repeat_action_probability": common.ALE_KWARGS["repeat_action_probability"],
            "full_action_space": common.ALE_KWARGS["full_action_space"],
            "max_episode_frames": common.ALE_KWARGS["max_num_frames_per_episode"],
            "episodic_life": pre["episodic_life"],
            "clip_rewards": pre["clip_rewards"],
        },
        "metrics_num_episodes_for_smoothing": 100,  # W8: the mean score of the last 100 games
    }


def envpool_missing() -> bool:
    import subprocess

    probe = subprocess.run([relayrl_python(), "-c", "import envpool"], capture_output=True, timeout=120)
    return probe.returncode != 0


def atari_cmd(w: common.Workload, seed: int, variant: str) -> list[str]:
    if variant not in ATARI_VARIANTS:
        raise NotImplementedError(
            f"{w.name} variants: {', '.join(map(repr, ATARI_VARIANTS))} (got {variant!r})"
        )
    if "envpool" in variant.split("_") and envpool_missing():
        raise NotImplementedError("envpool is not importable in relayrl's venv")
    stop = ["--stop-timesteps", str(w.cap)]
    return config_cmd(w, seed, variant, atari_fields(variant), atari_workers(variant), stop, "tb")


def config_cmd(
    w: common.Workload, seed: int, variant: str, fields: dict, workers: int, stop: list[str], logdir: str
) -> list[str]:
    """`relayrl train ALGO ENV --config FILE` with `fields` written to FILE (under results/configs)."""
    # A JSON file is YAML too: no YAML writer needed here, the parent may run under any venv.
    path = os.path.join(
        common.RESULTS_DIR, "configs", f"{w.name}_relayrl{'_' + variant if variant else ''}.json"
    )
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(fields, f, indent=1)
    return [
        relayrl_python(),
        "-m",
        "relayrl.cli",
        "train",
        w.algo,
        w.env,
        "--seed",
        str(seed),
        "--workers",
        str(workers),
        "--config",
        path,
        *stop,
        "--json",
        "--logdir",
        logdir,
    ]


_MUJOCO_LOGDIR: list[str] = []  # the MuJoCo run's --logdir, read by parse() at the run's end


def mujoco_cmd(w: common.Workload, seed: int, variant: str) -> list[str]:
    """Issue 17: `relayrl train ALGO ENV --config FILE` with the zoo's hyperparameters and the evaluation
    protocol (mujoco_workloads.relayrl_fields), stopping on the evaluation grid (relayrl_stop_iters)."""
    import tempfile

    mw = mujoco_workloads
    variants = mw.RELAYRL_VARIANTS.get(w.algo, {"": {}})
    if variant not in variants:
        raise NotImplementedError(
            f"{w.name} relayrl variants: {', '.join(map(repr, variants))} (got {variant!r})"
        )
    _MUJOCO_LOGDIR[:] = [tempfile.mkdtemp(prefix=f"relayrl_{w.name}_")]
    iters = mw.relayrl_stop_iters(w.cap, mw.iteration_steps(w.algo, w.env))
    fields = mw.relayrl_fields(w.algo, w.env, w.cap)
    fields["model"] = dict(fields["model"], **variants[variant])
    stop = ["--stop-iters", str(iters)]
    return config_cmd(w, seed, variant, fields, 0, stop, os.path.join(_MUJOCO_LOGDIR[0], "run"))


def mujoco_curve(now: float, final: dict) -> list[list[float]]:
    """[wall_s, env_steps, evaluation mean] per evaluation, from the run's progress.csv. wall_s is on this
    parent's clock: `now` (the final line) less the training and evaluation time still to come after it."""
    import csv
    import shutil

    logdir = _MUJOCO_LOGDIR[0]
    with open(os.path.join(logdir, "run", "progress.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    shutil.rmtree(logdir, ignore_errors=True)
    evaluating, points = 0.0, []  # evaluation time so far (time_total_s is training time only)
    for r in rows:
        evaluating += float(r.get("evaluation/time_s") or 0.0)
        if r.get("evaluation/episode_reward_mean"):
            t = float(r["time_total_s"]) + evaluating
            points.append([t, int(float(r["timesteps_total"])), float(r["evaluation/episode_reward_mean"])])
    end = float(final["time_total_s"]) + evaluating
    return [[now - (end - t), steps, ret] for t, steps, ret in points]


def make_cmd(w: common.Workload, seed: int, variant: str):
    if mujoco_workloads.is_mujoco(w.name):
        return mujoco_cmd(w, seed, variant), None
    if w.name == "W3":
        return common.self_cmd(__file__, w, seed, variant, python=relayrl_python()), None
    if w.name == "W9":
        return common.memory_cmd(relayrl_python(), "relayrl", w, variant), None
    if common.is_atari(w):
        return atari_cmd(w, seed, variant), None
    workers = 2 if variant == "w2" else 0
    cmd = [
        os.path.join(VENV_BIN, "relayrl"),
        "train",
        w.algo,
        w.env,
        "--seed",
        str(seed),
        "--workers",
        str(workers),
        "--json",
        "--logdir",
        os.path.join("tb"),
    ]
    if w.name == "W5":
        cmd += ["--stop-iters", "1"]
    else:
        cmd += ["--stop-timesteps", str(w.cap)]
        if w.threshold is not None:
            cmd += ["--stop-reward", str(w.threshold)]
    if w.window != 100:
        cmd += ["--set", f"metrics_num_episodes_for_smoothing={w.window}"]
    return cmd, None


def parse(line: str, now: float, run: common.Run, window) -> bool:
    if run.workload == "W9":
        return common.parse_memory(line, now, run, window)
    if mujoco_workloads.is_mujoco(run.workload):  # the curve is the evaluations', read at the end
        if line.startswith("{"):
            final = json.loads(line)
            run.extra.update(env_steps=final["timesteps_total"])
            run.curve = mujoco_curve(now, final)
        elif run.first_iter_s is None and PROGRESS.match(line.strip()):
            run.first_iter_s = now
        return False
    m = PROGRESS.match(line.strip())
    if m:
        reward = float(m.group(3))
        run.curve.append([now, int(m.group(2).replace(",", "")), None if reward != reward else reward])
        if run.first_iter_s is None:
            run.first_iter_s = now
    elif line.startswith("{"):
        final = json.loads(line)
        run.extra.update(env_steps=final["timesteps_total"])
        if final.get("solved"):
            run.solved_t, run.solved_steps = final["time_to_solve_s"], final["timesteps_total"]
        if final.get("episode_reward_mean") is not None and run.curve:
            run.curve.append([now, final["timesteps_total"], final["episode_reward_mean"]])
        # Gradient updates over the whole training time (the CLI reports no time series of updates): this
        # includes the warm-up before learning_starts and graph tracing, so it understates the steady rate
        # that the incumbents' figures (taken past the first 10% of updates) give.
        updates = final.get("learner/num_updates_total")
        if updates and final.get("time_total_s"):
            run.extra["updates_per_s"] = updates / final["time_total_s"]
    return False


# --------------------------------------------------------------------------------------------- W3 child
def w3_child(w: common.Workload, seed: int, variant: str, seconds: float = 4.0) -> None:
    import gymnasium as gym
    import numpy as np

    num_envs = int(re.sub(r"\D", "", variant) or 1)
    if variant.startswith("raw"):
        env = gym.make(w.env) if num_envs == 1 else gym.make_vec(w.env, num_envs=num_envs)
        space = env.action_space
        env.reset(seed=seed)
        space.seed(seed)
        actions = [space.sample() for _ in range(256)]

        def chunk() -> int:
            if num_envs == 1:
                for a in actions:
                    _, _, term, trunc, _ = env.step(a)
                    if term or trunc:
                        env.reset()
            else:
                for a in actions:
                    env.step(a)
            return len(actions) * num_envs
    elif variant.startswith("worker"):
        from relayrl.core.knobs import DEFAULT_MODEL
        from relayrl.models import networks
        from relayrl.sampling.rollout import RolloutWorker
        from relayrl.sampling.settings import SamplerSettings

        probe = gym.make(w.env)
        spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, DEFAULT_MODEL)
        settings = SamplerSettings(
            env=w.env,
            env_config={},
            num_envs=num_envs,
            fragment_length=256,
            spec=spec,
            gamma=0.99,
            lambda_=0.95,
            seed=seed,
        )
        worker = RolloutWorker(settings)
        worker.set_weights(networks.init_weights(spec, np.random.default_rng(seed)), 0)

        def chunk() -> int:
            worker.sample()
            return 256 * num_envs
    else:
        raise SystemExit(f"W3 variants: raw1, raw16, worker16 (got {variant!r})")
    chunk()  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += chunk()
    rate = steps / (time.perf_counter() - start)
    print(
        common.PREFIX
        + json.dumps(
            {
                "event": "done",
                "steps_per_s": rate,
                "env_steps": steps,
                "num_envs": num_envs,
                "library": "gymnasium" if variant.startswith("raw") else "relayrl",
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    common.cli(
        "relayrl", make_cmd, relayrl_version, line_parser=parse, child_main=w3_child, default_timeout=1200
    )
