"""Stable-Baselines3 anchor: trains one workload with rl-baselines3-zoo's tuned hyperparameters in a fresh
process of the anchors venv and prints one JSON line (see common.py).

    benchmarks/anchors/.venv/bin/python benchmarks/anchors/sb3_runner.py --workload W1 --seed 0

Hyperparameters are copied by value from rl_zoo3 2.9.2, `rl_zoo3/hyperparams/{ppo,dqn,sac}.yml`
(entries CartPole-v1, HalfCheetah-v4 used for HalfCheetah-v5, Pendulum-v1, atari: common.ZOO_PPO_ATARI);
SB3 defaults for the rest.
The zoo's schedules run over its own `n_timesteps`; we train up to the workload's step cap instead, so the
schedules are rescaled to reach their zoo values at the same env step (a linear schedule to 0 at 1e5 steps
stays at 0 past it) -- the zoo's run, step for step, only allowed to continue.

Atari (W7, W8): the zoo's recipe, `make_atari_env` (Monitor inside SB3's AtariWrapper, so the returns are
whole games, unclipped) + VecFrameStack(4), on ALE v5 made without frame skip (common.ALE_KWARGS: the wrapper
skips). Variant "nofire" drops the one part of AtariWrapper that relayrl's `atari` options lack: FireResetEnv
(press FIRE after every reset and lost life); the default "" is the zoo's wrapper as it is.
W9 runs benchmarks/replay_memory.py in this venv (variants "plain" and "optimized": optimize_memory_usage).

MuJoCo (issue 17: W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO): the zoo's entries in mujoco_workloads.py
(not rescaled: the zoo has no schedules there), trained to the cap, evaluated by EvalCallback
(mujoco_learn); the curve points are the evaluations.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import mujoco_workloads  # noqa: E402

# rl_zoo3 2.9.2 hyperparams/ppo.yml CartPole-v1
ZOO_PPO_CARTPOLE = dict(
    n_envs=8,
    n_timesteps=100_000,
    n_steps=32,
    batch_size=256,
    gae_lambda=0.8,
    gamma=0.98,
    n_epochs=20,
    ent_coef=0.0,
    learning_rate=("lin", 0.001),
    clip_range=("lin", 0.2),
)
# rl_zoo3 2.9.2 hyperparams/dqn.yml CartPole-v1
ZOO_DQN_CARTPOLE = dict(
    n_timesteps=50_000,
    learning_rate=2.3e-3,
    batch_size=64,
    buffer_size=100_000,
    learning_starts=1000,
    gamma=0.99,
    target_update_interval=10,
    train_freq=256,
    gradient_steps=128,
    exploration_fraction=0.16,
    exploration_final_eps=0.04,
    net_arch=[256, 256],
)
# rl_zoo3 2.9.2 hyperparams/sac.yml Pendulum-v1
ZOO_SAC_PENDULUM = dict(n_timesteps=20_000, learning_rate=1e-3)


def zoo_ppo(env, hp: dict, seed: int):
    """SB3's PPO with one of rl_zoo3's MuJoCo entries (mujoco_workloads.ZOO_PPO_MUJOCO: W4 and W12)."""
    import torch
    from stable_baselines3 import PPO

    policy = hp["policy"]
    return PPO(
        "MlpPolicy",
        env,
        n_steps=hp["n_steps"],
        batch_size=hp["batch_size"],
        gamma=hp["gamma"],
        learning_rate=hp["learning_rate"],
        ent_coef=hp["ent_coef"],
        clip_range=hp["clip_range"],
        n_epochs=hp["n_epochs"],
        gae_lambda=hp["gae_lambda"],
        max_grad_norm=hp["max_grad_norm"],
        vf_coef=hp["vf_coef"],
        policy_kwargs=None
        if policy is None
        else dict(
            log_std_init=policy["log_std_init"],
            ortho_init=policy["ortho_init"],
            activation_fn=torch.nn.ReLU,
            net_arch=dict(pi=policy["net_arch"], vf=policy["net_arch"]),
        ),
        seed=seed,
        device="cpu",
    )


def _linear(start: float, zoo_steps: int, total: int):
    """The zoo's `lin_X` (X * progress_remaining over zoo_steps), expressed against our `total` steps."""

    def schedule(progress_remaining: float) -> float:
        done = (1.0 - progress_remaining) * total
        return start * max(0.0, 1.0 - done / zoo_steps)

    return schedule


