"""Tianshou anchor for issue 17's MuJoCo workloads (W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO): the same zoo
hyperparameters as sb3_runner.py (mujoco_workloads.py), run on Tianshou 2.0's own collectors, algorithms and
trainers, in a venv of its own (setup_tianshou.sh: Tianshou pins pandas < 3, which the incumbents' venv with
ray[rllib] does not allow).

    benchmarks/anchors/.venv-tianshou/bin/python benchmarks/anchors/tianshou_runner.py --workload W10-Hopper

Evaluation is the shared protocol (mujoco_workloads.py): the trainer's test collector runs 10 deterministic
episodes on one env seeded seed + EVAL_SEED_OFFSET after every eval_every() env steps (an epoch) and once
before training (for SAC/TD3, after the random warm-up: 10k steps). The zoo's `learning_starts` is Tianshou's
usual random warm-up collection (uniform actions, as SB3 samples them), counted in the cap. PPO normalises
observations with VectorEnvNormObs (the evaluation env uses the training statistics, frozen) and rewards
with the algorithm's return_scaling: VecNormalize's two halves. Tianshou's choices stay where the zoo says
nothing: its SAC actor has a state-conditioned log std (as SB3's), its PPO recomputes nothing and normalises
advantages per minibatch (as SB3).
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import mujoco_workloads  # noqa: E402

PYTHON = os.path.join(common.HERE, ".venv-tianshou", "bin", "python")


def child(w: common.Workload, seed: int, variant: str) -> None:
    import numpy as np
    import torch
    from tianshou.data import Collector, ReplayBuffer

    if not mujoco_workloads.is_mujoco(w.name):
        raise SystemExit(f"tianshou_runner runs the MuJoCo workloads only (got {w.name})")
    torch.set_num_threads(common.torch_threads(w))  # one thread for MLPs, as the other runners
    torch.manual_seed(seed)
    np.random.seed(seed)
    mw = mujoco_workloads
    rep = common.Reporter(w)
    total = w.cap or mw.specs()[w.name][2]
    algorithm, hp, train_envs, test_envs = _setup(w, seed)
    if w.algo == "ppo":
        warmup, buffer_size = 0, hp["n_steps"]
        # whole 512-step rollouts per epoch, the nearest to eval_every() steps (20 x 512 = 10,240, as relayrl)
        epoch_steps = max(1, round(mw.eval_every() / hp["n_steps"])) * hp["n_steps"]
    else:
        warmup, buffer_size = min(hp["learning_starts"], total), hp["buffer_size"]
        epoch_steps = mw.eval_every()
    training = Collector(algorithm, train_envs, ReplayBuffer(buffer_size), exploration_noise=True)
    if warmup:
        training.reset()
        training.collect(n_step=warmup, random=True)
    at = {"env_step": 0}

    def before_test(epoch: int, env_step: int | None) -> None:
        at["env_step"] = env_step or 0
        if w.algo == "ppo":  # the evaluation env sees observations as the policy was trained on them
            test_envs.set_obs_rms(train_envs.get_obs_rms())

    def score(stats) -> float:
        mean = float(stats.returns_stat.mean)
        rep.progress(warmup + at["env_step"], None, mean, force=True)
        return mean

    params = _trainer_params(
        w.algo,
        hp,
        training_collector=training,
        test_collector=Collector(algorithm, test_envs),
        max_epochs=max(1, math.ceil((total - warmup) / epoch_steps)),
        epoch_num_steps=epoch_steps,
        test_step_num_episodes=mw.EVAL_EPISODES,
        batch_size=hp["batch_size"],
        test_fn=before_test,
        compute_score_fn=score,
        test_in_training=False,
        verbose=False,
        show_progress=False,
    )
    # after the warm-up the training envs go on where it left them
    algorithm.create_trainer(params).run(reset_collectors=not warmup)
    rep.emit(event="done", env_steps=warmup + at["env_step"])


def _setup(w: common.Workload, seed: int):
    """(algorithm, zoo hyperparameters, training envs, evaluation envs) for a MuJoCo workload."""
    import gymnasium as gym
    from tianshou.env import DummyVectorEnv, VectorEnvNormObs

    mw = mujoco_workloads

    def envs(offset: int) -> DummyVectorEnv:
        venv = DummyVectorEnv([lambda: gym.make(w.env)])
        venv.seed(seed + offset)
        return venv

    train_envs, test_envs = envs(0), envs(mw.EVAL_SEED_OFFSET)
    probe = gym.make(w.env)
    spaces = (probe.observation_space, probe.action_space)
    if w.algo == "ppo":
        hp = mw.ZOO_PPO_MUJOCO[w.env]
        train_envs = VectorEnvNormObs(train_envs)
        test_envs = VectorEnvNormObs(test_envs, update_obs_rms=False)
        return _ppo(hp, *spaces), hp, train_envs, test_envs
    hp = mw.ZOO_SAC_MUJOCO if w.algo == "sac" else mw.ZOO_TD3_MUJOCO
    return (_sac if w.algo == "sac" else _td3)(hp, *spaces), hp, train_envs, test_envs


def _trainer_params(algo: str, hp: dict, **shared):
    if algo == "ppo":
        from tianshou.trainer import OnPolicyTrainerParams

        return OnPolicyTrainerParams(
            collection_step_num_env_steps=hp["n_steps"] * hp["n_envs"],
            update_step_num_repetitions=hp["n_epochs"],
            **shared,
        )
    from tianshou.trainer import OffPolicyTrainerParams

    # train_freq 1, gradient_steps 1: one env step, then one update
    return OffPolicyTrainerParams(
        collection_step_num_env_steps=1, update_step_num_gradient_steps_per_sample=1.0, **shared
    )


def _mlp_critic(obs_space, act_space, hidden: list[int], with_action: bool, activation=None):
    """Q(s, a) (with_action) or V(s): an MLP of `hidden` (ReLU unless `activation`) and a linear output."""
    import torch
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousCritic

    net = Net(
        state_shape=obs_space.shape,
        action_shape=act_space.shape if with_action else 0,
        hidden_sizes=hidden,
        activation=activation or torch.nn.ReLU,
        concat=with_action,
    )
    return ContinuousCritic(preprocess_net=net)


def _sac(hp: dict, obs_space, act_space):
    import numpy as np
    from tianshou.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic

    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_space.shape, hidden_sizes=hp["net_arch"]),
        action_shape=act_space.shape,
        unbounded=True,
        conditioned_sigma=True,
    )
    adam = AdamOptimizerFactory(lr=hp["learning_rate"])
    # SB3's ent_coef 'auto': alpha starts at 1.0 (log 0), target entropy -dim(A)
    alpha = AutoAlpha(target_entropy=-float(np.prod(act_space.shape)), log_alpha=0.0, optim=adam)
    return SAC(
        policy=SACPolicy(actor=actor, action_space=act_space),
        policy_optim=adam,
        critic=_mlp_critic(obs_space, act_space, hp["net_arch"], True),
        critic_optim=adam,
        critic2=_mlp_critic(obs_space, act_space, hp["net_arch"], True),
        critic2_optim=adam,
        tau=hp["tau"],
        gamma=hp["gamma"],
        alpha=alpha,
    )


def _td3(hp: dict, obs_space, act_space):
    from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tianshou.algorithm.modelfree.td3 import TD3
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.exploration import GaussianNoise
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorDeterministic

    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs_space.shape, hidden_sizes=hp["net_arch"]),
        action_shape=act_space.shape,
    )
    adam = AdamOptimizerFactory(lr=hp["learning_rate"])
    policy = ContinuousDeterministicPolicy(
        actor=actor, exploration_noise=GaussianNoise(sigma=hp["noise_std"]), action_space=act_space
    )
    return TD3(
        policy=policy,
        policy_optim=adam,
        critic=_mlp_critic(obs_space, act_space, hp["net_arch"], True),
        critic_optim=adam,
        critic2=_mlp_critic(obs_space, act_space, hp["net_arch"], True),
        critic2_optim=adam,
        tau=hp["tau"],
        gamma=hp["gamma"],
        policy_noise=hp["target_policy_noise"],
        update_actor_freq=hp["policy_delay"],
        noise_clip=hp["target_noise_clip"],
    )


def _ppo(hp: dict, obs_space, act_space):
    import torch
    from tianshou.algorithm.modelfree.ppo import PPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic

    policy_kw = hp["policy"]
    hidden = policy_kw["net_arch"] if policy_kw else [64, 64]
    activation = torch.nn.ReLU if policy_kw and policy_kw["activation"] == "relu" else torch.nn.Tanh
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_space.shape, hidden_sizes=hidden, activation=activation),
        action_shape=act_space.shape,
        unbounded=True,
    )
    with torch.no_grad():  # SB3's log_std_init (a state-independent log std, as Tianshou's default)
        actor.sigma_param.fill_(float(policy_kw["log_std_init"]) if policy_kw else 0.0)
    critic = _mlp_critic(obs_space, act_space, hidden, False, activation)
    if not policy_kw or policy_kw.get("ortho_init", True):
        # SB3's MlpPolicy default: orthogonal, gain sqrt(2) in the hidden layers, 0.01 on the action mean,
        # 1 on the value; zero biases
        gains = [(actor.preprocess, math.sqrt(2)), (critic.preprocess, math.sqrt(2))]
        for part, gain in [*gains, (actor.mu, 0.01), (critic.last, 1.0)]:
            for module in part.modules():
                if isinstance(module, torch.nn.Linear):
                    torch.nn.init.orthogonal_(module.weight, gain=gain)
                    torch.nn.init.zeros_(module.bias)

    def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]):
        return torch.distributions.Independent(torch.distributions.Normal(*loc_scale), 1)

    policy = ProbabilisticActorPolicy(
        actor=actor, dist_fn=gaussian, deterministic_eval=True, action_space=act_space
    )
    return PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=hp["learning_rate"]),
        eps_clip=hp["clip_range"],
        vf_coef=hp["vf_coef"],
        ent_coef=hp["ent_coef"],
        max_grad_norm=hp["max_grad_norm"],
        gae_lambda=hp["gae_lambda"],
        gamma=hp["gamma"],
        return_scaling=True,
    )


def make_cmd(w: common.Workload, seed: int, variant: str):
    if not mujoco_workloads.is_mujoco(w.name):
        raise NotImplementedError("Tianshou runs issue 17's MuJoCo workloads only")
    if not os.path.exists(PYTHON):
        raise NotImplementedError("no Tianshou venv: run benchmarks/anchors/setup_tianshou.sh")
    return common.self_cmd(__file__, w, seed, variant, python=PYTHON), None


if __name__ == "__main__":
    common.cli("tianshou", make_cmd, lambda: common.anchor_version("tianshou", PYTHON), child_main=child)
