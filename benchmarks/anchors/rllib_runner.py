"""RLlib anchor (Ray 2.60, new API stack, torch): trains one workload with RLlib's own tuned examples in a
fresh process of the anchors venv and prints one JSON line (see common.py).

    python benchmarks/anchors/rllib_runner.py --workload W1 --seed 0 [--variant r0|r2]

Hyperparameter sources (ray-project/ray, rllib/tuned_examples/; not shipped in the wheel, so copied by
value here):
  W1  ppo/cartpole_ppo.py: lr 3e-4, num_epochs 6, vf_loss_coeff 0.01, fcnet [32] linear, vf_share_layers;
      PPOConfig defaults for the rest (2 env runners, train_batch_size_per_learner 4000, minibatch 128).
  W2  dqn/cartpole_dqn.py: lr 5e-4, train batch 32, prioritized replay (50k, alpha .6, beta .4),
      n_step (2, 5), double + dueling, epsilon 1 -> 0.02 over 10k steps, fcnet [256] tanh + head [256].
  W4  ppo/benchmark_ppo_mujoco.py: gamma .99, lambda .95, lr 3e-4, num_epochs 15, train_batch 32*512,
      minibatch 4096, vf_loss_coeff 0.01, fcnet [64, 64] tanh, vf_share_layers; rollout_fragment_length 512.
      That file asks for 32 env runners and a GPU learner: here 2 env runners (the machine has 2 cores).
  W6  sac/pendulum_sac.py: initial_alpha 1.001, actor/critic/alpha lr 2e-4/8e-4/9e-4, n_step (2, 5),
      tau .005, train batch 256, prioritized replay (100k, alpha 1, beta 0), learning starts 256,
      fcnet [256, 256] relu (xavier), smoothing over 5 episodes in the file (10 here: the workload's window).
  W5  W1's config; variant r0 = no env runners (sampling in the driver), r2 = 2 env runners.
  W7  not RLlib's tuned ppo/atari_ppo.py but the SB3 zoo's Atari recipe (common.ZOO_PPO_ATARI), so that every
      library runs the same one: train batch 8 envs x 128, minibatch 256, 4 epochs, lr 2.5e-4 falling
      linearly to 0 at 1e7 steps, clip 0.1, entropy 0.01, vf 0.5, no KL term, no value clipping, grad norm
      0.5; the Nature CNN (valid padding) with one 512 relu layer per head (RLlib's conv encoder has no shared
      dense layer: ~17% more multiply-adds than SB3's and relayrl's shared 512). RLlib's own Atari path:
      ALE v5 without frame skip (common.ALE_KWARGS) in `wrap_atari_for_new_api_stack(dim=84, frameskip=4,
      framestack=4)` (noop 30, max-pool, episodic life, FIRE after reset, float observations) and rewards
      clipped to their sign by a wrapper (the new API stack ignores `clip_rewards`). So its
      episode_return_mean is per life and clipped: W7 uses only its step counts. Variants r0 = the 8 envs in
      the driver, r2 (and "") = 2 env runners x 4 envs, RLlib's default runner count.
Ray is started with the dashboard off (as relayrl starts it by default) and usage stats off.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def _get(result: dict, *paths: str):
    for path in paths:
        node = result
        for key in path.split("/"):
            if not isinstance(node, dict) or key not in node:
                node = None
                break
            node = node[key]
        if node is not None:
            return node
    return None


def _learner_updates(result: dict, batch_rows: int | None) -> int | None:
    """Gradient updates so far, for the off-policy learners (one update = one train batch of `batch_rows`):
    RLlib logs the rows its module trained on (`num_module_steps_trained_lifetime`)."""
    rows = _get(
        result,
        "learners/default_policy/num_module_steps_trained_lifetime",
        "learners/__all_modules__/num_module_steps_trained_lifetime",
        "learners/__all_modules__/num_env_steps_trained_lifetime",
    )
    return int(rows // batch_rows) if rows is not None and batch_rows else None


def config_for(w: common.Workload, seed: int, variant: str):
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if w.algo == "ppo" and w.env == "CartPole-v1":
        from ray.rllib.algorithms.ppo import PPOConfig

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
            .rl_module(
                model_config=DefaultModelConfig(
                    fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True
                )
            )
        )
        if variant in ("r0", "r2"):
            config = config.env_runners(num_env_runners=int(variant[1]))
    elif w.algo == "ppo" and common.is_atari(w):
        config = atari_config(w, variant)
    elif w.algo == "dqn":
        from ray.rllib.algorithms.dqn import DQNConfig

        config = (
            DQNConfig()
            .environment("CartPole-v1")
            .training(
                lr=0.0005,
                train_batch_size_per_learner=32,
                replay_buffer_config={
                    "type": "PrioritizedEpisodeReplayBuffer",
                    "capacity": 50000,
                    "alpha": 0.6,
                    "beta": 0.4,
                },
                n_step=(2, 5),
                double_q=True,
                dueling=True,
                epsilon=[(0, 1.0), (10000, 0.02)],
            )
            .rl_module(
                model_config=DefaultModelConfig(
                    fcnet_hiddens=[256],
                    fcnet_activation="tanh",
                    fcnet_bias_initializer="zeros_",
                    head_fcnet_bias_initializer="zeros_",
                    head_fcnet_hiddens=[256],
                )
            )
        )
    elif w.algo == "ppo":
        from ray.rllib.algorithms.ppo import PPOConfig

        config = (
            PPOConfig()
            .environment(w.env)
            .env_runners(num_env_runners=2, rollout_fragment_length=512)
            .training(
                gamma=0.99,
                lambda_=0.95,
                lr=0.0003,
                num_epochs=15,
                train_batch_size=32 * 512,
                minibatch_size=4096,
                vf_loss_coeff=0.01,
            )
            .rl_module(
                model_config=DefaultModelConfig(
                    fcnet_hiddens=[64, 64], fcnet_activation="tanh", vf_share_layers=True
                )
            )
            .reporting(metrics_num_episodes_for_smoothing=5, min_sample_timesteps_per_iteration=1000)
        )
    elif w.algo == "sac":
        from ray.rllib.algorithms.sac.sac import SACConfig
        from torch import nn

        config = (
            SACConfig()
            .environment("Pendulum-v1")
            .training(
                initial_alpha=1.001,
                actor_lr=2e-4,
                critic_lr=8e-4,
                alpha_lr=9e-4,
                lr=None,
                target_entropy="auto",
                n_step=(2, 5),
                tau=0.005,
                train_batch_size_per_learner=256,
                target_network_update_freq=1,
                replay_buffer_config={
                    "type": "PrioritizedEpisodeReplayBuffer",
                    "capacity": 100000,
                    "alpha": 1.0,
                    "beta": 0.0,
                },
                num_steps_sampled_before_learning_starts=256,
            )
            .rl_module(
                model_config=DefaultModelConfig(
                    fcnet_hiddens=[256, 256],
                    fcnet_activation="relu",
                    fcnet_kernel_initializer=nn.init.xavier_uniform_,
                    head_fcnet_hiddens=[],
                    head_fcnet_activation=None,
                    head_fcnet_kernel_initializer="orthogonal_",
                    head_fcnet_kernel_initializer_kwargs={"gain": 0.01},
                )
            )
        )
    else:
        raise SystemExit(f"rllib_runner: no workload {w.name}")
    if w.window != 100 or w.algo == "sac":
        config = config.reporting(metrics_num_episodes_for_smoothing=w.window)
    return config.debugging(seed=seed, log_level="ERROR")


def atari_config(w: common.Workload, variant: str):
    """PPO with the zoo's Atari recipe on RLlib's Atari wrappers (see the module docstring)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env

    if variant not in ("", "r0", "r2"):
        raise SystemExit(f"rllib_runner: {w.name} variants: r0, r2 (got {variant!r})")
    env_id, pre, hp, ale_kwargs = w.env, common.ATARI_PREPROCESSING, common.ZOO_PPO_ATARI, common.ALE_KWARGS

    def make_env(
        env_config,
    ):  # runs in the env-runner actors: no reference to `common` (not importable there)
        import ale_py
        import gymnasium as gym
        import numpy as np
        from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

        gym.register_envs(ale_py)
        env = wrap_atari_for_new_api_stack(
            gym.make(env_id, **ale_kwargs),
            dim=pre["screen_size"],
            frameskip=pre["frame_skip"],
            framestack=pre["frame_stack"],
        )
        return gym.wrappers.TransformReward(env, np.sign)

    register_env("bench-atari", make_env)
    runners = 0 if variant == "r0" else 2
    return (
        PPOConfig()
        .environment("bench-atari")
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=hp["n_envs"] // max(runners, 1),
            rollout_fragment_length=hp["n_steps"],
        )
        .training(
            train_batch_size_per_learner=hp["n_envs"] * hp["n_steps"],
            minibatch_size=hp["batch_size"],
            num_epochs=hp["n_epochs"],
            lr=[[0, hp["learning_rate"]], [hp["n_timesteps"], 0.0]],
            clip_param=hp["clip_range"],
            vf_clip_param=float("inf"),
            entropy_coeff=hp["ent_coef"],
            vf_loss_coeff=hp["vf_coef"],
            use_kl_loss=False,
            kl_coeff=0.0,
            grad_clip=hp["max_grad_norm"],
            grad_clip_by="global_norm",
            gamma=hp["gamma"],
            lambda_=hp["gae_lambda"],
        )
        .rl_module(
            model_config=DefaultModelConfig(
                conv_filters=[[32, 8, 4, "valid"], [64, 4, 2, "valid"], [64, 3, 1, "valid"]],
                conv_activation="relu",
                head_fcnet_hiddens=[512],
                head_fcnet_activation="relu",
                vf_share_layers=True,
            )
        )
    )


