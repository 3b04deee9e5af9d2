"""Issue 17's MuJoCo workloads: SAC and TD3 at 300k env steps, PPO at 1M, on HalfCheetah-v5, Hopper-v5 and
Walker2d-v5, every library on rl-baselines3-zoo's hyperparameters, judged by a deterministic evaluation.

Workload ids: W10-<Env> (SAC), W11-<Env> (TD3), W12-<Env> (PPO), e.g. `W10-Hopper`; `--workloads W10` in
run.py means all three envs. Stdlib only: run.py (any venv), the runners' parents and their children import
it. (Not named `mujoco`: the anchors folder is on sys.path and would shadow the mujoco package.)

Evaluation (the same protocol on every side): every EVAL_EVERY env steps and once more at the end of the run,
EVAL_EPISODES episodes with the deterministic policy on an env seeded `seed + EVAL_SEED_OFFSET` (relayrl's
own offset, relayrl/algorithms/periodic_evaluation.py), apart from the training envs. A run's figure is the
mean return of its FINAL evaluation; its curve is the evaluation mean against env steps. Wall time counts
everything from process start, evaluation included, alike for every library.
"""

from __future__ import annotations

import math
import os

ENVS = {"HalfCheetah": "HalfCheetah-v5", "Hopper": "Hopper-v5", "Walker2d": "Walker2d-v5"}
ALGOS = {"W10": ("sac", 300_000), "W11": ("td3", 300_000), "W12": ("ppo", 1_000_000)}
EVAL_EVERY = 10_000
EVAL_EPISODES = 10
EVAL_SEED_OFFSET = 10_000_019  # relayrl.algorithms.periodic_evaluation.EVALUATION_SEED_OFFSET


def eval_every() -> int:
    """EVAL_EVERY; MUJOCO_EVAL_EVERY overrides it, for smoke runs shorter than 10k steps only."""
    return int(os.environ.get("MUJOCO_EVAL_EVERY", EVAL_EVERY))


def specs() -> dict[str, tuple[str, str, int, str]]:
    """{workload id: (algo, env id, cap in env steps, what)}."""
    out = {}
    for group, (algo, cap) in ALGOS.items():
        for short, env in ENVS.items():
            what = f"{algo.upper()} {env}: mean return of the final deterministic evaluation at {cap:,} steps"
            out[f"{group}-{short}"] = (algo, env, cap, what)
    return out


def is_mujoco(name: str) -> bool:
    return name.partition("-")[0] in ALGOS and name.partition("-")[2] in ENVS


def expand(names: list[str]) -> list[str]:
    """run.py's --workloads: a group id (W10) stands for its three envs."""
    out = []
    for name in names:
        out += [f"{name}-{short}" for short in ENVS] if name in ALGOS else [name]
    return out