def child(w: common.Workload, seed: int, variant: str) -> None:
    rep = common.Reporter(w)
    import torch
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    # One torch thread for MLPs, as relayrl gives TensorFlow (relayrl/learning/placement.py): with 2
    # threads torch's OpenMP pool spin-waits whenever other processes hold the cores (seen here: ~100 env
    # steps/s for the first 130 s of a W1 run while other sessions ran tests, 4.6k steps/s once they stopped).
    # All cores for Atari's conv net, as relayrl gives TensorFlow for conv nets (common.torch_threads).
    torch.set_num_threads(common.torch_threads(w))

    class Report(BaseCallback):
        rollouts = 0

        def _on_rollout_start(self) -> None:
            self.rollouts += 1
            if self.rollouts == 2:  # the first rollout AND its update have finished
                rep.first_iteration()

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    rep.episode(info["episode"]["r"])
            solved = rep.progress(self.num_timesteps, self.model._n_updates)
            return not solved and not (w.name == "W5" and self.rollouts >= 2)

    total = w.cap or 100_000
    if mujoco_workloads.is_mujoco(w.name):
        mujoco_learn(w, seed, total, rep)
        return
    if w.algo == "ppo" and w.env == "CartPole-v1":
        hp = ZOO_PPO_CARTPOLE
        env = make_vec_env(w.env, n_envs=hp["n_envs"], seed=seed)
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=hp["n_steps"],
            batch_size=hp["batch_size"],
            gae_lambda=hp["gae_lambda"],
            gamma=hp["gamma"],
            n_epochs=hp["n_epochs"],
            ent_coef=hp["ent_coef"],
            learning_rate=_linear(0.001, hp["n_timesteps"], total),
            clip_range=_linear(0.2, hp["n_timesteps"], total),
            seed=seed,
            device="cpu",
        )
    elif w.algo == "dqn":
        hp = ZOO_DQN_CARTPOLE
        env = make_vec_env(w.env, n_envs=1, seed=seed)
        model = DQN(
            "MlpPolicy",
            env,
            learning_rate=hp["learning_rate"],
            batch_size=hp["batch_size"],
            buffer_size=hp["buffer_size"],
            learning_starts=hp["learning_starts"],
            gamma=hp["gamma"],
            target_update_interval=hp["target_update_interval"],
            train_freq=hp["train_freq"],
            gradient_steps=hp["gradient_steps"],
            # epsilon reaches its floor at the same env step as in the zoo's 5e4-step run
            exploration_fraction=hp["exploration_fraction"] * hp["n_timesteps"] / total,
            exploration_final_eps=hp["exploration_final_eps"],
            policy_kwargs=dict(net_arch=hp["net_arch"]),
            seed=seed,
            device="cpu",
        )
    elif w.algo == "ppo" and w.env.startswith("HalfCheetah"):
        hp = mujoco_workloads.ZOO_PPO_MUJOCO["HalfCheetah-v5"]
        env = VecNormalize(make_vec_env(w.env, n_envs=hp["n_envs"], seed=seed), gamma=hp["gamma"])
        model = zoo_ppo(env, hp, seed)
    elif w.algo == "ppo" and common.is_atari(w):
        model = atari_ppo(w, seed, variant, total)
    elif w.algo == "sac":
        hp = ZOO_SAC_PENDULUM
        env = make_vec_env(w.env, n_envs=1, seed=seed)
        model = SAC("MlpPolicy", env, learning_rate=hp["learning_rate"], seed=seed, device="cpu")
    else:
        raise SystemExit(f"sb3_runner: no workload {w.name}")
    model.learn(total_timesteps=total, callback=Report())
    rep.progress(model.num_timesteps, model._n_updates, force=True)
    rep.emit(event="done", env_steps=model.num_timesteps)