def child(w: common.Workload, seed: int, variant: str) -> None:
    import logging

    rep = common.Reporter(w)
    import ray
    import torch

    # The driver's torch threads (its local learner): one for MLPs, all cores for Atari's conv net, as
    # relayrl gives TF (common.torch_threads); Ray starts its env-runner actors with OMP_NUM_THREADS=1.
    torch.set_num_threads(common.torch_threads(w))

    ray.init(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    algo = config_for(w, seed, variant).build_algo()
    iteration = 0
    while True:
        result = algo.train()
        iteration += 1
        steps = (
            _get(result, "env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime") or 0
        )
        mean = _get(result, "env_runners/episode_return_mean")
        updates = _learner_updates(result, {"sac": 256, "dqn": 32}.get(w.algo))
        if iteration == 1:
            rep.first_iteration()
            if os.environ.get("ANCHOR_DUMP_KEYS"):
                print(sorted(result.get("learners", {}).get("default_policy", {}).keys()), flush=True)
            if w.name == "W5":
                break
        solved = rep.progress(steps, updates, mean=mean, force=True)
        if solved or steps >= w.cap:
            break
    rep.emit(event="done", env_steps=int(steps))
    algo.stop()
    ray.shutdown()


def make_cmd(w: common.Workload, seed: int, variant: str):
    if w.name == "W3":
        raise NotImplementedError("W3 is the raw env limit (gymnasium) and relayrl's sampler: relayrl_runner")
    if w.name in ("W8", "W9"):
        raise NotImplementedError(f"{w.name} compares relayrl with SB3 only (issue 16)")
    return common.self_cmd(__file__, w, seed, variant), None


if __name__ == "__main__":
    common.cli(
        "rllib", make_cmd, lambda: common.anchor_version("ray"), child_main=child, default_timeout=1200
    )