# ------------------------------------------------------------------------------ the zoo's hyperparameters
# rl_zoo3 2.9.2 hyperparams/sac.yml, entries HalfCheetah-v4 / Hopper-v4 / Walker2d-v4 (`&mujoco-defaults`):
# n_timesteps 1e6, learning_starts 10000, everything else SB3's SAC defaults (written out here so that
# relayrl gets the same values): lr 3e-4 (actor, critics and the temperature), buffer 1e6, batch 256, tau
# 0.005, gamma 0.99, train_freq 1 and gradient_steps 1, ent_coef 'auto' (initial 1.0, target -dim(A)),
# net_arch [256, 256] relu.
ZOO_SAC_MUJOCO = dict(
    learning_starts=10_000,
    learning_rate=3e-4,
    buffer_size=1_000_000,
    batch_size=256,
    tau=0.005,
    gamma=0.99,
    net_arch=[256, 256],
)
# rl_zoo3 2.9.2 hyperparams/td3.yml, the same three entries (`&mujoco-defaults`): n_timesteps 1e6,
# learning_starts 10000, noise normal std 0.1, train_freq 1, gradient_steps 1, lr 1e-3, batch 256,
# net_arch [400, 300]; SB3's TD3 defaults for the rest: buffer 1e6, tau 0.005, gamma 0.99, policy_delay 2,
# target_policy_noise 0.2, target_noise_clip 0.5, relu.
ZOO_TD3_MUJOCO = dict(
    learning_starts=10_000,
    noise_std=0.1,
    learning_rate=1e-3,
    batch_size=256,
    net_arch=[400, 300],
    buffer_size=1_000_000,
    tau=0.005,
    gamma=0.99,
    policy_delay=2,
    target_policy_noise=0.2,
    target_noise_clip=0.5,
)
# rl_zoo3 2.9.2 hyperparams/ppo.yml, entries HalfCheetah-v4, Hopper-v4 and Walker2d-v4 (all `normalize: true`
# -> VecNormalize of observations and rewards, n_envs 1, n_timesteps 1e6). `policy` None: the entry has no
# policy_kwargs (SB3's MlpPolicy: 64x64 tanh, log std 0, orthogonal init).
_ZOO_POLICY = dict(log_std_init=-2, ortho_init=False, activation="relu", net_arch=[256, 256])
ZOO_PPO_MUJOCO = {
    "HalfCheetah-v5": dict(
        n_envs=1,
        batch_size=64,
        n_steps=512,
        gamma=0.98,
        learning_rate=2.0633e-05,
        ent_coef=0.000401762,
        clip_range=0.1,
        n_epochs=20,
        gae_lambda=0.92,
        max_grad_norm=0.8,
        vf_coef=0.58096,
        policy=_ZOO_POLICY,
    ),
    "Hopper-v5": dict(
        n_envs=1,
        batch_size=32,
        n_steps=512,
        gamma=0.999,
        learning_rate=9.80828e-05,
        ent_coef=0.00229519,
        clip_range=0.2,
        n_epochs=5,
        gae_lambda=0.99,
        max_grad_norm=0.7,
        vf_coef=0.835671,
        policy=_ZOO_POLICY,
    ),
    "Walker2d-v5": dict(
        n_envs=1,
        batch_size=32,
        n_steps=512,
        gamma=0.99,
        learning_rate=5.05041e-05,
        ent_coef=0.000585045,
        clip_range=0.1,
        n_epochs=20,
        gae_lambda=0.95,
        max_grad_norm=1,
        vf_coef=0.871923,
        policy=None,
    ),
}
# relayrl's variants of a MuJoCo algorithm: name -> model fields over relayrl_fields'. orthogonal: TD3's
# actor started orthogonal (0.01 last-layer gain), the W11 runner's start until stop 39, keeps the rows
# measured that way reproducible (docs/benchmarks.md, "W11-Hopper's actor start").
RELAYRL_VARIANTS = {"td3": {"": {}, "orthogonal": {"weight_init": "orthogonal"}}}
OFF_POLICY_FRAGMENT = 8  # relayrl: env steps per iteration (1 env) before its 8 updates: replay ratio 1


# ------------------------------------------------------------------------------------ relayrl's side
def relayrl_fields(algo: str, env: str, cap: int) -> dict:
    """relayrl's config fields for the zoo's hyperparameters (every field a tuned file could set, so that
    none leaks in from relayrl/core/tuned/ under --config) and the evaluation protocol."""
    if algo == "sac":
        hp = ZOO_SAC_MUJOCO
        fields = dict(
            lr=hp["learning_rate"],
            actor_lr=hp["learning_rate"],
            alpha_lr=hp["learning_rate"],
            initial_alpha=1.0,
            target_entropy="auto",
            model={"fcnet_hiddens": hp["net_arch"], "fcnet_activation": "relu"},
            critic_hiddens=hp["net_arch"],
        )
    elif algo == "td3":
        hp = ZOO_TD3_MUJOCO
        fields = dict(
            lr=hp["learning_rate"],
            actor_lr=hp["learning_rate"],
            policy_delay=hp["policy_delay"],
            target_noise=hp["target_policy_noise"],
            target_noise_clip=hp["target_noise_clip"],
            exploration_noise=hp["noise_std"],  # actions in [-1, 1] on all three envs: the same units
            # the actor starts as SB3's (torch's nn.Linear default): above the orthogonal start on all three
            # W11-Hopper seeds (stops 36-38)
            model={
                "fcnet_hiddens": hp["net_arch"],
                "fcnet_activation": "relu",
                "weight_init": "uniform_fan_in",
            },
            critic_hiddens=hp["net_arch"],
        )
    else:
        return dict(ppo_fields(ZOO_PPO_MUJOCO[env]), **evaluation_fields(iteration_steps(algo, env), cap))
    fields.update(
        num_envs_per_worker=1,
        rollout_fragment_length=OFF_POLICY_FRAGMENT,
        train_batch_size=hp["batch_size"],
        replay_buffer_capacity=hp["buffer_size"],
        learning_starts=hp["learning_starts"],
        replay_ratio=1.0,  # train_freq 1, gradient_steps 1: one update per env step
        n_step=1,
        tau=hp["tau"],
        gamma=hp["gamma"],
    )
    return dict(fields, **evaluation_fields(iteration_steps(algo, env), cap))