def mujoco_learn(w: common.Workload, seed: int, total: int, rep: common.Reporter) -> None:
    """Issue 17: the zoo's MuJoCo entry for w.algo (mujoco_workloads.py), evaluated by SB3's EvalCallback
    every eval_every() steps (10 deterministic episodes on an env seeded seed + EVAL_SEED_OFFSET; for PPO a
    VecNormalize copy that EvalCallback syncs with the training statistics) and once more at the end."""
    import numpy as np
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization

    mw = mujoco_workloads
    env = make_vec_env(w.env, n_envs=1, seed=seed)
    eval_env = make_vec_env(w.env, n_envs=1, seed=seed + mw.EVAL_SEED_OFFSET)
    if w.algo == "sac":
        hp = mw.ZOO_SAC_MUJOCO
        model = SAC(
            "MlpPolicy",
            env,
            learning_starts=hp["learning_starts"],
            learning_rate=hp["learning_rate"],
            buffer_size=hp["buffer_size"],
            batch_size=hp["batch_size"],
            tau=hp["tau"],
            gamma=hp["gamma"],
            policy_kwargs=dict(net_arch=hp["net_arch"]),
            seed=seed,
            device="cpu",
        )
    elif w.algo == "td3":
        hp = mw.ZOO_TD3_MUJOCO
        dims = env.action_space.shape[-1]
        model = TD3(
            "MlpPolicy",
            env,
            learning_starts=hp["learning_starts"],
            action_noise=NormalActionNoise(np.zeros(dims), hp["noise_std"] * np.ones(dims)),
            learning_rate=hp["learning_rate"],
            batch_size=hp["batch_size"],
            buffer_size=hp["buffer_size"],
            tau=hp["tau"],
            gamma=hp["gamma"],
            policy_delay=hp["policy_delay"],
            target_policy_noise=hp["target_policy_noise"],
            target_noise_clip=hp["target_noise_clip"],
            policy_kwargs=dict(net_arch=hp["net_arch"]),
            seed=seed,
            device="cpu",
        )
    else:
        hp = mw.ZOO_PPO_MUJOCO[w.env]
        env = VecNormalize(env, gamma=hp["gamma"])
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False, gamma=hp["gamma"])
        model = zoo_ppo(env, hp, seed)

    class Report(BaseCallback):  # EvalCallback's callback_after_eval: one curve point per evaluation
        def _on_step(self) -> bool:
            rep.progress(self.model.num_timesteps, self.model._n_updates, self.parent.last_mean_reward, True)
            return True

    evaluation = EvalCallback(
        eval_env,
        n_eval_episodes=mw.EVAL_EPISODES,
        eval_freq=mw.eval_every(),
        deterministic=True,
        callback_after_eval=Report(),
        verbose=0,
    )
    model.learn(total_timesteps=total, callback=evaluation)
    if evaluation.n_calls % evaluation.eval_freq != 0:  # the final evaluation, unless EvalCallback just ran
        sync_envs_normalization(env, eval_env)
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=mw.EVAL_EPISODES, deterministic=True)
        rep.progress(model.num_timesteps, model._n_updates, float(mean), force=True)
    rep.emit(event="done", env_steps=model.num_timesteps)


def atari_ppo(w: common.Workload, seed: int, variant: str, total: int):
    """PPO with the zoo's `atari` entry on w.env (see the module docstring)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common import atari_wrappers as aw
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack

    if variant not in ("", "nofire"):
        raise SystemExit(
            f"sb3_runner: {w.name} variants: '' (the zoo's AtariWrapper), nofire (got {variant!r})"
        )
    pre = common.ATARI_PREPROCESSING

    def without_fire_reset(env):  # AtariWrapper's chain, in its order, less FireResetEnv
        env = aw.NoopResetEnv(env, noop_max=pre["noop_max"])
        env = aw.EpisodicLifeEnv(aw.MaxAndSkipEnv(env, skip=pre["frame_skip"]))
        return aw.ClipRewardEnv(aw.WarpFrame(env, width=pre["screen_size"], height=pre["screen_size"]))

    common.register_ale()
    hp = common.ZOO_PPO_ATARI
    env = make_vec_env(  # what make_atari_env does, with the wrapper chosen by the variant
        w.env,
        n_envs=hp["n_envs"],
        seed=seed,
        env_kwargs=common.ALE_KWARGS,
        wrapper_class=without_fire_reset if variant == "nofire" else aw.AtariWrapper,
        wrapper_kwargs=None
        if variant == "nofire"
        else dict(
            noop_max=pre["noop_max"],
            frame_skip=pre["frame_skip"],
            screen_size=pre["screen_size"],
            terminal_on_life_loss=pre["episodic_life"],
            clip_reward=pre["clip_rewards"],
        ),
    )
    env = VecFrameStack(env, n_stack=pre["frame_stack"])
    return PPO(
        "CnnPolicy",
        env,
        n_steps=hp["n_steps"],
        n_epochs=hp["n_epochs"],
        batch_size=hp["batch_size"],
        learning_rate=_linear(hp["learning_rate"], hp["n_timesteps"], total),
        clip_range=_linear(hp["clip_range"], hp["n_timesteps"], total),
        vf_coef=hp["vf_coef"],
        ent_coef=hp["ent_coef"],
        gamma=hp["gamma"],
        gae_lambda=hp["gae_lambda"],
        max_grad_norm=hp["max_grad_norm"],
        seed=seed,
        device="cpu",
    )


def make_cmd(w: common.Workload, seed: int, variant: str):
    if w.name == "W3":
        raise NotImplementedError("W3 is the raw env limit (gymnasium) and relayrl's sampler: relayrl_runner")
    if w.name == "W9":
        if variant not in ("plain", "optimized"):
            raise NotImplementedError(f"W9 variants: plain, optimized (got {variant!r})")
        return common.memory_cmd(common.ANCHOR_PYTHON, "sb3", w, variant), None
    return common.self_cmd(__file__, w, seed, variant), None


if __name__ == "__main__":
    common.cli(
        "sb3",
        make_cmd,
        lambda: common.anchor_version("stable-baselines3"),
        child_main=child,
        line_parser=common.parse_memory,
    )