def ppo_fields(hp: dict) -> dict:
    policy = hp["policy"]
    return dict(
        num_envs_per_worker=hp["n_envs"],
        rollout_fragment_length=hp["n_steps"],
        train_batch_size=hp["n_steps"] * hp["n_envs"],
        sgd_minibatch_size=hp["batch_size"],
        num_sgd_iter=hp["n_epochs"],
        lr=hp["learning_rate"],
        lr_schedule=None,  # the zoo's learning rate is constant
        gamma=hp["gamma"],
        lambda_=hp["gae_lambda"],
        clip_param=hp["clip_range"],
        vf_clip_param=None,
        entropy_coeff=hp["ent_coef"],
        vf_loss_coeff=hp["vf_coef"],
        grad_clip=hp["max_grad_norm"],
        scale_rewards=True,  # VecNormalize's reward half (the returns reported stay unscaled)
        model={
            "fcnet_hiddens": policy["net_arch"] if policy else [64, 64],
            "fcnet_activation": policy["activation"] if policy else "tanh",
            "log_std_init": float(policy["log_std_init"]) if policy else 0.0,
            # ortho_init=False leaves torch's nn.Linear default: kernels and biases U(+-1/sqrt(fan_in))
            "weight_init": "uniform_fan_in" if policy and not policy["ortho_init"] else "orthogonal",
            "normalize_obs": True,  # VecNormalize's observation half, inside relayrl's network
            "vf_share_layers": False,
        },
    )


def iteration_steps(algo: str, env: str) -> int:
    if algo == "ppo":
        hp = ZOO_PPO_MUJOCO[env]
        return hp["n_steps"] * hp["n_envs"]
    return OFF_POLICY_FRAGMENT


def evaluation_fields(steps_per_iteration: int, cap: int) -> dict:
    return dict(
        evaluation_interval=eval_interval(steps_per_iteration, cap),
        evaluation_episodes=EVAL_EPISODES,
        evaluation_explore=False,
        metrics_num_episodes_for_smoothing=EVAL_EPISODES,
    )


def eval_interval(steps_per_iteration: int, cap: int) -> int:
    """relayrl evaluates every N iterations: the N nearest to eval_every() env steps (PPO's 512-step
    iterations: every 20, i.e. 10,240 steps), and no more than the run's own iterations (a short run
    evaluates at its end only, as SB3's)."""
    return max(1, min(round(eval_every() / steps_per_iteration), math.ceil(cap / steps_per_iteration)))


def relayrl_stop_iters(cap: int, steps_per_iteration: int) -> int:
    """relayrl's --stop-iters: cap / steps_per_iteration rounded up to the evaluation grid, so that its last
    iteration is an evaluation one (SAC/TD3 at 300k: 37,500 iterations of 8 steps; PPO at 1M: 1,960 of 512).
    Not --stop-timesteps: relayrl counts transitions, and gymnasium's vector env spends one step per episode
    on its reset, so an iteration holds slightly fewer than steps_per_iteration of them (Hopper's short
    first episodes: ~4% fewer) and a timestep rule would stop off the grid, after the last evaluation."""
    interval = eval_interval(steps_per_iteration, cap)
    return math.ceil(cap / (interval * steps_per_iteration)) * interval
